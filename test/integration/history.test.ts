/**
 * History on time partitions (issue 31): partitions created ahead, retention dropping whole partitions
 * past it and nothing in flight, a body past its retention refused clearly, the readiness warning, the
 * online move of an existing database, and a real SIGKILL in the middle of a retention round.
 */
import { spawn } from 'node:child_process';
import pg from 'pg';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_RETENTION } from '../../src/config.js';
import { listPartitions } from '../../src/db/history/catalog.js';
import { maintainHistory, type RetentionDays } from '../../src/db/history/maintain.js';
import { HISTORY_TABLES } from '../../src/db/history/tables.js';
import { installJobSchema } from '../../src/db/job-schema.js';
import { applyMigrations } from '../../src/db/migrations.js';
import { spanEnd } from '../../src/domain/partitions.js';
import { BODY_GONE } from '../../src/domain/retention.js';
import { seedTestAccounts, type TestAccounts } from '../support/accounts.js';
import { createTestDatabase, TEST_ENCRYPTION_KEY, type TestDatabase } from '../support/database.js';
import { killPoint } from '../support/kill-point.js';
import { explorer } from '../support/onboarding.js';
import { apiFetch } from '../support/openapi.js';
import { childEnv, tsxCommand } from '../support/processes.js';
import { startTestServer, type TestServer } from '../support/server.js';
import { eventually, startTestWorker } from '../support/worker.js';

const DAY = 86_400_000;
const RETENTION: RetentionDays = DEFAULT_RETENTION;

const cleanup: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const step of cleanup.splice(0).reverse()) await step();
});

/** A fresh database (partitioned like every test database) with the test accounts, and a pool on it. */
async function database(): Promise<{ db: TestDatabase; pool: pg.Pool; ids: TestAccounts }> {
  const db = await createTestDatabase();
  const pool = new pg.Pool({ connectionString: db.url, max: 3 });
  cleanup.push(
    () => db.drop(),
    () => pool.end(),
  );
  return { db, pool, ids: await seedTestAccounts(db.prisma) };
}

/** `n` requests of acme's Smartlead source at `at`, each with its body and an error sync; their ids. Their path tells them from the seeded history. */
async function history(db: TestDatabase, ids: TestAccounts, at: Date, n: number): Promise<string[]> {
  const rows = await db.query<{ id: string }>(
    `WITH r AS (
       INSERT INTO requests (account_id, source_id, connection_id, path, created_at)
       SELECT $1, $2, $3, 'history-test', $4::timestamptz FROM generate_series(1, $5) RETURNING id, created_at
     ),
     b AS (INSERT INTO request_bodies (request_id, created_at, body) SELECT id, created_at, '{"event_type":"EMAIL_SENT","to_email":"old@prospect.test"}' FROM r),
     s AS (
       INSERT INTO syncs (account_id, connection_id, source_id, request_id, platform, status, event_type, to_email, error, attempts, created_at)
       SELECT $1, $3, $2, id, 'smartlead', 'error', 'EMAIL_SENT', 'old@prospect.test', '{"message":"HTTP 500"}', 1, created_at FROM r
     )
     SELECT id FROM r ORDER BY id`,
    [ids.accounts.acme, ids.sources['acme-smartlead'], ids.connections['acme-hubspot'], at.toISOString(), n],
  );
  return rows.map((r) => r.id);
}

/** Counts of the rows {@link history} wrote. */
const MINE = {
  requests: "SELECT count(*) AS n FROM requests WHERE path = 'history-test'",
  syncs: "SELECT count(*) AS n FROM syncs s JOIN requests r ON r.id = s.request_id WHERE r.path = 'history-test'",
  bodies: "SELECT count(*) AS n FROM request_bodies b JOIN requests r ON r.id = b.request_id WHERE r.path = 'history-test'",
};

const count = async (db: TestDatabase, statement: string, params: unknown[] = []) => Number((await db.query<{ n: string }>(statement, params))[0]!.n);

