import { join, sql, type Sql } from '../db/sql.js';
import { builder } from './builder.js';
import type { Context } from './context.js';
import { serviceError } from './errors.js';
import { accountArgs, reachable, requireReader, type Reader } from './access.js';
import {
  accountHistoryList,
  countableRows,
  keysetPage,
  pageArgs,
  pageType,
  requireLimit,
  requireSource,
  requireWindow,
  visibleRows,
  windowArgs,
  withQueryLimit,
} from './history.js';

/** A forwarding delivery as the REST API shows it. */
export interface DeliveryRecord {
  id: bigint;
  destinationId: number;
  destinationUrl: string;
  status: 'success' | 'error';
  httpStatus: number | null;
  connectionId: number;
  sourceId: number;
  eventType: string;
  toEmail: string;
  payloadId: bigint;
  error: unknown;
  replayOfDeliveryId: bigint | null;
  createdAt: Date;
}

const DeliveryStatus = builder.enumType('DeliveryStatus', {
  description: 'Outcome of a forwarding POST.',
  values: { success: { description: 'The destination answered 2xx.' }, error: { description: 'It did not, or could not be reached.' } } as const,
});

export const DeliveryRef = builder.objectRef<DeliveryRecord>('DeliveryRecord').implement({
  description: 'One outbound POST attempt to a forwarding destination.',
  fields: (t) => ({
    id: t.expose('id', { type: 'BigInt', description: 'Delivery id.' }),
    destinationId: t.exposeInt('destinationId', { description: 'Destination id.' }),
    destinationUrl: t.exposeString('destinationUrl', { description: 'The URL posted to.' }),
    status: t.exposeString('status', { description: '`success` or `error`.' }),
    httpStatus: t.exposeInt('httpStatus', { nullable: true, description: 'HTTP status returned; null when none came back.' }),
    connectionId: t.exposeInt('connectionId', { description: 'Connection of the source.' }),
    sourceId: t.exposeInt('sourceId', { description: 'Source of the event.' }),
    eventType: t.exposeString('eventType', { description: 'Inbound event type.' }),
    toEmail: t.exposeString('toEmail', { description: 'Contact email or profile URL (personal data).' }),
    payloadId: t.expose('payloadId', { type: 'BigInt', description: 'Id of the related request.' }),
    error: t.expose('error', { type: 'JSON', nullable: true, description: 'What went wrong, when it did.' }),
    replayOfDeliveryId: t.expose('replayOfDeliveryId', {
      type: 'BigInt',
      nullable: true,
      description: 'The delivery this attempt replays (POST .../replay); null for the first attempt and retries.',
    }),
    createdAt: t.expose('createdAt', { type: 'DateTime', description: 'When it was attempted.' }),
  }),
});

const DeliveryPage = pageType('DeliveryPage', DeliveryRef);

export const DeliveryMetrics = builder.objectRef<{ success: number; error: number }>('DeliveryMetrics').implement({
  description: 'Delivery counts by status over a window.',
  fields: (t) => ({
    success: t.exposeInt('success', { description: 'Successful deliveries.' }),
    error: t.exposeInt('error', { description: 'Failed deliveries.' }),
  }),
});

/** The columns of a {@link DeliveryRecord}, from `deliveries`. */
export const DELIVERY_COLUMNS = sql`id, destination_id AS "destinationId", destination_url AS "destinationUrl", status::text AS status,
  http_status AS "httpStatus", connection_id AS "connectionId", source_id AS "sourceId", event_type AS "eventType",
  to_email AS "toEmail", request_id AS "payloadId", error, replay_of_delivery_id AS "replayOfDeliveryId", created_at AS "createdAt"`;

const deliveryFilters = builder.args((t) => ({
  status: t.field({ type: DeliveryStatus, required: false, description: 'Only this status.' }),
  destinationId: t.int({ required: false, description: 'Only this destination (404 when not reachable).' }),
  sourceId: t.int({ required: false, description: 'Only this source (404 when not reachable).' }),
  connectionId: t.int({ required: false, description: 'Only this connection (one outside the key gives no rows).' }),
}));

