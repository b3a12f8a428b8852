/**
 * What each job records as its outcome once it has failed for a reason no retry changes (issue 20;
 * `recordUnrecoverable` in src/jobs/task.ts, or the sync drain's own rule per sync), called directly on a
 * real database without a worker: a sync's error (and its outbox row gone), a reply relay's scheduling leaves a failed execution saying why (once, and only for a relay-bound
 * source), a relay's send ends its execution as failed for good, and a block list's fetch or push leaves
 * its error on the list, back where it rests, as GET /api/v1/blocklists and /account/status show it.
 * The generic rule (when the recorder is called) is tested in jobs.catalog.test.ts.
 */
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { seedFixture, type SeedResult } from '../../src/admin/seed.js';
import { blocklistsFetch } from '../../src/jobs/blocklists__fetch.js';
import { blocklistsPush } from '../../src/jobs/blocklists__push.js';
import { relayExecutionsSend } from '../../src/jobs/relay_executions__send.js';
import { replyRelaysSchedule } from '../../src/jobs/reply_relays__schedule.js';
import { SyncStore } from '../../src/jobs/sync-store.js';
import { sql } from '../../src/db/sql.js';
import type { JobEnvironment } from '../../src/jobs/task.js';
import { createLogger } from '../../src/logger.js';
import { TEST_ENCRYPTION_KEY } from '../support/database.js';
import { executionsOf, RELAY_FROM, relayMessageId, smartleadReplySample, type ExecutionRow } from '../support/relays.js';
import { apiGet } from '../support/rest.js';
import { useTestServer } from '../support/server.js';
import { crmUrls } from '../support/worker.js';

const ctx = useTestServer();
const KEY = 'svcapi_unrecoverableOutcomesReader01';
/** A failure no retry changes, as failureMessage() words it. */
const MESSAGE = 'value too long for type character varying(255)';

let pool: pg.Pool;
let env: JobEnvironment;
let seeded: SeedResult;
/** Request ids by source ref, oldest first. */
const requests: Record<string, number[]> = {};

beforeAll(async () => {
  const reply = (n: number) => JSON.parse(smartleadReplySample(`lead${n}@prospect.test`, `<reply-${n}@prospect.test>`)) as unknown;
  const list = (ref: string) => ({
    ref,
    listName: ref,
    platform: 'smartlead',
    blockType: 'DOMAIN',
    crmSource: { listId: '1' },
    sequencer: { apiKey: 'sequencer-key-outcomes' },
    entries: ['acme.test', 'beta.test'],
  });
  seeded = await seedFixture(
    ctx.db.prisma,
    {
      accounts: [
        {
          ref: 'outcomes',
          connections: [
            {
              ref: 'relays',
              crm: 'HUBSPOT',
              credentials: { accessToken: 'outcomes-token' },
              replyRelays: [{ ref: 'rep', description: 'rep', ccEmail: 'rep@reps.test' }],
              sources: [
                { ref: 'relayed', platform: 'smartlead', replyRelay: 'rep', requests: [1, 2, 3].map((n) => ({ body: reply(n) })) },
                { ref: 'plain', platform: 'smartlead', requests: [{ body: reply(4) }] },
              ],
            },
            // One list per connection, so each connection's status shows its own list's error.
            { ref: 'fetching', crm: 'HUBSPOT', credentials: { accessToken: 'outcomes-token-2' }, blocklists: [list('fetched')] },
            { ref: 'pushing', crm: 'HUBSPOT', credentials: { accessToken: 'outcomes-token-3' }, blocklists: [list('pushed')] },
          ],
          apiKeys: [{ name: 'reader', key: KEY }],
        },
      ],
    },
    TEST_ENCRYPTION_KEY,
  );
  for (const ref of ['relayed', 'plain']) {
    const rows = await ctx.db.query<{ id: number }>('SELECT id::int AS id FROM requests WHERE source_id = $1 ORDER BY id', [seeded.sources[ref]]);
    requests[ref] = rows.map((r) => r.id);
  }
  pool = new pg.Pool({ connectionString: ctx.db.url, max: 2 });
  env = {
    pool,
    logger: createLogger('silent', process.stderr),
    crm: { urls: crmUrls(), outboundAllowPrivate: true },
    outboundAllowPrivate: true,
    encryptionKey: TEST_ENCRYPTION_KEY,
    relays: { from: RELAY_FROM },
  };
});

