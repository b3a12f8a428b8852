import { raw, sql } from '../db/sql.js';
import { newDeliveriesSql, queueWebhookSendingSql } from '../jobs/webhook-outbox.js';
import { builder } from './builder.js';
import { serviceError } from './errors.js';
import { keysetPage, pageArgs, pageType, requireLimit, requireWindow, windowArgs } from './history.js';
import { findEndpoint } from './webhook-endpoint.js';

/** The delivery states: PENDING (waiting for its first attempt or a retry), SUCCEEDED, DEAD (no attempt left). */
const DELIVERY_STATUSES = ['PENDING', 'SUCCEEDED', 'DEAD'] as const;

/** A delivery of a platform event to one endpoint, across its attempts. */
interface WebhookDeliveryRecord {
  id: bigint;
  publicId: string;
  endpointId: string;
  eventId: string;
  eventType: string;
  status: string;
  attempts: number;
  lastAttemptAt: Date | null;
  lastHttpStatus: number | null;
  responseExcerpt: string | null;
  error: string | null;
  nextAttemptAt: Date | null;
  replayOfDeliveryId: string | null;
  createdAt: Date;
  updatedAt: Date;
}

// A relation with the public ids joined in; the list's filters go on its columns (PostgreSQL folds it
// into the query, so the (endpoint_id, created_at, id) index still serves the page).
const DELIVERIES = `(
  SELECT d.id, d.endpoint_id, d.created_at, d.status::text AS status, d.public_id AS "publicId", e.public_id AS "endpointId",
         ev.public_id AS "eventId", ev.type AS "eventType", d.attempts, d.last_attempt_at AS "lastAttemptAt",
         d.last_http_status AS "lastHttpStatus", d.response_excerpt AS "responseExcerpt", d.last_error AS error,
         d.next_attempt_at AS "nextAttemptAt", o.public_id AS "replayOfDeliveryId", d.created_at AS "createdAt", d.updated_at AS "updatedAt"
    FROM webhook_deliveries d
    JOIN webhook_endpoints e ON e.id = d.endpoint_id
    JOIN platform_events ev ON ev.id = d.event_id
    LEFT JOIN webhook_deliveries o ON o.id = d.replay_of_delivery_id
) AS webhook_delivery`;

const COLUMNS = sql`id, created_at, "publicId", "endpointId", "eventId", "eventType", status, attempts, "lastAttemptAt", "lastHttpStatus",
  "responseExcerpt", error, "nextAttemptAt", "replayOfDeliveryId", "createdAt", "updatedAt"`;

const WebhookDeliveryRef = builder.objectRef<WebhookDeliveryRecord>('WebhookDelivery').implement({
  description: 'The delivery of one platform event to one webhook endpoint, across its attempts.',
  fields: (t) => ({
    id: t.exposeString('publicId', { description: 'Delivery id, prefix `svcwhd_` (the Service-Delivery-Id header).' }),
    endpointId: t.exposeString('endpointId', { description: 'Endpoint id, prefix `svcwh_`.' }),
    eventId: t.exposeString('eventId', { description: 'Event id, prefix `svcevt_` (the Service-Event-Id header).' }),
    eventType: t.exposeString('eventType', { description: 'The event type.' }),
    status: t.exposeString('status', { description: 'PENDING (an attempt is due or will be), SUCCEEDED (a 2xx), DEAD (no attempt left).' }),
    attempts: t.exposeInt('attempts', { description: 'Attempts made so far.' }),
    lastAttemptAt: t.expose('lastAttemptAt', { type: 'DateTime', nullable: true, description: 'When the last attempt was made.' }),
    lastHttpStatus: t.exposeInt('lastHttpStatus', { nullable: true, description: "The last attempt's HTTP status; null without an answer." }),
    responseExcerpt: t.exposeString('responseExcerpt', { nullable: true, description: 'The head of the last answer, at most 1 KB.' }),
    error: t.exposeString('error', { nullable: true, description: 'Why the last attempt failed; null after a success.' }),
    nextAttemptAt: t.expose('nextAttemptAt', { type: 'DateTime', nullable: true, description: 'When the next attempt is due; null once final.' }),
    replayOfDeliveryId: t.exposeString('replayOfDeliveryId', { nullable: true, description: 'The delivery this one replays.' }),
    createdAt: t.expose('createdAt', { type: 'DateTime', description: 'When the delivery was created.' }),
    updatedAt: t.expose('updatedAt', { type: 'DateTime', description: 'When it last changed.' }),
  }),
});

