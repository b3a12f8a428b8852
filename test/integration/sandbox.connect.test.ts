/**
 * Onboarding offline in the sandbox (issue 30): the sandbox page's "Connect a sandbox HubSpot" button
 * opens a connect link for a new connection of the demo account, the sandbox HubSpot's consent page
 * (served at `/sandbox/hubspot-app`, HUBSPOT_APP_URL's sandbox default) sends the browser back, and the
 * connection is ready with the sandbox app's credentials (the configuration's defaults with SANDBOX on);
 * an event posted to a source of it reaches the sandbox HubSpot. Salesforce likewise, its identity URL
 * read through the sandbox's login path. The codes and tokens the consent issued are replayed identically
 * from the journal, so the connection keeps working after a restart. Over HTTP, as a browser would go.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { freePort } from '../../src/db/embedded.js';
import { openSecret } from '../../src/domain/secrets.js';
import { createLogger } from '../../src/logger.js';
import { Sandbox } from '../../src/sandbox/sandbox.js';
import { TEST_ENCRYPTION_KEY, type TestDatabase } from '../support/database.js';
import { startSandboxService, type SandboxService } from '../support/sandbox-service.js';
import { eventually } from '../support/worker.js';

let service: SandboxService;
let db: TestDatabase;
let sandbox: Sandbox;
let base: string;

beforeAll(async () => {
  service = await startSandboxService({ seedDemo: true });
  ({ db, sandbox, base } = service);
});

afterAll(() => service?.close());

/** The browser's steps from the sandbox page's button to the page the customer sees; each URL on the way. */
async function clickConnect(kind: 'hubspot' | 'salesforce') {
  const sandboxPage = await (await fetch(`${base}/sandbox`)).text();
  expect(sandboxPage).toContain(`<form method="post" action="/sandbox/connect/${kind}"><button id="connect-sandbox-${kind}"`);
  const clicked = await fetch(`${base}/sandbox/connect/${kind}`, { method: 'POST', redirect: 'manual' });
  expect(clicked.status).toBe(303);
  const link = clicked.headers.get('location')!;
  expect(link.startsWith(`${base}/connect/${kind}/start?state=`)).toBe(true);
  const start = await fetch(link, { redirect: 'manual' });
  expect(start.status).toBe(302);
  const authorize = start.headers.get('location')!;
  const consent = await fetch(authorize);
  expect(consent.status).toBe(200);
  expect(await consent.text()).toContain('data-testid="consent-allow"');
  const allowed = await fetch(authorize, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: 'decision=allow',
    redirect: 'manual',
  });
  expect(allowed.status).toBe(302);
  const callback = allowed.headers.get('location')!;
  expect(callback.startsWith(`${base}/connect/${kind}/callback?code=`)).toBe(true);
  const done = await fetch(callback);
  return { link, authorize, status: done.status, html: await done.text(), connectionId: Number(/state=c1\.(\d+)\./.exec(link)![1]) };
}

async function demoAccountId(): Promise<number> {
  return (await db.prisma.account.findFirstOrThrow({ where: { email: 'owner@acme.test' } })).id;
}

it('connects a sandbox HubSpot from the sandbox page, through the sandbox consent page, and writes an event with it', async () => {
  const flow = await clickConnect('hubspot');
  expect(flow.authorize.startsWith(`${base}/sandbox/hubspot-app/oauth/authorize?`)).toBe(true);
  expect([flow.status, flow.html]).toEqual([200, expect.stringContaining('HubSpot account 7700001 (sandbox-portal.hubspot.test) is now connected')]);
  const connection = await db.prisma.connection.findUniqueOrThrow({ where: { id: flow.connectionId } });
  expect(connection).toMatchObject({ accountId: await demoAccountId(), crm: 'HUBSPOT', status: 'ready', organizationId: '7700001' });
  const credentials = JSON.parse(openSecret(TEST_ENCRYPTION_KEY, connection.credentialsEncrypted!)) as { accessToken: string; clientId: string };
  expect(credentials.clientId).toBe('sandbox-hubspot-client');

  await db.prisma.source.create({ data: { connectionId: connection.id, platform: 'smartlead', ingressCode: 'sandboxConnectHubspot01' } });
  const res = await fetch(`${base}/webhooks/sandboxConnectHubspot01`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      event_type: 'EMAIL_SENT',
      from_email: 'tom@northwind.test',
      to_email: 'jane@onboarded.test',
      time_sent: '2026-11-20T09:00:00Z',
      campaign_id: 1,
      sequence_number: 1,
      custom_subject: 'Hello',
      message_id: 'sandbox-connect-1',
    }),
  });
  const { requestId } = (await res.json()) as { requestId: number };
  const sync = await eventually(
    async () =>
      (await db.query<{ status: string; error: unknown }>('SELECT status, error FROM syncs WHERE request_id = $1 AND status IS NOT NULL', [requestId]))[0],
    20_000,
    'the sync',
  );
  expect([sync.status, sync.error]).toEqual(['success', null]);
  expect([...sandbox.systems.hubspot.contacts.values()].map((c) => c.properties.email)).toContain('jane@onboarded.test');

  // Another API process (or this one restarted) replays the journal into fresh emulators: the same tokens.
  const replayed = await Sandbox.start({
    prisma: db.prisma,
    baseUrl: base,
    smtpPort: await freePort(),
    encryptionKey: TEST_ENCRYPTION_KEY,
    logger: createLogger('silent'),
  });
  try {
    expect(replayed.systems.hubspot.accessTokens.has(credentials.accessToken)).toBe(true);
  } finally {
    await replayed.close();
  }
});

it('reuses the connection an unfinished click left, and makes a new one once it is connected', async () => {
  const first = await fetch(`${base}/sandbox/connect/hubspot`, { method: 'POST', redirect: 'manual' });
  const second = await fetch(`${base}/sandbox/connect/hubspot`, { method: 'POST', redirect: 'manual' });
  const idOf = (res: Response) => /state=c1\.(\d+)\./.exec(res.headers.get('location')!)![1];
  expect(idOf(second)).toBe(idOf(first));
  const connected = await db.prisma.connection.findMany({ where: { accountId: await demoAccountId(), crm: 'HUBSPOT', status: 'ready' }, select: { id: true } });
  expect(connected.map((c) => String(c.id))).not.toContain(idOf(first));
});

it('connects a sandbox Salesforce, its org read from the identity URL through the sandbox', async () => {
  const flow = await clickConnect('salesforce');
  expect(flow.authorize.startsWith(`${base}/sandbox/salesforce-login/services/oauth2/authorize?`)).toBe(true);
  expect([flow.status, flow.html]).toEqual([200, expect.stringContaining('connected')]);
  expect(flow.html).toContain('Salesforce org 00D000000000001AAA (127.0.0.1) is now connected');
  const connection = await db.prisma.connection.findUniqueOrThrow({ where: { id: flow.connectionId } });
  expect(connection).toMatchObject({ status: 'ready', organizationId: '00D000000000001AAA' });
  expect(JSON.parse(openSecret(TEST_ENCRYPTION_KEY, connection.credentialsEncrypted!))).toMatchObject({ instanceUrl: `${base}/sandbox/salesforce-instance` });
  const journal = await db.query<{ system: string; path: string; status: number }>(
    "SELECT system, path, status FROM sandbox_requests WHERE system = 'salesforce-login' AND path LIKE '/id/%'",
  );
  expect(journal).toEqual([{ system: 'salesforce-login', path: '/id/00D000000000001AAA/005000000000001AAA', status: 200 }]);
});