afterAll(async () => {
  await pool?.end();
});

/** The task's recorder, built as the worker builds it once per process. */
function recorderOf<P>(task: { identifier: string; recordUnrecoverable: ((env: JobEnvironment) => (payload: P, message: string) => Promise<void>) | null }) {
  if (!task.recordUnrecoverable) throw new Error(`${task.identifier} records no unrecoverable outcome`);
  return task.recordUnrecoverable(env);
}

/** The database's clock now (the rows' times come from it). */
async function dbNow(): Promise<Date> {
  const [row] = await ctx.db.query<{ now: Date }>('SELECT clock_timestamp() AS now');
  return row!.now;
}

const requestId = (ref: string, index: number) => requests[ref]![index]!;
const relayId = () => seeded.replyRelays.rep!;

describe('a sync the drain sets aside for the third time', () => {
  // What syncs__drain records (SyncStore.failUnrecoverable), as its drain builds the store.
  const record = (requestId: number, retry: boolean, message: string) => new SyncStore(pool, () => sql`SELECT 0`).failUnrecoverable(requestId, retry, message);

  /** The sync row of the `plain` source's request, with this status and error, updated long ago. */
  async function syncWith(status: 'error' | 'success', error: unknown): Promise<number> {
    const requestId = requests['plain']![0]!;
    await ctx.db.query(
      // A sync's time is its request's, as the service writes it.
      `INSERT INTO syncs (account_id, connection_id, source_id, request_id, platform, event_type, to_email, status, error, attempts, created_at, updated_at)
       SELECT r.account_id, r.connection_id, r.source_id, r.id, 'smartlead', 'EMAIL_REPLY', 'lead4@prospect.test', $2::sync_status, $3::jsonb, 1, r.created_at, '2026-01-01T00:00:00Z'
         FROM requests r WHERE r.id = $1
       ON CONFLICT (request_id, created_at) DO UPDATE SET status = EXCLUDED.status, error = EXCLUDED.error, updated_at = EXCLUDED.updated_at`,
      [requestId, status, JSON.stringify(error)],
    );
    return requestId;
  }
  const syncOf = async (requestId: number) =>
    (
      await ctx.db.query<{ status: string; error: unknown; updated_at: Date }>('SELECT status::text, error, updated_at FROM syncs WHERE request_id = $1', [
        requestId,
      ])
    )[0]!;

  it("records a failed retry as the sync's new error (so a bulk re-sync counts it as run), and leaves a recorded outcome to a first run", async () => {
    const crmError = { message: 'HubSpot refused the contact' };
    const requestId = await syncWith('error', crmError);
    const failed = { message: `The sync failed on our side and will not be retried automatically: ${MESSAGE}` };

    // A first run's failure does not replace an outcome recorded meanwhile.
    await record(requestId, false, MESSAGE);
    expect(await syncOf(requestId)).toMatchObject({ status: 'error', error: crmError });

    // A retry's does: the error it was asked to replace is now its own.
    await record(requestId, true, MESSAGE);
    const retried = await syncOf(requestId);
    expect(retried).toMatchObject({ status: 'error', error: failed });
    expect(retried.updated_at.getTime()).toBeGreaterThan(Date.parse('2026-01-02T00:00:00Z'));

    // A retry never replaces a success.
    await syncWith('success', null);
    await record(requestId, true, MESSAGE);
    expect(await syncOf(requestId)).toMatchObject({ status: 'success', error: null });
  });

  it('takes the sync out of the outbox, so no drain runs it again', async () => {
    const requestId = await syncWith('error', { message: 'before' });
    await ctx.db.query('INSERT INTO pending_syncs (request_id, connection_id, retry) SELECT id, connection_id, true FROM requests WHERE id = $1', [requestId]);
    await record(requestId, true, MESSAGE);
    expect(await ctx.db.query('SELECT 1 FROM pending_syncs WHERE request_id = $1', [requestId])).toEqual([]);
  });
});

