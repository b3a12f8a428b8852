/**
 * The sandbox Salesforce refresh (issue 29): with SANDBOX on and SALESFORCE_LOGIN_URL unset, the demo's
 * sandbox Salesforce connection, whose access token has expired, is refreshed at the configured default
 * login URL and its sync succeeds. The app serves the sandbox as `npm start` does (src/main.ts: the demo
 * seeded with the sandbox's URLs, the worker given the configuration's CRM URLs); the worker is the real one.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { Config } from '../../src/config.js';
import { openSecret } from '../../src/domain/secrets.js';
import { SANDBOX_CREDENTIALS } from '../../src/sandbox/demo.js';
import type { Sandbox } from '../../src/sandbox/sandbox.js';
import { TEST_ENCRYPTION_KEY, type TestDatabase } from '../support/database.js';
import { startSandboxService, type SandboxService } from '../support/sandbox-service.js';
import { eventually } from '../support/worker.js';

/** An Instantly `email_sent` (the demo's Salesforce source is an Instantly one): a Lead and a Task in Salesforce. */
const SENT = JSON.stringify({
  timestamp: '2026-09-23T08:00:00.000Z',
  event_type: 'email_sent',
  workspace: '0a1b2c3d-1111-2222-3333-444455556666',
  campaign_id: '7f3e9a10-aaaa-bbbb-cccc-ddddeeeeffff',
  campaign_name: 'Finance hiring signal',
  lead_email: 'jane@acme.test',
  email_account: 'tom@northwind.test',
  step: 1,
  email_id: '0199a7f0-0000-7000-8000-000000000000',
  email_subject: 'Quick question about your finance hire',
  email_text: 'Hi Jane',
});

let service: SandboxService;
let db: TestDatabase;
let sandbox: Sandbox;
let config: Config;

beforeAll(async () => {
  service = await startSandboxService({ seedDemo: true });
  ({ db, sandbox, config } = service);
});

afterAll(() => service?.close());

it('refreshes an expired sandbox Salesforce token at the default SALESFORCE_LOGIN_URL, and the sync succeeds', async () => {
  const connection = await db.prisma.connection.findFirstOrThrow({ where: { crm: 'SALESFORCE', deletedAt: null }, include: { sources: true } });
  expect(JSON.parse(openSecret(TEST_ENCRYPTION_KEY, connection.credentialsEncrypted!))).toMatchObject({
    accessToken: SANDBOX_CREDENTIALS.salesforce.accessToken,
    instanceUrl: `${config.baseUrl}/sandbox/salesforce-instance`,
  });
  // Every session the sandbox Salesforce issued is now void (401 INVALID_SESSION_ID) until a refresh.
  sandbox.systems.salesforce.expireAccessTokens();

  const res = await fetch(`${config.baseUrl}/webhooks/${connection.sources[0]!.ingressCode}`, {
    method: 'POST',
    body: SENT,
    headers: { 'content-type': 'application/json' },
  });
  expect(res.status).toBe(200);
  const { requestId } = (await res.json()) as { requestId: number };
  const sync = await eventually(
    async () =>
      (await db.query<{ status: string; error: unknown }>('SELECT status, error FROM syncs WHERE request_id = $1 AND status IS NOT NULL', [requestId]))[0],
    20_000,
    `the sync of request ${requestId}`,
  );

  // Written, owner and all: the demo's source assigns owners, and the sender is one of the sandbox's reps.
  expect([sync.status, sync.error]).toEqual(['success', null]);
  const journal = await db.query<{ system: string; method: string; path: string; status: number }>(
    "SELECT system, method, path, status FROM sandbox_requests WHERE system LIKE 'salesforce-%' ORDER BY id",
  );
  // The expired session answered 401, the refresh went through the sandbox's login path, and the calls after it succeeded.
  expect(journal[0]).toMatchObject({ system: 'salesforce-instance', status: 401 });
  expect(journal).toContainEqual({ system: 'salesforce-login', method: 'POST', path: '/services/oauth2/token', status: 200 });
  expect(journal.at(-1)).toMatchObject({ system: 'salesforce-instance', status: expect.toSatisfy((status: number) => status < 300) });
  const after = await db.prisma.connection.findUniqueOrThrow({ where: { id: connection.id } });
  expect(JSON.parse(openSecret(TEST_ENCRYPTION_KEY, after.credentialsEncrypted!))).not.toMatchObject({
    accessToken: SANDBOX_CREDENTIALS.salesforce.accessToken,
  });
  expect([...sandbox.systems.salesforce.leads.values()].map((lead) => lead.Email)).toContain('jane@acme.test');
});
