import { raw, sql, type Sql } from '../db/sql.js';
import { blocklistFetchKey, blocklistFetchKeySql, blocklistQueueSql, blocklistsFetch } from './blocklists__fetch.js';
import { addJobsSql } from './enqueue.js';
import { LANE_SCHEMA, laneOf } from './lanes.js';

// A block list's rounds as the statements that decide which lists run queue them: the every-minute
// schedule (src/jobs/blocklists__schedule.ts) and a resync (GraphQL) queue each chosen list's fetch
// (`blocklists__fetch`, whose module says how its jobs are keyed and queued) in that same statement, and
// a resync is refused while a fetch is queued. The rounds' own SQL (their status, entries and pushes) is
// src/jobs/blocklist-store.ts.

/**
 * SQL that queues a fetch for each row of `lists` (a relation with `id` and `kind` columns), under the
 * task's key and queue, for statements that decide which lists run (the schedule, a resync).
 */
export function queueFetchSql(lists: Sql): Sql {
  return addJobsSql(blocklistsFetch, {
    from: lists,
    payload: { blocklistId: sql`id`, kind: sql`kind` },
    jobKey: blocklistFetchKeySql(sql`id`),
    queueName: blocklistQueueSql(sql`id`),
  });
}

/** SQL that is true while a fetch of the list is queued or running (a job under its key): a resync is refused meanwhile. */
export function fetchQueuedSql(blocklistId: number): Sql {
  const jobs = raw(`${LANE_SCHEMA[laneOf(blocklistsFetch)]}._private_jobs`);
  return sql`EXISTS (SELECT 1 FROM ${jobs} j WHERE j.key = ${blocklistFetchKey(blocklistId)})`;
}