describe('reply_relays__schedule', () => {
  it('records a failed execution saying why, with its Message-ID and no send job, once however often it is called', async () => {
    // Setup: a reply of the relay-bound source, not scheduled yet.
    const request = requestId('relayed', 0);
    const record = recorderOf(replyRelaysSchedule);

    // Action: the job gives up, and a second worker records its own failure too.
    await record({ requestId: request }, MESSAGE);
    await record({ requestId: request }, 'another failure');

    // Assertions: one failed row with the first reason, final, nothing left to send it.
    const rows = await executionsOf(ctx.db, [request]);
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({
      relay_id: relayId(),
      status: 'failed',
      reason: `Not scheduled: failed on our side and not retried automatically: ${MESSAGE}`,
      message_id: relayMessageId(relayId(), request),
      attempts: 0,
      attempt_log: [],
      next_attempt_at: null,
      sent_at: null,
    });
    const jobs = await ctx.db.query('SELECT id FROM graphile_worker._private_jobs WHERE key = $1', [`relay:${rows[0]!.id}`]);
    expect(jobs).toEqual([]);
  });

  it('writes nothing for a request whose source has no reply relay', async () => {
    // Setup: a reply of a source bound to no relay.
    const request = requestId('plain', 0);
    const record = recorderOf(replyRelaysSchedule);

    // Action
    await record({ requestId: request }, MESSAGE);

    // Assertions
    expect(await executionsOf(ctx.db, [request])).toEqual([]);
  });
});

describe('relay_executions__send', () => {
  it('ends the execution as failed for good, attempts as counted, with the failure in its attempt log', async () => {
    // Setup: an execution retrying after two failed attempts, and another one waiting for its time.
    const earlier = [
      { at: '2026-01-01T10:00:00.000Z', outcome: 'failed', error: 'greylisted', smtpCode: 451 },
      { at: '2026-01-01T10:05:00.000Z', outcome: 'failed', error: 'greylisted', smtpCode: 451 },
    ];
    const [retrying] = await ctx.db.query<{ id: string }>(
      `INSERT INTO relay_executions (relay_id, request_id, account_id, connection_id, event_key, message_id, run_at,
                                     status, reason, attempts, attempt_log, next_attempt_at)
       SELECT $1, r.id, r.account_id, r.connection_id, 'key-' || r.id, $3, now(), 'failed', 'greylisted', 2, $4::jsonb, now() + interval '1 hour'
         FROM requests r WHERE r.id = $2
       RETURNING id::text`,
      [relayId(), requestId('relayed', 1), relayMessageId(relayId(), requestId('relayed', 1)), JSON.stringify(earlier)],
    );
    const [waiting] = await ctx.db.query<{ id: string }>(
      `INSERT INTO relay_executions (relay_id, request_id, account_id, connection_id, event_key, message_id, run_at)
       SELECT $1, r.id, r.account_id, r.connection_id, 'key-' || r.id, $3, now() + interval '1 hour' FROM requests r WHERE r.id = $2
       RETURNING id::text`,
      [relayId(), requestId('relayed', 2), relayMessageId(relayId(), requestId('relayed', 2))],
    );
    const [waitingBefore] = await executionsOf(ctx.db, [requestId('relayed', 2)]);
    const before = await dbNow();

    // Action
    await recorderOf(relayExecutionsSend)({ executionId: Number(retrying!.id) }, MESSAGE);

    // Assertions: final (no next attempt), the attempts it made, the log's history kept and the failure added.
    const reason = `Failed on our side and not retried automatically: ${MESSAGE}`;
    const [row] = await executionsOf(ctx.db, [requestId('relayed', 1)]);
    expect(row).toMatchObject({ id: retrying!.id, status: 'failed', reason, next_attempt_at: null, sending_since: null, attempts: 2, sent_at: null });
    expect(row!.attempt_log).toHaveLength(3);
    expect(row!.attempt_log.slice(0, 2)).toEqual(earlier);
    expect(row!.attempt_log[2]).toEqual({ at: expect.any(String), outcome: 'failed', error: reason });
    expect(new Date(row!.attempt_log[2]!.at).getTime()).toBeGreaterThanOrEqual(before.getTime() - 1_000);
    // Only that execution changed.
    const [other] = await executionsOf(ctx.db, [requestId('relayed', 2)]);
    expect(other!.id).toBe(waiting!.id);
    expect(other).toEqual<ExecutionRow>(waitingBefore!);

    // An execution already final keeps its outcome: a job that failed before it could see so must not turn it into a failure.
    await ctx.db.query(`UPDATE relay_executions SET status = 'sent', next_attempt_at = NULL WHERE id = $1`, [waiting!.id]);
    await recorderOf(relayExecutionsSend)({ executionId: Number(waiting!.id) }, MESSAGE);
    const [sent] = await executionsOf(ctx.db, [requestId('relayed', 2)]);
    expect(sent).toMatchObject({ status: 'sent', reason: null });
  });
});

