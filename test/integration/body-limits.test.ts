/**
 * An oversized body's 413 reaches a client still sending it (issue 20, RFC 9112 section 9.6): the
 * service reads and discards the rest of the body (up to a bound) instead of closing the connection
 * under the client, whose writes would then fail (EPIPE, a reset) before it could read the answer.
 * Ingress (1 MB) and the REST API's JSON bodies (64 KB) alike.
 */
import net from 'node:net';
import { beforeAll, describe, expect, it } from 'vitest';
import { seedTestAccounts } from '../support/accounts.js';
import { useTestServer } from '../support/server.js';

const ctx = useTestServer();
let writeKey: string;
beforeAll(async () => {
  writeKey = (await seedTestAccounts(ctx.db.prisma)).keys.acmeWrite;
});

/** Sends `size` bytes of body in 16 KB writes, as a slow client does, reading whatever comes back meanwhile. */
function sendWhole(
  path: string,
  size: number,
  headers: Record<string, string> = {},
  { chunked = false }: { chunked?: boolean } = {},
): Promise<{ answer: string; writeError: string | null; wrote: number }> {
  const port = Number(new URL(ctx.server.baseUrl).port);
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1');
    let answer = '';
    let wrote = 0;
    let writeError: string | null = null;
    const chunk = Buffer.alloc(16 * 1024, 'a');
    const extra = Object.entries(headers)
      .map(([k, v]) => `${k}: ${v}\r\n`)
      .join('');
    socket.on('data', (data) => (answer += data.toString()));
    socket.on('error', (error: Error & { code?: string }) => (writeError ??= error.code ?? error.message));
    socket.on('close', () => resolve({ answer, writeError, wrote }));
    const framing = chunked ? 'Transfer-Encoding: chunked' : `Content-Length: ${size}`;
    socket.write(`POST ${path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n${framing}\r\n${extra}\r\n`);
    const pump = () => {
      if (writeError || socket.destroyed) return;
      if (wrote >= size) {
        // Done sending: give the answer a moment, then hang up.
        if (chunked) socket.write('0\r\n\r\n');
        setTimeout(() => socket.end(), 200);
        return;
      }
      const piece = chunk.subarray(0, Math.min(chunk.length, size - wrote));
      wrote += piece.length;
      const framed = chunked ? Buffer.concat([Buffer.from(`${piece.length.toString(16)}\r\n`), piece, Buffer.from('\r\n')]) : piece;
      socket.write(framed, () => setTimeout(pump, 1));
    };
    pump();
  });
}

describe('a body over the limit', () => {
  it.each([
    ['the ingress (1 MB)', '/webhooks/anycode0000000001', 3 * 1024 * 1024],
    ['a REST body (64 KB)', '/api/v1/webhooks', 512 * 1024],
  ])('on %s: the client sends it whole and reads the 413 in the spec shape', async (_what, path, size) => {
    const { answer, writeError, wrote } = await sendWhole(path, size, { Authorization: `Bearer ${writeKey}` });
    expect(writeError).toBeNull();
    expect(wrote).toBe(size);
    expect(answer).toMatch(/^HTTP\/1\.1 413 /);
    const body = JSON.parse(answer.slice(answer.indexOf('\r\n\r\n') + 4)) as { statusCode: number; error: string };
    expect(body).toEqual({ statusCode: 413, message: expect.any(String), error: 'Payload Too Large' });
  });

  it.each([
    ['the ingress', '/webhooks/anycode0000000001', {}],
    ['a REST body, its size declared', '/api/v1/webhooks', {}],
    ['a REST body, chunked', '/api/v1/webhooks', { chunked: true }],
  ])('on %s: reads at most 16 MB of it; a client sending more is cut off, after the 413 was written', async (_what, path, options) => {
    const { answer, wrote } = await sendWhole(path, 40 * 1024 * 1024, { Authorization: `Bearer ${writeKey}` }, options);
    expect(answer).toMatch(/^HTTP\/1\.1 413 /);
    expect(wrote).toBeLessThan(40 * 1024 * 1024);
  });
});
