import type pg from 'pg';
import { z } from 'zod';
import { withTransaction } from '../db/transaction.js';
import { query, sql, type Sql } from '../db/sql.js';
import { enqueue } from './enqueue.js';
import { queueDrainsSql, retriesSql } from './sync-outbox.js';
import { defineTask } from './task.js';

/** Retries of one bulk queued and not yet run, at most: the next chunk waits for them, so a bulk never floods the queue ahead of live events. */
const CHUNK = 1_000;
/** How soon a bulk with a full chunk waiting looks again. */
const WAIT_MS = 2_000;

/**
 * `syncs__bulk_retry {bulkRetryId}`: queues the retries of a staff bulk re-sync (GraphQL `retrySyncs`),
 * a chunk of 1,000 at a time: each chunk's retries (asked-for retries in the sync outbox, with their
 * connections' drains) are written in the same transaction that marks its items queued, so a crash
 * queues each sync once. The next chunk is queued when fewer than a chunk of the bulk's retries are still waiting to
 * run; each retry then takes the connection's CRM budget like any sync. Queued by `retrySyncs`.
 */
export const syncsBulkRetry = defineTask({
  identifier: 'syncs__bulk_retry',
  payload: z.object({ bulkRetryId: z.number().int().positive().max(Number.MAX_SAFE_INTEGER) }),
  // One job per bulk; bulkRetryKeySql() below spells the same rule in SQL.
  defaults: { maxAttempts: 10, jobKey: (p) => bulkRetryJobKey(p.bulkRetryId) },
  handler(env) {
    return async (job, helpers) => {
      const done = await queueNextChunk(env.pool, job.bulkRetryId);
      if (!done) await enqueue(helpers, syncsBulkRetry, job, { runAt: new Date(Date.now() + WAIT_MS) });
    };
  },
  recordUnrecoverable(env) {
    return async ({ bulkRetryId }, message) => {
      const error = `Stopped on our side and not retried automatically: ${message}`;
      await query(env.pool, sql`UPDATE bulk_retries SET error = ${error} WHERE id = ${bulkRetryId} AND queued_all_at IS NULL`);
    };
  },
});

/** One job per bulk: a reschedule replaces the waiting one. */
const KEY_PREFIX = 'bulk-retry:';

function bulkRetryJobKey(bulkRetryId: number): string {
  return `${KEY_PREFIX}${bulkRetryId}`;
}

/**
 * A bulk's job key (`bulk-retry:<bulkRetryId>`, the rule `defaults` spells above), as SQL over an
 * expression of its id: for the statement that writes a bulk and queues its first job (src/jobs/bulk-retries.ts).
 */
export function bulkRetryKeySql(bulkRetryId: Sql): Sql {
  return sql`${KEY_PREFIX} || ${bulkRetryId}`;
}

/** Queues the bulk's next chunk if the last ones have run; true once every item is queued. */
async function queueNextChunk(pool: pg.Pool, bulkRetryId: number): Promise<boolean> {
  return withTransaction(pool, async (client) => {
    const { rows } = await query<{ marked: number; left: number }>(
      client,
      sql`WITH waiting AS (
            SELECT count(*) AS n FROM bulk_retry_items i JOIN syncs s ON s.id = i.sync_id
             WHERE i.bulk_retry_id = ${bulkRetryId} AND i.queued_at IS NOT NULL AND s.updated_at <= i.queued_at
          ),
          chunk AS (
            SELECT i.sync_id, s.request_id, s.connection_id FROM bulk_retry_items i JOIN syncs s ON s.id = i.sync_id
             WHERE i.bulk_retry_id = ${bulkRetryId} AND i.queued_at IS NULL AND (SELECT n FROM waiting) < ${CHUNK}
             ORDER BY i.sync_id LIMIT ${CHUNK}
             FOR UPDATE OF i SKIP LOCKED
          ),
          marked AS (
            UPDATE bulk_retry_items i SET queued_at = now() FROM chunk
             WHERE i.bulk_retry_id = ${bulkRetryId} AND i.sync_id = chunk.sync_id
            RETURNING i.sync_id
          ),
          queued AS (${retriesSql(sql`chunk`)}),
          drained AS (SELECT (${queueDrainsSql(sql`queued`)}) AS n)
          SELECT (SELECT count(*) FROM marked)::int AS marked,
                 (SELECT count(*) FROM bulk_retry_items WHERE bulk_retry_id = ${bulkRetryId} AND queued_at IS NULL)::int AS left,
                 (SELECT n FROM drained)::int AS drains`,
    );
    const { marked, left } = rows[0]!;
    // `left` was counted before this statement's own marks.
    if (left - marked > 0) return false;
    await query(client, sql`UPDATE bulk_retries SET queued_all_at = now() WHERE id = ${bulkRetryId} AND queued_all_at IS NULL`);
    return true;
  });
}