const WebhookDeliveryPage = pageType('WebhookDeliveryPage', WebhookDeliveryRef);

builder.queryField('webhookDeliveries', (t) =>
  t.field({
    type: WebhookDeliveryPage,
    description: "An endpoint's deliveries, newest first.",
    args: {
      endpointId: t.arg.string({ required: true, description: 'Endpoint id, prefix `svcwh_`.' }),
      ...windowArgs,
      ...pageArgs,
      status: t.arg.string({ required: false, description: 'Only this status: PENDING, SUCCEEDED or DEAD.' }),
    },
    resolve: async (_root, args, ctx) => {
      const endpoint = await findEndpoint(ctx, args.endpointId, 'read');
      const window = requireWindow(args.from, args.to);
      const limit = requireLimit(args.limit);
      if (args.status != null && !(DELIVERY_STATUSES as readonly string[]).includes(args.status)) {
        throw serviceError('BAD_REQUEST', `status must be one of ${DELIVERY_STATUSES.join(', ')}`);
      }
      const where = [sql`endpoint_id = ${endpoint.id}`, sql`created_at >= ${window.from}`, sql`created_at <= ${window.to}`];
      if (args.status != null) where.push(sql`status = ${args.status}`);
      return keysetPage<WebhookDeliveryRecord>(ctx, {
        table: DELIVERIES,
        columns: COLUMNS,
        where,
        limit,
        cursor: args.cursor,
        scope: { endpoint: endpoint.id, status: args.status, from: window.from.toISOString(), to: window.to.toISOString() },
      });
    },
  }),
);

builder.mutationField('replayWebhookDelivery', (t) =>
  t.field({
    type: WebhookDeliveryRef,
    description:
      'Creates a new delivery of the same event to the same endpoint (whatever their states), linked by `replayOfDeliveryId`, ' +
      'freshly signed and with a retry schedule of its own.',
    args: {
      endpointId: t.arg.string({ required: true, description: 'Endpoint id, prefix `svcwh_`.' }),
      deliveryId: t.arg.string({ required: true, description: 'Id of the delivery to replay, prefix `svcwhd_`.' }),
    },
    resolve: async (_root, args, ctx) => {
      const endpoint = await findEndpoint(ctx, args.endpointId, 'write', true);
      // The answer is the delivery as created: read before the commit lets the sending loop at it (read
      // after, it could already show the loop's first attempt).
      return ctx.prisma.$transaction(async (tx) => {
        // One statement: the original's lookup, the new delivery and the endpoint's sending loop.
        const [row] = await tx.$queryRaw<{ id: bigint | null }[]>`
        WITH original AS (
          SELECT id, event_id FROM webhook_deliveries WHERE public_id = ${args.deliveryId} AND endpoint_id = ${endpoint.id}
        ),
        replay AS (${newDeliveriesSql(sql`(SELECT ${endpoint.id}::int AS endpoint_id, event_id, id AS replay_of_delivery_id FROM original) t`)}),
        sending AS (SELECT (${queueWebhookSendingSql(sql`replay`)}) AS n WHERE EXISTS (SELECT 1 FROM replay))
        SELECT (SELECT id FROM replay) AS id, (SELECT n FROM sending) AS queued`;
        if (row?.id == null) throw serviceError('NOT_FOUND', `Webhook delivery ${args.deliveryId} not found`);
        const [replay] = await tx.$queryRaw<WebhookDeliveryRecord[]>`SELECT ${COLUMNS} FROM ${raw(DELIVERIES)} WHERE id = ${row.id}`;
        return replay!;
      });
    },
  }),
);
