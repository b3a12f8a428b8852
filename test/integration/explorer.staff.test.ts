/**
 * The support explorer across accounts (issue 17): staff read any account's lists through the types the
 * REST facade uses (the viewer decides the scope), look up requests, deliveries, sources by a pasted
 * ingress URL and contacts across accounts, load the lineage of 50 requests in as many SQL statements as
 * of 1, act on webhook endpoints under their rules with an audit row each, and re-sync error syncs in
 * bulk: a dry run, then each matched sync queued once, and a second call queuing nothing new.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { seedFixture, type SeedResult } from '../../src/admin/seed.js';
import { createPrisma } from '../../src/db/prisma.js';
import { createTestDatabase, TEST_ENCRYPTION_KEY } from '../support/database.js';
import { startTestServer, SUPPORT_TOKEN, useTestServer } from '../support/server.js';
import { eventually, startTestWorker } from '../support/worker.js';

const ctx = useTestServer();
const FROM = new Date(Date.now() - 7 * 86_400_000).toISOString();
const TO = new Date(Date.now() + 86_400_000).toISOString();
let seeded: SeedResult;

async function explorer(baseUrl: string, query: string, variables?: Record<string, unknown>, token = SUPPORT_TOKEN) {
  const res = await fetch(`${baseUrl}/graphql`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
    body: JSON.stringify({ query, ...(variables ? { variables } : {}) }),
  });
  return { status: res.status, body: (await res.json()) as { data?: Record<string, any>; errors?: Array<{ message: string }> } }; // eslint-disable-line @typescript-eslint/no-explicit-any -- answers are checked field by field
}
const staff = (query: string, variables?: Record<string, unknown>) => explorer(ctx.server.baseUrl, query, variables);

/** An account whose source got `errors` failed syncs and one written one, each forwarded once. */
function account(ref: string, errors: number, extra: { legacyIds?: [string, string] } = {}) {
  const at = (i: number) => new Date(Date.now() - (i + 1) * 60_000).toISOString();
  const request = (i: number, status: 'error' | 'success') => ({
    createdAt: at(i),
    body: JSON.stringify({ event_type: 'EMAIL_SENT', to_email: `lead${i}@${ref}.test` }),
    sync: {
      status,
      eventType: 'EMAIL_SENT',
      toEmail: i === 0 ? 'shared@prospect.test' : `lead${i}@${ref}.test`,
      ...(status === 'error' ? { error: { message: `HubSpot said no (${ref})` } } : {}),
    },
    deliveries: [{ destination: `${ref}-dest`, status: 'success', httpStatus: 200 }],
  });
  return {
    ref,
    connections: [
      {
        ref: `${ref}-hubspot`,
        crm: 'HUBSPOT',
        destinations: [{ ref: `${ref}-dest`, url: `https://${ref}.example.com/hook` }],
        blocklists: [
          {
            ref: `${ref}-list`,
            listName: 'Do not contact',
            platform: 'instantly',
            blockType: 'ADDRESS',
            hasCrmSource: false,
            entries: ['c@x.test', 'a@x.test', 'b@x.test'],
          },
        ],
        sources: [
          {
            ref: `${ref}-source`,
            platform: 'smartlead',
            ingressCode: `code${ref}0123456789`,
            ...(extra.legacyIds ? { legacyIds: extra.legacyIds } : {}),
            destinations: [{ destination: `${ref}-dest` }],
            requests: [...Array.from({ length: errors }, (_, i) => request(i, 'error')), request(errors, 'success')],
          },
        ],
      },
    ],
    webhookEndpoints: [{ ref: `${ref}-ops`, url: `https://${ref}.example.com/ops` }],
  };
}

beforeAll(async () => {
  seeded = await seedFixture(ctx.db.prisma, { accounts: [account('one', 5), account('two', 2, { legacyIds: ['legacyA', 'legacyB'] })] }, TEST_ENCRYPTION_KEY);
});

