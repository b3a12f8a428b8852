/**
 * Connecting a CRM by OAuth from a connect link (issue 30), over real HTTP against the HubSpot and
 * Salesforce emulators: staff create a connection in the explorer, the customer's "browser" (fetch,
 * following each redirect by hand) opens the link, consents on the CRM's page and comes back; the
 * connection is ready in REST's /account/status with its credentials sealed, and an event posted to its
 * source is written with them. Forged, expired and replayed states, a declined consent and a failed
 * exchange change nothing; a CRM without an app here says so; disconnecting makes syncs fail as
 * `crm_not_connected`. Every mutation is audited, and no answer, page or log line carries a secret.
 */
import { randomBytes } from 'node:crypto';
import { PassThrough } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HUBSPOT_SCOPES } from '../../src/connectors/crm/hubspot/oauth.js';
import { CONNECT_STATE_TTL_MS, signConnectState } from '../../src/domain/connect-state.js';
import { openSecret } from '../../src/domain/secrets.js';
import { startAttioEmulator, type AttioEmulator } from '../../src/emulators/attio.js';
import { startCloseEmulator, type CloseEmulator } from '../../src/emulators/close.js';
import { startHubspotEmulator, type HubspotEmulator } from '../../src/emulators/hubspot.js';
import { startSalesforceEmulator, type SalesforceEmulator } from '../../src/emulators/salesforce.js';
import { seedTestAccounts, type TestAccounts } from '../support/accounts.js';
import { createTestDatabase, TEST_ENCRYPTION_KEY, type TestDatabase } from '../support/database.js';
import { startTestServer, SUPPORT_TOKEN, type TestServer } from '../support/server.js';
import { eventually, startTestWorker } from '../support/worker.js';

const HUBSPOT_APP = { clientId: 'hs-app-client-0001', clientSecret: 'hs-app-secret-do-not-leak' };
const SALESFORCE_APP = { clientId: '3MVG9connect.test.key', clientSecret: 'sf-app-secret-do-not-leak' };
const CLOSE_APP = { clientId: 'close-connect-client', clientSecret: 'close-app-secret-do-not-leak' };
const ATTIO_APP = { clientId: 'attio-connect-client', clientSecret: 'attio-app-secret-do-not-leak' };
const STATE_KEY = Buffer.alloc(32, 0x5c);
/** What startTestServer names as BASE_URL: links and redirect URIs are below it. */
const PUBLIC = 'http://api.test.local';

let db: TestDatabase;
let seeded: TestAccounts;
let hubspot: HubspotEmulator;
let salesforce: SalesforceEmulator;
let closeCrm: CloseEmulator;
let attio: AttioEmulator;
let server: TestServer;
let bare: TestServer;
let worker: { stop(): Promise<void> };
const logs = new PassThrough();
let logText = '';
/** Every answer the service gave in this file (pages, GraphQL and REST bodies), for the secrets check. */
const answers: string[] = [];
/** The callback URLs the CRMs sent the browser to (their codes are secrets too). */
const callbacks: string[] = [];

