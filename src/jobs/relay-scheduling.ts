import { sql, type Sql } from '../db/sql.js';
import { addJobsSql } from './enqueue.js';
import { replyRelaysSchedule, relayScheduleKeySql } from './reply_relays__schedule.js';

// Relay work as the statements that accept requests queue it: each request of a source bound to a reply
// relay gets its scheduling job (`reply_relays__schedule`, whose module says how its jobs are keyed) in
// the statement that stores it. The relays' own SQL (executions, their sends) is src/jobs/relay-store.ts.

/** SQL for a CTE that queues the scheduling job for each request of `matched` (id, reply_relay_id: its source's) that has a reply relay. */
export function queueRelaySchedulingSql(matched: Sql): Sql {
  return sql`SELECT count(*) AS n FROM ${addJobsSql(replyRelaysSchedule, {
    from: sql`${matched} m WHERE m.reply_relay_id IS NOT NULL`,
    payload: { requestId: sql`m.id` },
    jobKey: relayScheduleKeySql(sql`m.id`),
  })}`;
}
