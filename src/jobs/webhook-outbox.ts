import { sql, type Sql } from '../db/sql.js';
import { addJobsSql } from './enqueue.js';
import { DELIVERY_PUBLIC_ID_SQL } from './webhook-delivery-store.js';
import { webhookDeliveriesSend, webhookQueueSql } from './webhook_deliveries__send.js';

// The webhook outbox (the PENDING rows of `webhook_deliveries`) as the statements that put deliveries in
// it compose it: a pipeline's transition (its platform events fanned out), a test ping and a replay write
// an endpoint's deliveries and queue its sending loop (`webhook_deliveries__send`, whose module says how
// its jobs are keyed and queued) in that same statement, so no delivery waits without its loop. The
// loops' own side of the outbox (claims, records, retries) is src/jobs/webhook-delivery-store.ts.

/**
 * SQL for a CTE that writes one PENDING delivery, due now, per row of `targets` (endpoint_id,
 * event_id, replay_of_delivery_id), returning `id`, `public_id` and `endpoint_id` (for {@link queueWebhookSendingSql}).
 */
export function newDeliveriesSql(targets: Sql): Sql {
  return sql`INSERT INTO webhook_deliveries (public_id, endpoint_id, event_id, replay_of_delivery_id, next_attempt_at)
             SELECT ${DELIVERY_PUBLIC_ID_SQL}, t.endpoint_id, t.event_id, t.replay_of_delivery_id, now() FROM ${targets}
             RETURNING id, public_id, endpoint_id`;
}

/**
 * SQL for a CTE that fans the events in `events` (a relation with `id`, `account_id` and `type`) out to
 * every active endpoint of their account whose enabled events are empty or list the type.
 */
export function fanOutSql(events: Sql): Sql {
  return newDeliveriesSql(sql`(
    SELECT e.id AS endpoint_id, ev.id AS event_id, NULL::bigint AS replay_of_delivery_id
      FROM ${events} ev
      JOIN webhook_endpoints e ON e.account_id = ev.account_id AND e.is_active AND e.deleted_at IS NULL
                              AND (cardinality(e.enabled_events) = 0 OR ev.type = ANY(e.enabled_events))
  ) t`);
}

/**
 * SQL that queues the sending loop of each endpoint in `endpoints` (a relation with an `endpoint_id`
 * column): one job per endpoint, under its key (a waiting one is replaced, not doubled) and in its queue.
 */
export function queueWebhookSendingSql(endpoints: Sql): Sql {
  return sql`SELECT count(*) FROM ${addJobsSql(webhookDeliveriesSend, {
    from: sql`(SELECT DISTINCT endpoint_id FROM ${endpoints}) AS due`,
    payload: { endpointId: sql`due.endpoint_id` },
    jobKey: webhookQueueSql(sql`due.endpoint_id`),
    queueName: webhookQueueSql(sql`due.endpoint_id`),
  })}`;
}