beforeAll(async () => {
  db = await createTestDatabase();
  seeded = await seedTestAccounts(db.prisma);
  hubspot = await startHubspotEmulator({ ...HUBSPOT_APP, portal: { portalId: 4_040_404, hubDomain: 'acme.test' } });
  salesforce = await startSalesforceEmulator(SALESFORCE_APP);
  closeCrm = await startCloseEmulator(CLOSE_APP);
  attio = await startAttioEmulator(ATTIO_APP);
  logs.on('data', (chunk: Buffer) => (logText += chunk.toString('utf8')));
  server = await startTestServer(
    db,
    {
      HUBSPOT_BASE_URL: hubspot.url,
      HUBSPOT_APP_URL: hubspot.url,
      HUBSPOT_CLIENT_ID: HUBSPOT_APP.clientId,
      HUBSPOT_CLIENT_SECRET: HUBSPOT_APP.clientSecret,
      SALESFORCE_LOGIN_URL: salesforce.loginUrl,
      SALESFORCE_CLIENT_ID: SALESFORCE_APP.clientId,
      SALESFORCE_CLIENT_SECRET: SALESFORCE_APP.clientSecret,
      CLOSE_BASE_URL: closeCrm.url,
      CLOSE_APP_URL: closeCrm.url,
      CLOSE_CLIENT_ID: CLOSE_APP.clientId,
      CLOSE_CLIENT_SECRET: CLOSE_APP.clientSecret,
      ATTIO_BASE_URL: attio.url,
      ATTIO_APP_URL: attio.url,
      ATTIO_CLIENT_ID: ATTIO_APP.clientId,
      ATTIO_CLIENT_SECRET: ATTIO_APP.clientSecret,
      CONNECT_STATE_KEY: STATE_KEY.toString('hex'),
      OUTBOUND_ALLOW_PRIVATE: 'true',
    },
    { level: 'trace', stream: logs },
  );
  // The same service without any CRM app (and no sandbox): nothing can be connected by OAuth there.
  bare = await startTestServer(db, { CONNECT_STATE_KEY: STATE_KEY.toString('hex'), HUBSPOT_BASE_URL: hubspot.url });
  worker = await startTestWorker(db.url, { urls: { HUBSPOT: hubspot.url, SALESFORCE: salesforce.loginUrl, CLOSE: closeCrm.url, ATTIO: attio.url } });
});

afterAll(async () => {
  await worker?.stop();
  await server?.close();
  await bare?.close();
  await hubspot?.close();
  await salesforce?.close();
  await closeCrm?.close();
  await attio?.close();
  await db?.drop();
});

/** A staff GraphQL operation against `target`; its JSON answer. */
async function staff<T = unknown>(
  query: string,
  variables: Record<string, unknown> = {},
  target: TestServer = server,
): Promise<{ data: T; errors?: Array<{ message: string }> }> {
  const res = await fetch(`${target.baseUrl}/graphql`, {
    method: 'POST',
    headers: { authorization: `Bearer ${SUPPORT_TOKEN}`, 'content-type': 'application/json' },
    body: JSON.stringify({ query, variables }),
  });
  const text = await res.text();
  answers.push(text);
  return JSON.parse(text) as { data: T; errors?: Array<{ message: string }> };
}

const CONNECTION_FIELDS = 'id crm status organizationId organizationDomain hasCredentials capabilities { sync } createdAt';

async function createConnection(crm: string, target: TestServer = server) {
  const answer = await staff<{
    createConnection: { connection: Record<string, unknown> & { id: number }; connectLink: { url: string; expiresAt: string; available: boolean } };
  }>(
    `mutation ($input: NewConnectionInput!) { createConnection(input: $input) { connection { ${CONNECTION_FIELDS} } connectLink { url expiresAt available } } }`,
    { input: { accountId: seeded.accounts.acme, crm } },
    target,
  );
  expect(answer.errors).toBeUndefined();
  return answer.data.createConnection;
}

/** A URL the service printed (below BASE_URL) at the test server's real address. */
function local(url: string, target: TestServer = server): string {
  expect(url.startsWith(`${PUBLIC}/`)).toBe(true);
  return `${target.baseUrl}${url.slice(PUBLIC.length)}`;
}

async function page(url: string): Promise<{ status: number; html: string; outcome: string | undefined }> {
  const res = await fetch(url, { redirect: 'manual' });
  const html = await res.text();
  answers.push(html);
  return { status: res.status, html, outcome: /data-connect-outcome="([a-z_]+)"/.exec(html)?.[1] };
}

/**
 * A customer's browser through a connect link: the start redirect, the CRM's consent page, the decision
 * posted back, and the callback page. Returns each step's URL and the final page.
 */