describe('partitions ahead', () => {
  it('covers every history table from its retention horizon to two weeks ahead, and adds the next ones as time passes', async () => {
    const { pool } = await database();
    const now = new Date();

    const later = new Date(now.getTime() + 40 * DAY);
    const report = await maintainHistory(pool, { retention: RETENTION, now: later });

    for (const table of HISTORY_TABLES) {
      const partitions = await listPartitions(pool, table.name);
      // Without a gap from the horizon's span to 14 days past `later`.
      const horizon = later.getTime() - RETENTION[table.retention] * DAY;
      const covering = partitions.filter((p) => p.to.getTime() > horizon);
      expect(covering[0]!.from.getTime(), table.name).toBeLessThanOrEqual(horizon);
      expect(covering.at(-1)!.to.getTime(), table.name).toBeGreaterThanOrEqual(later.getTime() + 14 * DAY);
      covering.slice(1).forEach((p, i) => expect(p.from, `${table.name} has a gap`).toEqual(covering[i]!.to));
    }
    expect(report.created).toContain(`request_bodies_p${new Date(later.getTime() + 14 * DAY).toISOString().slice(0, 10).replaceAll('-', '')}`);
    // Still no default partition anywhere (it would make a detach lock the table).
    const { rows } = await pool.query(`SELECT count(*)::int AS n FROM pg_partitioned_table WHERE partdefid <> 0`);
    expect(rows[0].n).toBe(0);
  });
});

