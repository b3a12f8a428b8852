/**
 * Requests Node's HTTP parser refuses before any route sees them (issue 20) get the spec's JSON error
 * shape with the right status, and are logged at warn level with the client address, never at error.
 */
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import { Writable } from 'node:stream';
import express from 'express';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHttpServer } from '../../src/http/server.js';
import { createLogger } from '../../src/logger.js';

const lines: Array<{ level: number; msg: string; client?: string; status?: number }> = [];
const logger = createLogger(
  'info',
  new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const line of chunk.toString().split('\n').filter(Boolean)) lines.push(JSON.parse(line) as (typeof lines)[number]);
      done();
    },
  }),
);
const server = createHttpServer(express(), undefined, logger);
let port: number;

beforeAll(async () => {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  port = (server.address() as AddressInfo).port;
});
afterAll(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

/** Writes `raw` on a fresh connection and reads the whole answer until the server closes it. */
function exchange(raw: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1', () => socket.write(raw));
    let answer = '';
    socket.on('data', (chunk) => (answer += chunk.toString()));
    socket.on('end', () => resolve(answer));
    socket.on('error', reject);
  });
}

function parse(answer: string) {
  const [head, body] = answer.split('\r\n\r\n');
  const [statusLine, ...headers] = head!.split('\r\n');
  return { status: Number(statusLine!.split(' ')[1]), headers: headers.map((h) => h.toLowerCase()), body: JSON.parse(body!) as unknown };
}

describe('requests the HTTP parser refuses', () => {
  it.each([
    ['header fields too large', `GET /health HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`, 431, 'Request Header Fields Too Large'],
    ['a URL too large', `GET /api/v1/syncs?${'q'.repeat(20_000)} HTTP/1.1\r\nHost: x\r\n\r\n`, 431, 'Request Header Fields Too Large'],
    ['a malformed request line', 'THIS IS NOT HTTP\r\n\r\n', 400, 'Bad Request'],
    ['a malformed header', 'GET / HTTP/1.1\r\nHost: x\r\nBad Header Line\r\n\r\n', 400, 'Bad Request'],
    ['a bad Content-Length', 'POST /webhooks/abc HTTP/1.1\r\nHost: x\r\nContent-Length: nope\r\n\r\n', 400, 'Bad Request'],
  ])('%s: %i in the spec shape, logged at warn with the client', async (_what, raw, status, error) => {
    lines.length = 0;
    const answer = parse(await exchange(raw));
    expect(answer.status).toBe(status);
    expect(answer.headers).toContain('content-type: application/json; charset=utf-8');
    expect(answer.body).toEqual({ statusCode: status, message: expect.any(String), error });
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(lines).toEqual([expect.objectContaining({ level: 40, msg: 'request refused by the HTTP parser', client: '127.0.0.1', status })]);
  });
});