async function consent(link: string, decision: 'allow' | 'deny', target: TestServer = server) {
  const start = await fetch(local(link, target), { redirect: 'manual' });
  expect(start.status).toBe(302);
  const authorize = start.headers.get('location')!;
  const consentPage = await fetch(authorize);
  expect(consentPage.status).toBe(200);
  expect(await consentPage.text()).toContain('id="consent-allow"');
  const decided = await fetch(authorize, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ decision }).toString(),
    redirect: 'manual',
  });
  expect(decided.status).toBe(302);
  const callback = decided.headers.get('location')!;
  callbacks.push(callback);
  return { authorize: new URL(authorize), callback, page: await page(local(callback, target)) };
}

async function connectionRow(id: number) {
  return db.prisma.connection.findUniqueOrThrow({ where: { id } });
}

async function accountStatus() {
  const res = await fetch(`${server.baseUrl}/api/v1/account/status`, { headers: { authorization: `Bearer ${seeded.keys.acmeRead}` } });
  const text = await res.text();
  answers.push(text);
  expect(res.status).toBe(200);
  return JSON.parse(text) as {
    connections: Array<{ connectionId: number; ready: boolean; crmConnection: Record<string, unknown> }>;
    blockers: Array<{ code: string; connectionId: number }>;
  };
}

