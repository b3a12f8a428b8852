import { STATUS_CODES } from 'node:http';
import type { ErrorRequestHandler, RequestHandler, Response } from 'express';
import { maskIngressCode } from '../domain/source-url.js';
import type { Logger } from '../logger.js';

/** The spec's error body, used by every route of the service. */
export interface ErrorBody {
  statusCode: number;
  message: string | string[];
  error: string;
}

/** Sends `{statusCode, message, error}` with the status's standard reason phrase as `error`. */
export function sendError(res: Response, statusCode: number, message: string | string[]): void {
  const body: ErrorBody = { statusCode, message, error: STATUS_CODES[statusCode] ?? 'Error' };
  res.status(statusCode).type('application/json').send(JSON.stringify(body));
}

/** The last route: a JSON 404 for anything no route answered (never Express's HTML page). */
export const notFound: RequestHandler = (req, res) => {
  sendError(res, 404, `Cannot ${req.method} ${req.path}`);
};

/**
 * Turns anything thrown into the spec's error body. Client errors raised by parsers (bad JSON,
 * too large) keep their status; anything else is a 500 whose details go to the log, not the client.
 */
export function errorHandler(logger: Logger): ErrorRequestHandler {
  return (error: unknown, req, res, next) => {
    if (res.headersSent) return next(error);
    const status = clientErrorStatus(error);
    // A path Express cannot percent-decode names no route: the JSON 404 like any unknown path.
    if (status === 400 && /^Failed to decode param/.test((error as Error).message)) {
      sendError(res, 404, `Cannot ${req.method} ${maskIngressCode(req.path)}`);
      return;
    }
    if (status !== undefined) {
      sendError(res, status, clientErrorMessage(status, error));
      return;
    }
    logger.error({ err: error, method: req.method, path: maskIngressCode(req.path) }, 'unhandled error');
    sendError(res, 500, 'Internal server error');
  };
}

function clientErrorStatus(error: unknown): number | undefined {
  if (typeof error !== 'object' || error === null) return undefined;
  const { status, statusCode, expose } = error as { status?: unknown; statusCode?: unknown; expose?: unknown };
  const code = typeof status === 'number' ? status : typeof statusCode === 'number' ? statusCode : undefined;
  return code !== undefined && code >= 400 && code < 500 && expose !== false ? code : undefined;
}

function clientErrorMessage(status: number, error: unknown): string {
  if (status === 413) return 'Request body is too large';
  if ((error as { type?: string }).type === 'entity.parse.failed') return 'Request body is not valid JSON';
  return (error as { message?: string }).message ?? STATUS_CODES[status] ?? 'Bad Request';
}
