/**
 * Platform webhooks end to end: the /api/v1/webhooks* routes through real HTTP (every answer checked
 * against the OpenAPI document), the real worker delivering to an HTTPS receiver on loopback whose
 * certificate the test run made (trusted through NODE_EXTRA_CA_CERTS, verification on), signatures
 * checked by Stripe's verifier, and pipelines failing and recovering against the HubSpot emulator.
 */
import { randomBytes } from 'node:crypto';
import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { createApiKey } from '../../src/admin/keys.js';
import { readSample } from '../../src/connectors/sequencers/samples.js';
import { sealSecret } from '../../src/domain/secrets.js';
import { WEBHOOK_HEADERS } from '../../src/jobs/webhook_deliveries__send.js';
import { createLogger } from '../../src/logger.js';
import { startDestinationEmulator, type DestinationEmulator } from '../../src/emulators/destination.js';
import { startHubspotEmulator, type HubspotEmulator } from '../../src/emulators/hubspot.js';
import { seedTestAccounts, type TestKeys } from '../support/accounts.js';
import { TEST_ENCRYPTION_KEY } from '../support/database.js';
import { ingest } from '../support/forwarding.js';
import { apiFetch } from '../support/openapi.js';
import { around } from '../support/rest.js';
import { startTestServer, useTestServer, type TestServer } from '../support/server.js';
import { api, deliveriesOf, verifyDelivery } from '../support/webhooks.js';
import { eventually, startTestWorker } from '../support/worker.js';

const ctx = useTestServer({ OUTBOUND_ALLOW_PRIVATE: 'true' });

let keys: TestKeys;
let connectionScopedWrite: string;
let acme: number;
let globex: number;
let receiver: DestinationEmulator;
let hubspot: HubspotEmulator;
let worker: { stop(): Promise<void> };
/** A server with OUTBOUND_ALLOW_PRIVATE off, for the address rule at create and update. */
let strict: TestServer;
/** Everything the worker logged, to prove no secret reaches a log line. */
const logged: string[] = [];
/** Every signing secret the API showed. */
const issued: string[] = [];

const call = (method: string, path: string, body?: unknown, key: string = keys.acmeWrite) => api(ctx.server.baseUrl, method, path, key, body);

beforeAll(async () => {
  const ids = await seedTestAccounts(ctx.db.prisma);
  keys = ids.keys;
  acme = ids.accounts.acme!;
  globex = ids.accounts.globex!;
  connectionScopedWrite = (
    await createApiKey(ctx.db.prisma, { accountId: acme, name: 'scoped writer', scopes: ['read', 'write'], connectionId: ids.connections['acme-hubspot']! })
  ).key;
  // The seeded endpoint points at a host that does not exist: out of the way of these tests.
  await ctx.db.prisma.webhookEndpoint.updateMany({ where: { accountId: acme }, data: { isActive: false } });
  receiver = await startDestinationEmulator({ tls: inject('testCertificate') });
  hubspot = await startHubspotEmulator({ accessToken: 'webhooks-hubspot-token' });
  strict = await startTestServer(ctx.db, {});
  const logger = createLogger(
    'debug',
    new Writable({
      write(chunk: Buffer, _encoding, done) {
        logged.push(chunk.toString('utf8'));
        done();
      },
    }),
  );
  worker = await startTestWorker(
    ctx.db.url,
    { urls: { HUBSPOT: hubspot.url } },
    { logger, webhooks: { retrySchedule: [0.05, 0.05], attemptTimeoutMs: 1_000, maxInFlight: 8 } },
  );
});

afterAll(async () => {
  await worker?.stop();
  await strict?.close();
  await receiver?.close();
  await hubspot?.close();
});

/** Registers an endpoint at `path` on the receiver; returns its id and secret. */
async function register(path: string, extra: Record<string, unknown> = {}): Promise<{ id: string; secret: string; url: string }> {
  const res = await call('POST', '/webhooks', { url: `${receiver.url}${path}`, ...extra });
  expect(res.status).toBe(201);
  issued.push(res.body.secret as string);
  return { id: res.body.id as string, secret: res.body.secret as string, url: res.body.url as string };
}