describe("reading any account's lists", () => {
  it('gives staff the same lists as an API key, for the account named', async () => {
    const one = seeded.accounts.one!;
    const { body } = await staff(
      `query ($a: Int!, $from: String!, $to: String!) {
        syncs(accountId: $a, from: $from, to: $to, status: error) { data { id toEmail connectionId } hasMore }
        requests(accountId: $a, from: $from, to: $to, limit: 2) { data { accountId } hasMore nextCursor }
        deliveries(accountId: $a, from: $from, to: $to) { data { status } }
        accountMetrics(accountId: $a, from: $from, to: $to) { requests { count } syncs { success error } deliveries { success } }
        sources(accountId: $a) { id platform }
        connections(accountId: $a) { id crm }
      }`,
      { a: one, from: FROM, to: TO },
    );
    expect(body.errors).toBeUndefined();
    expect(body.data!.syncs.data).toHaveLength(5);
    expect(body.data!.syncs.data.every((s: { connectionId: number }) => s.connectionId === seeded.connections['one-hubspot'])).toBe(true);
    expect(body.data!.requests).toMatchObject({ data: [{ accountId: one }, { accountId: one }], hasMore: true, nextCursor: expect.any(String) });
    expect(body.data!.deliveries.data).toHaveLength(6);
    expect(body.data!.accountMetrics).toEqual({ requests: { count: 6 }, syncs: { success: 1, error: 5 }, deliveries: { success: 6 } });
    expect(body.data!.sources).toEqual([{ id: seeded.sources['one-source'], platform: 'smartlead' }]);
    expect(body.data!.connections).toEqual([{ id: seeded.connections['one-hubspot'], crm: 'HUBSPOT' }]);

    // Down the account to its block list's entries, a page at a time.
    const entries = async (after?: number) =>
      (await staff(`{ account(id: ${one}) { connections { blocklists { entries(first: 2${after ? `, afterId: ${after}` : ''}) { id value pushedAt } } } } }`))
        .body.data!.account.connections[0].blocklists[0].entries as Array<{ id: number; value: string; pushedAt: string | null }>;
    const first = await entries();
    expect(first.map((e) => e.value)).toEqual(['c@x.test', 'a@x.test']);
    expect((await entries(first[1]!.id)).map((e) => [e.value, e.pushedAt])).toEqual([['b@x.test', null]]);
  });

  it('asks staff which account, and names an unknown one', async () => {
    expect((await staff(`{ syncs(from: "${FROM}", to: "${TO}") { hasMore } }`)).body.errors?.[0]?.message).toBe('accountId is required for support staff');
    expect((await staff(`{ sources(accountId: 987654) { id } }`)).body.errors?.[0]?.message).toBe('Account 987654 not found');
  });
});

describe('direct lookups across accounts', () => {
  it('finds a request, a delivery and a source by its pasted ingress URL, in either form', async () => {
    const [request] = await ctx.db.query<{ id: string }>('SELECT id::text FROM requests WHERE account_id = $1 ORDER BY id LIMIT 1', [seeded.accounts.two]);
    const [delivery] = await ctx.db.query<{ id: string }>('SELECT id::text FROM deliveries WHERE request_id = $1', [request!.id]);
    const { body } = await staff(`{ request(id: ${request!.id}) { accountId } delivery(id: ${delivery!.id}) { payloadId status } }`);
    expect(body.data).toEqual({ request: { accountId: seeded.accounts.two }, delivery: { payloadId: Number(request!.id), status: 'success' } });

    for (const [url, source] of [
      ['https://ingress.example.com/webhooks/codeone0123456789', 'one-source'],
      ['  /webhooks/codeone0123456789/ ', 'one-source'],
      ['ingress.example.com/webhooks/legacyA/legacyB?x=1', 'two-source'],
    ] as const) {
      const found = await staff('query ($url: String!) { sourceByUrl(url: $url) { id connection { id } } }', { url });
      expect(found.body.data?.sourceByUrl?.id, url).toBe(seeded.sources[source]);
    }
    expect((await staff('{ sourceByUrl(url: "https://x.test/webhooks/nope") { id } }')).body.errors?.[0]?.message).toBe('No source has this ingress URL');
    expect((await staff('{ sourceByUrl(url: "https://x.test/api/v1/sources") { id } }')).body.errors?.[0]?.message).toMatch(/^url must be an ingress URL/);
    expect((await staff('{ request(id: 99999999) { id } }')).body.errors?.[0]?.message).toBe('Request 99999999 not found');
  });

  it('finds every account and connection that has seen a contact, with its outreach there', async () => {
    const { body } = await staff('{ contact(email: "Shared@Prospect.test") { accountId connectionIds outreach { found summary { totalEvents } } } }');
    expect(body.errors).toBeUndefined();
    expect(body.data!.contact).toEqual([
      { accountId: seeded.accounts.one, connectionIds: [seeded.connections['one-hubspot']], outreach: { found: true, summary: { totalEvents: 1 } } },
      { accountId: seeded.accounts.two, connectionIds: [seeded.connections['two-hubspot']], outreach: { found: true, summary: { totalEvents: 1 } } },
    ]);
    expect((await staff('{ contact(email: "nobody@nowhere.test") { accountId } }')).body.data!.contact).toEqual([]);
    expect((await staff('{ contact { accountId } }')).body.errors?.[0]?.message).toBeTruthy();
  });
});

