import { join, sql, type Sql } from '../db/sql.js';
import { builder } from './builder.js';
import type { Context } from './context.js';
import { requireApiKey } from './errors.js';
import {
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

/** A request row as the REST API shows it. */
interface RequestRecord {
  id: bigint;
  sourceId: number | null;
  connectionId: number | null;
  path: string;
  createdAt: Date;
}

const RequestRef = builder.objectRef<RequestRecord>('RequestRecord').implement({
  description: 'One inbound POST accepted at a source.',
  fields: (t) => ({
    id: t.expose('id', { type: 'BigInt', description: 'Request id.' }),
    sourceId: t.exposeInt('sourceId', { nullable: true, description: 'Null only when the source is gone.' }),
    connectionId: t.exposeInt('connectionId', { nullable: true, description: 'Null only when the source is gone.' }),
    path: t.exposeString('path', { description: 'The ingress code it arrived at (secret, like the source url).' }),
    createdAt: t.expose('createdAt', { type: 'DateTime', description: 'When it was received.' }),
  }),
});

const RequestPage = pageType('RequestPage', RequestRef);

export const RequestMetrics = builder.objectRef<{ count: number }>('RequestMetrics').implement({
  description: 'Request count over a window.',
  fields: (t) => ({ count: t.exposeInt('count', { description: 'Requests received in the window.' }) }),
});

const COLUMNS = sql`id, source_id AS "sourceId", connection_id AS "connectionId", path, created_at AS "createdAt"`;

builder.queryFields((t) => ({
  requests: t.field({
    type: RequestPage,
    description: 'Inbound requests, newest first.',
    args: { ...windowArgs, ...pageArgs, sourceId: t.arg.int({ required: false, description: 'Only this source (404 when not reachable).' }) },
    resolve: async (_root, args, ctx) => {
      const viewer = requireApiKey(ctx);
      const window = requireWindow(args.from, args.to);
      const limit = requireLimit(args.limit);
      if (args.sourceId != null) await requireSource(ctx, args.sourceId);
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
  }),
  requestMetrics: t.field({
    type: RequestMetrics,
    description: 'How many requests arrived in the window.',
    args: { ...windowArgs, sourceId: t.arg.int({ required: false, description: 'Only this source (404 when not reachable).' }) },
    resolve: async (_root, args, ctx) => {
      const viewer = requireApiKey(ctx);
      const window = requireWindow(args.from, args.to);
      if (args.sourceId != null) await requireSource(ctx, args.sourceId);
      const where = [...countableRows(viewer, window), ...(args.sourceId != null ? [sql`source_id = ${args.sourceId}`] : [])];
      return withQueryLimit(ctx, 'Narrow the from/to window or pass sourceId.', (client) => countRequests(client, where));
    },
  }),
}));

/** Exact request count over the rows `where` selects. */
export async function countRequests(client: Context['prisma'], where: Sql[]): Promise<{ count: number }> {
  const [row] = await client.$queryRaw<{ count: bigint }[]>`SELECT count(*) AS count FROM requests WHERE ${join(where, ' AND ')}`;
  return { count: Number(row?.count ?? 0) };
}