/** Sends a test ping to the endpoint and returns its event id. */
async function ping(endpointId: string): Promise<string> {
  const res = await call('POST', `/webhooks/${endpointId}/test`);
  expect(res.status).toBe(202);
  return res.body.eventId as string;
}

/** Waits until every delivery of the endpoint is final (SUCCEEDED or DEAD) and there are `count` of them. */
function settled(endpointId: string, count: number, ms = 15_000) {
  return eventually(
    async () => {
      const rows = await deliveriesOf(ctx.db, endpointId);
      return rows.length === count && rows.every((r) => r.status !== 'PENDING') ? rows : undefined;
    },
    ms,
    `${count} settled deliveries of ${endpointId}`,
  );
}

describe('endpoint management', () => {
  it('creates an endpoint and shows its signing secret once, never in a list or a get', async () => {
    const res = await call('POST', '/webhooks', { url: `${receiver.url}/managed`, description: 'On-call', enabledEvents: ['sync.failed', 'sync.failed'] });
    expect(res.status).toBe(201);
    expect(res.body).toEqual({
      id: expect.stringMatching(/^svcwh_/),
      url: `${receiver.url}/managed`,
      description: 'On-call',
      enabledEvents: ['sync.failed'],
      isActive: true,
      disabledReason: null,
      disabledAt: null,
      createdAt: expect.any(String),
      updatedAt: expect.any(String),
      secret: expect.stringMatching(/^svcwhsec_[0-9a-f]{64}$/),
    });
    const { id, secret } = res.body as { id: string; secret: string };
    const stored = await ctx.db.query<{ secret_encrypted: string }>('SELECT secret_encrypted FROM webhook_endpoints WHERE public_id = $1', [id]);
    expect(stored[0]!.secret_encrypted).not.toContain(secret.slice('svcwhsec_'.length));

    const list = await call('GET', '/webhooks', undefined, keys.acmeRead);
    expect(list.status).toBe(200);
    expect(list.body.webhooks.map((w: { id: string }) => w.id)).toContain(id);
    const one = await call('GET', `/webhooks/${id}`, undefined, keys.acmeRead);
    expect(one.body).toMatchObject({ id, description: 'On-call' });
    expect(list.text + one.text).not.toContain(secret);
  });

  it('updates fields, refuses an update with nothing in it, and deletes (then 404)', async () => {
    const { id } = await register('/to-update');
    const changed = await call('PATCH', `/webhooks/${id}`, { description: 'changed', enabledEvents: [] });
    expect(changed.status).toBe(200);
    expect(changed.body).toMatchObject({ id, description: 'changed', enabledEvents: [] });
    expect((await call('PATCH', `/webhooks/${id}`, {})).status).toBe(400);
    const deleted = await call('DELETE', `/webhooks/${id}`);
    expect(deleted.status).toBe(200);
    expect(deleted.body).toEqual({ id, deleted: true });
    for (const [method, path] of [
      ['GET', `/webhooks/${id}`],
      ['PATCH', `/webhooks/${id}`],
      ['POST', `/webhooks/${id}/test`],
    ] as const) {
      const res = await call(method, path, method === 'PATCH' ? { description: 'x' } : undefined);
      expect(res.status).toBe(404);
      expect(res.body.message).toBe(`Webhook endpoint ${id} not found`);
    }
  });

  it('answers 400 naming each rule a body breaks, and never echoes a secret or a password', async () => {
    const cases: Array<[unknown, string | RegExp]> = [
      [{ url: 'http://hooks.example.com/x' }, 'url must use https://'],
      [{ url: `https://user:hunter2@${new URL(receiver.url).host}/x` }, 'url must not contain credentials'],
      [{ url: `https://hooks.example.com/${'a'.repeat(2048)}` }, 'url must be at most 2048 characters'],
      [{ url: 'not a url' }, 'url must be an absolute https:// URL'],
      [
        { url: `${receiver.url}/x`, enabledEvents: ['sync.failed', 'sync.exploded'] },
        /unknown event types \(sync\.exploded\); known types: sync\.failed, sync\.recovered, test\.ping/,
      ],
      [{ description: 'no url' }, 'url is required'],
      [{ url: `${receiver.url}/x`, isActive: 'yes' }, 'isActive must be a boolean'],
      [{ url: `${receiver.url}/x`, secret: 'svcwhsec_mine' }, 'unknown field secret'],
    ];
    for (const [body, message] of cases) {
      const res = await call('POST', '/webhooks', body);
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect([res.body.message].flat().join('; ')).toMatch(message);
      expect(res.text).not.toContain('hunter2');
    }
    const notJson = await apiPost('/webhooks', '{"url":', 'application/json');
    expect(notJson.status).toBe(400);
    expect(notJson.body.message).toBe('Request body is not valid JSON');
    const text = await apiPost('/webhooks', JSON.stringify({ url: `${receiver.url}/x` }), 'text/plain');
    expect(text.status).toBe(400);
    expect(text.body.message).toBe('Request body must be JSON (Content-Type: application/json)');
  });

  it('refuses private, loopback and link-local targets, and names resolving to them, unless OUTBOUND_ALLOW_PRIVATE', async () => {
    for (const host of ['127.0.0.1', '10.1.2.3', '169.254.169.254', '[::1]', 'localhost']) {
      const res = await api(strict.baseUrl, 'POST', '/webhooks', keys.acmeWrite, { url: `https://${host}/hook` });
      expect(res.status, host).toBe(400);
      expect(res.body.message).toEqual(['url must not be or resolve to a private, loopback or link-local address']);
    }
    const plain = await api(strict.baseUrl, 'POST', '/webhooks', keys.acmeWrite, { url: 'http://127.0.0.1/hook' });
    expect(plain.body.message).toEqual(['url must use https://']);
    // At update too.
    const { id } = await register('/strict-update');
    const update = await api(strict.baseUrl, 'PATCH', `/webhooks/${id}`, keys.acmeWrite, { url: 'https://169.254.169.254/latest/meta-data' });
    expect(update.status).toBe(400);
  });

  it('answers 404 naming ids of another account, of nothing, and of the wrong kind', async () => {
    const other = await ctx.db.prisma.webhookEndpoint.create({
      data: { publicId: 'svcwh_otheraccount01', accountId: globex, url: 'https://globex.test/hook', secretEncrypted: sealSecret(TEST_ENCRYPTION_KEY, 'x') },
    });
    for (const id of [other.publicId, 'svcwh_nothing', 'svcevt_wrongkind', '12']) {
      const res = await call('GET', `/webhooks/${id}`);
      expect(res.status).toBe(404);
      expect(res.body.message).toBe(`Webhook endpoint ${id} not found`);
    }
    const { id } = await register('/replay-404');
    const res = await call('POST', `/webhooks/${id}/deliveries/svcwhd_nothing/replay`);
    expect(res.status).toBe(404);
    expect(res.body.message).toBe('Webhook delivery svcwhd_nothing not found');
  });
});

