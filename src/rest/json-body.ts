import type { RequestHandler } from 'express';
import { readBody } from '../http/body.js';

/** The most a REST body may hold (JSON). */
const REST_BODY_BYTES = 64 * 1024;

/**
 * Reads the body of a REST mutation with the bounded reader the ingress uses (src/http/body.ts): a
 * body over 64 KB, declared or counted, is a 413 at once and the rest is read and dropped within 16 MB
 * and 10 s, so a client still sending reads the answer and one that never stops is cut off (Express's
 * JSON parser read any amount before answering). A JSON body becomes `req.body` when it is an object or
 * an array; any other is a 400; a body of another type is read and left out (`jsonBody()` refuses it).
 */
export function restJsonBody(): RequestHandler {
  return (req, _res, next) => {
    readBody(req, REST_BODY_BYTES).then(
      (read) => {
        if (!read.ok) {
          // A client that went away is not answered.
          if (read.reason === 'aborted') return;
          return next(read.reason === 'too_large' ? clientError(413, 'Request body is too large') : notJson());
        }
        if (read.text === '' || !req.is('application/json')) return next();
        let parsed: unknown;
        try {
          parsed = JSON.parse(read.text);
        } catch {
          return next(notJson());
        }
        // As Express's strict JSON parser: a body is an object or an array.
        if (typeof parsed !== 'object' || parsed === null) return next(notJson());
        req.body = parsed;
        next();
      },
      (error: unknown) => next(error),
    );
  };
}

/** An error the error handler answers with its status and message (`expose`, as http-errors marks client errors). */
function clientError(status: number, message: string): Error {
  return Object.assign(new Error(message), { status, expose: true });
}

function notJson(): Error {
  return clientError(400, 'Request body is not valid JSON');
}