describe('webhook endpoints, for staff', () => {
  it('replays a delivery and re-enables an endpoint of any account, refuses the rest, and audits each', async () => {
    const endpoint = seeded.webhookEndpoints['two-ops']!;
    const [delivery] = await ctx.db.query<{ public_id: string }>(
      `WITH e AS (SELECT id, account_id FROM webhook_endpoints WHERE public_id = $1),
            ev AS (INSERT INTO platform_events (public_id, account_id, type, summary, data) SELECT 'svcevt_staffreplay', account_id, 'test.ping', 'ping', '{}' FROM e RETURNING id)
       INSERT INTO webhook_deliveries (public_id, endpoint_id, event_id, status, attempts) SELECT 'svcwhd_staffreplay', e.id, ev.id, 'DEAD', 8 FROM e, ev RETURNING public_id`,
      [endpoint],
    );
    await ctx.db.query(
      "UPDATE webhook_endpoints SET is_active = false, disabled_at = now(), disabled_reason = 'auto', consecutive_dead_count = 20 WHERE public_id = $1",
      [endpoint],
    );

    const replay = await staff('mutation ($e: String!, $d: String!) { replayWebhookDelivery(endpointId: $e, deliveryId: $d) { status replayOfDeliveryId } }', {
      e: endpoint,
      d: delivery!.public_id,
    });
    expect(replay.body.data).toEqual({ replayWebhookDelivery: { status: 'PENDING', replayOfDeliveryId: 'svcwhd_staffreplay' } });
    const enable = await staff('mutation ($e: String!) { updateWebhookEndpoint(id: $e, input: { isActive: true }) { isActive } }', { e: endpoint });
    expect(enable.body.data).toEqual({ updateWebhookEndpoint: { isActive: true } });
    const [row] = await ctx.db.query<{ consecutive_dead_count: number; disabled_at: Date | null }>(
      'SELECT consecutive_dead_count, disabled_at FROM webhook_endpoints WHERE public_id = $1',
      [endpoint],
    );
    expect(row).toEqual({ consecutive_dead_count: 0, disabled_at: null });
    const listed = await staff(`{ webhookDeliveries(endpointId: "${endpoint}", from: "${FROM}", to: "${TO}") { data { id } } }`);
    expect(listed.body.data!.webhookDeliveries.data).toHaveLength(2);

    // Refused: changing anything but isActive, and what reads or replaces a signing secret.
    const url = await staff(`mutation { updateWebhookEndpoint(id: "${endpoint}", input: { url: "https://evil.example.com" }) { id } }`);
    expect(url.body.errors?.[0]?.message).toBe('Support staff may only change isActive (re-enable or disable an endpoint)');
    const rotate = await staff(`mutation { rotateWebhookSecret(id: "${endpoint}") { secret } }`);
    expect(rotate.body.errors?.[0]?.message).toMatch(/^Support staff may read webhook endpoints/);

    const { body } = await staff('{ auditLog(limit: 4) { action result } }');
    expect(body.data!.auditLog.map((e: { action: string }) => e.action)).toEqual([
      'rotateWebhookSecret',
      'updateWebhookEndpoint',
      'updateWebhookEndpoint',
      'replayWebhookDelivery',
    ]);
    expect(body.data!.auditLog[0].result).toEqual({ errors: [expect.stringMatching(/^Support staff may read/)] });
  });
});

