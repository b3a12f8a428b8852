import type pg from 'pg';
import { LANE_SCHEMA, LANES } from '../../jobs/lanes.js';
import { query, raw, sql, type Sql } from '../sql.js';

/** Rows one statement deletes: a short transaction, however far behind a table is. */
const BATCH = 5_000;
/** Statements per table and round (a million rows): the rest waits for the next hour's round. */
const MAX_BATCHES = 200;

/**
 * The tables outside the partitioned history that still grow with traffic, trimmed to the history's
 * retention by each round (decisions.md, "What retention trims besides partitions"). They are small
 * beside the history (a signal per categorised event, a staff bulk re-sync, a job that failed for good),
 * so rows go in batches of {@link BATCH} rather than as partitions. Answers the rows deleted per table.
 */
export async function pruneExpired(client: pg.PoolClient, horizon: Date): Promise<Record<string, number>> {
  const pruned: Record<string, number> = {};
  for (const [table, statement] of prunes(horizon)) {
    let total = 0;
    for (let batch = 0; batch < MAX_BATCHES; batch += 1) {
      const { rowCount } = await query(client, statement);
      total += rowCount ?? 0;
      if ((rowCount ?? 0) < BATCH) break;
    }
    if (total > 0) pruned[table] = total;
  }
  return pruned;
}

/** Each trimmed table's statement deleting a batch of rows from before `horizon`. */
function prunes(horizon: Date): [string, Sql][] {
  return [
    // The newest signal per lead is what reads use; one older than every request of the lead is history.
    [
      'lead_category_signals',
      sql`DELETE FROM lead_category_signals WHERE id IN (
            SELECT id FROM lead_category_signals WHERE created_at < ${horizon} ORDER BY created_at LIMIT ${BATCH})`,
    ],
    // A bulk re-sync's items first (up to 100,000 per bulk), then the bulk rows left without items.
    [
      'bulk_retry_items',
      sql`DELETE FROM bulk_retry_items i USING (
            SELECT i.bulk_retry_id, i.sync_id FROM bulk_retry_items i JOIN bulk_retries b ON b.id = i.bulk_retry_id
             WHERE ${finishedBulkBefore(horizon)} LIMIT ${BATCH}) e
          WHERE i.bulk_retry_id = e.bulk_retry_id AND i.sync_id = e.sync_id`,
    ],
    [
      'bulk_retries',
      sql`DELETE FROM bulk_retries b WHERE b.id IN (
            SELECT b.id FROM bulk_retries b
             WHERE ${finishedBulkBefore(horizon)} AND NOT EXISTS (SELECT 1 FROM bulk_retry_items i WHERE i.bulk_retry_id = b.id)
             LIMIT ${BATCH})`,
    ],
    // graphile-worker keeps a job that failed for good (its outcome is recorded in our tables) until
    // deleted; its own cleanup deletes every one at once, this only those untouched past retention.
    ...LANES.map((lane): [string, Sql] => {
      const jobs = raw(`${LANE_SCHEMA[lane]}._private_jobs`);
      return [
        `${LANE_SCHEMA[lane]} failed jobs`,
        sql`DELETE FROM ${jobs} WHERE id IN (
              SELECT id FROM ${jobs} WHERE attempts >= max_attempts AND locked_at IS NULL AND updated_at < ${horizon} LIMIT ${BATCH})`,
      ];
    }),
  ];
}

/** A bulk re-sync that is over (every sync queued, or stopped by an error) and began before `horizon`. */
function finishedBulkBefore(horizon: Date): Sql {
  return sql`b.created_at < ${horizon} AND (b.queued_all_at IS NOT NULL OR b.error IS NOT NULL)`;
}
