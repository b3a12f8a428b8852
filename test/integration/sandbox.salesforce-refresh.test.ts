/**
 * The sandbox Salesforce refresh (issue 29): with SANDBOX on and SALESFORCE_LOGIN_URL unset, the demo's
 * sandbox Salesforce connection, whose access token has expired, is refreshed at the configured default
 * login URL and its sync succeeds. The app serves the sandbox as `npm start` does (src/main.ts: the demo
 * seeded with the sandbox's URLs, the worker given the configuration's CRM URLs); the worker is the real one.
 */
import type { Server } from 'node:http';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { seedDemoIfEmpty } from '../../src/admin/demo.js';
import { makeApp } from '../../src/app.js';
import { loadConfig, type Config } from '../../src/config.js';
import { freePort } from '../../src/db/embedded.js';
import { createPrisma, type PrismaClient } from '../../src/db/prisma.js';
import { RateLimitStore } from '../../src/db/rate-limit-store.js';
import { openSecret } from '../../src/domain/secrets.js';
import { createHttpServer } from '../../src/http/server.js';
import { RequestAcceptor } from '../../src/ingress/accept.js';
import { ingressHandler } from '../../src/ingress/handler.js';
import { createLogger } from '../../src/logger.js';
import { SANDBOX_CREDENTIALS } from '../../src/sandbox/demo.js';
import { Sandbox } from '../../src/sandbox/sandbox.js';
import { createTestDatabase, TEST_ENCRYPTION_KEY, type TestDatabase } from '../support/database.js';
import { eventually, startTestWorker } from '../support/worker.js';

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

let db: TestDatabase;
let config: Config;
let sandbox: Sandbox;
let heavyPrisma: PrismaClient;
let rateLimits: RateLimitStore;
let acceptor: RequestAcceptor;
let server: Server;
let worker: { stop(): Promise<void> };

beforeAll(async () => {
  db = await createTestDatabase();
  const port = await freePort();
  // SANDBOX on, no CRM URL named: every outside system is the sandbox's default.
  config = loadConfig({
    DATABASE_URL: db.url,
    ENCRYPTION_KEY: TEST_ENCRYPTION_KEY.toString('hex'),
    SANDBOX: 'true',
    BASE_URL: `http://127.0.0.1:${port}`,
    SANDBOX_SMTP_PORT: String(await freePort()),
    LOG_LEVEL: 'silent',
  });
  const logger = createLogger('silent', process.stderr);
  sandbox = await Sandbox.start({ prisma: db.prisma, baseUrl: config.baseUrl, smtpPort: config.sandbox!.smtpPort, encryptionKey: TEST_ENCRYPTION_KEY, logger });
  heavyPrisma = createPrisma(db.url, { max: 2 });
  rateLimits = new RateLimitStore(db.url);
  acceptor = new RequestAcceptor(db.url);
  const app = makeApp({ config, prisma: db.prisma, heavyPrisma, rateLimits, logger, encryptionKey: TEST_ENCRYPTION_KEY, sandbox });
  server = createHttpServer(app, ingressHandler(acceptor, logger), logger);
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  await seedDemoIfEmpty(db.prisma, TEST_ENCRYPTION_KEY, `${config.baseUrl}/sandbox`);
  worker = await startTestWorker(
    db.url,
    {
      urls: config.crmUrls,
      outboundAllowPrivate: config.outboundAllowPrivate,
      sandboxOrigin: config.sandbox!.origin,
    },
    { blocklists: { pushUrls: config.blocklistPushUrls } },
  );
});

afterAll(async () => {
  await worker?.stop();
  await new Promise<void>((resolve) => {
    if (!server) return resolve();
    server.closeAllConnections();
    server.close(() => resolve());
  });
  await sandbox?.close();
  await heavyPrisma?.$disconnect();
  await rateLimits?.close();
  await acceptor?.close();
  await db?.drop();
});

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