describe('retention', () => {
  it('detaches and drops every partition wholly past retention and nothing else, deleting no row', async () => {
    const { db, pool, ids } = await database();
    const now = new Date();
    const ages = [200, 150, 120, 95, 60, 40, 20, 5];
    for (const age of ages) await history(db, ids, new Date(now.getTime() - age * DAY), 3);
    const horizon = now.getTime() - RETENTION.history * DAY;
    const requestsBefore = await listPartitions(pool, 'requests');

    const report = await maintainHistory(pool, { retention: RETENTION, now });

    const requestsAfter = await listPartitions(pool, 'requests');
    // Exactly the partitions ending at or before the horizon went.
    expect(requestsAfter.map((p) => p.name)).toEqual(requestsBefore.filter((p) => p.to.getTime() > horizon).map((p) => p.name));
    expect(report.dropped).toEqual(expect.arrayContaining(requestsBefore.filter((p) => p.to.getTime() <= horizon).map((p) => p.name)));
    // Rows live exactly where their partition lives: 95 days is past 90 but its month may still be kept.
    const kept = requestsAfter[0]!.from;
    const expected = ages.filter((age) => now.getTime() - age * DAY >= kept.getTime()).length * 3;
    expect(await count(db, MINE.requests)).toBe(expected);
    expect(await count(db, MINE.syncs)).toBe(expected);
    // Bodies go after 30 days, a day at a time.
    const bodyHorizon = now.getTime() - RETENTION.body * DAY;
    expect(await count(db, MINE.bodies)).toBe(ages.filter((age) => age * DAY < now.getTime() - bodyHorizon).length * 3);
    // No row was ever deleted from a history table: only whole partitions went.
    const deleted = await count(
      db,
      `SELECT COALESCE(sum(n_tup_del), 0) AS n FROM pg_stat_user_tables
        WHERE relname ~ '^(requests|request_bodies|syncs|deliveries|platform_events|webhook_deliveries|relay_executions|audit_log|sandbox_requests)_p'`,
    );
    expect(deleted).toBe(0);
    expect(await count(db, "SELECT count(*) AS n FROM pg_class WHERE relname ~ '_p[0-9]{8}$' AND relkind = 'r' AND NOT relispartition")).toBe(0);
  });

  it('keeps a partition that unfinished work needs, says why, and drops it once the work is done', async () => {
    const { db, pool, ids } = await database();
    const now = new Date();
    const [waiting] = await history(db, ids, new Date(now.getTime() - 150 * DAY), 2);
    await db.query('INSERT INTO pending_syncs (request_id, connection_id) VALUES ($1, $2)', [waiting, ids.connections['acme-hubspot']]);

    const first = await maintainHistory(pool, { retention: RETENTION, now });

    const month = new Date(now.getTime() - 150 * DAY);
    const partition = `requests_p${month.toISOString().slice(0, 7).replace('-', '')}01`;
    expect(first.held).toEqual(
      expect.arrayContaining([
        { partition, table: 'requests', reason: expect.stringContaining('past its retention but kept: 1 syncs waiting to run') },
        { partition: partition.replace('requests', 'syncs'), table: 'syncs', reason: expect.stringContaining('1 syncs waiting to run') },
      ]),
    );
    expect(first.dropped).not.toContain(partition);
    expect(await count(db, 'SELECT count(*) AS n FROM requests WHERE id = $1', [waiting])).toBe(1);
    const server = await startTestServer(db);
    cleanup.push(() => server.close());
    const ready = await apiFetch(`${server.baseUrl}/health/ready`);
    expect(ready.status).toBe(200);
    expect(ready.body.status).toBe('operational');
    expect(ready.body.warnings).toEqual(expect.arrayContaining([expect.stringMatching(new RegExp(`^${partition}: past its retention but kept`))]));

    // The sync ran (its outbox row goes with its outcome).
    await db.query('DELETE FROM pending_syncs WHERE request_id = $1', [waiting]);
    const second = await maintainHistory(pool, { retention: RETENTION, now });

    expect(second.dropped).toContain(partition);
    expect(second.held).toEqual([]);
    expect((await apiFetch(`${server.baseUrl}/health/ready`)).body.warnings).toBeUndefined();
  });

  it('keeps the partitions of every other kind of unfinished work: forwarding attempts, replays, webhook deliveries, relay emails', async () => {
    // Setup: each kind of work for rows of a month of its own, all past retention.
    const { db, pool, ids } = await database();
    const now = new Date();
    const monthOf = (days: number) => new Date(now.getTime() - days * DAY);
    const name = (table: string, at: Date) => `${table}_p${at.toISOString().slice(0, 7).replace('-', '')}01`;
    const destination = ids.destinations['acme-crm-mirror']!;
    const [forwarded] = await history(db, ids, monthOf(150), 1);
    await db.query('INSERT INTO pending_deliveries (destination_id, request_id) VALUES ($1, $2)', [destination, forwarded]);
    const [replayed] = await history(db, ids, monthOf(180), 1);
    const [delivery] = await db.query<{ id: string }>(
      `INSERT INTO deliveries (account_id, destination_id, destination_url, connection_id, source_id, request_id, event_type, to_email, status, http_status, created_at)
       SELECT r.account_id, $2, 'https://hooks.acme.test/pipeline', r.connection_id, r.source_id, r.id, 'EMAIL_SENT', 'old@prospect.test', 'error', 500, r.created_at
         FROM requests r WHERE r.id = $1 RETURNING id`,
      [replayed, destination],
    );
    await db.query('INSERT INTO pending_deliveries (destination_id, request_id, replay_of_delivery_id) VALUES ($1, $2, $3)', [
      destination,
      replayed,
      delivery!.id,
    ]);
    const [endpoint] = await db.query<{ id: number }>('SELECT id FROM webhook_endpoints ORDER BY id LIMIT 1');
    await db.query(
      `WITH e AS (
         INSERT INTO platform_events (public_id, account_id, type, summary, data, created_at) VALUES ('evt_history_test', $1, 'sync.failed', 'failing', '{}', $3) RETURNING id, created_at
       )
       INSERT INTO webhook_deliveries (public_id, endpoint_id, event_id, status, next_attempt_at, created_at) SELECT 'whd_history_test', $2, id, 'PENDING', now(), created_at FROM e`,
      [ids.accounts.acme, endpoint!.id, monthOf(210)],
    );
    const [relayed] = await history(db, ids, monthOf(240), 1);
    await db.query(
      `INSERT INTO relay_executions (relay_id, request_id, account_id, connection_id, message_id, run_at, created_at)
       SELECT $2, r.id, r.account_id, r.connection_id, '<relay-history-test@acme.test>', now() + interval '5 minutes', r.created_at FROM requests r WHERE r.id = $1`,
      [relayed, ids.replyRelays['acme-rep']],
    );

    // Action: a round.
    const report = await maintainHistory(pool, { retention: RETENTION, now });

    // Assertions: each partition the work needs is kept with its reason; the rows are all there.
    expect(report.held).toEqual(
      expect.arrayContaining([
        { partition: name('requests', monthOf(150)), table: 'requests', reason: expect.stringContaining('1 forwarding attempts waiting') },
        { partition: name('deliveries', monthOf(180)), table: 'deliveries', reason: expect.stringContaining('1 replays waiting to be sent') },
        { partition: name('platform_events', monthOf(210)), table: 'platform_events', reason: expect.stringContaining('1 webhook deliveries still pending') },
        {
          partition: name('webhook_deliveries', monthOf(210)),
          table: 'webhook_deliveries',
          reason: expect.stringContaining('1 webhook deliveries still pending'),
        },
        { partition: name('requests', monthOf(240)), table: 'requests', reason: expect.stringContaining('1 reply relay emails not sent yet') },
        { partition: name('relay_executions', monthOf(240)), table: 'relay_executions', reason: expect.stringContaining('1 reply relay emails not sent yet') },
      ]),
    );
    expect(await count(db, 'SELECT count(*) AS n FROM requests WHERE id = ANY($1::bigint[])', [[forwarded, replayed, relayed]])).toBe(3);
    expect(await count(db, 'SELECT count(*) AS n FROM deliveries WHERE id = $1', [delivery!.id])).toBe(1);
    expect(await count(db, "SELECT count(*) AS n FROM webhook_deliveries WHERE public_id = 'whd_history_test'")).toBe(1);
  });

  it('attaches a partition back when work for its rows was queued while its detach waited, and keeps it', async () => {
    // Setup: an expired request whose partition is the only one left past retention (a first round drops
    // the others while a sync holds it), then a transaction reading it (a staff retry about to queue it).
    const { db, pool, ids } = await database();
    const now = new Date();
    const month = new Date(now.getTime() - 150 * DAY);
    const [request] = await history(db, ids, month, 1);
    const partition = `requests_p${month.toISOString().slice(0, 7).replace('-', '')}01`;
    await db.query('INSERT INTO pending_syncs (request_id, connection_id) VALUES ($1, $2)', [request, ids.connections['acme-hubspot']]);
    expect((await maintainHistory(pool, { retention: RETENTION, now })).held).toContainEqual(expect.objectContaining({ partition }));
    await db.query('DELETE FROM pending_syncs WHERE request_id = $1', [request]);
    const retry = new pg.Client({ connectionString: db.url });
    await retry.connect();
    cleanup.push(() => retry.end());
    await retry.query('BEGIN');
    expect((await retry.query('SELECT id FROM requests WHERE id = $1', [request])).rowCount).toBe(1);

    // Action: the round checks (nothing waits), then its detach waits for the reading transaction, which
    // queues the sync and commits.
    const round = maintainHistory(pool, { retention: RETENTION, now });
    await eventually(
      async () =>
        (await count(db, `SELECT count(*) AS n FROM pg_stat_activity WHERE query LIKE $1 AND wait_event_type = 'Lock'`, [
          `%DETACH PARTITION "${partition}"%`,
        ])) > 0 || undefined,
      10_000,
      "the requests partition's detach waiting",
    );
    await retry.query('INSERT INTO pending_syncs (request_id, connection_id) VALUES ($1, $2)', [request, ids.connections['acme-hubspot']]);
    await retry.query('COMMIT');
    const report = await round;

    // Assertions: the second check saw the sync; the partition is attached again with its row.
    expect(report.held).toContainEqual({ partition, table: 'requests', reason: expect.stringContaining('1 syncs waiting to run') });
    expect(report.dropped).not.toContain(partition);
    expect((await listPartitions(pool, 'requests')).map((p) => p.name)).toContain(partition);
    expect(await count(db, 'SELECT count(*) AS n FROM requests WHERE id = $1', [request])).toBe(1);
  });

  it('trims what grows outside the partitions (lead category signals, finished bulk re-syncs, jobs failed for good) to exactly what is within retention', async () => {
    // Setup: of each, one row on either side of the 90-day horizon, and an old bulk re-sync still queueing.
    const { db, pool, ids } = await database();
    const now = new Date();
    const [old, recent] = [new Date(now.getTime() - 91 * DAY), new Date(now.getTime() - 89 * DAY)];
    const source = { account: ids.accounts.acme, connection: ids.connections['acme-hubspot'], source: ids.sources['acme-smartlead'] };
    for (const [contact, at] of [
      ['old@prospect.test', old],
      ['recent@prospect.test', recent],
    ] as const) {
      await db.query(
        `INSERT INTO lead_category_signals (account_id, connection_id, source_id, platform, contact, category_name, created_at)
         VALUES ($1, $2, $3, 'smartlead', $4, 'Interested', $5)`,
        [source.account, source.connection, source.source, contact, at],
      );
    }
    const syncIds = (
      await db.query<{ id: string }>(`SELECT s.id FROM syncs s JOIN requests r ON r.id = s.request_id WHERE r.id = ANY($1::bigint[]) ORDER BY s.id`, [
        await history(db, ids, new Date(now.getTime() - 5 * DAY), 3),
      ])
    ).map((s) => s.id);
    const bulks: Record<string, string> = {};
    for (const [name, at, finished] of [
      ['old finished', old, true],
      ['old still queueing', old, false],
      ['recent finished', recent, true],
    ] as const) {
      const [bulk] = await db.query<{ id: string }>(
        `INSERT INTO bulk_retries (staff, filter, matched, queued_all_at, created_at) VALUES ('ops', '{}', 3, $1, $2) RETURNING id`,
        [finished ? at : null, at],
      );
      bulks[name] = bulk!.id;
      await db.query('INSERT INTO bulk_retry_items (bulk_retry_id, sync_id) SELECT $1, unnest($2::bigint[])', [bulk!.id, syncIds]);
    }
    const jobs: Record<string, string> = {};
    for (const [name, at, failed] of [
      ['old failed', old, true],
      ['recent failed', recent, true],
      ['old waiting', old, false],
    ] as const) {
      const [job] = await db.query<{ id: string }>(
        `SELECT id FROM graphile_worker.add_job('history_test_task', '{}'::json, run_at => now() + interval '1 year', max_attempts => 1)`,
      );
      await db.query('UPDATE graphile_worker._private_jobs SET attempts = $2, updated_at = $3 WHERE id = $1', [job!.id, failed ? 1 : 0, at]);
      jobs[name] = job!.id;
    }

    // Action: a round.
    const report = await maintainHistory(pool, { retention: RETENTION, now });

    // Assertions: what is past retention and over went; everything else stayed.
    expect(report.pruned).toEqual({ lead_category_signals: 1, bulk_retry_items: 3, bulk_retries: 1, 'graphile_worker failed jobs': 1 });
    expect((await db.query<{ contact: string }>('SELECT contact FROM lead_category_signals')).map((s) => s.contact)).toEqual(['recent@prospect.test']);
    expect((await db.query<{ id: string }>('SELECT id FROM bulk_retries ORDER BY id')).map((b) => b.id)).toEqual([
      bulks['old still queueing'],
      bulks['recent finished'],
    ]);
    expect(await count(db, 'SELECT count(*) AS n FROM bulk_retry_items')).toBe(6);
    expect(
      (await db.query<{ id: string }>('SELECT id FROM graphile_worker._private_jobs WHERE id = ANY($1::bigint[]) ORDER BY id', [Object.values(jobs)])).map(
        (j) => j.id,
      ),
    ).toEqual([jobs['recent failed'], jobs['old waiting']]);
  });
});

