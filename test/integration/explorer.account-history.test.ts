/**
 * `account(id)` leads down to its history (issue 30): `requests`, `syncs`, `deliveries`, `events`,
 * `relayExecutions` and `blocklists` under `Account` are the root lists mounted a second time, with the
 * account as parent instead of `accountId`. Paged through two rows at a time, both mounts answer the same
 * rows and the same cursors, for every filter; a cursor from one mount pages the other; errors read the
 * same; and an API key, which never reaches `account`, reaches none of it.
 */
import { execute, parse } from 'graphql';
import { beforeAll, describe, expect, it } from 'vitest';
import { seedFixture, type SeedResult } from '../../src/admin/seed.js';
import type { Context } from '../../src/schema/context.js';
import { schema } from '../../src/schema/index.js';
import { TEST_ENCRYPTION_KEY } from '../support/database.js';
import { SUPPORT_TOKEN, useTestServer } from '../support/server.js';

const ctx = useTestServer();
const FROM = new Date(Date.now() - 7 * 86_400_000).toISOString();
const TO = new Date(Date.now() + 86_400_000).toISOString();
let seeded: SeedResult;

interface Answer {
  data?: Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any -- answers are checked field by field
  errors?: Array<{ message: string; extensions?: { code?: string } }>;
}

async function staff(query: string, variables: Record<string, unknown> = {}): Promise<Answer> {
  const res = await fetch(`${ctx.server.baseUrl}/graphql`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${SUPPORT_TOKEN}` },
    body: JSON.stringify({ query, variables }),
  });
  return (await res.json()) as Answer;
}

/** An account with six requests on one relay-bound source: four failed syncs, two written, each forwarded once. */
function account(ref: string) {
  const at = (i: number) => new Date(Date.now() - (i + 1) * 60_000).toISOString();
  return {
    ref,
    connections: [
      {
        ref: `${ref}-hubspot`,
        crm: 'HUBSPOT',
        destinations: [{ ref: `${ref}-dest`, url: `https://${ref}.example.com/hook` }],
        replyRelays: [{ ref: `${ref}-relay`, ccEmail: `rep@${ref}.test` }],
        blocklists: [
          { ref: `${ref}-list`, listName: 'Do not contact', platform: 'instantly', blockType: 'ADDRESS', hasCrmSource: false, entries: ['a@x.test'] },
        ],
        sources: [
          {
            ref: `${ref}-source`,
            platform: 'smartlead',
            ingressCode: `history${ref}0123456789`,
            replyRelay: `${ref}-relay`,
            destinations: [{ destination: `${ref}-dest` }],
            requests: Array.from({ length: 6 }, (_, i) => ({
              createdAt: at(i),
              body: JSON.stringify({ event_type: 'EMAIL_REPLY', to_email: `lead${i}@${ref}.test` }),
              sync: { status: i % 3 === 2 ? 'success' : 'error', eventType: 'EMAIL_REPLY', toEmail: `lead${i}@${ref}.test` },
              deliveries: [{ destination: `${ref}-dest`, status: i % 2 === 0 ? 'success' : 'error', httpStatus: i % 2 === 0 ? 200 : 500 }],
            })),
          },
        ],
      },
    ],
  };
}

beforeAll(async () => {
  seeded = await seedFixture(ctx.db.prisma, { accounts: [account('one'), account('two')] }, TEST_ENCRYPTION_KEY);
  // What the worker would have left: a relay execution per reply, a sync.failed per failed sync, and a test ping.
  await ctx.db.query(
    `INSERT INTO relay_executions (relay_id, request_id, account_id, connection_id, status, message_id, run_at, created_at, updated_at)
     SELECT s.reply_relay_id, r.id, r.account_id, r.connection_id,
            CASE WHEN row_number() OVER (PARTITION BY r.account_id ORDER BY r.id) % 2 = 0 THEN 'skipped' ELSE 'sent' END,
            '<relay-' || r.id || '@service.test>', r.created_at, r.created_at, r.created_at
       FROM requests r JOIN sources s ON s.id = r.source_id`,
  );
  await ctx.db.query(
    `INSERT INTO platform_events (public_id, account_id, type, summary, data, connection_id, source_id, request_id, created_at)
     SELECT 'svcevt_history' || y.id, y.account_id, 'sync.failed', 'failing', '{}'::jsonb, y.connection_id, y.source_id, y.request_id, y.created_at
       FROM syncs y WHERE y.status = 'error'
     UNION ALL
     SELECT 'svcevt_ping' || a.id, a.id, 'test.ping', 'ping', '{}'::jsonb, NULL, NULL, NULL, now() - interval '30 seconds' FROM accounts a`,
  );
});

