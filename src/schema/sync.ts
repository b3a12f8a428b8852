import { join, sql, type Sql } from '../db/sql.js';
import { builder } from './builder.js';
import { accountArgs, reachable, requireReader, type Reader } from './access.js';
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
import type { Window } from '../domain/window.js';

/** A sync row as the REST API shows it; a never-recorded result reads as `error`. */
export interface SyncRecord {
  id: bigint;
  status: 'success' | 'warning' | 'error';
  connectionId: number;
  sourceId: number;
  eventType: string;
  toEmail: string;
  platform: string;
  payloadId: bigint;
  error: unknown;
  /** What each CRM step created (the CRM's ids) and the creates in flight. */
  crmState: unknown;
  attempts: number;
  createdAt: Date;
  updatedAt: Date;
}

const SyncStatus = builder.enumType('SyncStatus', {
  description: 'Outcome of a CRM write; a sync that never recorded one counts as error.',
  values: {
    success: { description: 'Written.' },
    warning: { description: 'Written, with a partial problem.' },
    error: { description: 'Not written, or no result recorded.' },
  } as const,
});

export const SyncRef = builder.objectRef<SyncRecord>('SyncRecord').implement({
  description: 'One CRM write attempt for a received request.',
  fields: (t) => ({
    id: t.expose('id', { type: 'BigInt', description: 'Sync id.' }),
    status: t.exposeString('status', { description: '`success`, `warning` or `error`.' }),
    connectionId: t.exposeInt('connectionId', { description: 'Connection written to.' }),
    sourceId: t.exposeInt('sourceId', { description: 'Source the event came from.' }),
    eventType: t.exposeString('eventType', { description: 'Inbound event type, e.g. EMAIL_SENT.' }),
    toEmail: t.exposeString('toEmail', { description: 'Contact email or social profile URL (personal data).' }),
    platform: t.exposeString('platform', { description: 'Sequencer platform.' }),
    payloadId: t.expose('payloadId', { type: 'BigInt', description: 'Id of the related request.' }),
    error: t.expose('error', { type: 'JSON', nullable: true, description: 'CRM result payload when present (may carry vendor messages).' }),
    createdAt: t.expose('createdAt', { type: 'DateTime', description: 'Processing time.' }),
    updatedAt: t.expose('updatedAt', { type: 'DateTime', description: 'When its outcome or CRM steps last changed.' }),
    attempts: t.exposeInt('attempts', { description: 'Times the worker ran it (retries included).' }),
    crmState: t.field({
      type: 'JSON',
      description:
        "What each CRM step wrote, by the CRM's ids: HubSpot's `contactId`, `companyId`, `ownerId`, `activityId` (an email or a note) and " +
        "`taskId`; Salesforce's `whoId` (a Contact or Lead), `ownerId`, `activityId` and `taskId`; Close's `leadId`, `contactId`, `userId`, " +
        "`activityId` (an email activity or a note) and `taskId`; Attio's `recordId` (the person), `companyId`, `assignee`, `noteId` and " +
        '`taskId`. `...Pending` (HubSpot) or `...PendingSince` (the others) marks a create sent whose answer was not saved yet: a retry ' +
        'resumes from here and never writes twice.',
      resolve: (s) => s.crmState,
    }),
  }),
});

const SyncPage = pageType('SyncPage', SyncRef);

export const SyncMetrics = builder.objectRef<{ success: number; warning: number; error: number }>('SyncMetrics').implement({
  description: 'Exact sync counts by status over a window.',
  fields: (t) => ({
    success: t.exposeInt('success', { description: 'Successful syncs.' }),
    warning: t.exposeInt('warning', { description: 'Syncs written with a partial problem.' }),
    error: t.exposeInt('error', { description: 'Failed syncs, including those that never recorded a result.' }),
  }),
});

const SYNC_HINT = 'Narrow the from/to window or pass connectionId.';

/** The columns of a {@link SyncRecord}, from `syncs`. */
export const SYNC_COLUMNS = sql`id, COALESCE(status::text, 'error') AS status, connection_id AS "connectionId", source_id AS "sourceId",
  event_type AS "eventType", to_email AS "toEmail", platform, request_id AS "payloadId", error, crm_state AS "crmState", attempts,
  created_at AS "createdAt", updated_at AS "updatedAt"`;

