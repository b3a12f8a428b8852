import { sql, type Sql } from '../db/sql.js';
import { deliveriesSend, sendingQueueSql } from './deliveries__send.js';
import { addJobsSql } from './enqueue.js';

// The forwarding outbox (`pending_deliveries`) as the statements that put work in it compose it: the
// ingress (bindings that do not wait for the CRM), a sync's first recorded outcome (delayed bindings) and
// a replay write a destination's attempts and queue its sending loop (`deliveries__send`, whose module
// says how its jobs are keyed and queued) in that same statement, so no attempt waits without its loop.
// The loops' own side of the outbox (claims, records, retries) is src/jobs/delivery-store.ts.

/**
 * SQL that queues the sending loop of each destination in `destinations` (a relation with a
 * `destination_id` column), for statements that write pending attempts: one job per destination, under
 * its key (a waiting one is replaced, not doubled) and in its named queue.
 */
export function queueSendingSql(destinations: Sql): Sql {
  return sql`SELECT count(*) FROM ${addJobsSql(deliveriesSend, {
    from: sql`(SELECT DISTINCT destination_id FROM ${destinations}) AS due`,
    payload: { destinationId: sql`due.destination_id` },
    jobKey: sendingQueueSql(sql`due.destination_id`),
    queueName: sendingQueueSql(sql`due.destination_id`),
  })}`;
}

/**
 * SQL for a CTE that writes the first attempt of each binding of the requests in `requests` (a relation
 * with `id` and `source_id`) that does not wait for the CRM, returning their `destination_id`s (for
 * {@link queueSendingSql}). The event's type is not known yet: the loop reads it before sending.
 */
export function pendingOnArrivalSql(requests: Sql): Sql {
  return sql`INSERT INTO pending_deliveries (destination_id, request_id)
             SELECT b.destination_id, r.id FROM ${requests} r JOIN destination_bindings b ON b.source_id = r.source_id AND NOT b.is_delayed
             RETURNING destination_id`;
}

/**
 * SQL for a CTE that writes the first attempt of each delayed binding of syncs whose outcome was just
 * recorded for the first time (`recorded`: request_id, source_id, event_type, readable), returning their
 * `destination_id`s. A binding's event types must list the sync's type, unless the list is empty; a
 * payload that could not be read goes to empty lists only.
 */
export function pendingOnOutcomeSql(recorded: Sql): Sql {
  return sql`INSERT INTO pending_deliveries (destination_id, request_id)
             SELECT b.destination_id, r.request_id FROM ${recorded} r
               JOIN destination_bindings b ON b.source_id = r.source_id AND b.is_delayed
              WHERE cardinality(b.event_types) = 0 OR (r.readable AND r.event_type = ANY(b.event_types))
             RETURNING destination_id`;
}
