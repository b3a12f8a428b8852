import http, { STATUS_CODES, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { Express } from 'express';
import type { Logger } from '../logger.js';

/** Handles a request itself and returns true, or returns false to leave it to the app. */
export type FastPath = (req: IncomingMessage, res: ServerResponse) => boolean;

/**
 * The HTTP server: the ingress fast path first (Express's router costs most of a hot request's time),
 * then the Express app for everything else. Requests Node's parser refuses before any route sees them
 * (header fields or URL too large, a malformed request line or header) get the spec's JSON error too.
 */
export function createHttpServer(app: Express, fastPath?: FastPath, logger?: Logger): Server {
  const server = http.createServer((req, res) => {
    if (fastPath?.(req, res)) return;
    app(req, res);
  });
  server.on('clientError', (error: Error & { code?: string }, socket: Socket) => refuseUnparsed(error, socket, logger));
  return server;
}

/** The status of a request the parser refused: 431 for headers (and the URL, counted with them) too large, 408 for one too slow, 400 otherwise. */
function parserStatus(code: string | undefined): number {
  if (code === 'HPE_HEADER_OVERFLOW') return 431;
  if (code === 'ERR_HTTP_REQUEST_TIMEOUT') return 408;
  return 400;
}

const PARSER_MESSAGES: Record<number, string> = {
  400: 'The request could not be parsed as HTTP/1.1',
  408: 'The request was not received in time',
  431: 'Request header fields (or the URL) are too large',
};

function refuseUnparsed(error: Error & { code?: string }, socket: Socket, logger: Logger | undefined): void {
  // A client that went away needs no answer, and is no one's problem.
  if (error.code === 'ECONNRESET' || !socket.writable) {
    socket.destroy();
    return;
  }
  const status = parserStatus(error.code);
  logger?.warn({ client: socket.remoteAddress, status, code: error.code }, 'request refused by the HTTP parser');
  const body = JSON.stringify({ statusCode: status, message: PARSER_MESSAGES[status], error: STATUS_CODES[status] });
  socket.end(
    `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\nContent-Type: application/json; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
  );
}
