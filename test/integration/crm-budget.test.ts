/**
 * A connection's CRM request budget, shared by worker processes through PostgreSQL: two real worker
 * processes syncing one HubSpot connection stay within its requests per 10 s (the HubSpot emulator
 * enforces the same limit and would answer 429), a 429 pauses the connection for both, a paused
 * connection does not hold up another's syncs, and a CRM refusing for 15 minutes is announced.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openSecret, sealSecret } from '../../src/domain/secrets.js';
import { startHubspotEmulator, type HubspotEmulator } from '../../src/emulators/hubspot.js';
import { startSalesforceEmulator, type SalesforceEmulator } from '../../src/emulators/salesforce.js';
import { seedTestAccounts } from '../support/accounts.js';
import { TEST_ENCRYPTION_KEY } from '../support/database.js';
import { ingest, smartleadEvent } from '../support/forwarding.js';
import { SUPPORT_TOKEN, useTestServer } from '../support/server.js';
import { startService, type ServiceProcess } from '../support/service-process.js';
import { eventually } from '../support/worker.js';

const ctx = useTestServer();
const BUDGET = 6;
const TOKEN = { busy: 'budget-busy-token', other: 'budget-other-token' };

let hubspot: HubspotEmulator;
let salesforce: SalesforceEmulator;
const SF_CONCURRENCY = 2;
let workers: ServiceProcess[] = [];
let acme: number;
let busy: { connectionId: number; code: string };
let other: { connectionId: number; code: string };
let sf: { connectionId: number; code: string };

beforeAll(async () => {
  const ids = await seedTestAccounts(ctx.db.prisma);
  acme = ids.accounts.acme!;
  hubspot = await startHubspotEmulator({ accessToken: TOKEN.busy, requestsPer10s: BUDGET });
  hubspot.accessTokens.add(TOKEN.other);
  salesforce = await startSalesforceEmulator({ accessToken: 'budget-sf-token', maxConcurrency: SF_CONCURRENCY });
  const connection = async (token: string, code: string, crm: 'HUBSPOT' | 'SALESFORCE' = 'HUBSPOT') => {
    const credentials = crm === 'HUBSPOT' ? { accessToken: token } : { instanceUrl: salesforce.instanceUrl, accessToken: token };
    const created = await ctx.db.prisma.connection.create({
      data: {
        accountId: ids.accounts.acme!,
        crm,
        credentialsEncrypted: sealSecret(TEST_ENCRYPTION_KEY, JSON.stringify(credentials)),
        crmRateLimit: crm === 'HUBSPOT' ? { requestsPer10s: BUDGET } : { maxConcurrency: SF_CONCURRENCY },
      },
    });
    await ctx.db.prisma.source.create({ data: { connectionId: created.id, platform: 'smartlead', ingressCode: code } });
    return { connectionId: created.id, code };
  };
  busy = await connection(TOKEN.busy, 'budgetBusySource01');
  other = await connection(TOKEN.other, 'budgetOtherSource01');
  sf = await connection('budget-sf-token', 'budgetSalesforce01', 'SALESFORCE');
  const env = {
    DATABASE_URL: ctx.db.url,
    ENCRYPTION_KEY: TEST_ENCRYPTION_KEY.toString('hex'),
    OUTBOUND_ALLOW_PRIVATE: 'true',
    HUBSPOT_BASE_URL: hubspot.url,
    SALESFORCE_LOGIN_URL: salesforce.loginUrl,
    LOG_LEVEL: 'info',
  };
  workers = [startService('worker', env), startService('worker', env)];
  await Promise.all(workers.map((w) => w.waitFor('"msg":"started"')));
}, 60_000);

afterAll(async () => {
  await Promise.all(workers.map((w) => w.stop()));
  await hubspot?.close();
  await salesforce?.close();
});

/** Waits until every request has a sync outcome; returns their statuses. */
function outcomes(requestIds: number[], ms = 60_000): Promise<string[]> {
  return eventually(
    async () => {
      const rows = await ctx.db.query<{ status: string | null }>('SELECT status::text AS status FROM syncs WHERE request_id = ANY($1::bigint[])', [requestIds]);
      return rows.length === requestIds.length && rows.every((r) => r.status !== null) ? rows.map((r) => r.status as string) : undefined;
    },
    ms,
    `${requestIds.length} sync outcomes`,
  );
}

const send = (code: string, n: number, tag: string) =>
  Promise.all(Array.from({ length: n }, (_, i) => ingest(ctx.server.baseUrl, code, smartleadEvent('EMAIL_SENT', `${tag}-${i}@prospect.test`))));