describe("the customers' twins, for staff", () => {
  it('replays a forwarding delivery and pauses a block list of any account, each with its audit row', async () => {
    const [delivery] = await ctx.db.query<{ id: string; destination_id: number }>(
      'SELECT id::text, destination_id FROM deliveries WHERE account_id = $1 ORDER BY id LIMIT 1',
      [seeded.accounts.two],
    );
    const replay = await staff(`mutation { replayDelivery(destinationId: ${delivery!.destination_id}, deliveryId: ${delivery!.id}) { queued deliveryId } }`);
    expect(replay.body.data).toEqual({ replayDelivery: { queued: true, deliveryId: Number(delivery!.id) } });
    expect(await ctx.db.query('SELECT 1 FROM pending_deliveries WHERE replay_of_delivery_id = $1', [delivery!.id])).toHaveLength(1);
    const pause = await staff(`mutation { pauseBlocklist(id: ${seeded.blocklists['one-list']}) { isEnabled } }`);
    expect(pause.body.data).toEqual({ pauseBlocklist: { isEnabled: false } });

    const { body } = await staff('{ auditLog(limit: 2) { staff action arguments result } }');
    expect(body.data!.auditLog).toMatchObject([
      { staff: 'token:staf', action: 'pauseBlocklist', result: { data: { pauseBlocklist: { isEnabled: false } } } },
      { staff: 'token:staf', action: 'replayDelivery', result: { data: { replayDelivery: { queued: true } } } },
    ]);
  });
});

describe('without a staff token', () => {
  it('refuses every root field, read or write, before it runs', async () => {
    const { body } = await staff('{ __schema { queryType { fields { name } } mutationType { fields { name } } } }');
    const fields = [
      ...body.data!.__schema.queryType.fields.map((f: { name: string }) => `{ ${f.name} { __typename } }`),
      ...body.data!.__schema.mutationType.fields.map((f: { name: string }) => `mutation { ${f.name} { __typename } }`),
    ];
    expect(fields.length).toBeGreaterThan(40);
    const audited = (await ctx.db.query('SELECT 1 FROM audit_log')).length;
    for (const document of fields) {
      for (const token of ['svcapi_not-a-staff-token-000000000000', '']) {
        const { status, body: refused } = await explorer(ctx.server.baseUrl, document, undefined, token);
        expect({ document, status, code: (refused.errors?.[0] as { extensions?: { code?: string } })?.extensions?.code }).toEqual({
          document,
          status: 401,
          code: 'UNAUTHENTICATED',
        });
      }
    }
    expect(await ctx.db.query('SELECT 1 FROM audit_log')).toHaveLength(audited);
  });
});

