import { requestBodySql } from '../db/history/request-body.js';
import { sql } from '../db/sql.js';
import { bodyGoneConflict } from '../domain/retention.js';
import { queueSendingSql } from '../jobs/delivery-outbox.js';
import { builder } from './builder.js';
import { serviceError } from './errors.js';
import { writableRows } from './key-access.js';

const ReplayRef = builder.objectRef<{ queued: true; deliveryId: bigint }>('DeliveryReplay').implement({
  description: 'A queued replay of a forwarding delivery.',
  fields: (t) => ({
    queued: t.exposeBoolean('queued', { description: 'Always true: the replay is queued; the worker sends it.' }),
    deliveryId: t.expose('deliveryId', { type: 'BigInt', description: 'The id of the replayed delivery (the original one).' }),
  }),
});

builder.mutationField('replayDelivery', (t) =>
  t.field({
    type: ReplayRef,
    description:
      "Queues one more attempt of a delivery's event to its destination's current URL, with the same event id. Write scope, " +
      "checked before anything is looked up. The attempt's delivery row carries `replayOfDeliveryId`; a replay is one attempt, " +
      'never a new retry schedule. A delivery whose request body is past RAW_BODY_RETENTION_DAYS cannot be replayed (409, saying so).',
    args: {
      destinationId: t.arg.int({ required: true, description: 'Destination id.' }),
      deliveryId: t.arg({ type: 'BigInt', required: true, description: 'Id of the delivery to replay: one of this destination.' }),
    },
    resolve: async (_root, args, ctx) => {
      const destinationWritable = writableRows(ctx, { connection: sql`connection_id` });
      // The destination's connection is the key's; the delivery need only be of its account.
      const deliveryWritable = ctx.viewer.kind === 'staff' ? sql`TRUE` : sql`d.account_id = ${ctx.viewer.accountId}`;
      // One statement: the destination's visibility, the delivery's, and the replay's pending attempt
      // with its destination's sending loop, so a replay is queued whole or not at all.
      const [row] = await ctx.prisma.$queryRaw<{ destination: boolean; delivery: boolean; kept: boolean }[]>`
        WITH destination AS (
          SELECT id FROM destinations WHERE id = ${args.destinationId} AND ${destinationWritable}
        ),
        delivery AS (
          SELECT d.id, d.request_id, ${requestBodySql('r')} IS NOT NULL AS kept
            FROM deliveries d JOIN destination ON destination.id = d.destination_id LEFT JOIN requests r ON r.id = d.request_id
           WHERE d.id = ${args.deliveryId} AND ${deliveryWritable}
        ),
        replay AS (
          INSERT INTO pending_deliveries (destination_id, request_id, replay_of_delivery_id)
          SELECT ${args.destinationId}, request_id, id FROM delivery WHERE kept
          RETURNING destination_id
        ),
        sending AS (SELECT (${queueSendingSql(sql`replay`)}) AS n WHERE EXISTS (SELECT 1 FROM replay))
        SELECT EXISTS (SELECT 1 FROM destination) AS destination, EXISTS (SELECT 1 FROM delivery) AS delivery,
               EXISTS (SELECT 1 FROM delivery WHERE kept) AS kept, (SELECT n FROM sending) AS queued`;
      if (!row?.destination) throw serviceError('NOT_FOUND', `Destination ${args.destinationId} not found`);
      if (!row.delivery) throw serviceError('NOT_FOUND', `Delivery ${args.deliveryId} not found`);
      if (!row.kept) throw serviceError('CONFLICT', bodyGoneConflict('delivery'));
      return { queued: true as const, deliveryId: args.deliveryId };
    },
  }),
);