/** Each list, with the filters it is compared under and the rows each gives an account (the selection names each row). */
const LISTS: Array<{ list: string; filters: Array<[string, number]>; rows: string }> = [
  {
    list: 'requests',
    filters: [
      ['', 6],
      ['sourceId: $source', 6],
    ],
    rows: 'id accountId sourceId createdAt',
  },
  {
    list: 'syncs',
    filters: [
      ['', 6],
      ['status: error', 4],
      ['connectionId: $connection', 6],
      ['sourceId: $source, status: success', 2],
    ],
    rows: 'id status toEmail',
  },
  {
    list: 'deliveries',
    filters: [
      ['', 6],
      ['status: error', 3],
      ['destinationId: $destination', 6],
      ['sourceId: $source, connectionId: $connection', 6],
    ],
    rows: 'id status httpStatus',
  },
  {
    list: 'events',
    filters: [
      ['', 5],
      ['type: "sync.failed"', 4],
      ['type: "test.ping"', 1],
    ],
    rows: 'id type created',
  },
  {
    list: 'relayExecutions',
    filters: [
      ['', 6],
      ['status: sent', 3],
      ['relayId: $relay', 6],
      ['connectionId: $connection, status: skipped', 3],
    ],
    rows: 'id relayId requestId status',
  },
];

/** One page of `list` at the root (`accountId`) and under `account(id)`, same arguments, in one document. */
async function bothPages(list: string, filters: string, rows: string, ids: Ids, cursors: { root?: string | null; account?: string | null }) {
  const args = `from: $from, to: $to, limit: 2${filters ? `, ${named(filters, ids)}` : ''}`;
  const { data, errors } = await staff(
    `query ($a: Int!, $from: String!, $to: String!, $rootCursor: String, $accountCursor: String) {
      root: ${list}(accountId: $a, ${args}, cursor: $rootCursor) { data { ${rows} } hasMore nextCursor }
      account(id: $a) { page: ${list}(${args}, cursor: $accountCursor) { data { ${rows} } hasMore nextCursor } }
    }`,
    { a: ids.account, from: FROM, to: TO, rootCursor: cursors.root, accountCursor: cursors.account },
  );
  expect(errors).toBeUndefined();
  return { root: data!.root as Page, account: data!.account.page as Page };
}

interface Page {
  data: Array<Record<string, unknown>>;
  hasMore: boolean;
  nextCursor: string | null;
}

type Ids = ReturnType<typeof idsOf>;

/** A filter with its `$source`, `$connection`, ... replaced by the account's ids. */
const named = (filters: string, ids: Ids) => filters.replace(/\$(\w+)/g, (_, name: string) => String(ids[name as keyof Ids]));

const idsOf = (ref: 'one' | 'two') => ({
  account: seeded.accounts[ref]!,
  source: seeded.sources[`${ref}-source`]!,
  connection: seeded.connections[`${ref}-hubspot`]!,
  destination: seeded.destinations[`${ref}-dest`]!,
  relay: seeded.replyRelays[`${ref}-relay`]!,
});

