/**
 * The whole onboarding of a new customer (issue 30), as support staff and the customer do it, with nothing
 * but the explorer and a browser: staff create an account, its API key, a HubSpot connection and a
 * source in the explorer; the customer opens the connect link, consents on the (sandbox) HubSpot page and
 * lands on the page naming the portal; the connection is `ready` in `GET /api/v1/account/status` for the
 * new key, and an event posted to the source's ingress URL reaches the sandbox HubSpot. Over HTTP, each
 * step as a browser makes it (no hand-made JSON, no row written by the test).
 */
import { execFileSync } from 'node:child_process';
import { chromium } from 'playwright-core';
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { Sandbox } from '../../src/sandbox/sandbox.js';
import type { TestDatabase } from '../support/database.js';
import { startSandboxService, type SandboxService } from '../support/sandbox-service.js';
import { apiGet, around } from '../support/rest.js';
import { eventually } from '../support/worker.js';

const STAFF_TOKEN = 'onboarding-staff-token-0123456789';

/** Debian's Chromium, where installed (the suite installs none; without it the browser test is skipped). */
const CHROMIUM = ['/usr/bin/chromium', '/usr/bin/chromium-browser'].find((path) => {
  try {
    execFileSync(path, ['--version'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
});
// As root, with no sandbox; no background networking (this machine's network is closed).
const CHROMIUM_ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

let service: SandboxService;
let db: TestDatabase;
let sandbox: Sandbox;
let base: string;

beforeAll(async () => {
  service = await startSandboxService({ env: { SUPPORT_TOKENS: `onboarder:${STAFF_TOKEN}` } });
  ({ db, sandbox, base } = service);
});

afterAll(() => service?.close());

/** One explorer call as staff: its data, or the test fails naming the errors. */
async function explorer<T>(query: string, variables: Record<string, unknown>): Promise<T> {
  const res = await fetch(`${base}/graphql`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${STAFF_TOKEN}` },
    body: JSON.stringify({ query, variables }),
  });
  const body = (await res.json()) as { data?: T; errors?: unknown };
  expect(body.errors, query).toBeUndefined();
  expect(res.status).toBe(200);
  return body.data!;
}

/** What staff make in the explorer for a new customer: the account, its key, a HubSpot connection (its connect link) and a source. */
async function staffOnboards(email: string) {
  const { createAccount } = await explorer<{ createAccount: { id: number } }>(
    'mutation ($input: CreateAccountInput!) { createAccount(input: $input) { id } }',
    {
      input: { email },
    },
  );
  const { createApiKey } = await explorer<{ createApiKey: { key: string } }>('mutation ($input: CreateApiKeyInput!) { createApiKey(input: $input) { key } }', {
    input: { accountId: createAccount.id, name: 'dashboard', scopes: ['read'] },
  });
  const { createConnection } = await explorer<{ createConnection: { connection: { id: number }; connectLink: { url: string; available: boolean } } }>(
    'mutation ($input: NewConnectionInput!) { createConnection(input: $input) { connection { id } connectLink { url available } } }',
    { input: { accountId: createAccount.id, crm: 'HUBSPOT' } },
  );
  expect(createConnection.connectLink.available).toBe(true);
  const { createSource } = await explorer<{ createSource: { id: number; url: string } }>(
    'mutation ($input: CreateSourceInput!) { createSource(input: $input) { id url } }',
    { input: { connectionId: createConnection.connection.id, platform: 'smartlead' } },
  );
  // Not ready yet: the connection holds no credentials.
  const before = await apiGet(base, '/account/status', createApiKey.key);
  expect([before.status, before.body.ready]).toEqual([200, false]);
  return { key: createApiKey.key, connectionId: createConnection.connection.id, connectLink: createConnection.connectLink.url, sourceUrl: createSource.url };
}

/** Ready for the customer's own key, and the first event the sequencer posts is written in the customer's HubSpot. */
async function firstEventLands(onboarded: Awaited<ReturnType<typeof staffOnboards>>, lead: string) {
  const after = await apiGet(base, '/account/status', onboarded.key);
  expect(after.body.ready).toBe(true);
  expect((after.body.connections as Array<{ connectionId: number; ready: boolean }>).map((c) => [c.connectionId, c.ready])).toEqual([
    [onboarded.connectionId, true],
  ]);

  const res = await fetch(onboarded.sourceUrl, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      event_type: 'EMAIL_SENT',
      from_email: 'tom@northwind.test',
      to_email: lead,
      time_sent: '2026-11-27T09:00:00Z',
      campaign_id: 7,
      sequence_number: 1,
      custom_subject: 'Hello from onboarding',
      message_id: `onboarding-${lead}`,
    }),
  });
  expect(res.status).toBe(200);
  const { requestId } = (await res.json()) as { requestId: number };
  // (REST shows a sync without an outcome yet as `error`: wait for its outcome, then read it as the customer does.)
  await eventually(
    async () => (await db.query<{ status: string | null }>('SELECT status FROM syncs WHERE request_id = $1 AND status IS NOT NULL', [requestId]))[0],
    20_000,
    'the first event synced',
  );
  const { body } = await apiGet(base, `/syncs?${around()}`, onboarded.key);
  expect((body.data as Array<{ payloadId: number; status: string; error: unknown }>).map((s) => [s.payloadId, s.status, s.error])).toEqual([
    [requestId, 'success', null],
  ]);
  expect([...sandbox.systems.hubspot.contacts.values()].map((c) => c.properties.email)).toContain(lead);
}

it('onboards a customer from the explorer to an event written in their HubSpot, over HTTP', async () => {
  const onboarded = await staffOnboards('ops@newcustomer.test');

  // The customer opens the link, is sent to HubSpot's consent page, allows, and comes back.
  const start = await fetch(onboarded.connectLink, { redirect: 'manual' });
  expect(start.status).toBe(302);
  const authorize = start.headers.get('location')!;
  const consentPage = await fetch(authorize);
  expect(await consentPage.text()).toContain('id="consent-allow"');
  const allowed = await fetch(authorize, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: 'decision=allow',
    redirect: 'manual',
  });
  const done = await fetch(allowed.headers.get('location')!);
  const page = await done.text();
  expect(done.status, page).toBe(200);
  expect(page).toContain('data-connect-outcome="connected"');
  expect(page).toContain('is now connected');

  await firstEventLands(onboarded, 'first.lead@prospect.test');
});

it.skipIf(CHROMIUM === undefined)(
  'onboards a customer in a real browser: the explorer, the connect link, the consent click',
  async () => {
    const browser = await chromium.launch({ executablePath: CHROMIUM!, args: CHROMIUM_ARGS });
    try {
      const page = await browser.newPage();
      // Staff: the explorer opens in the browser (GraphiQL), and the mutations go from its page.
      await page.goto(`${base}/graphql`, { waitUntil: 'domcontentloaded' });
      expect(await page.title()).not.toBe('');
      const onboarded = await staffOnboards('browser@newcustomer.test');

      // The customer: the connect link, HubSpot's consent page, the click, the page naming the portal.
      await page.goto(onboarded.connectLink);
      await page.click('#consent-allow');
      await page.waitForSelector('main[data-connect-outcome="connected"]', { timeout: 10_000 });
      expect(await page.textContent('h1#connect-title')).toBeTruthy();
      expect(await page.textContent('main')).toContain('is now connected');

      await firstEventLands(onboarded, 'browser.lead@prospect.test');
    } finally {
      await browser.close();
    }
  },
  60_000,
);
