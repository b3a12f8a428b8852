/**
 * The secret scan (issue 20): one run of the whole pipeline at the most verbose log level (trace, in the
 * API server and in the worker) with known secrets in play, then a scan for each of them, byte for byte,
 * in every log line, every response body (and header) the run received, and every stored text the service
 * writes from what outside systems answered (plus what it sent out: forwarded requests, webhook deliveries,
 * relay emails, HubSpot records). Any hit fails the test, naming the secret and where it was; the scan is
 * first shown to have material (lines logged at debug, the email sent, the webhook delivered, each secret
 * in use) so it cannot pass on nothing.
 *
 * The secrets: an API key (seeded), the HubSpot access token, refresh token and OAuth client secret (and
 * the tokens the emulator issues when the connector refreshes), a platform webhook endpoint's signing
 * secret, the SMTP password of the reply relays' mail server (and its base64 forms, as AUTH sends it), the
 * support staff token, and the wrong API key and staff token the run presents.
 *
 * The run: an EMAIL_SENT and a Smartlead EMAIL_REPLY go in at the ingress of a source on the HubSpot
 * connection bound to a forwarding destination (which fails once) and to a reply relay (delay 0) sending
 * through an SMTP server that requires AUTH (and refuses once); the HubSpot emulator expires the access
 * token before the reply, so the connector refreshes it; then it expires the tokens again and forgets the
 * refresh token, so the next sync fails and a sync.failed event goes to the webhook endpoint (over HTTPS,
 * failing once). REST calls with the key (and one with a wrong key), a test ping, and explorer queries with
 * the staff token (and one with a wrong token) read everything back.
 */
import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { seedFixture } from '../../src/admin/seed.js';
import { createLogger } from '../../src/logger.js';
import { startDestinationEmulator, type DestinationEmulator } from '../../src/emulators/destination.js';
import { startHubspotEmulator, type HubspotEmulator } from '../../src/emulators/hubspot.js';
import { startSmtpEmulator, type SmtpEmulator } from '../../src/emulators/smtp.js';
import { createTestDatabase, TEST_ENCRYPTION_KEY, type TestDatabase } from '../support/database.js';
import { settled, smartleadEvent } from '../support/forwarding.js';
import { RELAY_FROM, smartleadReplySample } from '../support/relays.js';
import { around } from '../support/rest.js';
import { startTestServer, type TestServer } from '../support/server.js';
import { api, verifyDelivery } from '../support/webhooks.js';
import { eventually, startTestWorker } from '../support/worker.js';

/** Known secrets, long and distinctive (letters, digits and dashes: the same in JSON, URLs and form bodies). */
const HUBSPOT = {
  accessToken: 'scan-hubspot-access-token-5b1e9c2d7a4f8e3b',
  refreshToken: 'scan-hubspot-refresh-token-9d3f6a1c8e2b7d4f',
  clientId: 'scan-hubspot-client-id',
  clientSecret: 'scan-hubspot-client-secret-2e8a4c6f1b9d3e7a',
};
const SMTP_AUTH = { user: 'scan-relay-mailer', pass: 'scan-smtp-password-Qm7Vx2Lk9Rt4Wz8Np3Hs6Jd1Fg5' };
const WEBHOOK_SECRET = 'svcwhsec_scanWebhookSigningSecret7c3e9a1f5b2d8e4a';
const STAFF_TOKEN = 'scan-staff-token-4a8c2e6f0b3d7f1e9c5a';
const WRONG_API_KEY = 'svcapi_scanWrongKey8f2d6b1e9c4a7f3d';
const WRONG_STAFF_TOKEN = 'scan-wrong-staff-token-6e1b9d4f2a8c3e7b';
const INGRESS_CODE = 'secretScanSmartlead01';
const CC_EMAIL = 'scan.rep@reps.test';

let db: TestDatabase;
let server: TestServer;
let hubspot: HubspotEmulator;
let destination: DestinationEmulator;
let receiver: DestinationEmulator;
let smtp: SmtpEmulator;
let worker: { stop(): Promise<void> } | undefined;
let apiKey: string;
let accountId: number;
let endpointId: string;

/** Every log line, by process. */
const logs = { server: [] as string[], worker: [] as string[] };
/** Every answer the run received: where it came from, its headers and its body. */
const responses: Array<{ where: string; text: string }> = [];