/** A source of the connection, and a Smartlead email_sent posted to it: its sync's final row. */
async function syncOfEvent(connectionId: number, email: string) {
  const ingressCode = `connect${randomBytes(8).toString('hex')}`;
  await db.prisma.source.create({ data: { connectionId, platform: 'smartlead', ingressCode } });
  const event = {
    event_type: 'EMAIL_SENT',
    from_email: 'sender@northwind.test',
    to_email: email,
    to_name: 'Jane Doe',
    time_sent: '2026-11-20T09:00:00Z',
    campaign_name: 'Q4 Outreach',
    campaign_id: 123,
    sequence_number: 1,
    custom_subject: 'Quick question',
    custom_email_message: '<p>Hello</p>',
    message_id: `msg-${randomBytes(6).toString('hex')}`,
  };
  const res = await fetch(`${server.baseUrl}/webhooks/${ingressCode}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(event),
  });
  expect(res.status).toBe(200);
  const { requestId } = (await res.json()) as { requestId: number };
  return eventually(
    async () =>
      (
        await db.query<{ status: string; error: { message?: string } | null }>('SELECT status, error FROM syncs WHERE request_id = $1 AND status IS NOT NULL', [
          requestId,
        ])
      )[0],
    20_000,
    `the sync of request ${requestId}`,
  );
}

describe('HubSpot', () => {
  let connectionId: number;
  let link: string;
  let callback: string;

  it('creates a connection that answers as REST shows it, with its connect link', async () => {
    const created = await createConnection('hubspot');
    connectionId = created.connection.id;
    link = created.connectLink.url;
    expect(created.connection).toMatchObject({ crm: 'HUBSPOT', status: 'disconnected', organizationId: null, organizationDomain: null, hasCredentials: false });
    expect(created.connectLink.available).toBe(true);
    expect(link).toMatch(new RegExp(`^${PUBLIC}/connect/hubspot/start\\?state=c1\\.${connectionId}\\.`));
    expect(Date.parse(created.connectLink.expiresAt) - Date.now()).toBeGreaterThan(CONNECT_STATE_TTL_MS - 60_000);
    // Not ready until the customer connects: REST says why.
    const status = await accountStatus();
    expect(status.blockers).toContainEqual(expect.objectContaining({ code: 'crm_disconnected', connectionId }));
  });

  it("sends the customer to HubSpot's consent page with the app, the callback and the connector's scopes", async () => {
    const start = await fetch(local(link), { redirect: 'manual' });
    expect(start.status).toBe(302);
    const authorize = new URL(start.headers.get('location')!);
    expect(`${authorize.origin}${authorize.pathname}`).toBe(`${hubspot.url}/oauth/authorize`);
    expect(Object.fromEntries(authorize.searchParams)).toEqual({
      client_id: HUBSPOT_APP.clientId,
      redirect_uri: `${PUBLIC}/connect/hubspot/callback`,
      scope: HUBSPOT_SCOPES.join(' '),
      state: new URL(link).searchParams.get('state'),
    });
  });

  it('connects on consent: the page names the portal, the credentials are sealed, REST shows it ready', async () => {
    const flow = await consent(link, 'allow');
    callback = flow.callback;
    expect(new URL(callback).searchParams.get('state')).toBe(new URL(link).searchParams.get('state'));
    expect(flow.page).toMatchObject({ status: 200, outcome: 'connected' });
    expect(flow.page.html).toContain('HubSpot account 4040404 (acme.test) is now connected');
    expect(flow.page.html).toContain('Next: your contact');

    const row = await connectionRow(connectionId);
    expect(row).toMatchObject({ status: 'ready', organizationId: '4040404', organizationDomain: 'acme.test' });
    expect(row.credentialsEncrypted).toMatch(/^v1\./);
    const credentials = JSON.parse(openSecret(TEST_ENCRYPTION_KEY, row.credentialsEncrypted!)) as Record<string, string>;
    expect(credentials).toMatchObject({ clientId: HUBSPOT_APP.clientId, clientSecret: HUBSPOT_APP.clientSecret });
    expect(hubspot.accessTokens.has(credentials.accessToken!)).toBe(true);
    expect(hubspot.refreshTokens.has(credentials.refreshToken!)).toBe(true);
    expect(Math.abs(Date.parse(credentials.expiresAt!) - (Date.now() + 1_800_000))).toBeLessThan(60_000);
    expect(Math.abs(row.tokenExpiresAt!.getTime() - Date.parse(credentials.expiresAt!))).toBeLessThan(1_000);
    expect(await db.query('SELECT connection_id FROM connect_states')).toEqual([{ connection_id: connectionId }]);

    const status = await accountStatus();
    expect(status.connections.find((c) => c.connectionId === connectionId)?.crmConnection).toEqual({
      status: 'ready',
      crm: 'HUBSPOT',
      organizationId: '4040404',
      organizationDomain: 'acme.test',
    });
    expect(status.blockers.filter((b) => b.connectionId === connectionId).map((b) => b.code)).toEqual(['no_sources']);
  });

  it('writes an event posted to a source of the connection with the new credentials', async () => {
    const row = await connectionRow(connectionId);
    const { accessToken } = JSON.parse(openSecret(TEST_ENCRYPTION_KEY, row.credentialsEncrypted!)) as { accessToken: string };
    const sync = await syncOfEvent(connectionId, 'jane@connected-hubspot.test');
    expect([sync.status, sync.error]).toEqual(['success', null]);
    expect([...hubspot.contacts.values()].map((c) => c.properties.email)).toContain('jane@connected-hubspot.test');
    expect(hubspot.requests.filter((r) => r.path.startsWith('/crm/')).every((r) => r.token === accessToken)).toBe(true);
  });

  it('refuses the callback and the link replayed, changing nothing', async () => {
    const before = await connectionRow(connectionId);
    const exchanges = hubspot.requests.filter((r) => r.path.endsWith('/token')).length;
    expect(await page(local(callback))).toMatchObject({ status: 409, outcome: 'used' });
    expect(await page(local(link))).toMatchObject({ status: 409, outcome: 'used' });
    expect(await connectionRow(connectionId)).toEqual(before);
    // Refused before HubSpot is asked anything.
    expect(hubspot.requests.filter((r) => r.path.endsWith('/token')).length).toBe(exchanges);
  });

  it('disconnects: credentials wiped, REST shows it disconnected, and its syncs fail as crm_not_connected', async () => {
    const answer = await staff<{ disconnectConnection: Record<string, unknown> }>(
      `mutation ($id: Int!) { disconnectConnection(id: $id) { ${CONNECTION_FIELDS} } }`,
      {
        id: connectionId,
      },
    );
    expect(answer.data.disconnectConnection).toMatchObject({ status: 'disconnected', hasCredentials: false, organizationId: '4040404' });
    expect(await connectionRow(connectionId)).toMatchObject({ credentialsEncrypted: null, tokenExpiresAt: null, status: 'disconnected' });
    const status = await accountStatus();
    expect(status.blockers).toContainEqual(expect.objectContaining({ code: 'crm_disconnected', connectionId }));

    const sync = await syncOfEvent(connectionId, 'after-disconnect@connected-hubspot.test');
    expect(sync.status).toBe('error');
    expect(sync.error?.message).toContain('no CRM credentials');
    const health = await db.query<{ last_reason: string }>('SELECT last_reason FROM pipeline_health WHERE connection_id = $1 AND last_reason IS NOT NULL', [
      connectionId,
    ]);
    expect(health.map((h) => h.last_reason)).toContain('crm_not_connected');
  });

  it('reconnects from a fresh link', async () => {
    const answer = await staff<{ createConnectLink: { connection: { id: number; status: string }; connectLink: { url: string } } }>(
      'mutation ($id: Int!) { createConnectLink(id: $id) { connection { id status } connectLink { url } } }',
      { id: connectionId },
    );
    expect(answer.data.createConnectLink.connection).toEqual({ id: connectionId, status: 'disconnected' });
    const flow = await consent(answer.data.createConnectLink.connectLink.url, 'allow');
    // It has a source now: nothing more to do.
    expect(flow.page.html).toContain('Next: nothing more to do here');
    expect(await connectionRow(connectionId)).toMatchObject({ status: 'ready', organizationId: '4040404' });
  });
});

describe('Salesforce', () => {
  it('connects with PKCE: the verifier stays with the service, the org is read from the identity URL', async () => {
    const created = await createConnection('SALESFORCE');
    const connectionId = created.connection.id;
    const flow = await consent(created.connectLink.url, 'allow');
    const params = Object.fromEntries(flow.authorize.searchParams);
    expect(`${flow.authorize.origin}${flow.authorize.pathname}`).toBe(`${salesforce.loginUrl}/services/oauth2/authorize`);
    expect(params).toMatchObject({
      response_type: 'code',
      client_id: SALESFORCE_APP.clientId,
      redirect_uri: `${PUBLIC}/connect/salesforce/callback`,
      scope: 'api refresh_token',
      code_challenge_method: 'S256',
    });
    expect(params.code_challenge).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(flow.page).toMatchObject({ status: 200, outcome: 'connected' });
    expect(flow.page.html).toContain('Salesforce org 00D000000000001AAA (127.0.0.1) is now connected');

    const row = await connectionRow(connectionId);
    expect(row).toMatchObject({ status: 'ready', organizationId: '00D000000000001AAA', organizationDomain: '127.0.0.1', tokenExpiresAt: null });
    const credentials = JSON.parse(openSecret(TEST_ENCRYPTION_KEY, row.credentialsEncrypted!)) as Record<string, string>;
    expect(credentials).toMatchObject({ instanceUrl: salesforce.instanceUrl, clientId: SALESFORCE_APP.clientId, clientSecret: SALESFORCE_APP.clientSecret });
    expect(salesforce.accessTokens.has(credentials.accessToken!)).toBe(true);
    expect(salesforce.refreshTokens.has(credentials.refreshToken!)).toBe(true);

    const sync = await syncOfEvent(connectionId, 'jane@connected-salesforce.test');
    expect([sync.status, sync.error]).toEqual(['success', null]);
    expect([...salesforce.leads.values(), ...salesforce.contacts.values()].map((r) => r.Email)).toContain('jane@connected-salesforce.test');
  });

  it('is refused by Salesforce without the verifier of its challenge', async () => {
    const created = await createConnection('SALESFORCE');
    const start = await fetch(local(created.connectLink.url), { redirect: 'manual' });
    const authorize = start.headers.get('location')!;
    const decided = await fetch(authorize, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: 'decision=allow',
      redirect: 'manual',
    });
    const code = new URL(decided.headers.get('location')!).searchParams.get('code')!;
    const stolen = await fetch(`${salesforce.loginUrl}/services/oauth2/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({
        grant_type: 'authorization_code',
        code,
        client_id: SALESFORCE_APP.clientId,
        client_secret: SALESFORCE_APP.clientSecret,
        redirect_uri: `${PUBLIC}/connect/salesforce/callback`,
        code_verifier: 'a'.repeat(43),
      }).toString(),
    });
    expect([stolen.status, await stolen.json()]).toEqual([400, { error: 'invalid_grant', error_description: 'invalid code verifier' }]);
  });
});

