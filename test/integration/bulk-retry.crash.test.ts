/**
 * A worker process killed (SIGKILL) while it works through a staff bulk re-sync (issue 17's
 * `retrySyncs`, issue 20's crash proof for every job kind): another worker finishes it. Every matched
 * sync is queued once (a chunk's retry jobs commit with its items' marks) and runs at least once; only
 * the retries in flight at the kill run twice, and each run is counted in the sync's attempts.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { ROUND_SIZE } from '../../src/jobs/syncs__drain.js';
import { seedFixture, type SeedResult } from '../../src/admin/seed.js';
import { TEST_ENCRYPTION_KEY } from '../support/database.js';
import { SUPPORT_TOKEN, useTestServer } from '../support/server.js';
import { killPoint } from '../support/kill-point.js';
import { startService } from '../support/service-process.js';
import { eventually, startTestWorker } from '../support/worker.js';

const ctx = useTestServer();
const SYNCS = 3_000;
let seeded: SeedResult;

beforeAll(async () => {
  // An account whose HubSpot connection holds no credentials: each retry records its error without a CRM call.
  seeded = await seedFixture(
    ctx.db.prisma,
    { accounts: [{ ref: 'bulk', connections: [{ ref: 'hubspot', crm: 'HUBSPOT', sources: [{ ref: 'source', platform: 'smartlead' }] }] }] },
    TEST_ENCRYPTION_KEY,
  );
  await ctx.db.query(
    `WITH r AS (
       INSERT INTO requests (account_id, source_id, connection_id, path, body, created_at)
       SELECT $1, $2, $3, 'bulk', '{"event_type":"EMAIL_SENT","to_email":"lead' || i || '@bulk.test"}', now() - interval '1 hour'
         FROM generate_series(1, ${SYNCS}) i RETURNING id, created_at)
     INSERT INTO syncs (account_id, connection_id, source_id, request_id, platform, event_type, to_email, status, error, attempts, created_at)
     SELECT $1, $3, $2, id, 'smartlead', 'EMAIL_SENT', 'lead@bulk.test', 'error', '{"message":"before the fix"}', 1, created_at FROM r`,
    [seeded.accounts.bulk, seeded.sources.source, seeded.connections.hubspot],
  );
});

async function staff(query: string, variables: Record<string, unknown>) {
  const res = await fetch(`${ctx.server.baseUrl}/graphql`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${SUPPORT_TOKEN}` },
    body: JSON.stringify({ query, variables }),
  });
  return ((await res.json()) as { data: Record<string, Record<string, number | string | null>> }).data;
}

describe('a worker killed during a bulk re-sync', () => {
  it('is finished by another: every sync queued once and run, only those in flight at the kill run twice', async () => {
    const filter = { accountId: seeded.accounts.bulk, from: new Date(Date.now() - 86_400_000).toISOString(), to: new Date().toISOString() };
    const { retrySyncs } = await staff('mutation ($f: RetrySyncsFilter!) { retrySyncs(filter: $f, dryRun: false) { matched bulkRetryId } }', { f: filter });
    expect(retrySyncs).toMatchObject({ matched: SYNCS });
    const progress = async () =>
      (await staff('query ($id: BigInt!) { bulkRetry(id: $id) { matched queued ran failed queuedAllAt } }', { id: retrySyncs!.bulkRetryId })).bulkRetry!;

    // Action: a worker process takes the bulk and its first retries, and is killed mid-way.
    const victim = startService('worker', { DATABASE_URL: ctx.db.url, ENCRYPTION_KEY: TEST_ENCRYPTION_KEY.toString('hex'), LOG_LEVEL: 'warn' });
    const point = killPoint('retries run', 1, 1_500);
    await eventually(async () => ((await progress()).ran as number) >= point || undefined, 60_000, `the victim running ${point} retries`);
    victim.child.kill('SIGKILL');
    await victim.exited;
    const atKill = await progress();
    expect(atKill.ran).toBeLessThan(SYNCS);

    const rescuer = await startTestWorker(ctx.db.url, {}, { staleAfterMs: 1_000 });
    try {
      const done = await eventually(
        async () => {
          const p = await progress();
          return p.ran === SYNCS && p.queuedAllAt ? p : undefined;
        },
        90_000,
        'every retry run',
      );
      // Assertions
      expect(done).toMatchObject({ matched: SYNCS, queued: SYNCS, ran: SYNCS, failed: SYNCS });
    } finally {
      await rescuer.stop();
    }
    const attempts = await ctx.db.query<{ runs: number; n: string }>(
      'SELECT attempts - 1 AS runs, count(*) AS n FROM syncs WHERE account_id = $1 GROUP BY attempts ORDER BY attempts',
      [seeded.accounts.bulk],
    );
    const byRuns = new Map(attempts.map((a) => [a.runs, Number(a.n)]));
    // Every sync ran once; only retries in flight at the kill (at most a drain's round) ran twice.
    expect([...byRuns.keys()].every((runs) => runs === 1 || runs === 2)).toBe(true);
    expect(byRuns.get(2) ?? 0).toBeLessThanOrEqual(ROUND_SIZE);
    const items = await ctx.db.query<{ n: string }>('SELECT count(*) AS n FROM bulk_retry_items WHERE bulk_retry_id = $1 AND queued_at IS NOT NULL', [
      retrySyncs!.bulkRetryId,
    ]);
    expect(Number(items[0]!.n)).toBe(SYNCS);
    const left = await ctx.db.query(
      "SELECT 1 FROM graphile_worker._private_jobs j JOIN graphile_worker._private_tasks t ON t.id = j.task_id WHERE t.identifier = 'syncs__bulk_retry'",
    );
    expect(left).toEqual([]);
  }, 180_000);
});