const filterArgs = builder.args((t) => ({
  sourceId: t.int({ required: false, description: 'Only this source (404 when not reachable).' }),
  connectionId: t.int({ required: false, description: 'Only this connection (one outside the key gives no rows).' }),
}));

const statusArgs = builder.args((t) => ({
  status: t.field({ type: SyncStatus, required: false, description: 'Only this status.' }),
}));

accountHistoryList('syncs', {
  type: SyncPage,
  description: 'CRM write attempts, newest first.',
  args: { ...windowArgs, ...pageArgs, ...filterArgs, ...statusArgs },
  resolve: async (ctx, accountId, args) => {
    const viewer = await requireReader(ctx, accountId);
    const window = requireWindow(args.from, args.to);
    const limit = requireLimit(args.limit);
    const where = await syncFilters(ctx, viewer, window, args);
    if (args.status === 'error') where.push(sql`(status = 'error' OR status IS NULL)`);
    else if (args.status) where.push(sql`status = ${args.status}::sync_status`);
    const page = (client: typeof ctx.heavy) =>
      keysetPage<SyncRecord>(
        ctx,
        {
          table: 'syncs',
          columns: SYNC_COLUMNS,
          where,
          limit,
          cursor: args.cursor,
          scope: {
            account: viewer.accountId,
            connections: viewer.connectionIds.join(','),
            sourceId: args.sourceId,
            connectionId: args.connectionId,
            status: args.status,
            from: window.from.toISOString(),
            to: window.to.toISOString(),
          },
        },
        client,
      );
    return withQueryLimit(ctx, SYNC_HINT, page);
  },
});

builder.queryFields((t) => ({
  syncMetrics: t.field({
    type: SyncMetrics,
    description: 'Exact counts by status; their sum is what the list returns for the same filters.',
    args: { ...accountArgs, ...windowArgs, ...filterArgs },
    resolve: async (_root, args, ctx) => {
      const viewer = await requireReader(ctx, args.accountId);
      const window = requireWindow(args.from, args.to);
      const where = await syncFilters(ctx, viewer, window, args, countableRows);
      return withQueryLimit(ctx, SYNC_HINT, (client) => countSyncs(client, where));
    },
  }),
  sync: t.field({
    type: SyncRef,
    description: 'One sync; 404 when missing or not reachable by the key. Support staff reach every account.',
    args: { id: t.arg({ type: 'BigInt', required: true, description: 'Sync id.' }) },
    resolve: async (_root, args, ctx) => {
      const [row] = await ctx.prisma.$queryRaw<SyncRecord[]>`SELECT ${SYNC_COLUMNS} FROM syncs WHERE id = ${args.id} AND ${reachable(ctx)}`;
      if (!row) throw serviceError('NOT_FOUND', `Sync ${args.id} not found`);
      return row;
    },
  }),
}));

/** Window, key reach, and the optional source (404 when unreachable) and connection filters. */
async function syncFilters(
  ctx: Parameters<typeof requireSource>[0],
  viewer: Reader,
  window: Window,
  args: { sourceId?: number | null; connectionId?: number | null },
  rows: typeof visibleRows = visibleRows,
): Promise<Sql[]> {
  if (args.sourceId != null) await requireSource(ctx, viewer, args.sourceId);
  const where = rows(viewer, window);
  if (args.sourceId != null) where.push(sql`source_id = ${args.sourceId}`);
  if (args.connectionId != null) where.push(sql`connection_id = ${args.connectionId}`);
  return where;
}

/** Exact counts by status, never-recorded results counted as errors. */
export async function countSyncs(prisma: Parameters<typeof requireSource>[0]['prisma'], where: Sql[]) {
  // FILTER keeps the scan index-only (no per-row enum-to-text conversion as with GROUP BY COALESCE).
  const [row] = await prisma.$queryRaw<{ success: bigint; warning: bigint; error: bigint }[]>`
    SELECT count(*) FILTER (WHERE status = 'success') AS success,
           count(*) FILTER (WHERE status = 'warning') AS warning,
           count(*) FILTER (WHERE status = 'error' OR status IS NULL) AS error
      FROM syncs WHERE ${join(where, ' AND ')}`;
  return { success: Number(row?.success ?? 0), warning: Number(row?.warning ?? 0), error: Number(row?.error ?? 0) };
}
