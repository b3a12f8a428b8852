/**
 * Rate limits (spec: Limits), with the spec's values: 120 per IP (fixed window, before the key is
 * looked at), 120 per account (sliding window, rejected requests count), 600 per account for
 * contacts/outreach (fixed window, no X-RateLimit-* headers). The clock is moved by ageing the stored
 * counters, never by waiting a minute.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { seedTestAccounts, type TestKeys } from '../support/accounts.js';
import { apiFetch } from '../support/openapi.js';
import { createTestDatabase, TEST_ENCRYPTION_KEY, type TestDatabase } from '../support/database.js';
import { startTestServer, type TestServer } from '../support/server.js';
import { freePort, startService } from '../support/service-process.js';

const SPEC_LIMITS = { RATE_LIMIT_PER_IP: '120', RATE_LIMIT_PER_ACCOUNT: '120', RATE_LIMIT_OUTREACH: '600' };
const RATE_HEADERS = ['x-ratelimit-limit', 'x-ratelimit-remaining', 'x-ratelimit-reset'];

let db: TestDatabase;
let server: TestServer;
let keys: TestKeys;
let acmeId: number;
let ipCounter = 0;

beforeAll(async () => {
  db = await createTestDatabase();
  const seeded = await seedTestAccounts(db.prisma);
  keys = seeded.keys;
  acmeId = seeded.accounts.acme!;
  // Behind one proxy: the client address is the last X-Forwarded-For entry, so each test can be its own client.
  server = await startTestServer(db, { ...SPEC_LIMITS, TRUST_PROXY: 'true' });
});

afterAll(async () => {
  await server?.close();
  await db?.drop();
});

/** A fresh client address for each call unless one is given. */
function get(path: string, key?: string, ip = nextIp(), base = server.baseUrl) {
  const headers: Record<string, string> = { 'x-forwarded-for': `198.51.100.77, ${ip}` };
  if (key) headers.authorization = `Bearer ${key}`;
  return apiFetch(`${base}/api/v1${path}`, { headers });
}

function nextIp(): string {
  ipCounter += 1;
  return `10.${(ipCounter >> 16) & 255}.${(ipCounter >> 8) & 255}.${ipCounter & 255}`;
}

function rateHeaders(headers: Headers): Record<string, string | null> {
  return Object.fromEntries(RATE_HEADERS.map((h) => [h, headers.get(h)]));
}

/** Moves every stored hit of a bucket `ms` into the past. */
async function age(bucket: string, ms: number): Promise<void> {
  await db.query(`UPDATE rate_limit_logs SET hits = ARRAY(SELECT h - ${ms} FROM unnest(hits) AS h) WHERE bucket = $1`, [bucket]);
  await db.query(`UPDATE rate_limit_windows SET window_start = window_start - make_interval(secs => ${ms / 1000}) WHERE bucket = $1`, [bucket]);
}

async function clear(): Promise<void> {
  await db.query('DELETE FROM rate_limit_logs');
  await db.query('DELETE FROM rate_limit_windows');
}