describe('a request whose body is past RAW_BODY_RETENTION_DAYS', () => {
  let db: TestDatabase;
  let pool: pg.Pool;
  let ids: TestAccounts;
  let server: TestServer;
  let requestId: string;

  beforeAll(async () => {
    db = await createTestDatabase();
    pool = new pg.Pool({ connectionString: db.url, max: 2 });
    ids = await seedTestAccounts(db.prisma);
    server = await startTestServer(db);
    // 45 days old: past the body's 30 days, within the request's 90.
    requestId = (await history(db, ids, new Date(Date.now() - 45 * DAY), 1))[0]!;
    await maintainHistory(pool, { retention: RETENTION });
  });
  afterAll(async () => {
    await server?.close();
    await pool?.end();
    await db?.drop();
  });

  it('still lists, and its sync retry answers 409 saying the body is gone', async () => {
    const at = Date.now() - 45 * DAY;
    const key = ids.keys.acmeWrite;
    const list = await apiFetch(`${server.baseUrl}/api/v1/requests?from=${new Date(at - DAY).toISOString()}&to=${new Date(at + DAY).toISOString()}`, {
      headers: { authorization: `Bearer ${key}` },
    });
    expect(list.status).toBe(200);
    expect(list.body.data.map((r: { id: number }) => String(r.id))).toEqual([requestId]);
    expect(await count(db, 'SELECT count(*) AS n FROM request_bodies WHERE request_id = $1', [requestId])).toBe(0);
    const [sync] = await db.query<{ id: string }>('SELECT id FROM syncs WHERE request_id = $1', [requestId]);

    const retry = await apiFetch(`${server.baseUrl}/api/v1/syncs/${sync!.id}/retry`, { method: 'POST', headers: { authorization: `Bearer ${key}` } });

    expect(retry.status).toBe(409);
    expect(retry.body).toEqual({ statusCode: 409, message: `The sync cannot be retried: ${BODY_GONE}`, error: 'Conflict' });
    expect(await count(db, 'SELECT count(*) AS n FROM pending_syncs WHERE request_id = $1', [requestId])).toBe(0);
  });

  it('a replay of its forwarding delivery answers 409 saying so, and queues nothing', async () => {
    const destination = ids.destinations['acme-crm-mirror']!;
    const [delivery] = await db.query<{ id: string }>(
      `INSERT INTO deliveries (account_id, destination_id, destination_url, connection_id, source_id, request_id, event_type, to_email, status, http_status, created_at)
       SELECT r.account_id, $2, 'https://hooks.acme.test/pipeline', r.connection_id, r.source_id, r.id, 'EMAIL_SENT', 'old@prospect.test', 'error', 500, r.created_at
         FROM requests r WHERE r.id = $1 RETURNING id`,
      [requestId, destination],
    );

    const replay = await apiFetch(`${server.baseUrl}/api/v1/destinations/${destination}/deliveries/${delivery!.id}/replay`, {
      method: 'POST',
      headers: { authorization: `Bearer ${ids.keys.acmeWrite}` },
    });

    expect(replay.status).toBe(409);
    expect(replay.body.message).toBe(`The delivery cannot be replayed: ${BODY_GONE}`);
    expect(await count(db, 'SELECT count(*) AS n FROM pending_deliveries WHERE request_id = $1', [requestId])).toBe(0);
  });

  it('a bulk re-sync leaves its sync out and says how many it left out, queueing the others', async () => {
    // Setup: another error sync of the same account, 20 days old, its body kept.
    const [kept] = await history(db, ids, new Date(Date.now() - 20 * DAY), 1);
    const filter = { accountId: ids.accounts.acme, from: new Date(Date.now() - 46 * DAY).toISOString(), to: new Date(Date.now() - 16 * DAY).toISOString() };
    const retry = (dryRun: boolean) =>
      explorer(server.baseUrl, 'mutation ($f: RetrySyncsFilter!, $d: Boolean) { retrySyncs(filter: $f, dryRun: $d) { dryRun matched bodyGone } }', {
        f: filter,
        d: dryRun,
      });

    // Action and assertions: the dry run and the real one count it apart; only the kept one is queued.
    expect((await retry(true)).body.data!.retrySyncs).toEqual({ dryRun: true, matched: 1, bodyGone: 1 });
    expect((await retry(false)).body.data!.retrySyncs).toEqual({ dryRun: false, matched: 1, bodyGone: 1 });
    const items = await db.query<{ request_id: string }>('SELECT s.request_id FROM bulk_retry_items i JOIN syncs s ON s.id = i.sync_id');
    expect(items.map((i) => i.request_id)).toEqual([kept]);
  });
});