describe('Close', () => {
  it('connects: the organization named by the token answer, the rotating refresh token sealed, and an event written', async () => {
    const created = await createConnection('CLOSE');
    const flow = await consent(created.connectLink.url, 'allow');
    expect(`${flow.authorize.origin}${flow.authorize.pathname}`).toBe(`${closeCrm.url}/oauth2/authorize/`);
    expect(Object.fromEntries(flow.authorize.searchParams)).toMatchObject({
      response_type: 'code',
      client_id: CLOSE_APP.clientId,
      redirect_uri: `${PUBLIC}/connect/close/callback`,
    });
    expect(flow.page).toMatchObject({ status: 200, outcome: 'connected' });
    expect(flow.page.html).toContain(`Close organization Seller Inc (${closeCrm.organization.id}) is now connected`);

    const row = await connectionRow(created.connection.id);
    expect(row).toMatchObject({ status: 'ready', organizationId: closeCrm.organization.id, tokenExpiresAt: expect.any(Date) });
    const credentials = JSON.parse(openSecret(TEST_ENCRYPTION_KEY, row.credentialsEncrypted!)) as Record<string, string>;
    expect(credentials).toMatchObject({ clientId: CLOSE_APP.clientId, clientSecret: CLOSE_APP.clientSecret, expiresAt: expect.any(String) });
    expect(closeCrm.accessTokens.has(credentials.accessToken!)).toBe(true);
    expect(closeCrm.refreshTokens.has(credentials.refreshToken!)).toBe(true);

    const sync = await syncOfEvent(created.connection.id, 'jane@connected-close.test');
    expect([sync.status, sync.error]).toEqual(['success', null]);
    expect(closeCrm.contactsByEmail('jane@connected-close.test')).toHaveLength(1);
  });
});