/** A stream collecting a logger's lines into `lines`. */
function capture(lines: string[]): Writable {
  return new Writable({
    write(chunk: Buffer, _encoding, done) {
      lines.push(
        ...chunk
          .toString('utf8')
          .split('\n')
          .filter((line) => line.trim() !== ''),
      );
      done();
    },
  });
}

/** Fetches and keeps the answer (headers and body) for the scan. */
async function fetchKept(where: string, url: string, init: RequestInit = {}): Promise<{ status: number; text: string }> {
  const res = await fetch(url, init);
  const text = await res.text();
  responses.push({ where, text: `${JSON.stringify(Object.fromEntries(res.headers))}\n${text}` });
  return { status: res.status, text };
}

/** POSTs a sequencer event at the ingress; returns the request id. */
async function ingest(body: string): Promise<number> {
  const res = await fetchKept(`POST /webhooks/<code>`, `${server.baseUrl}/webhooks/${INGRESS_CODE}`, {
    method: 'POST',
    body,
    headers: { 'content-type': 'application/json' },
  });
  expect(res.status).toBe(200);
  return (JSON.parse(res.text) as { requestId: number }).requestId;
}

/** An /api/v1 call (checked against the OpenAPI document), kept for the scan. */
async function rest(method: string, path: string, key: string = apiKey) {
  const res = await api(server.baseUrl, method, path, key);
  responses.push({
    where: `${method} /api/v1${path}${key === apiKey ? '' : ' (wrong key)'}`,
    text: `${JSON.stringify(Object.fromEntries(res.headers))}\n${res.text}`,
  });
  return res;
}

/** An explorer query, kept for the scan. */
async function explorer(query: string, variables: Record<string, unknown> = {}, token = STAFF_TOKEN) {
  const res = await fetchKept(
    `POST /graphql${token === STAFF_TOKEN ? '' : ' (wrong token)'}: ${query.slice(0, 60).replace(/\s+/g, ' ')}`,
    `${server.baseUrl}/graphql`,
    {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
      body: JSON.stringify({ query, variables }),
    },
  );
  return JSON.parse(res.text) as { data?: Record<string, unknown>; errors?: Array<{ message: string }> };
}

beforeAll(async () => {
  // Setup: the outside systems, each holding its secret.
  hubspot = await startHubspotEmulator({ ...HUBSPOT, rotateRefreshTokens: true });
  destination = await startDestinationEmulator();
  receiver = await startDestinationEmulator({ tls: inject('testCertificate') });
  smtp = await startSmtpEmulator({ auth: SMTP_AUTH });
  expect(smtp.url).toContain(SMTP_AUTH.pass);

  // An account whose HubSpot connection (with OAuth refresh) has a source bound to a destination and a relay.
  db = await createTestDatabase();
  const seeded = await seedFixture(
    db.prisma,
    {
      accounts: [
        {
          ref: 'scan',
          email: 'owner@scan.test',
          connections: [
            {
              ref: 'scan-hubspot',
              crm: 'HUBSPOT',
              credentials: HUBSPOT,
              destinations: [{ ref: 'scan-mirror', url: `${destination.url}/mirror` }],
              replyRelays: [{ ref: 'scan-relay', ccEmail: CC_EMAIL, delayMinutes: 0, bodyTemplates: ['Reply from {{lead_email}}:\n\n{{reply_text}}'] }],
              sources: [
                {
                  ref: 'scan-source',
                  platform: 'smartlead',
                  ingressCode: INGRESS_CODE,
                  destinations: [{ destination: 'scan-mirror', eventTypes: [] }],
                  replyRelay: 'scan-relay',
                },
              ],
            },
          ],
          apiKeys: [{ ref: 'scan-key', name: 'Secret scan key', scopes: ['read', 'write'] }],
          webhookEndpoints: [{ ref: 'scan-ops', url: `${receiver.url}/scan-ops`, enabledEvents: [], secret: WEBHOOK_SECRET }],
        },
      ],
    },
    TEST_ENCRYPTION_KEY,
  );
  apiKey = seeded.generatedSecrets['scan-key']!;
  accountId = seeded.accounts.scan!;
  endpointId = seeded.webhookEndpoints['scan-ops']!;

  // The server and the worker, both logging at trace into memory, with the secrets in their configuration.
  server = await startTestServer(
    db,
    { SUPPORT_TOKENS: `scanner:${STAFF_TOKEN}`, SMTP_URL: smtp.url, LOG_LEVEL: 'trace', OUTBOUND_ALLOW_PRIVATE: 'true' },
    { level: 'trace', stream: capture(logs.server) },
  );
  worker = await startTestWorker(
    db.url,
    { urls: { HUBSPOT: hubspot.url } },
    {
      logger: createLogger('trace', capture(logs.worker)),
      forwarding: { retrySchedule: [0.1, 0.1], attemptTimeoutMs: 2_000 },
      relays: { smtpUrl: smtp.url, from: RELAY_FROM, retrySchedule: [0.2, 0.2] },
      webhooks: { retrySchedule: [0.1, 0.1], attemptTimeoutMs: 2_000 },
    },
  );
});

