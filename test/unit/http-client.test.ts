import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { LookupFunction } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OutboundError, createHttpClient, requestWithRetry, retryAfterMs, type HttpClient } from '../../src/connectors/http/client.js';

let server: http.Server;
let port: number;
const seen: Array<{ method: string; url: string; headers: http.IncomingHttpHeaders; body: string }> = [];
let answers: Array<{ status: number; headers?: Record<string, string>; body?: string; delayMs?: number }> = [];

beforeAll(async () => {
  server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      seen.push({ method: req.method ?? '', url: req.url ?? '', headers: req.headers, body: Buffer.concat(chunks).toString() });
      const answer = answers.shift() ?? { status: 200, body: JSON.stringify({ ok: true, path: req.url }) };
      setTimeout(() => {
        res.writeHead(answer.status, { 'content-type': 'application/json', ...answer.headers });
        res.end(answer.body ?? '');
      }, answer.delayMs ?? 0);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  port = (server.address() as AddressInfo).port;
});

afterAll(async () => {
  await new Promise<void>((resolve) => server.close(() => resolve()));
});

/** A resolver that answers every name with one address, as a hostile DNS record would. */
function resolvingTo(address: string, family: 4 | 6 = 4): LookupFunction {
  return ((_hostname: string, options: { all?: boolean }, callback: (...args: unknown[]) => void) => {
    if (options.all) callback(null, [{ address, family }]);
    else callback(null, address, family);
  }) as unknown as LookupFunction;
}

async function refusal(client: HttpClient, url: string): Promise<OutboundError> {
  const error = await client.request({ url }).then(
    () => undefined,
    (e: unknown) => e,
  );
  client.close();
  if (!(error instanceof OutboundError)) throw new Error(`expected an OutboundError for ${url}, got ${String(error)}`);
  return error;
}

describe('SSRF protection', () => {
  it('refuses loopback by default', async () => {
    // Action
    const error = await refusal(createHttpClient({ allowPrivate: false }), `http://127.0.0.1:${port}/`);

    // Assertions
    expect(error.code).toBe('blocked');
    expect(error.maybeSent).toBe(false);
    expect(seen.some((r) => r.url === '/')).toBe(false);
  });

  it('allows loopback with allowPrivate', async () => {
    // Setup
    const client = createHttpClient({ allowPrivate: true });

    // Action
    const response = await client.request({ url: `http://127.0.0.1:${port}/allowed` });
    client.close();

    // Assertions
    expect(response.status).toBe(200);
    expect(response.json()).toEqual({ ok: true, path: '/allowed' });
  });

  it('refuses a hostname whose DNS answer is 127.0.0.1', async () => {
    const error = await refusal(createHttpClient({ allowPrivate: false, lookup: resolvingTo('127.0.0.1') }), `http://crm.example.test:${port}/`);

    expect(error.code).toBe('blocked');
  });

  it('refuses localhost (the system resolver answers loopback)', async () => {
    const error = await refusal(createHttpClient({ allowPrivate: false }), `http://localhost:${port}/`);

    expect(error.code).toBe('blocked');
  });

  it.each([
    ['a private 10/8 answer', '10.1.2.3', 4],
    ['a 192.168/16 answer', '192.168.0.10', 4],
    ['the cloud metadata address (link-local)', '169.254.169.254', 4],
    ['IPv6 loopback', '::1', 6],
    ['an IPv6 unique-local address', 'fd00::1', 6],
    ['an IPv6 link-local address', 'fe80::1', 6],
    ['an IPv4-mapped IPv6 loopback', '::ffff:127.0.0.1', 6],
    ['the meta address', '0.0.0.0', 4],
  ] as const)('refuses %s', async (_case, address, family) => {
    const error = await refusal(createHttpClient({ allowPrivate: false, lookup: resolvingTo(address, family) }), `http://crm.example.test:${port}/`);

    expect(error.code).toBe('blocked');
  });

  it.each([
    ['a decimal IPv4 literal', `http://2130706433:PORT/`],
    ['a short IPv4 literal', `http://127.1:PORT/`],
    ['an IPv6 literal', `http://[::1]:PORT/`],
    ['an IPv4-mapped IPv6 literal', `http://[::ffff:7f00:1]:PORT/`],
  ])('refuses %s', async (_case, template) => {
    const error = await refusal(createHttpClient({ allowPrivate: false }), template.replace('PORT', String(port)));

    expect(error.code).toBe('blocked');
  });

  it('still refuses the meta address 0.0.0.0 with allowPrivate', async () => {
    const error = await refusal(createHttpClient({ allowPrivate: true }), `http://0.0.0.0:${port}/`);

    expect(error.code).toBe('blocked');
  });

  it('refuses schemes other than http(s)', async () => {
    const error = await refusal(createHttpClient({ allowPrivate: true }), 'file:///etc/passwd');

    expect(error.code).toBe('invalid_url');
  });
});