describe('access, in the order the spec gives', () => {
  it('refuses connection-scoped keys first, then accounts without the capability, then keys without write, before any lookup or body', async () => {
    const expectations: Array<[string, string, string, unknown, string]> = [
      // A connection-scoped key, even with write, on reads and mutations alike.
      [connectionScopedWrite, 'GET', '/webhooks', undefined, 'Webhook endpoint management requires an account-scoped API key'],
      [connectionScopedWrite, 'POST', '/webhooks', { url: 'bad' }, 'Webhook endpoint management requires an account-scoped API key'],
      [keys.acmeHubspotOnly, 'DELETE', '/webhooks/svcwh_nothing', undefined, 'Webhook endpoint management requires an account-scoped API key'],
      // Without the capability (globex), before the write scope.
      [keys.globexRead, 'GET', '/webhooks', undefined, 'Platform webhooks are not enabled for this account'],
      [keys.globexRead, 'POST', '/webhooks/svcwh_nothing/test', undefined, 'Platform webhooks are not enabled for this account'],
      // Without write: before the body is read and before the id is looked up.
      [keys.acmeRead, 'POST', '/webhooks', { url: 'bad' }, "This endpoint requires the 'write' scope"],
      [keys.acmeRead, 'PATCH', '/webhooks/svcwh_nothing', { isActive: 'nope' }, "This endpoint requires the 'write' scope"],
      [keys.acmeRead, 'POST', '/webhooks/svcwh_nothing/rotate-secret', undefined, "This endpoint requires the 'write' scope"],
      [keys.acmeRead, 'POST', '/webhooks/svcwh_nothing/deliveries/svcwhd_nothing/replay', undefined, "This endpoint requires the 'write' scope"],
    ];
    for (const [key, method, path, body, message] of expectations) {
      const res = await api(ctx.server.baseUrl, method, path, key, body);
      expect(res.status, `${method} ${path}`).toBe(403);
      expect(res.body.message, `${method} ${path}`).toBe(message);
    }
    expect((await api(ctx.server.baseUrl, 'GET', '/webhooks', 'svcapi_nonsense')).status).toBe(401);
  });
});