describe('Attio', () => {
  it('connects: the code exchanged at the app host, the workspace read by introspection, and an event written', async () => {
    const created = await createConnection('ATTIO');
    const flow = await consent(created.connectLink.url, 'allow');
    expect(`${flow.authorize.origin}${flow.authorize.pathname}`).toBe(`${attio.url}/authorize`);
    expect(flow.authorize.searchParams.get('scope')).toContain('record_permission:read-write');
    expect(flow.page).toMatchObject({ status: 200, outcome: 'connected' });
    expect(flow.page.html).toContain(`Attio workspace Seller Inc (${attio.workspace.id}) is now connected`);

    const row = await connectionRow(created.connection.id);
    expect(row).toMatchObject({ status: 'ready', organizationId: attio.workspace.id, tokenExpiresAt: null });
    const credentials = JSON.parse(openSecret(TEST_ENCRYPTION_KEY, row.credentialsEncrypted!)) as Record<string, string>;
    expect(Object.keys(credentials)).toEqual(['accessToken']);
    expect(attio.tokens.has(credentials.accessToken!)).toBe(true);

    const sync = await syncOfEvent(created.connection.id, 'jane@connected-attio.test');
    expect([sync.status, sync.error]).toEqual(['success', null]);
    expect(attio.peopleByEmail('jane@connected-attio.test')).toHaveLength(1);
  });
});