afterAll(async () => {
  await worker?.stop();
  await server?.close();
  await db?.drop();
  await hubspot?.close();
  await destination?.close();
  await receiver?.close();
  await smtp?.close();
});

/** The stored text the service writes from outside answers (and what it keeps of its own errors), by table. */
const STORED: Array<[string, string]> = [
  ['syncs.error', 'SELECT id, error::text AS text FROM syncs'],
  ['deliveries.error', 'SELECT id, error::text AS text FROM deliveries'],
  ['relay_executions', "SELECT id, concat_ws(E'\\n', reason, smtp_response, attempt_log::text) AS text FROM relay_executions"],
  ['webhook_deliveries', "SELECT id, concat_ws(E'\\n', last_error, response_excerpt) AS text FROM webhook_deliveries"],
  ['blocklists.last_error', 'SELECT id, last_error AS text FROM blocklists'],
  ['audit_log', "SELECT id, concat_ws(E'\\n', staff, action, arguments::text, result::text) AS text FROM audit_log"],
  ['platform_events', "SELECT id, concat_ws(E'\\n', summary, data::text) AS text FROM platform_events"],
  ['graphile_worker jobs', "SELECT id, concat_ws(E'\\n', payload::text, last_error) AS text FROM graphile_worker._private_jobs"],
];