describe('blocklists__fetch and blocklists__push', () => {
  const listId = (ref: string) => seeded.blocklists[ref]!;
  const connectionId = (ref: string) => seeded.connections[ref]!;
  const reason = `Failed on our side and not retried automatically: ${MESSAGE}`;

  /** Puts the list in a round's status, attempted long ago, fetched then or never, with no error. */
  async function inRound(ref: string, status: string, fetched: boolean): Promise<void> {
    await ctx.db.query(
      `UPDATE blocklists SET status = $2::blocklist_status, last_error = NULL, last_attempted_at = '2026-01-01T00:00:00Z',
              last_fetched_at = CASE WHEN $3 THEN now() - interval '1 hour' END WHERE id = $1`,
      [listId(ref), status, fetched],
    );
  }

  /** The list's error, status and attempt as the database, GET /blocklists and GET /account/status show them. */
  async function expectShown(ref: string, connection: string, status: string, since: Date): Promise<void> {
    const [row] = await ctx.db.query<{ status: string; last_error: string | null; last_attempted_at: Date }>(
      'SELECT status::text, last_error, last_attempted_at FROM blocklists WHERE id = $1',
      [listId(ref)],
    );
    expect(row).toMatchObject({ status, last_error: reason });
    expect(row!.last_attempted_at.getTime()).toBeGreaterThanOrEqual(since.getTime());

    const lists = await apiGet(ctx.server.baseUrl, `/blocklists?connectionId=${connectionId(connection)}`, KEY);
    expect(lists.status).toBe(200);
    expect(lists.body.blocklists).toEqual([
      expect.objectContaining({ id: listId(ref), status, isEnabled: true, lastError: reason, lastAttemptedAt: row!.last_attempted_at.toISOString() }),
    ]);

    const account = await apiGet(ctx.server.baseUrl, '/account/status', KEY);
    expect(account.status).toBe(200);
    const shown = account.body.connections.find((c: { connectionId: number }) => c.connectionId === connectionId(connection));
    expect(shown.blocklists).toMatchObject({ status: 'error', lastError: reason });
    expect(account.body.warnings).toContainEqual(expect.objectContaining({ code: 'blocklists_error', connectionId: connectionId(connection) }));
  }

  it('a first fetch that gave up leaves the list CREATED with its error, attempted now', async () => {
    // Setup: the list's first full round, fetching, never fetched before.
    await inRound('fetched', 'FETCHING', false);
    const before = await dbNow();

    // Action
    await recorderOf(blocklistsFetch)({ blocklistId: listId('fetched'), kind: 'full' }, MESSAGE);

    // Assertions
    await expectShown('fetched', 'fetching', 'CREATED', before);
  });

  it.each([
    ['SYNCING', 'after its first fetch'],
    ['SYNCING_NEW_CONTACTS', 'in a periodic round'],
  ])('a push that gave up while %s (%s) leaves the list SYNCED with its error, attempted now', async (status) => {
    // Setup: a list fetched an hour ago, its entries being pushed.
    await inRound('pushed', status, true);
    const before = await dbNow();

    // Action
    await recorderOf(blocklistsPush)({ blocklistId: listId('pushed') }, MESSAGE);

    // Assertions
    await expectShown('pushed', 'pushing', 'SYNCED', before);
  });
});
