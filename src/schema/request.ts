import { join, sql, type Sql } from '../db/sql.js';
import { builder } from './builder.js';
import type { Context } from './context.js';
import { accountArgs, reachable, requireReader } from './access.js';
import { serviceError } from './errors.js';
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

/** A request row as the REST API shows it (its lineage fields are in request-lineage.ts). */
export interface RequestRecord {
  id: bigint;
  accountId: number;
  contentType: string | null;
  sourceId: number | null;
  connectionId: number | null;
  path: string;
  /** Fetched from the sequencer's API by the backfill, not received. */
  fetched: boolean;
  /** The request this one repeats (a message fetched and received), which alone was synced. */
  duplicateOf: bigint | null;
  createdAt: Date;
}

export const RequestRef = builder.objectRef<RequestRecord>('RequestRecord').implement({
  description: 'One inbound POST accepted at a source.',
  fields: (t) => ({
    id: t.expose('id', { type: 'BigInt', description: 'Request id (the event id forwarded deliveries carry).' }),
    accountId: t.exposeInt('accountId', { description: 'Account.' }),
    contentType: t.exposeString('contentType', { nullable: true, description: 'The Content-Type the sequencer sent.' }),
    sourceId: t.exposeInt('sourceId', { nullable: true, description: 'Null only when the source is gone.' }),
    connectionId: t.exposeInt('connectionId', { nullable: true, description: 'Null only when the source is gone.' }),
    path: t.exposeString('path', { description: 'The ingress code it arrived at (secret, like the source url).' }),
    fetched: t.exposeBoolean('fetched', {
      description: "Fetched from the sequencer's API by the backfill (its webhook never arrived), rather than received from the sequencer.",
    }),
    duplicateOf: t.expose('duplicateOf', {
      type: 'BigInt',
      nullable: true,
      description: 'The request this one repeats: the same sequencer message, fetched and also received. Recorded, never synced (no sync, no CRM write).',
    }),
    createdAt: t.expose('createdAt', { type: 'DateTime', description: 'When it was received.' }),
  }),
});

const RequestPage = pageType('RequestPage', RequestRef);

export const RequestMetrics = builder.objectRef<{ count: number; fetched: number }>('RequestMetrics').implement({
  description: 'Request count over a window.',
  fields: (t) => ({
    count: t.exposeInt('count', { description: 'Requests received in the window (the fetched ones included).' }),
    fetched: t.exposeInt('fetched', { description: "Of those, the requests the backfill fetched from the sequencer's API." }),
  }),
});

const COLUMNS = sql`id, account_id AS "accountId", content_type AS "contentType", source_id AS "sourceId", connection_id AS "connectionId", path,
  fetched, duplicate_of AS "duplicateOf", created_at AS "createdAt"`;

const requestFilters = builder.args((t) => ({
  sourceId: t.int({ required: false, description: 'Only this source (404 when not reachable).' }),
}));

accountHistoryList('requests', {
  type: RequestPage,
  description: 'Inbound requests, newest first.',
  args: { ...windowArgs, ...pageArgs, ...requestFilters },
  resolve: async (ctx, accountId, args) => {
    const viewer = await requireReader(ctx, accountId);
    const window = requireWindow(args.from, args.to);
    const limit = requireLimit(args.limit);
    if (args.sourceId != null) await requireSource(ctx, viewer, args.sourceId);
    const where = [...visibleRows(viewer, window), ...(args.sourceId != null ? [sql`source_id = ${args.sourceId}`] : [])];
    return keysetPage<RequestRecord>(ctx, {
      table: 'requests',
      columns: COLUMNS,
      where,
      limit,
      cursor: args.cursor,
      scope: {
        account: viewer.accountId,
        connections: viewer.connectionIds.join(','),
        sourceId: args.sourceId,
        from: window.from.toISOString(),
        to: window.to.toISOString(),
      },
    });
  },
});

builder.queryFields((t) => ({
  request: t.field({
    type: RequestRef,
    description: 'One request, with what became of it; 404 when missing or not reachable by the key. Support staff reach every account.',
    args: { id: t.arg({ type: 'BigInt', required: true, description: 'Request id.' }) },
    resolve: async (_root, args, ctx) => {
      const [row] = await ctx.prisma.$queryRaw<RequestRecord[]>`SELECT ${COLUMNS} FROM requests WHERE id = ${args.id} AND ${reachable(ctx)}`;
      if (!row) throw serviceError('NOT_FOUND', `Request ${args.id} not found`);
      return row;
    },
  }),
  requestMetrics: t.field({
    type: RequestMetrics,
    description: 'How many requests arrived in the window.',
    args: { ...accountArgs, ...windowArgs, sourceId: t.arg.int({ required: false, description: 'Only this source (404 when not reachable).' }) },
    resolve: async (_root, args, ctx) => {
      const viewer = await requireReader(ctx, args.accountId);
      const window = requireWindow(args.from, args.to);
      if (args.sourceId != null) await requireSource(ctx, viewer, args.sourceId);
      const where = [...countableRows(viewer, window), ...(args.sourceId != null ? [sql`source_id = ${args.sourceId}`] : [])];
      return withQueryLimit(ctx, 'Narrow the from/to window or pass sourceId.', (client) => countRequests(client, where));
    },
  }),
}));

/** Exact request count over the rows `where` selects. */
export async function countRequests(client: Context['prisma'], where: Sql[]): Promise<{ count: number; fetched: number }> {
  const [row] = await client.$queryRaw<{ count: bigint; fetched: bigint }[]>`
    SELECT count(*) AS count, count(*) FILTER (WHERE fetched) AS fetched FROM requests WHERE ${join(where, ' AND ')}`;
  return { count: Number(row?.count ?? 0), fetched: Number(row?.fetched ?? 0) };
}