describe('a connection busier than its CRM budget', () => {
  it('is synced by two worker processes within its requests per 10 s, without a single 429', async () => {
    // Events a moment apart (more than a drain's round waits for the next): each sync is a round of its own,
    // with its own calls (syncs at the same moment would share batch calls).
    const requestIds: number[] = [];
    for (let i = 0; i < 5; i += 1) {
      requestIds.push(...(await send(busy.code, 1, `burst${i}`)));
      await new Promise((resolve) => setTimeout(resolve, 300));
    }
    expect(await outcomes(requestIds)).toEqual(requestIds.map(() => 'success'));
    const calls = hubspot.requests.filter((r) => r.token === TOKEN.busy);
    // More calls than one window holds: the budget was what paced them.
    expect(calls.length).toBeGreaterThan(BUDGET);
    expect(hubspot.busiestTenSeconds(TOKEN.busy)).toBeLessThanOrEqual(BUDGET);
    expect(calls.filter((r) => r.status === 429)).toEqual([]);
  }, 90_000);

  it('pauses the connection for both workers when the CRM answers 429, until its Retry-After', async () => {
    hubspot.failNext(1, { status: 429, retryAfter: 3 });
    const requestIds = await send(busy.code, 4, 'paused');
    expect(await outcomes(requestIds)).toEqual(requestIds.map(() => 'success'));
    const calls = hubspot.requests.filter((r) => r.token === TOKEN.busy);
    const refused = calls.findIndex((r) => r.status === 429);
    expect(refused).toBeGreaterThanOrEqual(0);
    const at = calls[refused]!.at;
    // A request the other worker had already sent when the 429 came may still land a moment later; none
    // starts afterwards until the Retry-After has passed.
    expect(calls.filter((r) => r.at > at + 250 && r.at < at + 2_900)).toEqual([]);
    expect(calls.some((r) => r.at >= at + 2_900)).toBe(true);
  }, 60_000);

  it("keeps another connection's syncs flowing while one is paused", async () => {
    await ctx.db.query("UPDATE crm_budgets SET paused_until = now() + interval '8 seconds', pause_reason = 'test' WHERE connection_id = $1", [
      busy.connectionId,
    ]);
    const pausedAt = Date.now();
    const held = await send(busy.code, 3, 'held');
    const flowing = await send(other.code, 3, 'flowing');
    expect(await outcomes(flowing, 7_000)).toEqual(['success', 'success', 'success']);
    const heldNow = await ctx.db.query<{ status: string | null }>('SELECT status::text AS status FROM syncs WHERE request_id = ANY($1::bigint[])', [held]);
    expect(heldNow.every((r) => r.status === null)).toBe(true);
    expect(hubspot.requests.filter((r) => r.token === TOKEN.busy && r.at > pausedAt + 100)).toEqual([]);
    // Support staff see the pause, and why.
    const res = await fetch(`${ctx.server.baseUrl}/graphql`, {
      method: 'POST',
      headers: { authorization: `Bearer ${SUPPORT_TOKEN}`, 'content-type': 'application/json' },
      body: JSON.stringify({ query: `{ account(id: ${acme}) { connections { id crmPause { until reason } } } }` }),
    });
    const { data } = (await res.json()) as { data: { account: { connections: Array<{ id: number; crmPause: { until: string; reason: string } | null }> } } };
    const shown = data.account.connections.find((c) => c.id === busy.connectionId);
    expect(shown?.crmPause).toEqual({ until: expect.any(String), reason: 'test' });
    expect(data.account.connections.find((c) => c.id === other.connectionId)?.crmPause).toBeNull();
    expect(await outcomes(held, 30_000)).toEqual(['success', 'success', 'success']);
  }, 60_000);
});

describe('a CRM that keeps refusing for 15 minutes', () => {
  it("announces the connection's busy pipelines failing once, while their syncs wait and then recover", async () => {
    const token = 'budget-refusing-token';
    hubspot.accessTokens.add(token);
    const refusing = await ctx.db.prisma.connection.create({
      data: { accountId: acme, crm: 'HUBSPOT', credentialsEncrypted: sealSecret(TEST_ENCRYPTION_KEY, JSON.stringify({ accessToken: token })) },
    });
    const source = (code: string) => ctx.db.prisma.source.create({ data: { connectionId: refusing.id, platform: 'smartlead', ingressCode: code } });
    const [first, second, idle] = [await source('refusingSource01'), await source('refusingSource02'), await source('refusingIdle001')];
    // Fifteen minutes of refusals, as the store would have counted them: a run that began 16 minutes ago and
    // is still going, its last 429's pause ending in 6 s (time for the events to arrive under load). The syncs' first slot is refused: they see the run.
    // (Seeded rather than a 429 from the emulator, whose next fault any connection's request may take.)
    await ctx.db.query(
      `INSERT INTO crm_budgets (connection_id, limited_since, limited_until, paused_until, pause_reason, updated_at)
       VALUES ($1, now() - interval '16 minutes', now() + interval '6 seconds', now() + interval '6 seconds', 'the CRM answered 429 Too Many Requests', now())`,
      [refusing.id],
    );
    const requestIds = [...(await send(first.ingressCode, 2, 'refused-a')), ...(await send(second.ingressCode, 1, 'refused-b'))];
    expect(await outcomes(requestIds, 30_000)).toEqual(requestIds.map(() => 'success'));

    const events = await ctx.db.query<{ type: string; source_id: number; reason: string | null }>(
      "SELECT type, source_id, data->>'reason' AS reason FROM platform_events WHERE connection_id = $1 ORDER BY id",
      [refusing.id],
    );
    const of = (sourceId: number) => events.filter((e) => e.source_id === sourceId).map((e) => [e.type, e.reason]);
    expect(of(first.id)).toEqual([
      ['sync.failed', 'crm_rate_limited'],
      ['sync.recovered', null],
    ]);
    expect(of(second.id)).toEqual(of(first.id));
    expect(of(idle.id)).toEqual([]);
    const [run] = await ctx.db.query<{ claimed: boolean }>('SELECT warned_for = limited_since AS claimed FROM crm_budgets WHERE connection_id = $1', [
      refusing.id,
    ]);
    expect(run?.claimed).toBe(true);
  }, 60_000);
});