describe('references no foreign key keeps', () => {
  it("a waiting sync whose request is gone is claimed and forgotten, never stuck in its connection's outbox", async () => {
    const { db, ids } = await database();
    const connection = ids.connections['acme-hubspot']!;
    // Its request went (an account's deletion cascades to its requests, not to the outbox any more).
    await db.query('INSERT INTO pending_syncs (request_id, connection_id) VALUES (987654321, $1)', [connection]);
    const worker = await startTestWorker(db.url);
    cleanup.push(() => worker.stop());

    await eventually(async () => ((await count(db, 'SELECT count(*) AS n FROM pending_syncs WHERE request_id = 987654321')) === 0 ? true : undefined));

    expect(await count(db, 'SELECT count(*) AS n FROM syncs WHERE request_id = 987654321')).toBe(0);
  });
});

describe('readiness', () => {
  it('warns, still operational, when a table has no partition a week ahead, and stops once the round creates them', async () => {
    const { pool, db } = await database();
    const server = await startTestServer(db);
    cleanup.push(() => server.close());
    // The hourly job failed for weeks: the partitions after this week are missing.
    const soon = Date.now() + 3 * DAY;
    for (const p of await listPartitions(pool, 'request_bodies')) {
      if (p.from.getTime() > soon) await pool.query(`ALTER TABLE request_bodies DETACH PARTITION "${p.name}"; DROP TABLE "${p.name}"`);
    }

    const warned = await apiFetch(`${server.baseUrl}/health/ready`);

    expect(warned.status).toBe(200);
    expect(warned.body.status).toBe('operational');
    expect(warned.body.warnings).toEqual([expect.stringMatching(/^request_bodies: partitions end at .*, fewer than 7 days ahead/)]);
    await maintainHistory(pool, { retention: RETENTION });
    expect((await apiFetch(`${server.baseUrl}/health/ready`)).body.warnings).toBeUndefined();

    // A check that cannot run says so rather than nothing (here: its table of holds is gone).
    await pool.query('ALTER TABLE history_holds RENAME TO history_holds_away');
    const unchecked = await apiFetch(`${server.baseUrl}/health/ready`);
    await pool.query('ALTER TABLE history_holds_away RENAME TO history_holds');
    expect(unchecked.body.status).toBe('operational');
    expect(unchecked.body.warnings).toEqual(['history partitions could not be checked: the query failed']);
  });
});