describe('account(id) down to its history', () => {
  for (const { list, filters, rows } of LISTS) {
    it.each(filters)(`${list}(%s): the same pages and cursors as the root list with accountId (%i rows)`, async (filter, count) => {
      for (const ref of ['one', 'two'] as const) {
        const ids = idsOf(ref);
        const pages: Page[] = [];
        let cursor: string | null = null;
        do {
          const both = await bothPages(list, filter, rows, ids, { root: cursor, account: cursor });
          expect(both.account).toEqual(both.root);
          pages.push(both.root);
          cursor = both.root.nextCursor;
        } while (cursor !== null && pages.length < 10);

        // Paged two at a time, the rows are those of one big page, newest first, each once.
        const seen = pages.flatMap((p) => p.data);
        expect(pages.slice(0, -1).every((p) => p.hasMore && p.data.length === 2)).toBe(true);
        const whole = await staff(
          `query ($a: Int!, $from: String!, $to: String!) {
            account(id: $a) { ${list}(from: $from, to: $to, limit: 500${filter ? `, ${named(filter, ids)}` : ''}) { data { ${rows} } hasMore } } }`,
          { a: ids.account, from: FROM, to: TO },
        );
        expect(whole.errors).toBeUndefined();
        expect(whole.data!.account[list]).toEqual({ data: seen, hasMore: false });
        expect(seen).toHaveLength(count);
        expect(new Set(seen.map((r) => r.id)).size).toBe(seen.length);
      }
    });
  }

  it('pages the account mount with a root cursor and the root with an account cursor', async () => {
    const ids = idsOf('one');
    const first = await bothPages('syncs', 'status: error', 'id', ids, {});
    const crossed = await bothPages('syncs', 'status: error', 'id', ids, { root: first.account.nextCursor, account: first.root.nextCursor });
    expect(crossed.account).toEqual(crossed.root);
    expect(crossed.root.data).toHaveLength(2);
    expect(crossed.root.data).not.toEqual(first.root.data);
  });

  it('reads only its own account: each account of accounts(...) lists its own rows', async () => {
    const { data, errors } = await staff(
      `query ($from: String!, $to: String!) { accounts { id requests(from: $from, to: $to) { data { accountId } }
        syncs(from: $from, to: $to) { data { connectionId } } relayExecutions(from: $from, to: $to) { data { relayId } } } }`,
      { from: FROM, to: TO },
    );
    expect(errors).toBeUndefined();
    for (const ref of ['one', 'two'] as const) {
      const ids = idsOf(ref);
      const mine = (data!.accounts as Array<Record<string, any>>).find((a) => a.id === ids.account)!; // eslint-disable-line @typescript-eslint/no-explicit-any -- checked below
      expect(mine.requests.data).toHaveLength(6);
      expect(mine.requests.data.every((r: { accountId: number }) => r.accountId === ids.account)).toBe(true);
      expect(mine.syncs.data.every((s: { connectionId: number }) => s.connectionId === ids.connection)).toBe(true);
      expect(mine.relayExecutions.data.every((e: { relayId: number }) => e.relayId === ids.relay)).toBe(true);
    }
  });

  it('lists the block lists the root list gives for the account, with its connection filter', async () => {
    const ids = idsOf('two');
    const { data, errors } = await staff(
      `query ($a: Int!, $c: Int!) {
        root: blocklists(accountId: $a) { id listName connectionId crm }
        account(id: $a) { blocklists { id listName connectionId crm } one: blocklists(connectionId: $c) { id } other: blocklists(connectionId: 999999) { id } }
      }`,
      { a: ids.account, c: ids.connection },
    );
    expect(errors).toBeUndefined();
    expect(data!.account.blocklists).toEqual(data!.root);
    expect(data!.root).toEqual([{ id: seeded.blocklists['two-list'], listName: 'Do not contact', connectionId: ids.connection, crm: 'HUBSPOT' }]);
    expect(data!.account.one).toEqual([{ id: seeded.blocklists['two-list'] }]);
    expect(data!.account.other).toEqual([]);
  });

  it('refuses what the root list refuses, with the same message', async () => {
    const one = idsOf('one');
    const other = idsOf('two');
    const cases = [
      ['requests', `from: "${TO}", to: "${FROM}"`],
      ['syncs', `from: "${FROM}", to: "${TO}", limit: 501`],
      ['deliveries', `from: "${FROM}", to: "${TO}", destinationId: ${other.destination}`],
      ['events', `from: "${FROM}", to: "${TO}", type: "nope"`],
      ['relayExecutions', `from: "${FROM}", to: "${TO}", relayId: ${other.relay}`],
      ['syncs', `from: "${FROM}", to: "${TO}", cursor: "forged"`],
    ] as const;
    for (const [list, args] of cases) {
      const root = await staff(`{ ${list}(accountId: ${one.account}, ${args}) { hasMore } }`);
      const below = await staff(`{ account(id: ${one.account}) { ${list}(${args}) { hasMore } } }`);
      expect(root.errors?.[0]?.message, `${list}(${args})`).toBeDefined();
      expect(below.errors?.map((e) => [e.message, e.extensions?.code])).toEqual(root.errors?.map((e) => [e.message, e.extensions?.code]));
    }
    // A cursor belongs to its query: another filter's cursor is refused at either mount.
    const page = await bothPages('syncs', 'status: error', 'id', one, {});
    const elsewhere = await staff(
      `{ account(id: ${one.account}) { syncs(from: "${FROM}", to: "${TO}", limit: 2, cursor: "${page.root.nextCursor}") { hasMore } } }`,
    );
    expect(elsewhere.errors?.[0]?.message).toBe('cursor is malformed or does not belong to this query');
  });
});

describe('an API key', () => {
  it('reaches no account subtree, and no relay execution at the root (the schema refuses it, whatever REST exposes)', async () => {
    const ids = idsOf('one');
    const viewer: Context['viewer'] = {
      kind: 'apiKey',
      accountId: ids.account,
      keyId: 1,
      keyName: 'Customer key',
      scopes: ['read'],
      connectionScope: 'account',
      connectionId: null,
      connectionIds: [ids.connection],
      capabilities: { canUseApi: true, canUserAccount: true, canBlockList: true, canUseWebhooks: true },
    };
    const context: Context = {
      prisma: ctx.db.prisma,
      heavy: ctx.db.prisma,
      queryTimeoutMs: 20_000,
      viewer,
      ingressUrl: 'http://ingress.test',
      cursorKey: Buffer.alloc(32, 1),
      encryptionKey: TEST_ENCRYPTION_KEY,
      outboundAllowPrivate: true,
      sandboxOrigin: undefined,
    };
    const run = async (query: string) => {
      const result = await execute({ schema, document: parse(query), contextValue: context });
      return result.errors?.map((e) => [e.message, e.extensions.code]);
    };
    const window = `from: "${FROM}", to: "${TO}"`;
    expect(await run(`{ account(id: ${ids.account}) { syncs(${window}) { hasMore } } }`)).toEqual([['Support staff only', 'FORBIDDEN']]);
    expect(await run(`{ accounts { blocklists { id } } }`)).toEqual([['Support staff only', 'FORBIDDEN']]);
    expect(await run(`{ relayExecutions(${window}) { hasMore } }`)).toEqual([['Support staff only', 'FORBIDDEN']]);
    // Its own root lists are unchanged.
    expect(await run(`{ syncs(${window}) { hasMore } }`)).toBeUndefined();
  });
});