describe("a connection's first token refresh", () => {
  it('renews an expired token once across both workers, with no budget row yet, and every sync succeeds', async () => {
    // Setup: OAuth credentials whose access token expired before the connection made any CRM call (no
    // crm_budgets row); refresh tokens rotate, so a second exchange with the old one would be refused.
    const expired = 'budget-expired-token';
    hubspot.expiredTokens.add(expired);
    hubspot.rotateRefreshTokens = true;
    const refreshesBefore = hubspot.tokenRefreshes.length;
    const credentials = {
      accessToken: expired,
      refreshToken: 'hs-refresh-initial',
      clientId: hubspot.clientId,
      clientSecret: hubspot.clientSecret,
      expiresAt: new Date(Date.now() - 3_600_000).toISOString(),
    };
    const connection = await ctx.db.prisma.connection.create({
      data: { accountId: acme, crm: 'HUBSPOT', credentialsEncrypted: sealSecret(TEST_ENCRYPTION_KEY, JSON.stringify(credentials)) },
    });
    const source = await ctx.db.prisma.source.create({ data: { connectionId: connection.id, platform: 'smartlead', ingressCode: 'firstRefreshSrc01' } });
    expect(await ctx.db.query('SELECT 1 FROM crm_budgets WHERE connection_id = $1', [connection.id])).toEqual([]);

    // Action: events at once, taken by both workers.
    const requestIds = await send(source.ingressCode, 6, 'first-refresh');

    // Assertions: every sync written, one token call, the renewed credentials stored and the lease free.
    try {
      expect(await outcomes(requestIds, 30_000)).toEqual(requestIds.map(() => 'success'));
    } finally {
      hubspot.rotateRefreshTokens = false;
    }
    expect(hubspot.tokenRefreshes.length - refreshesBefore).toBe(1);
    const [stored] = await ctx.db.query<{ sealed: string; holder: string | null }>(
      'SELECT credentials_encrypted AS sealed, credentials_renewal_holder AS holder FROM connections WHERE id = $1',
      [connection.id],
    );
    expect(stored?.holder).toBeNull();
    const renewed = JSON.parse(openSecret(TEST_ENCRYPTION_KEY, stored!.sealed)) as { accessToken: string };
    expect(renewed.accessToken).not.toBe(expired);
    expect(hubspot.accessTokens.has(renewed.accessToken)).toBe(true);
    // The token call took a slot of the connection's budget, as every CRM call does.
    const [budget] = await ctx.db.query<{ hits: number }>('SELECT cardinality(hits) AS hits FROM crm_budgets WHERE connection_id = $1', [connection.id]);
    expect(budget?.hits).toBeGreaterThan(0);
  }, 60_000);
});

describe('a Salesforce connection', () => {
  it('has at most its concurrency budget of requests in flight, across both workers, and never meets REQUEST_LIMIT_EXCEEDED', async () => {
    // A burst of new leads: a round's steps each make several collection calls (200 records a call) at once.
    salesforce.slow(150);
    try {
      const requestIds: number[] = [];
      for (let i = 0; i < 5; i += 1) requestIds.push(...(await send(sf.code, 100, `sf${i}`)));
      expect(await outcomes(requestIds)).toEqual(requestIds.map(() => 'success'));
    } finally {
      salesforce.slow(0);
    }
    // The cap was reached, and held.
    expect(salesforce.peakConcurrency).toBe(SF_CONCURRENCY);
    expect(salesforce.requests.filter((r) => r.status === 403)).toEqual([]);
    expect(salesforce.tasks.size).toBe(500);
  }, 60_000);
});