describe('requests and answers', () => {
  it('sends JSON and form bodies with their content types', async () => {
    // Setup
    const client = createHttpClient({ allowPrivate: true });

    // Action
    await client.request({ method: 'POST', url: `http://127.0.0.1:${port}/json`, json: { a: 1 } });
    await client.request({ method: 'POST', url: `http://127.0.0.1:${port}/form`, form: { grant_type: 'refresh_token', x: 'a b' } });
    client.close();

    // Assertions
    const json = seen.find((r) => r.url === '/json');
    const form = seen.find((r) => r.url === '/form');
    expect(json?.headers['content-type']).toBe('application/json');
    expect(json?.body).toBe('{"a":1}');
    expect(form?.headers['content-type']).toBe('application/x-www-form-urlencoded');
    expect(form?.body).toBe('grant_type=refresh_token&x=a+b');
  });

  it('does not follow redirects', async () => {
    answers = [{ status: 302, headers: { location: 'http://169.254.169.254/latest/meta-data/' } }];
    const client = createHttpClient({ allowPrivate: true });

    const response = await client.request({ url: `http://127.0.0.1:${port}/redirect` });
    client.close();

    expect(response.status).toBe(302);
  });

  it('times out slow answers, naming only the origin (no path, query or headers)', async () => {
    // Setup
    answers = [{ status: 200, delayMs: 500 }];
    const client = createHttpClient({ allowPrivate: true, timeoutMs: 100 });

    // Action
    const error = await client
      .request({ url: `http://127.0.0.1:${port}/secret/path?api_key=sk_live_123`, headers: { authorization: 'Bearer tok_abc' } })
      .catch((e: unknown) => e);
    client.close();

    // Assertions
    expect(error).toBeInstanceOf(OutboundError);
    expect((error as OutboundError).code).toBe('timeout');
    expect((error as OutboundError).maybeSent).toBe(true);
    expect((error as Error).message).toBe(`GET http://127.0.0.1:${port} timed out after 100 ms`);
  });

  it('cuts off answers over the size limit', async () => {
    answers = [{ status: 200, body: 'x'.repeat(2048) }];
    const client = createHttpClient({ allowPrivate: true, maxResponseBytes: 1024 });

    const error = await client.request({ url: `http://127.0.0.1:${port}/big` }).catch((e: unknown) => e);
    client.close();

    expect((error as OutboundError).code).toBe('too_large');
  });
});

describe('retryAfterMs', () => {
  it('reads delta-seconds and HTTP dates', () => {
    const now = Date.parse('2025-01-01T00:00:00Z');
    expect(retryAfterMs('2', now)).toBe(2000);
    expect(retryAfterMs('0.5', now)).toBe(500);
    expect(retryAfterMs('Wed, 01 Jan 2025 00:00:03 GMT', now)).toBe(3000);
    expect(retryAfterMs('Tue, 31 Dec 2024 00:00:00 GMT', now)).toBe(0);
    expect(retryAfterMs(undefined, now)).toBeUndefined();
    expect(retryAfterMs('soon', now)).toBeUndefined();
  });
});

describe('requestWithRetry', () => {
  it('waits as long as Retry-After asks, then succeeds', async () => {
    // Setup
    answers = [
      { status: 429, headers: { 'retry-after': '1' } },
      { status: 200, body: '{"done":true}' },
    ];
    const client = createHttpClient({ allowPrivate: true });
    const budget = { remainingMs: 5000 };

    // Action
    const started = performance.now();
    const { response } = await requestWithRetry(
      client,
      { url: `http://127.0.0.1:${port}/limited` },
      { policy: { attempts: 3, baseDelayMs: 10, maxDelayMs: 100 }, budget, idempotent: true },
    );
    const elapsed = performance.now() - started;
    client.close();

    // Assertions
    expect(response.status).toBe(200);
    expect(elapsed).toBeGreaterThanOrEqual(990);
    expect(budget.remainingMs).toBe(4000);
  });

  it('hands back a wait longer than the budget instead of waiting', async () => {
    answers = [{ status: 503, headers: { 'retry-after': '120' } }];
    const client = createHttpClient({ allowPrivate: true });

    const result = await requestWithRetry(
      client,
      { url: `http://127.0.0.1:${port}/down` },
      { policy: { attempts: 3, baseDelayMs: 10, maxDelayMs: 100 }, budget: { remainingMs: 5000 }, idempotent: true },
    );
    client.close();

    expect(result.response.status).toBe(503);
    expect(result.retryAfterMs).toBe(120_000);
  });

  it('does not resend a non-idempotent request that may have reached the server', async () => {
    answers = [{ status: 200, delayMs: 300 }];
    const client = createHttpClient({ allowPrivate: true, timeoutMs: 100 });
    const before = seen.filter((r) => r.url === '/create').length;

    const error = await requestWithRetry(
      client,
      { method: 'POST', url: `http://127.0.0.1:${port}/create`, json: {} },
      { policy: { attempts: 3, baseDelayMs: 10, maxDelayMs: 100 }, budget: { remainingMs: 5000 }, idempotent: false },
    ).catch((e: unknown) => e);
    client.close();
    await new Promise((resolve) => setTimeout(resolve, 300));

    expect((error as OutboundError).code).toBe('timeout');
    expect(seen.filter((r) => r.url === '/create').length - before).toBe(1);
  });
});