describe('the secret scan', () => {
  it('finds no secret in any log line, response or stored error of a whole pipeline run at trace level', { timeout: 30_000 }, async () => {
    // Action 1: an event with the original token, then a reply after the token expired (one OAuth refresh).
    destination.answerNext(1, { status: 500, body: 'mirror briefly down' });
    smtp.failNext(451, 1);
    const sent = await ingest(smartleadEvent('EMAIL_SENT', 'ada@prospect.test'));
    await eventually(async () => ((await syncStatus(sent)) === 'success' ? true : undefined), 10_000, 'the first sync');
    hubspot.expireAccessTokens();
    const replied = await ingest(smartleadReplySample('ada@prospect.test', '<scan-reply-1@prospect.test>'));
    await eventually(async () => ((await syncStatus(replied)) === 'success' ? true : undefined), 10_000, 'the reply sync, after a refresh');
    expect(hubspot.tokenRefreshes.length).toBe(1);

    // Action 2: the tokens expire again and the refresh token is refused: the pipeline fails (sync.failed).
    const issued = [...hubspot.accessTokens, ...hubspot.expiredTokens, ...hubspot.refreshTokens];
    hubspot.expireAccessTokens();
    hubspot.refreshTokens.clear();
    receiver.answerNext(1, { status: 500, body: 'receiver briefly down' }, '/scan-ops');
    const failed = await ingest(smartleadEvent('EMAIL_SENT', 'bob@prospect.test'));
    await eventually(async () => ((await syncStatus(failed)) === 'error' ? true : undefined), 10_000, 'the failing sync');

    // Wait until the work is done: outcomes and deliveries recorded, the relay email sent, sync.failed delivered.
    await settled(db, [sent, replied, failed], 10_000);
    await eventually(
      async () => ((await db.query("SELECT 1 FROM relay_executions WHERE status = 'sent'")).length === 1 ? true : undefined),
      10_000,
      'the relay email sent',
    );
    await webhookDeliveriesDone(1);

    // Action 3: read it all back through REST (with the key, and once with a wrong key) and a test ping.
    const window = around();
    expect((await rest('GET', '/me')).status).toBe(200);
    expect((await rest('GET', `/syncs?${window}`)).status).toBe(200);
    const [failedSync] = await db.query<{ id: string }>('SELECT id::text FROM syncs WHERE request_id = $1', [failed]);
    expect((await rest('GET', `/syncs/${failedSync!.id}`)).status).toBe(200);
    expect((await rest('GET', `/deliveries?${window}`)).status).toBe(200);
    expect((await rest('GET', '/connections')).status).toBe(200);
    expect((await rest('GET', '/destinations/reply-relays')).status).toBe(200);
    expect((await rest('GET', `/events?${window}`)).status).toBe(200);
    expect((await rest('GET', '/webhooks')).status).toBe(200);
    expect((await rest('GET', `/webhooks/${endpointId}`)).status).toBe(200);
    expect((await rest('GET', `/webhooks/${endpointId}/deliveries?${window}`)).status).toBe(200);
    expect((await rest('POST', `/webhooks/${endpointId}/test`)).status).toBe(202);
    expect((await rest('GET', '/me', WRONG_API_KEY)).status).toBe(401);
    expect((await rest('GET', `/syncs?${window}`, WRONG_API_KEY)).status).toBe(401);
    await webhookDeliveriesDone(2);

    // Action 4: the explorer, as staff (and once with a wrong token).
    const vars = { a: accountId, from: new Date(Date.now() - 86_400_000).toISOString(), to: new Date(Date.now() + 86_400_000).toISOString() };
    const lineage = await explorer(
      `query ($a: Int!, $from: String!, $to: String!) {
        requests(accountId: $a, from: $from, to: $to) { data { id rawBody sync { status error crmState } deliveries { status error }
          relayExecutions { status reason smtpResponse attemptLog } platformEvents { type data } } }
        syncs(accountId: $a, from: $from, to: $to) { data { id status error } }
        connections(accountId: $a) { id status hasCredentials }
      }`,
      vars,
    );
    expect(lineage.errors).toBeUndefined();
    const hooks = await explorer(
      `query ($e: String!, $from: String!, $to: String!) { webhookDeliveries(endpointId: $e, from: $from, to: $to) { data { status error responseExcerpt } } }`,
      { e: endpointId, from: vars.from, to: vars.to },
    );
    expect(hooks.errors).toBeUndefined();
    expect((await explorer('{ auditLog(limit: 10) { staff action arguments result } }')).errors).toBeUndefined();
    expect((await explorer('{ accounts { id email connections { id crm status } } }', {}, WRONG_STAFF_TOKEN)).errors).toBeDefined();

    // Assertions, first that the scan has material: every part of the pipeline ran and was logged.
    const issuedAfter = [...hubspot.accessTokens, ...hubspot.expiredTokens, ...hubspot.refreshTokens, ...hubspot.requests.map((r) => r.token)];
    const refreshed = [...new Set([...issued, ...issuedAfter])].filter((t) => t !== '' && t !== HUBSPOT.accessToken && t !== HUBSPOT.refreshToken);
    expect(refreshed.length).toBeGreaterThanOrEqual(2); // the refreshed access token and the rotated refresh token
    expect(logs.server.length).toBeGreaterThan(15);
    expect(logs.worker.length).toBeGreaterThan(50);
    // Both loggers are past info: their debug lines are in.
    expect(logs.server.some((line) => line.startsWith('{"level":20'))).toBe(true);
    expect(logs.worker.some((line) => line.startsWith('{"level":20'))).toBe(true);
    expect(smtp.messages.filter((m) => m.envelope.to.includes(CC_EMAIL))).toHaveLength(1);
    expect(destination.on('/mirror').length).toBeGreaterThanOrEqual(4); // three events, one retried
    const deliveredEvents = await db.query<{ type: string; status: string }>(
      'SELECT ev.type, d.status::text AS status FROM webhook_deliveries d JOIN platform_events ev ON ev.id = d.event_id ORDER BY d.id',
    );
    expect(deliveredEvents).toEqual([
      { type: 'sync.failed', status: 'SUCCEEDED' },
      { type: 'test.ping', status: 'SUCCEEDED' },
    ]);
    expect(receiver.on('/scan-ops').length).toBe(3); // sync.failed twice (one 500), the ping once
    expect((await db.query('SELECT 1 FROM audit_log')).length).toBeGreaterThan(0);
    // And that each secret was in use: HubSpot saw the original token, the endpoint's requests verify with its secret.
    expect(hubspot.requests.some((r) => r.token === HUBSPOT.accessToken)).toBe(true);
    for (const request of receiver.on('/scan-ops')) expect(verifyDelivery(request, WEBHOOK_SECRET).type).toMatch(/^(sync\.failed|test\.ping)$/);
    expect(responses.length).toBeGreaterThan(15);

    // Assertions: no secret anywhere.
    const secrets: Array<[string, string]> = [
      ['the API key', apiKey],
      ['the HubSpot access token', HUBSPOT.accessToken],
      ['the HubSpot refresh token', HUBSPOT.refreshToken],
      ['the HubSpot client secret', HUBSPOT.clientSecret],
      ...refreshed.map((token, i): [string, string] => [`HubSpot token issued by a refresh #${i + 1}`, token]),
      ['the webhook signing secret', WEBHOOK_SECRET],
      ['the SMTP password', SMTP_AUTH.pass],
      ['the SMTP password in base64 (AUTH LOGIN)', Buffer.from(SMTP_AUTH.pass).toString('base64')],
      ['the SMTP credentials in base64 (AUTH PLAIN)', Buffer.from(`\0${SMTP_AUTH.user}\0${SMTP_AUTH.pass}`).toString('base64')],
      ['the support staff token', STAFF_TOKEN],
      ['the wrong API key presented', WRONG_API_KEY],
      ['the wrong staff token presented', WRONG_STAFF_TOKEN],
    ];
    const material: Array<{ where: string; text: string }> = [
      ...logs.server.map((text, i) => ({ where: `server log line ${i + 1}`, text })),
      ...logs.worker.map((text, i) => ({ where: `worker log line ${i + 1}`, text })),
      ...responses.map(({ where, text }) => ({ where: `response to ${where}`, text })),
    ];
    // What the service sent out to the customer's systems (not to HubSpot's token endpoint, which must see its own secrets).
    const sentOut = (emulator: DestinationEmulator, name: string) =>
      emulator.received.map((r, i) => ({ where: `${name} request ${i + 1}`, text: `${JSON.stringify(r.headers)}\n${r.body.toString('utf8')}` }));
    material.push(...sentOut(destination, 'forwarded'), ...sentOut(receiver, 'webhook endpoint'));
    material.push(...smtp.messages.map((m, i) => ({ where: `relay email ${i + 1}`, text: m.raw })));
    const written = [hubspot.contacts, hubspot.companies, hubspot.emails, hubspot.notes, hubspot.tasks].flatMap((store) => [...store.values()]);
    material.push(...written.map((object) => ({ where: `HubSpot object ${object.id}`, text: JSON.stringify(object.properties) })));
    for (const [table, sql] of STORED) {
      for (const row of await db.query<{ id: string; text: string | null }>(sql)) material.push({ where: `${table} row ${row.id}`, text: row.text ?? '' });
    }
    // The scan itself finds a planted secret (and masks it in its report).
    expect(leaksIn([{ where: 'a probe', text: `say ${SMTP_AUTH.pass}!` }], secrets)).toEqual(['the SMTP password in a probe: …say <the SMTP password>!…']);
    const leaks = leaksIn(material, secrets);
    expect(leaks).toEqual([]);
  });
});

/** Each secret found in the material: which, where, and the text around it (the secret masked). */
function leaksIn(material: Array<{ where: string; text: string }>, secrets: Array<[string, string]>): string[] {
  const leaks: string[] = [];
  for (const { where, text } of material) {
    for (const [name, secret] of secrets) {
      const at = text.indexOf(secret);
      if (at < 0) continue;
      const excerpt = text.slice(Math.max(0, at - 160), at + secret.length + 80).replaceAll(secret, `<${name}>`);
      leaks.push(`${name} in ${where}: …${excerpt}…`);
    }
  }
  return leaks;
}

async function syncStatus(requestId: number): Promise<string | null | undefined> {
  const [row] = await db.query<{ status: string | null }>('SELECT status::text AS status FROM syncs WHERE request_id = $1', [requestId]);
  return row?.status;
}

/** Waits until the endpoint has `n` deliveries, none of them pending. */
function webhookDeliveriesDone(n: number) {
  return eventually(
    async () => {
      const rows = await db.query<{ status: string }>('SELECT status::text AS status FROM webhook_deliveries');
      return rows.length === n && rows.every((r) => r.status !== 'PENDING') ? true : undefined;
    },
    10_000,
    `${n} settled webhook deliveries`,
  );
}