accountHistoryList('deliveries', {
  type: DeliveryPage,
  description: 'Forwarding deliveries, newest first.',
  args: { ...windowArgs, ...pageArgs, ...deliveryFilters },
  resolve: async (ctx, accountId, args) => {
    const viewer = await requireReader(ctx, accountId);
    const window = requireWindow(args.from, args.to);
    const limit = requireLimit(args.limit);
    if (args.destinationId != null) await requireDestination(ctx, viewer, args.destinationId);
    if (args.sourceId != null) await requireSource(ctx, viewer, args.sourceId);
    const where = visibleRows(viewer, window);
    if (args.destinationId != null) where.push(sql`destination_id = ${args.destinationId}`);
    if (args.sourceId != null) where.push(sql`source_id = ${args.sourceId}`);
    if (args.connectionId != null) where.push(sql`connection_id = ${args.connectionId}`);
    if (args.status) where.push(sql`status = ${args.status}::delivery_status`);
    return keysetPage<DeliveryRecord>(ctx, {
      table: 'deliveries',
      columns: DELIVERY_COLUMNS,
      where,
      limit,
      cursor: args.cursor,
      scope: {
        account: viewer.accountId,
        connections: viewer.connectionIds.join(','),
        destinationId: args.destinationId,
        sourceId: args.sourceId,
        connectionId: args.connectionId,
        status: args.status,
        from: window.from.toISOString(),
        to: window.to.toISOString(),
      },
    });
  },
});

builder.queryFields((t) => ({
  delivery: t.field({
    type: DeliveryRef,
    description: 'One forwarding delivery; 404 when missing or not reachable by the key. Support staff reach every account.',
    args: { id: t.arg({ type: 'BigInt', required: true, description: 'Delivery id.' }) },
    resolve: async (_root, args, ctx) => {
      const [row] = await ctx.prisma.$queryRaw<DeliveryRecord[]>`SELECT ${DELIVERY_COLUMNS} FROM deliveries WHERE id = ${args.id} AND ${reachable(ctx)}`;
      if (!row) throw serviceError('NOT_FOUND', `Delivery ${args.id} not found`);
      return row;
    },
  }),
  deliveryMetrics: t.field({
    type: DeliveryMetrics,
    description: 'Delivery counts of one destination by status.',
    args: { ...accountArgs, ...windowArgs, destinationId: t.arg.int({ required: true, description: 'Destination id (404 when not reachable).' }) },
    resolve: async (_root, args, ctx) => {
      const viewer = await requireReader(ctx, args.accountId);
      const window = requireWindow(args.from, args.to);
      await requireDestination(ctx, viewer, args.destinationId);
      const where = [...countableRows(viewer, window), sql`destination_id = ${args.destinationId}`];
      return withQueryLimit(ctx, 'Narrow the from/to window.', (client) => countDeliveries(client, where));
    },
  }),
}));

/** A 404 unless the destination exists on a connection the reader reaches. */
async function requireDestination(ctx: Context, viewer: Reader, destinationId: number): Promise<void> {
  const found = await ctx.prisma.forwardingDestination.findFirst({
    where: { id: destinationId, connectionId: { in: viewer.connectionIds } },
    select: { id: true },
  });
  if (!found) throw serviceError('NOT_FOUND', `Destination ${destinationId} not found`);
}

/** Delivery counts by status over the rows `where` selects. */
export async function countDeliveries(client: Context['prisma'], where: Sql[]) {
  const [row] = await client.$queryRaw<{ success: bigint; error: bigint }[]>`
    SELECT count(*) FILTER (WHERE status = 'success') AS success, count(*) FILTER (WHERE status = 'error') AS error
      FROM deliveries WHERE ${join(where, ' AND ')}`;
  return { success: Number(row?.success ?? 0), error: Number(row?.error ?? 0) };
}