describe('refused states, declined consent and failed exchanges change nothing', () => {
  /** The connection's row and the spent states, to compare before and after. */
  const snapshot = async (id: number) => ({ connection: await connectionRow(id), states: await db.query('SELECT nonce FROM connect_states ORDER BY nonce') });

  it("refuses a forged state (altered, or another CRM's) at start and callback", async () => {
    const { connection, connectLink } = await createConnection('HUBSPOT');
    const before = await snapshot(connection.id);
    const state = new URL(connectLink.url).searchParams.get('state')!;
    const altered = `${state.slice(0, -1)}${state.endsWith('A') ? 'B' : 'A'}`;
    for (const url of [
      `${server.baseUrl}/connect/hubspot/start?state=${altered}`,
      `${server.baseUrl}/connect/hubspot/callback?code=whatever&state=${altered}`,
      `${server.baseUrl}/connect/salesforce/start?state=${state}`,
      `${server.baseUrl}/connect/hubspot/start`,
      `${server.baseUrl}/connect/hubspot/callback?code=x&state=c1.${connection.id}.9999999999.${'A'.repeat(22)}.${'B'.repeat(43)}`,
    ]) {
      expect(await page(url)).toMatchObject({ status: 400, outcome: 'forged' });
    }
    expect(await page(`${server.baseUrl}/connect/pipedrive/start?state=${state}`)).toMatchObject({ status: 404, outcome: 'unknown_crm' });
    expect(await snapshot(connection.id)).toEqual(before);
  });

  it('refuses an expired state', async () => {
    const { connection } = await createConnection('HUBSPOT');
    const before = await snapshot(connection.id);
    const { state } = signConnectState(STATE_KEY, connection.id, 'HUBSPOT', Date.now() - CONNECT_STATE_TTL_MS - 1_000);
    expect(await page(`${server.baseUrl}/connect/hubspot/start?state=${state}`)).toMatchObject({ status: 410, outcome: 'expired' });
    expect(await page(`${server.baseUrl}/connect/hubspot/callback?code=x&state=${state}`)).toMatchObject({ status: 410, outcome: 'expired' });
    expect(await snapshot(connection.id)).toEqual(before);
  });

  it('shows a declined consent, and the same link works afterwards', async () => {
    const { connection, connectLink } = await createConnection('HUBSPOT');
    const before = await snapshot(connection.id);
    const declined = await consent(connectLink.url, 'deny');
    expect(new URL(declined.callback).searchParams.get('error')).toBe('access_denied');
    expect(declined.page).toMatchObject({ status: 403, outcome: 'denied' });
    expect(declined.page.html).toContain('open the same link again');
    expect(await snapshot(connection.id)).toEqual(before);

    expect((await consent(connectLink.url, 'allow')).page).toMatchObject({ status: 200, outcome: 'connected' });
  });

  it.each([
    ['the code exchange answering 500', { status: 500, path: '/oauth/2026-03/token' }, 'HubSpot refused the code exchange (HTTP 500'],
    ['the account details answering 401', { status: 401, path: '/account-info/' }, 'HubSpot refused the account details request (HTTP 401'],
  ])('shows a failed exchange (%s) and changes nothing', async (_case, fault, message) => {
    const { connection, connectLink } = await createConnection('HUBSPOT');
    const before = await snapshot(connection.id);
    hubspot.failNext(1, fault);
    const flow = await consent(connectLink.url, 'allow');
    expect(flow.page).toMatchObject({ status: 502, outcome: 'exchange_failed' });
    expect(flow.page.html).toContain(message);
    expect(await snapshot(connection.id)).toEqual(before);
  });

  it('shows a code HubSpot refuses (already exchanged) as a failed exchange', async () => {
    const { connection, connectLink } = await createConnection('HUBSPOT');
    const start = await fetch(local(connectLink.url), { redirect: 'manual' });
    const authorize = start.headers.get('location')!;
    const decided = await fetch(authorize, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: 'decision=allow',
      redirect: 'manual',
    });
    const callback = new URL(decided.headers.get('location')!);
    callbacks.push(callback.href);
    // Someone exchanged the code first (HubSpot answers invalid_grant to the second exchange).
    const first = await fetch(`${hubspot.url}/oauth/2026-03/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({
        grant_type: 'authorization_code',
        ...{ client_id: HUBSPOT_APP.clientId, client_secret: HUBSPOT_APP.clientSecret },
        redirect_uri: `${PUBLIC}/connect/hubspot/callback`,
        code: callback.searchParams.get('code')!,
      }).toString(),
    });
    expect(first.status).toBe(200);
    const result = await page(local(callback.href));
    expect(result).toMatchObject({ status: 502, outcome: 'exchange_failed' });
    expect(result.html).toContain('invalid_grant');
    expect((await connectionRow(connection.id)).credentialsEncrypted).toBeNull();
  });
});

describe('a service without the CRM apps', () => {
  it('answers a link whose page says the CRM cannot be connected here', async () => {
    const created = await createConnection('HUBSPOT', bare);
    expect(created.connectLink.available).toBe(false);
    expect(await page(local(created.connectLink.url, bare))).toMatchObject({ status: 503, outcome: 'unavailable' });
    const salesforceLink = await createConnection('SALESFORCE', bare);
    const result = await page(local(salesforceLink.connectLink.url, bare));
    expect(result).toMatchObject({ status: 503, outcome: 'unavailable' });
    expect(result.html).toContain('Salesforce cannot be connected here');
    expect(await connectionRow(created.connection.id)).toMatchObject({ status: 'disconnected', credentialsEncrypted: null });
  });
});

describe('the mutations', () => {
  it('refuse bad input naming the field, and non-staff', async () => {
    const bad = await staff('mutation { createConnection(input: { accountId: 999999, crm: "pipedrive" }) { connectLink { url } } }');
    expect(bad.errors?.[0]?.message).toBe('input.accountId: no account 999999; input.crm: must be one of HUBSPOT, SALESFORCE, CLOSE, ATTIO');
    const missing = await staff('mutation { disconnectConnection(id: 999999) { id } }');
    expect(missing.errors?.[0]?.message).toBe('Connection 999999 not found');
    const anonymous = await fetch(`${server.baseUrl}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ query: 'mutation { disconnectConnection(id: 1) { id } }' }),
    });
    expect(anonymous.status).toBe(401);
  });

  it('are audited, their rows holding no secret', async () => {
    const rows = await db.prisma.auditEntry.findMany({ orderBy: { id: 'asc' } });
    const actions = rows.map((r) => r.action);
    expect(actions).toEqual(expect.arrayContaining(['createConnection', 'createConnectLink', 'disconnectConnection']));
    expect(rows.every((r) => r.staff === `token:${SUPPORT_TOKEN.slice(0, 4)}`)).toBe(true);
    const created = rows.find((r) => r.action === 'createConnection' && JSON.stringify(r.result).includes('connectLink'));
    expect(JSON.stringify(created?.result)).toContain('/connect/hubspot/start?state=');
    assertNoSecret(JSON.stringify(rows.map(({ arguments: args, result }) => ({ args, result }))));
  });
});

/** The apps' secrets and every token and code the CRMs issued: none may be in an answer, page, audit row or log line. */
function assertNoSecret(text: string): void {
  const tokens = [
    ...hubspot.accessTokens,
    ...hubspot.refreshTokens,
    ...salesforce.accessTokens,
    ...salesforce.refreshTokens,
    ...closeCrm.accessTokens,
    ...closeCrm.refreshTokens,
    ...attio.tokens,
  ];
  const codes = callbacks.flatMap((url) => new URL(url).searchParams.getAll('code'));
  expect(tokens.length + codes.length).toBeGreaterThan(10);
  for (const secret of [HUBSPOT_APP.clientSecret, SALESFORCE_APP.clientSecret, CLOSE_APP.clientSecret, ATTIO_APP.clientSecret, ...tokens, ...codes])
    expect(text).not.toContain(secret);
}

it('no answer or log line carries a secret', () => {
  expect(logText).toContain('connect: CRM account connected');
  assertNoSecret(answers.join('\n'));
  assertNoSecret(logText);
  // The request log shows connect URLs without their code and state.
  expect(logText).toMatch(/"url":"\/connect\/hubspot\/callback\?code=\[redacted\]&state=\[redacted\]"/);
});