describe('moving an existing database onto partitions', () => {
  it('copies months of rows in batches while the ingress writes, keeping every id, page and cursor', async () => {
    // An unpartitioned database as the release before this one left it, with the test accounts.
    const db = await createTestDatabase({ empty: true });
    cleanup.push(() => db.drop());
    await applyMigrations(db.url);
    await installJobSchema(db.url);
    const ids = await seedTestAccounts(db.prisma);
    const now = Date.now();
    // Bodies on the request rows, as before; three months of history.
    await db.query(
      `INSERT INTO requests (account_id, source_id, connection_id, path, body, created_at)
       SELECT $1, $2, $3, 'acmeSmartleadTest01', '{"event_type":"EMAIL_SENT","to_email":"lead' || i || '@prospect.test"}',
              to_timestamp(($4::bigint - i::bigint * 3600000) / 1000.0)
         FROM generate_series(1, 2000) i`,
      [ids.accounts.acme, ids.sources['acme-smartlead'], ids.connections['acme-hubspot'], now],
    );
    await db.query(
      `INSERT INTO syncs (account_id, connection_id, source_id, request_id, platform, status, event_type, to_email, attempts, created_at)
       SELECT account_id, connection_id, source_id, id, 'smartlead', (ARRAY['success','error']::sync_status[])[1 + id % 2], 'EMAIL_SENT', 'lead@prospect.test', 1, created_at
         FROM requests r WHERE NOT EXISTS (SELECT 1 FROM syncs s WHERE s.request_id = r.id)`,
    );
    const server = await startTestServer(db, {}, { level: 'error', stream: process.stderr });
    cleanup.push(() => server.close());
    const pages = async () => {
      const seen: unknown[] = [];
      for (const route of ['requests', 'syncs']) {
        let url = `${server.baseUrl}/api/v1/${route}?from=${new Date(now - 31 * DAY).toISOString()}&to=${new Date(now).toISOString()}&limit=100`;
        for (let page = 0; page < 4; page++) {
          const res = await apiFetch(url, { headers: { authorization: `Bearer ${ids.keys.acmeRead}` } });
          expect(res.status).toBe(200);
          seen.push(res.body);
          url = `${url.replace(/&cursor=.*$/, '')}&cursor=${encodeURIComponent(res.body.nextCursor)}`;
        }
      }
      return seen;
    };
    const before = await pages();
    const idsBefore = await db.query<{ id: string }>('SELECT id FROM requests ORDER BY id');
    const pool = new pg.Pool({ connectionString: db.url, max: 2 });
    cleanup.push(() => pool.end());

    // Action: the round converts in batches of 150 while events keep arriving at the ingress.
    let posting = true;
    const posted: number[] = [];
    const ingress = (async () => {
      for (let i = 0; posting || i < 20; i++) {
        const res = await fetch(`${server.baseUrl}/webhooks/acmeSmartleadTest01`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ event_type: 'EMAIL_OPEN', to_email: `live${i}@prospect.test` }),
        });
        expect(res.status).toBe(200);
        posted.push(((await res.json()) as { requestId: number }).requestId);
      }
    })();
    const report = await maintainHistory(pool, { retention: RETENTION, batchSize: 150 });
    posting = false;
    await ingress;

    // Assertions: every table partitioned, nothing lost, ids and pages as before.
    expect(Object.values(report.conversions).every((r) => r === 'converted')).toBe(true);
    const { rows: plain } = await pool.query<{ relname: string }>(`SELECT relname FROM pg_class WHERE relname = ANY($1::text[]) AND relkind <> 'p'`, [
      HISTORY_TABLES.map((t) => t.name),
    ]);
    expect(plain).toEqual([]);
    const idsAfter = await db.query<{ id: string }>('SELECT id FROM requests WHERE id <= $1 ORDER BY id', [idsBefore.at(-1)!.id]);
    expect(idsAfter).toEqual(idsBefore);
    expect(await pages()).toEqual(before);
    const live = await db.query<{ id: string; body: string }>(
      'SELECT r.id, b.body FROM requests r JOIN request_bodies b ON b.request_id = r.id AND b.created_at = r.created_at WHERE r.id = ANY($1::bigint[])',
      [posted],
    );
    expect(live).toHaveLength(posted.length);
    // Old bodies moved to request_bodies (those within 30 days), none left on the request rows.
    expect(await count(db, 'SELECT count(*) AS n FROM requests WHERE body IS NOT NULL')).toBe(0);
    expect(
      await count(db, `SELECT count(*) AS n FROM request_bodies WHERE created_at >= now() - interval '29 days' AND request_id <= $1`, [idsBefore.at(-1)!.id]),
    ).toBe(await count(db, `SELECT count(*) AS n FROM requests WHERE created_at >= now() - interval '29 days' AND id <= $1`, [idsBefore.at(-1)!.id]));
    expect(await count(db, 'SELECT count(*) AS n FROM history_conversions')).toBe(0);
  });
});