describe('per-account limit: 120 per 60 s, sliding, shared by all keys of the account', () => {
  it('counts every authenticated request of the account and answers the 121st with 429 and the headers', async () => {
    await clear();
    const started = Date.now();
    for (let i = 1; i <= 120; i += 1) {
      // Alternating keys of one account share the bucket.
      const res = await get('/me', i % 2 ? keys.acmeRead : keys.acmeWrite);
      expect(res.status).toBe(200);
      expect(res.headers.get('x-ratelimit-limit')).toBe('120');
      expect(res.headers.get('x-ratelimit-remaining')).toBe(String(120 - i));
      const reset = Number(res.headers.get('x-ratelimit-reset'));
      // The first hit leaves the window exactly 60 s after it was made: never more than 60.
      expect(reset).toBeGreaterThanOrEqual(Math.floor(60 - (Date.now() - started) / 1000));
      expect(reset).toBeLessThanOrEqual(60);
    }
    const rejected = await get('/sources', keys.acmeHubspotOnly);
    expect(rejected.status).toBe(429);
    expect(rejected.body).toMatchObject({ statusCode: 429, error: 'Too Many Requests' });
    expect(rejected.body.message).toMatch(/120 requests per 60 seconds/);
    expect(rateHeaders(rejected.headers)).toEqual({
      'x-ratelimit-limit': '120',
      'x-ratelimit-remaining': '0',
      'x-ratelimit-reset': expect.stringMatching(/^\d+$/),
    });
    expect(rejected.headers.get('retry-after')).toBe(rejected.headers.get('x-ratelimit-reset'));
    // Another account is not affected.
    const globex = await get('/me', keys.globexRead);
    expect(globex.status).toBe(200);
    expect(globex.headers.get('x-ratelimit-remaining')).toBe('119');
  });

  it('frees slots as the oldest hits leave the window, and counts rejected requests', async () => {
    await clear();
    const started = Date.now();
    const elapsed = () => (Date.now() - started) / 1000;
    for (let i = 0; i < 120; i += 1) expect((await get('/me', keys.acmeRead)).status).toBe(200);
    // 40 s later: full, and the next slot frees when the first hits are 60 s old: 20 s after they were
    // made, less the time this test has taken since.
    await age(`account:${acmeId}`, 40_000);
    for (let i = 0; i < 10; i += 1) {
      const res = await get('/connections', keys.acmeRead);
      expect(res.status).toBe(429);
      const wait = Number(res.headers.get('retry-after'));
      expect(wait).toBeGreaterThanOrEqual(Math.floor(20 - elapsed()));
      expect(wait).toBeLessThanOrEqual(20);
    }
    const rejectedAt = Date.now();
    // 25 s later the 120 accepted hits have left the window; the 10 rejected ones have not.
    await age(`account:${acmeId}`, 25_000);
    const res = await get('/me', keys.acmeRead);
    expect(res.status).toBe(200);
    expect(res.headers.get('x-ratelimit-remaining')).toBe(String(120 - 11));
    // The next slot frees when the oldest rejected hit (25 s older now) leaves: 35 s after it was made.
    expect(Number(res.headers.get('x-ratelimit-reset'))).toBeGreaterThanOrEqual(Math.floor(35 - (Date.now() - rejectedAt) / 1000));
    expect(Number(res.headers.get('x-ratelimit-reset'))).toBeLessThanOrEqual(35);
  });

  it('is a sliding window: hits from 57 s ago still count', async () => {
    await clear();
    for (let i = 0; i < 120; i += 1) await get('/me', keys.acmeRead);
    await age(`account:${acmeId}`, 57_000);
    const res = await get('/me', keys.acmeRead);
    expect(res.status).toBe(429);
    expect(Number(res.headers.get('retry-after'))).toBeLessThanOrEqual(5);
  });

  it('puts the headers on 400, 404 and every other authenticated answer of general routes', async () => {
    await clear();
    for (const path of ['/syncs', '/syncs/999999', '/destinations/abc', '/account/status', '/blocklists']) {
      const res = await get(path, keys.acmeRead);
      expect(res.status, path).not.toBe(429);
      expect(res.headers.get('x-ratelimit-limit'), path).toBe('120');
    }
  });

  it('puts no headers on 401, 403, discovery and health, and does not count them for the account', async () => {
    await clear();
    const unauthenticated = await get('/me', 'svcapi_notAKey0000000000000000000000');
    expect(unauthenticated.status).toBe(401);
    expect(rateHeaders(unauthenticated.headers)).toEqual({ 'x-ratelimit-limit': null, 'x-ratelimit-remaining': null, 'x-ratelimit-reset': null });
    await db.prisma.account.update({ where: { id: acmeId }, data: { canUseApi: false } });
    try {
      const forbidden = await get('/me', keys.acmeRead);
      expect(forbidden.status).toBe(403);
      expect(rateHeaders(forbidden.headers)).toEqual({ 'x-ratelimit-limit': null, 'x-ratelimit-remaining': null, 'x-ratelimit-reset': null });
    } finally {
      await db.prisma.account.update({ where: { id: acmeId }, data: { canUseApi: true } });
    }
    for (const path of ['/api/v1/openapi.json', '/api/v1/openapi.yaml', '/health', '/health/live', '/health/ready']) {
      const res = await apiFetch(`${server.baseUrl}${path}`, { headers: { authorization: `Bearer ${keys.acmeRead}` } });
      expect(res.status, path).toBe(200);
      expect(rateHeaders(res.headers), path).toEqual({ 'x-ratelimit-limit': null, 'x-ratelimit-remaining': null, 'x-ratelimit-reset': null });
    }
    const first = await get('/me', keys.acmeRead);
    expect(first.headers.get('x-ratelimit-remaining')).toBe('119');
  });
});