describe('bulk re-sync', () => {
  it('counts on a dry run, then queues each matched sync once; a second call queues nothing new', async () => {
    const filter = { accountId: seeded.accounts.one, from: FROM, to: TO };
    const retry = (dryRun: boolean, f: Record<string, unknown> = filter) =>
      staff('mutation ($f: RetrySyncsFilter!, $d: Boolean) { retrySyncs(filter: $f, dryRun: $d) { dryRun matched capped bulkRetryId } }', { f, d: dryRun });

    // A dry run counts, narrowed by the error text; nothing is queued.
    expect((await retry(true)).body.data!.retrySyncs).toEqual({ dryRun: true, matched: 5, capped: false, bulkRetryId: null });
    expect((await retry(true, { ...filter, errorContains: 'hubspot SAID' })).body.data!.retrySyncs.matched).toBe(5);
    expect((await retry(true, { ...filter, errorContains: '100%' })).body.data!.retrySyncs.matched).toBe(0);
    expect(await ctx.db.query('SELECT 1 FROM bulk_retries')).toHaveLength(0);

    const before = await ctx.db.query<{ id: string; attempts: number }>(
      "SELECT id::text, attempts FROM syncs WHERE account_id = $1 AND status = 'error' ORDER BY id",
      [seeded.accounts.one],
    );
    const real = (await retry(false)).body.data!.retrySyncs;
    expect(real).toMatchObject({ dryRun: false, matched: 5, capped: false, bulkRetryId: expect.any(Number) });
    // Called again before the retries run: every match is already queued.
    expect((await retry(false)).body.data!.retrySyncs).toMatchObject({ matched: 0 });

    const worker = await startTestWorker(ctx.db.url);
    try {
      const progress = await eventually(async () => {
        const { body } = await staff(`{ bulkRetry(id: ${real.bulkRetryId}) { staff matched queued ran succeeded failed queuedAllAt } }`);
        return body.data?.bulkRetry?.ran === 5 ? body.data.bulkRetry : undefined;
      });
      // The seeded connection has no credentials: each retry ran once and failed again.
      expect(progress).toMatchObject({ matched: 5, queued: 5, ran: 5, succeeded: 0, failed: 5, queuedAllAt: expect.any(String) });
    } finally {
      await worker.stop();
    }
    const after = await ctx.db.query<{ id: string; attempts: number }>('SELECT id::text, attempts FROM syncs WHERE id = ANY($1::bigint[]) ORDER BY id', [
      before.map((s) => s.id),
    ]);
    expect(after.map((s) => s.attempts)).toEqual(before.map((s) => s.attempts + 1));
    const [entry] = (await staff('{ auditLog(limit: 1) { staff action } }')).body.data!.auditLog;
    expect(entry).toEqual({ staff: 'token:staf', action: 'retrySyncs' });
  });
});

describe('lineage in SQL statements', () => {
  it('loads the lineage of 50 requests in as many statements as of 1', async () => {
    // Setup: a database of its own with 50 requests, and an app whose Prisma counts statements
    const counted = await createTestDatabase();
    const statements: string[] = [];
    const prisma = createPrisma(counted.url, { onQuery: (sql) => statements.push(sql) });
    const app = await startTestServer({ url: counted.url, prisma });
    try {
      const refs = await seedFixture(counted.prisma, { accounts: [account('many', 49)] }, TEST_ENCRYPTION_KEY);
      const query = `query ($a: Int!, $n: Int!) { requests(accountId: $a, from: "${FROM}", to: "${TO}", limit: $n) { data {
        id rawBody parsed { ok reason } sync { status crmState attempts } deliveries { status } pendingDeliveries { dueAt }
        relayExecutions { status } platformEvents { type } } } }`;
      const count = async (n: number) => {
        statements.length = 0;
        const { body } = await explorer(app.baseUrl, query, { a: refs.accounts.many, n });
        expect(body.errors).toBeUndefined();
        expect(body.data!.requests.data).toHaveLength(n);
        expect(body.data!.requests.data[0].sync.status).toBeTruthy();
        return statements.length;
      };
      // Action
      const one = await count(1);
      const fifty = await count(50);
      // Assertions: the reader, the page, one statement per lineage field, and the raw body's one audit row
      expect(one).toBeGreaterThan(0);
      expect(fifty).toBe(one);
      const audit = await counted.query<{ arguments: { requestIds: string[] } }>(
        "SELECT arguments FROM audit_log WHERE action = 'read:Request.body' ORDER BY id",
      );
      expect(audit.map((a) => a.arguments.requestIds.length)).toEqual([1, 50]);
    } finally {
      await app.close();
      await prisma.$disconnect();
      await counted.drop();
    }
  });
});