describe('a retention round killed with SIGKILL', () => {
  it('leaves every row within retention, and the next round finishes what it began', async () => {
    const { db, pool, ids } = await database();
    const now = Date.now();
    // A year of months: every history table has about nine partitions past retention.
    for (let age = 100; age <= 365; age += 30) await history(db, ids, new Date(now - age * DAY), 2);
    const recent = await history(db, ids, new Date(now - 10 * DAY), 5);
    // Rows whose month ends after the horizon stay (a 100-day-old row's month may).
    const kept = (age: number) => spanEnd('month', new Date(now - age * DAY)).getTime() > now - RETENTION.history * DAY;
    let keptRows = 5;
    for (let age = 100; age <= 365; age += 30) if (kept(age)) keptRows += 2;
    const total = (await Promise.all(HISTORY_TABLES.map(async (t) => (await listPartitions(pool, t.name)).length))).reduce((a, b) => a + b, 0);
    const stopAt = killPoint('partitions dropped before the kill', 1, 40);

    // Action: the operator's round (the hourly job's code) in a process of its own, killed mid-round.
    const [command, argv] = tsxCommand('src/admin/cli.ts', 'history-round');
    const env = childEnv({ DATABASE_URL: db.url, ENCRYPTION_KEY: TEST_ENCRYPTION_KEY.toString('hex'), PGAPPNAME: 'history-crash' });
    const child = spawn(command, argv, { env, stdio: 'ignore' });
    const exited = new Promise((resolve) => child.on('exit', resolve));
    const partitionCount = async () => count(db, `SELECT count(*) AS n FROM pg_inherits`);
    for (let waited = 0; waited < 60_000; waited += 5) {
      if (total - (await partitionCount()) >= stopAt || child.exitCode !== null) break;
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
    child.kill('SIGKILL');
    await exited;
    // The machine went with it: its connection too (a detach in progress stops half way).
    await db.query(`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'history-crash'`);

    // Invariant right after the crash: every row within retention is there and readable.
    expect(await count(db, 'SELECT count(*) AS n FROM requests WHERE id = ANY($1::bigint[])', [recent])).toBe(5);
    expect(await count(db, 'SELECT count(*) AS n FROM syncs WHERE request_id = ANY($1::bigint[])', [recent])).toBe(5);

    const report = await maintainHistory(pool, { retention: RETENTION });

    expect(report.held).toEqual([]);
    const left = (await Promise.all(HISTORY_TABLES.map((t) => listPartitions(pool, t.name)))).flat();
    const horizon = (t: string) => now - RETENTION[HISTORY_TABLES.find((h) => h.name === t)!.retention] * DAY;
    expect(left.filter((p) => p.detaching)).toEqual([]);
    for (const t of HISTORY_TABLES) expect((await listPartitions(pool, t.name)).filter((p) => p.to.getTime() <= horizon(t.name))).toEqual([]);
    expect(await count(db, "SELECT count(*) AS n FROM pg_class WHERE relname ~ '_p[0-9]{8}$' AND relkind = 'r' AND NOT relispartition")).toBe(0);
    expect(await count(db, MINE.requests)).toBe(keptRows);
    expect(await count(db, MINE.bodies)).toBe(5);
  });
});