describe('per-IP limit: 120 per 60 s, fixed, before key validation', () => {
  it('counts requests with bad keys too, then refuses even a good key from that address, without X-RateLimit-*', async () => {
    await clear();
    const ip = '203.0.113.9';
    for (let i = 0; i < 60; i += 1) expect((await get('/me', 'svcapi_guess00000000000000000000000000', ip)).status).toBe(401);
    for (let i = 0; i < 30; i += 1) expect((await get('/me', undefined, ip)).status).toBe(401);
    for (let i = 0; i < 30; i += 1) expect((await get('/openapi.json', undefined, ip)).status).toBe(200);
    const refused = await get('/me', keys.acmeRead, ip);
    expect(refused.status).toBe(429);
    expect(refused.body).toMatchObject({ statusCode: 429, error: 'Too Many Requests' });
    expect(refused.body.message).toMatch(/IP address/);
    const wait = Number(refused.headers.get('retry-after'));
    expect(wait).toBeGreaterThanOrEqual(1);
    expect(wait).toBeLessThanOrEqual(60);
    expect(rateHeaders(refused.headers)).toEqual({ 'x-ratelimit-limit': null, 'x-ratelimit-remaining': null, 'x-ratelimit-reset': null });
    // The discovery document is under the same per-IP limit; health never is.
    expect((await get('/openapi.json', undefined, ip)).status).toBe(429);
    expect((await apiFetch(`${server.baseUrl}/health/ready`, { headers: { 'x-forwarded-for': ip } })).status).toBe(200);
    // Another address goes through, and the account never saw the refused requests.
    const other = await get('/me', keys.acmeRead, '203.0.113.10');
    expect(other.status).toBe(200);
    expect(other.headers.get('x-ratelimit-remaining')).toBe('119');
  });

  it('opens a new window 60 s after the first hit', async () => {
    await clear();
    const ip = '203.0.113.20';
    for (let i = 0; i < 120; i += 1) expect((await get('/me', undefined, ip)).status).toBe(401);
    expect((await get('/me', undefined, ip)).status).toBe(429);
    await age(`ip:${ip}`, 60_000);
    expect((await get('/me', undefined, ip)).status).toBe(401);
  });

  it('takes the client address from X-Forwarded-For only when TRUST_PROXY says so', async () => {
    await clear();
    const direct = await startTestServer(db, { ...SPEC_LIMITS, RATE_LIMIT_PER_ACCOUNT: '0' });
    try {
      // Every request claims another address; without a trusted proxy they are all 127.0.0.1.
      for (let i = 0; i < 120; i += 1) expect((await get('/me', keys.acmeRead, nextIp(), direct.baseUrl)).status).toBe(200);
      expect((await get('/me', keys.acmeRead, nextIp(), direct.baseUrl)).status).toBe(429);
      const buckets = await db.query<{ bucket: string }>("SELECT bucket FROM rate_limit_windows WHERE bucket LIKE 'ip:%'");
      expect(buckets.map((b) => b.bucket)).toEqual([expect.stringMatching(/^ip:(::ffff:)?127\.0\.0\.1$/)]);
    } finally {
      await direct.close();
    }
  });
});

describe('outreach bucket: 600 per 60 s per account, fixed, no X-RateLimit-* headers', () => {
  it('is separate from the general limits and answers the 601st lookup with Retry-After only', async () => {
    await clear();
    const ip = '203.0.113.30';
    for (let i = 0; i < 600; i += 1) {
      // One address throughout: outreach is not under the per-IP limit of general routes.
      const res = await get(`/contacts/outreach?email=lead${i}@example.com`, keys.acmeRead, ip);
      expect(res.status).toBe(200);
      if (i % 100 === 0) expect(rateHeaders(res.headers)).toEqual({ 'x-ratelimit-limit': null, 'x-ratelimit-remaining': null, 'x-ratelimit-reset': null });
    }
    const refused = await get('/contacts/outreach?email=one-more@example.com', keys.acmeWrite, ip);
    expect(refused.status).toBe(429);
    expect(refused.body.message).toMatch(/600 requests per 60 seconds/);
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect(rateHeaders(refused.headers)).toEqual({ 'x-ratelimit-limit': null, 'x-ratelimit-remaining': null, 'x-ratelimit-reset': null });
    // The general bucket of the account is untouched, and another account's outreach bucket too.
    const me = await get('/me', keys.acmeRead);
    expect(me.status).toBe(200);
    expect(me.headers.get('x-ratelimit-remaining')).toBe('119');
    expect((await get('/contacts/outreach?email=lead@example.com', keys.globexRead, ip)).status).toBe(200);
  });
});

describe('shared across API processes', () => {
  it('holds the account limit over two processes on one database', async () => {
    await clear();
    const base = {
      DATABASE_URL: db.url,
      ENCRYPTION_KEY: TEST_ENCRYPTION_KEY.toString('hex'),
      HOST: '127.0.0.1',
      LOG_LEVEL: 'info',
      ...SPEC_LIMITS,
      TRUST_PROXY: 'true',
    };
    const ports = [await freePort(), await freePort()];
    const services = ports.map((port) => startService('api', { ...base, PORT: String(port) }));
    try {
      await Promise.all(services.map((s) => s.waitFor('"msg":"started"')));
      const bases = ports.map((port) => `http://127.0.0.1:${port}`);
      for (let i = 0; i < 120; i += 1) {
        const res = await get('/me', keys.acmeRead, nextIp(), bases[i % 2]);
        expect(res.status).toBe(200);
        expect(res.headers.get('x-ratelimit-remaining')).toBe(String(119 - i));
      }
      for (const b of bases) expect((await get('/me', keys.acmeRead, nextIp(), b)).status).toBe(429);
    } finally {
      await Promise.all(services.map((s) => s.stop('SIGTERM')));
    }
  }, 90_000);
});
