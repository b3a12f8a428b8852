import type { IncomingMessage, ServerResponse } from 'node:http';
import { STATUS_CODES } from 'node:http';
import type { ErrorBody } from '../http/errors.js';
import type { Logger } from '../logger.js';
import type { RequestAcceptor } from './accept.js';
import { readBody } from '../http/body.js';
import { ingressTarget } from './path.js';

/**
 * POST /webhooks/<code> and /webhooks/<id1>/<id2>, served ahead of Express (the hot path: no router,
 * no GraphQL, no CRM call). Returns false for anything else, which the caller hands to the app; other
 * methods on /webhooks get the app's JSON 404.
 *
 * Answers: 200 `{received: true, requestId}` once the request row and its waiting sync are committed; 404 for
 * an address no live source has; 413 over 1 MB; 400 for a body that is not JSON; 503 if the database
 * cannot commit (the sequencer retries; nothing was accepted).
 */
export function ingressHandler(acceptor: RequestAcceptor, logger: Logger): (req: IncomingMessage, res: ServerResponse) => boolean {
  return (req, res) => {
    if (req.method !== 'POST' || !req.url?.startsWith('/webhooks/')) return false;
    void handle(req, res, acceptor, logger);
    return true;
  };
}

async function handle(req: IncomingMessage, res: ServerResponse, acceptor: RequestAcceptor, logger: Logger): Promise<void> {
  const target = ingressTarget(req.url ?? '');
  const body = await readBody(req);
  if (!body.ok) {
    if (body.reason === 'too_large') return send(res, 413, error(413, 'Request body exceeds the 1 MB limit'));
    if (body.reason === 'not_utf8') return send(res, 400, error(400, 'Request body is not valid UTF-8: send the event as JSON'));
    return; // the client went away: nothing to answer
  }
  if (!target) return send(res, 404, error(404, UNKNOWN));
  if (body.text.trim() === '') return send(res, 400, error(400, 'Request body is empty: send the event as JSON'));
  try {
    JSON.parse(body.text);
  } catch {
    return send(res, 400, error(400, 'Request body is not valid JSON'));
  }
  try {
    const acceptance = await acceptor.accept(target, body.text, contentTypeOf(req));
    if (!acceptance.accepted) return send(res, 404, error(404, UNKNOWN));
    send(res, 200, { received: true, requestId: acceptance.requestId });
  } catch (err) {
    logger.error({ err }, 'ingress commit failed');
    send(res, 503, error(503, 'The request could not be stored; retry later'));
  }
}

/** The sequencer's Content-Type, as sent (forwarding repeats it); at most 255 characters. */
function contentTypeOf(req: IncomingMessage): string | null {
  const value = req.headers['content-type']?.trim();
  return value ? value.slice(0, 255) : null;
}

const UNKNOWN = 'No source has this ingress URL: copy the url of the source from GET /api/v1/sources';

function error(statusCode: number, message: string): ErrorBody {
  return { statusCode, message, error: STATUS_CODES[statusCode] ?? 'Error' };
}

function send(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  const headers: Record<string, string | number> = { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(text) };
  if (status === 503) headers['retry-after'] = '5';
  res.writeHead(status, headers).end(text);
}
