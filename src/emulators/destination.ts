import http from 'node:http';
import https from 'node:https';
import type { AddressInfo } from 'node:net';

/**
 * A customer's URL (a forwarding destination, a platform webhook endpoint): a real HTTP server (HTTPS
 * with `tls`) on 127.0.0.1 that records every request (method,
 * path, headers, raw body bytes, arrival time) and answers as it is told, per path or for all: 200 by
 * default, any status with a body and headers (404, 410, 429 with Retry-After, 500), a redirect, a
 * delay before answering, or a hang (no answer until the client gives up).
 */

interface ReceivedRequest {
  method: string;
  path: string;
  headers: http.IncomingHttpHeaders;
  body: Buffer;
  at: number;
}

/** How the next matching requests are answered. */
interface Answer {
  status?: number;
  headers?: Record<string, string>;
  body?: string;
  /** Milliseconds before the answer. */
  delayMs?: number;
  /** Never answer (the socket is held until the client closes it). */
  hang?: boolean;
}

export interface DestinationEmulator {
  /** Base URL, e.g. `http://127.0.0.1:41234`; any path under it is accepted. */
  url: string;
  /** Every request received, in order of arrival. */
  received: ReceivedRequest[];
  /** The next `n` requests (whose path starts with `path`, when given) get `answer`; then the default. */
  answerNext(n: number, answer: Answer, path?: string): void;
  /** The answer for requests no `answerNext` covers (default: 200 `{"ok":true}`); `path` limits it. */
  answerAlways(answer: Answer, path?: string): void;
  /**
   * Answers `answer` to a share of the requests (deterministically: every `1 / share`-th one), the
   * default to the others; e.g. `answerShare(0.1, {delayMs: 5000})`.
   */
  answerShare(share: number, answer: Answer): void;
  /** Requests received so far on `path` (prefix). */
  on(path: string): ReceivedRequest[];
  close(): Promise<void>;
}

/** A certificate and key (PEM) to serve HTTPS with; `host` is what its name is (`localhost`). */
interface TlsOptions {
  cert: string;
  key: string;
  host?: string;
}

export async function startDestinationEmulator(options: { tls?: TlsOptions } = {}): Promise<DestinationEmulator> {
  const received: ReceivedRequest[] = [];
  const queued: Array<{ remaining: number; answer: Answer; path?: string }> = [];
  const standing: Array<{ answer: Answer; path?: string }> = [];
  let share: { every: number; answer: Answer; count: number } | undefined;
  const hung = new Set<http.ServerResponse>();

  const handler = (req: http.IncomingMessage, res: http.ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const path = req.url ?? '/';
      received.push({ method: req.method ?? 'GET', path, headers: req.headers, body: Buffer.concat(chunks), at: Date.now() });
      respond(res, pick(path));
    });
  };
  const server = options.tls ? https.createServer({ cert: options.tls.cert, key: options.tls.key }, handler) : http.createServer(handler);
  server.keepAliveTimeout = 30_000;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  const { port } = server.address() as AddressInfo;

  function pick(path: string): Answer {
    const index = queued.findIndex((q) => q.path === undefined || path.startsWith(q.path));
    const next = queued[index];
    if (next) {
      next.remaining -= 1;
      if (next.remaining <= 0) queued.splice(index, 1);
      return next.answer;
    }
    if (share) {
      share.count += 1;
      if (share.count % share.every === 0) return share.answer;
    }
    return standing.find((s) => s.path === undefined || path.startsWith(s.path))?.answer ?? {};
  }

  function respond(res: http.ServerResponse, answer: Answer): void {
    if (answer.hang) {
      hung.add(res);
      res.on('close', () => hung.delete(res));
      return;
    }
    const send = () => {
      if (res.destroyed) return;
      const body = answer.body ?? '{"ok":true}';
      res.writeHead(answer.status ?? 200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body), ...answer.headers });
      res.end(body);
    };
    if (answer.delayMs) setTimeout(send, answer.delayMs);
    else send();
  }

  return {
    url: options.tls ? `https://${options.tls.host ?? 'localhost'}:${port}` : `http://127.0.0.1:${port}`,
    received,
    answerNext(n, answer, path) {
      queued.push({ remaining: n, answer, ...(path !== undefined ? { path } : {}) });
    },
    answerAlways(answer, path) {
      standing.unshift({ answer, ...(path !== undefined ? { path } : {}) });
    },
    answerShare(fraction, answer) {
      share = { every: Math.max(1, Math.round(1 / fraction)), answer, count: 0 };
    },
    on(path) {
      return received.filter((r) => r.path.startsWith(path));
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const res of hung) res.destroy();
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
