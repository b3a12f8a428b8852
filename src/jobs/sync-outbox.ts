import { sql, type Sql } from '../db/sql.js';
import { addJobsSql } from './enqueue.js';
import { drainQueueSql, drainWakeUpsSql, syncsDrain } from './syncs__drain.js';

// The sync outbox (`pending_syncs`) as the statements that put syncs in it compose it: the ingress, an
// asked-for retry, a bulk re-sync and an older release's `syncs__run` jobs write waiting syncs and queue
// their connections' drains (`syncs__drain`, whose module says how its jobs are keyed and queued) in that
// same statement, so no sync waits without its drain; a worker's start queues the drains of whatever
// waits. The drains' own side of the outbox (claims, outcomes, reschedules) is src/jobs/sync-store.ts.

/**
 * SQL that queues the drain of each connection in `connections` (a relation with a `connection_id`
 * column), for statements that write waiting syncs: one job per connection, under its key (a waiting one
 * is replaced, not doubled, and keeps its run time, so /health/ready's lag counts from the first sync that
 * waits for it; a running one gets one more after it) and in its named queue.
 */
export function queueDrainsSql(connections: Sql): Sql {
  return sql`SELECT count(*) FROM ${addJobsSql(syncsDrain, {
    // In one order everywhere: statements queueing several connections' drains never wait on each other's keys in turn.
    from: sql`(SELECT DISTINCT connection_id FROM ${connections} WHERE connection_id IS NOT NULL) AS due ORDER BY due.connection_id`,
    payload: { connectionId: sql`due.connection_id` },
    jobKey: drainQueueSql(sql`due.connection_id`),
    queueName: drainQueueSql(sql`due.connection_id`),
    preserveRunAt: true,
  })}`;
}

/**
 * SQL for a CTE that writes asked-for retries of the syncs in `syncs` (a relation with `request_id` and
 * `connection_id`) into the outbox, due now (a retry asked for a sync still waiting makes it one), returning
 * their `connection_id`s for {@link queueDrainsSql}. One row per request: repeated asks queue one retry.
 */
export function retriesSql(syncs: Sql): Sql {
  return sql`INSERT INTO pending_syncs (request_id, connection_id, retry)
             SELECT request_id, connection_id, true FROM ${syncs}
             ON CONFLICT (request_id) DO UPDATE SET retry = true, due_at = LEAST(pending_syncs.due_at, now())
             RETURNING connection_id`;
}

/**
 * SQL queueing the drains of every connection with waiting syncs, each at its first one's due time (a
 * worker's start: syncs moved from an older release's jobs, or whose wake-up a restored backup lost).
 */
export function queueWaitingDrainsSql(): Sql {
  return drainWakeUpsSql(sql`(SELECT connection_id, min(due_at) AS due_at FROM pending_syncs GROUP BY connection_id) AS waiting`);
}