describe('delivery', () => {
  it('delivers a test ping, signed (verified by Stripe), with the event and delivery ids, and lists both', async () => {
    const { id, secret } = await register('/ping');
    const eventId = await ping(id);
    const [delivery] = await settled(id, 1);
    expect(delivery).toMatchObject({ status: 'SUCCEEDED', attempts: 1, last_http_status: 200, event_type: 'test.ping', event_public_id: eventId });
    const [request] = receiver.on('/ping');
    expect(request!.headers[WEBHOOK_HEADERS.eventId]).toBe(eventId);
    expect(request!.headers[WEBHOOK_HEADERS.deliveryId]).toBe(delivery!.public_id);
    expect(request!.headers['content-type']).toBe('application/json');
    const event = verifyDelivery(request!, secret);
    expect(event).toEqual({
      id: eventId,
      type: 'test.ping',
      created: expect.any(String),
      summary: expect.any(String),
      data: { endpointId: id, message: expect.any(String) },
    });
    // A stale timestamp is refused, and so is another secret.
    const t = Number(/t=(\d+)/.exec(request!.headers[WEBHOOK_HEADERS.signature] as string)![1]);
    expect(() => verifyDelivery(request!, secret, (t + 301) * 1000)).toThrow(/Timestamp outside the tolerance zone/);
    expect(() => verifyDelivery(request!, `svcwhsec_${'0'.repeat(64)}`)).toThrow();

    const events = await call('GET', `/events?${around()}&type=test.ping`, undefined, keys.acmeRead);
    expect(events.body.data.map((e: { id: string }) => e.id)).toContain(eventId);
    const listed = await call('GET', `/webhooks/${id}/deliveries?${around()}`, undefined, keys.acmeRead);
    expect(listed.status).toBe(200);
    expect(listed.body.data).toEqual([
      expect.objectContaining({
        id: delivery!.public_id,
        endpointId: id,
        eventId,
        eventType: 'test.ping',
        status: 'SUCCEEDED',
        attempts: 1,
        lastHttpStatus: 200,
      }),
    ]);
    const filtered = await call('GET', `/webhooks/${id}/deliveries?${around()}&status=DEAD`, undefined, keys.acmeRead);
    expect(filtered.body.data).toEqual([]);
  });

  it('fans a failing then recovering pipeline out to the endpoints that take each type, in order', async () => {
    const all = await register('/fan-all');
    const recoveredOnly = await register('/fan-recovered', { enabledEvents: ['sync.recovered'] });
    const disabled = await register('/fan-disabled', { isActive: false });
    const connection = await ctx.db.prisma.connection.create({
      data: {
        accountId: acme,
        crm: 'HUBSPOT',
        credentialsEncrypted: sealSecret(TEST_ENCRYPTION_KEY, JSON.stringify({ accessToken: 'webhooks-not-yet-valid' })),
      },
    });
    await ctx.db.prisma.source.create({ data: { connectionId: connection.id, platform: 'smartlead', ingressCode: 'webhooksFanOut01' } });
    const body = readSample('smartlead', 'EMAIL_SENT.json');

    // The CRM refuses the token: the pipeline fails at once.
    await ingest(ctx.server.baseUrl, 'webhooksFanOut01', body);
    await settled(all.id, 1);
    hubspot.accessTokens.add('webhooks-not-yet-valid');
    await ingest(ctx.server.baseUrl, 'webhooksFanOut01', body);
    const delivered = await settled(all.id, 2);
    expect(delivered.map((d) => d.event_type)).toEqual(['sync.failed', 'sync.recovered']);
    expect((await settled(recoveredOnly.id, 1)).map((d) => d.event_type)).toEqual(['sync.recovered']);
    expect(await deliveriesOf(ctx.db, disabled.id)).toEqual([]);

    const received = receiver.on('/fan-all').map((r) => verifyDelivery(r, all.secret));
    expect(received.map((e) => e.type)).toEqual(['sync.failed', 'sync.recovered']);
    expect(received[0]).toMatchObject({ data: { connectionId: connection.id, crm: 'HUBSPOT', sourcePlatform: 'smartlead', reason: expect.any(String) } });
  });

  it('retries failures, honours Retry-After on 429, and ends DEAD when the schedule is spent', async () => {
    const flaky = await register('/flaky');
    receiver.answerNext(2, { status: 500, body: 'upstream down' }, '/flaky');
    await ping(flaky.id);
    expect(await settled(flaky.id, 1)).toMatchObject([{ status: 'SUCCEEDED', attempts: 3, last_http_status: 200 }]);

    const limited = await register('/limited');
    receiver.answerNext(1, { status: 429, headers: { 'retry-after': '1' } }, '/limited');
    await ping(limited.id);
    await settled(limited.id, 1);
    const [first, second] = receiver.on('/limited');
    expect(second!.at - first!.at).toBeGreaterThanOrEqual(950);

    const broken = await register('/broken');
    receiver.answerAlways({ status: 500, body: 'x'.repeat(5000) }, '/broken');
    await ping(broken.id);
    const [dead] = await settled(broken.id, 1);
    expect(dead).toMatchObject({ status: 'DEAD', attempts: 3, last_http_status: 500, last_error: 'HTTP 500 from the endpoint' });
    const listed = await call('GET', `/webhooks/${broken.id}/deliveries?${around()}`, undefined, keys.acmeRead);
    expect(listed.body.data[0]).toMatchObject({ status: 'DEAD', nextAttemptAt: null });
    expect(Buffer.byteLength(listed.body.data[0].responseExcerpt)).toBe(1024);

    const moved = await register('/moved');
    receiver.answerAlways({ status: 301, headers: { location: 'https://elsewhere.test/' } }, '/moved');
    await ping(moved.id);
    expect((await settled(moved.id, 1))[0]).toMatchObject({
      status: 'DEAD',
      last_http_status: 301,
      last_error: expect.stringMatching(/redirects are not followed/),
    });
  });

  it('disables an endpoint at exactly 20 DEAD deliveries in a row, not 19; a success resets the count; re-enabling resets it', async () => {
    const endpoint = await register('/dead-run');
    receiver.answerAlways({ status: 503 }, '/dead-run');
    const deadPings = async (n: number, total: number) => {
      for (let i = 0; i < n; i += 1) await ping(endpoint.id);
      await settled(endpoint.id, total, 30_000);
    };
    const state = async () => (await call('GET', `/webhooks/${endpoint.id}`, undefined, keys.acmeRead)).body;

    await deadPings(19, 19);
    expect(await state()).toMatchObject({ isActive: true, disabledReason: null });
    // One success between runs resets the count.
    receiver.answerNext(1, { status: 200 }, '/dead-run');
    await deadPings(1, 20);
    await deadPings(19, 39);
    expect(await state()).toMatchObject({ isActive: true });
    await deadPings(1, 40);
    expect(await state()).toMatchObject({ isActive: false, disabledReason: '20 consecutive deliveries failed every attempt', disabledAt: expect.any(String) });

    // Disabled: a pipeline event no longer reaches it; a test ping (asked for) still does.
    const re = await call('PATCH', `/webhooks/${endpoint.id}`, { isActive: true });
    expect(re.body).toMatchObject({ isActive: true, disabledReason: null, disabledAt: null });
    const [row] = await ctx.db.query<{ n: number }>('SELECT consecutive_dead_count AS n FROM webhook_endpoints WHERE public_id = $1', [endpoint.id]);
    expect(row!.n).toBe(0);
  });

  it('disables an endpoint at once on 410 Gone, and re-enables it on request', async () => {
    const gone = await register('/gone');
    receiver.answerNext(1, { status: 410 }, '/gone');
    await ping(gone.id);
    expect((await settled(gone.id, 1))[0]).toMatchObject({ status: 'DEAD', attempts: 1, last_http_status: 410 });
    const after = await call('GET', `/webhooks/${gone.id}`, undefined, keys.acmeRead);
    expect(after.body).toMatchObject({ isActive: false, disabledReason: 'The endpoint answered 410 Gone' });
    expect((await call('PATCH', `/webhooks/${gone.id}`, { isActive: true })).body).toMatchObject({ isActive: true });
  });

  it('replays a delivery as a new one linked to it, freshly signed, whatever the states', async () => {
    const endpoint = await register('/replayed');
    receiver.answerAlways({ status: 500 }, '/replayed');
    const eventId = await ping(endpoint.id);
    const [dead] = await settled(endpoint.id, 1);
    await call('PATCH', `/webhooks/${endpoint.id}`, { isActive: false });
    receiver.answerAlways({ status: 200 }, '/replayed');

    const res = await call('POST', `/webhooks/${endpoint.id}/deliveries/${dead!.public_id}/replay`);
    expect(res.status).toBe(202);
    expect(res.body).toMatchObject({ id: expect.stringMatching(/^svcwhd_/), eventId, status: 'PENDING', attempts: 0, replayOfDeliveryId: dead!.public_id });
    const rows = await settled(endpoint.id, 2);
    expect(rows[1]).toMatchObject({ public_id: res.body.id, status: 'SUCCEEDED', replay_of_delivery_id: dead!.id });
    const last = receiver.on('/replayed').at(-1)!;
    expect(last.headers[WEBHOOK_HEADERS.deliveryId]).toBe(res.body.id);
    expect(last.headers[WEBHOOK_HEADERS.eventId]).toBe(eventId);
    expect(verifyDelivery(last, endpoint.secret).id).toBe(eventId);
  });

  it('signs with both secrets for the day after a rotation, so either verifies', async () => {
    const endpoint = await register('/rotated');
    const rotated = await call('POST', `/webhooks/${endpoint.id}/rotate-secret`);
    expect(rotated.status).toBe(200);
    expect(rotated.body).toMatchObject({ id: endpoint.id, secret: expect.stringMatching(/^svcwhsec_/) });
    expect(rotated.body.secret).not.toBe(endpoint.secret);
    issued.push(rotated.body.secret as string);
    await ping(endpoint.id);
    await settled(endpoint.id, 1);
    const [request] = receiver.on('/rotated');
    expect((request!.headers[WEBHOOK_HEADERS.signature] as string).match(/v1=/g)).toHaveLength(2);
    expect(verifyDelivery(request!, rotated.body.secret as string).type).toBe('test.ping');
    expect(verifyDelivery(request!, endpoint.secret).type).toBe('test.ping');

    // Once the day is over, the old secret no longer signs.
    await ctx.db.query("UPDATE webhook_endpoints SET previous_secret_expires_at = now() - interval '1 second' WHERE public_id = $1", [endpoint.id]);
    await ping(endpoint.id);
    await settled(endpoint.id, 2);
    const later = receiver.on('/rotated')[1]!;
    expect((later.headers[WEBHOOK_HEADERS.signature] as string).match(/v1=/g)).toHaveLength(1);
    expect(() => verifyDelivery(later, endpoint.secret)).toThrow();
  });

  it('keeps a hanging endpoint from delaying another', async () => {
    const slow = await register('/hanging');
    const fast = await register('/prompt');
    receiver.answerAlways({ hang: true }, '/hanging');
    for (let i = 0; i < 8; i += 1) await ping(slow.id);
    const started = Date.now();
    await ping(fast.id);
    await settled(fast.id, 1, 5_000);
    expect(Date.now() - started).toBeLessThan(900);
    const hung = await settled(slow.id, 8, 20_000);
    expect(hung.every((d) => d.status === 'DEAD' && d.last_http_status === null && /timed out/.test(d.last_error ?? ''))).toBe(true);
  });

  it('refuses at send time a URL that breaks the https rule, whatever put it there', async () => {
    const endpoint = await register('/later-http');
    await ctx.db.query('UPDATE webhook_endpoints SET url = $1 WHERE public_id = $2', [
      `http://127.0.0.1:${new URL(receiver.url).port}/later-http`,
      endpoint.id,
    ]);
    await ping(endpoint.id);
    const [dead] = await settled(endpoint.id, 1);
    expect(dead).toMatchObject({ status: 'DEAD', last_http_status: null, last_error: 'Not sent: url must use https://' });
    expect(receiver.on('/later-http')).toEqual([]);
  });

  it('ends DEAD after three failures on our side (a secret that no longer opens), and not counted against the endpoint', async () => {
    const endpoint = await register('/unopenable');
    // A secret sealed under another key (a botched key rotation): opening it throws, the same way on every try.
    await ctx.db.query('UPDATE webhook_endpoints SET secret_encrypted = $1 WHERE public_id = $2', [sealSecret(randomBytes(32), endpoint.secret), endpoint.id]);
    await ping(endpoint.id);
    const [dead] = await settled(endpoint.id, 1);
    expect(dead).toMatchObject({
      status: 'DEAD',
      attempts: 0,
      last_http_status: null,
      last_error: expect.stringMatching(/^Not attempted again: failed on our side, not the endpoint's fault \(it may have received an attempt\): /),
    });
    expect(dead!.last_error).not.toContain(endpoint.secret);
    expect(receiver.on('/unopenable')).toEqual([]);
    // Three failures on our side, no fewer: the third made it DEAD.
    const [failures] = await ctx.db.query<{ internal_failures: number }>(
      'SELECT d.internal_failures FROM webhook_deliveries d JOIN webhook_endpoints e ON e.id = d.endpoint_id WHERE e.public_id = $1',
      [endpoint.id],
    );
    expect(failures).toEqual({ internal_failures: 3 });
    const [counts] = await ctx.db.query<{ consecutive_dead_count: number; is_active: boolean }>(
      'SELECT consecutive_dead_count, is_active FROM webhook_endpoints WHERE public_id = $1',
      [endpoint.id],
    );
    expect(counts).toEqual({ consecutive_dead_count: 0, is_active: true });
    const listed = await call('GET', `/webhooks/${endpoint.id}/deliveries?${around()}`, undefined, keys.acmeRead);
    expect(listed.body.data[0]).toMatchObject({ status: 'DEAD', nextAttemptAt: null });
  });

  it('never puts a signing secret in an event, a delivery or a log line', async () => {
    expect(issued.length).toBeGreaterThan(10);
    const events = await call('GET', `/events?${around()}&limit=500`, undefined, keys.acmeRead);
    const endpoints = await call('GET', '/webhooks', undefined, keys.acmeRead);
    const deliveries = await Promise.all(
      (endpoints.body.webhooks as Array<{ id: string }>).map((w) => call('GET', `/webhooks/${w.id}/deliveries?${around()}`, undefined, keys.acmeRead)),
    );
    const stored = JSON.stringify([
      await ctx.db.query('SELECT * FROM platform_events'),
      await ctx.db.query('SELECT public_id, last_error, response_excerpt FROM webhook_deliveries'),
    ]);
    const log = logged.join('');
    expect(log.length).toBeGreaterThan(0);
    for (const text of [events.text, endpoints.text, ...deliveries.map((d) => d.text), stored, log]) {
      for (const secret of issued) expect(text).not.toContain(secret);
      expect(text).not.toMatch(/svcwhsec_[0-9a-f]{64}/);
    }
  });
});

/** A raw POST with a chosen content type (checked against the OpenAPI document like every answer). */
function apiPost(path: string, body: string, contentType: string) {
  return apiFetch(`${ctx.server.baseUrl}/api/v1${path}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${keys.acmeWrite}`, 'content-type': contentType },
    body,
  });
}
