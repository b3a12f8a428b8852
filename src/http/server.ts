import http, { type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { Express } from 'express';

/** Handles a request itself and returns true, or returns false to leave it to the app. */
export type FastPath = (req: IncomingMessage, res: ServerResponse) => boolean;

/**
 * The HTTP server: the ingress fast path first (Express's router costs most of a hot request's time),
 * then the Express app for everything else.
 */
export function createHttpServer(app: Express, fastPath?: FastPath): Server {
  return http.createServer((req, res) => {
    if (fastPath?.(req, res)) return;
    app(req, res);
  });
}
