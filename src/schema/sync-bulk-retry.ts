import { CRM_KINDS } from '../connectors/crm/index.js';
import { requestBodySql } from '../db/history/request-body.js';
import { join, sql, type Sql } from '../db/sql.js';
import { queueBulkRetrySql } from '../jobs/bulk-retries.js';
import { builder } from './builder.js';
import type { Context } from './context.js';
import { requireStaff, serviceError } from './errors.js';
import { requireWindow } from './history.js';

/** Syncs one call takes at most; a larger match is taken in several calls (each skips what the last queued). */
const MAX_PER_CALL = 100_000;

const Filter = builder.inputType('RetrySyncsFilter', {
  description: 'Which error syncs to retry: those of one account, created in a window, optionally narrowed.',
  fields: (t) => ({
    accountId: t.int({ required: true, description: 'Account.' }),
    connectionId: t.int({ required: false, description: 'Only this connection.' }),
    sourceId: t.int({ required: false, description: 'Only this source.' }),
    from: t.string({ required: true, description: 'Start of the window (ISO 8601), inclusive.' }),
    to: t.string({ required: true, description: 'End of the window (ISO 8601), inclusive; at most 31 days after from.' }),
    errorContains: t.string({ required: false, description: "Only syncs whose error contains this text (case-insensitive), e.g. the CRM's message." }),
  }),
});

interface Matched {
  dryRun: boolean;
  matched: number;
  /** More syncs matched than one call takes. */
  capped: boolean;
  bulkRetryId: bigint | null;
  /** Error syncs the filter matched whose request's raw body is past its retention: never retried. */
  bodyGone: number;
}

const MatchedRef = builder.objectRef<Matched>('RetrySyncsResult').implement({
  description: 'What a bulk re-sync matched and, unless a dry run, queued.',
  fields: (t) => ({
    dryRun: t.exposeBoolean('dryRun', { description: 'True: nothing was queued.' }),
    matched: t.exposeInt('matched', { description: `Error syncs matched and not already queued by a bulk re-sync (at most ${MAX_PER_CALL}).` }),
    capped: t.exposeBoolean('capped', { description: `More matched than ${MAX_PER_CALL}: call again once these are queued for the rest.` }),
    bulkRetryId: t.expose('bulkRetryId', { type: 'BigInt', nullable: true, description: 'Read its progress with bulkRetry(id); null for a dry run.' }),
    bodyGone: t.exposeInt('bodyGone', {
      description: `Error syncs the filter also matched that are not retried: their request's raw body is past RAW_BODY_RETENTION_DAYS and was deleted (at most ${MAX_PER_CALL}).`,
    }),
  }),
});

interface Progress {
  id: bigint;
  staff: string;
  filter: unknown;
  matched: number;
  queued: number;
  ran: number;
  succeeded: number;
  failed: number;
  queuedAllAt: Date | null;
  error: string | null;
  createdAt: Date;
}

const ProgressRef = builder.objectRef<Progress>('BulkRetry').implement({
  description: 'A bulk re-sync and how far it got: its syncs are queued a chunk at a time, then each runs under its CRM budget.',
  fields: (t) => ({
    id: t.expose('id', { type: 'BigInt', description: 'Bulk re-sync id.' }),
    staff: t.exposeString('staff', { description: 'Who asked.' }),
    filter: t.field({ type: 'JSON', description: 'The filter as given.', resolve: (p) => p.filter }),
    matched: t.exposeInt('matched', { description: 'Syncs it took.' }),
    queued: t.exposeInt('queued', { description: 'Syncs whose retry is queued so far.' }),
    ran: t.exposeInt('ran', { description: 'Queued syncs that have run since.' }),
    succeeded: t.exposeInt('succeeded', { description: 'Of those, written (success or warning).' }),
    failed: t.exposeInt('failed', { description: 'Of those, still in error (see each sync).' }),
    queuedAllAt: t.expose('queuedAllAt', { type: 'DateTime', nullable: true, description: 'When the last chunk was queued.' }),
    error: t.exposeString('error', {
      nullable: true,
      description: 'Why queueing stopped before the last chunk: a failure on our side that no retry changes (null while it goes on, and once done).',
    }),
    createdAt: t.expose('createdAt', { type: 'DateTime', description: 'When it was asked for.' }),
  }),
});

builder.mutationField('retrySyncs', (t) =>
  t.field({
    type: MatchedRef,
    description:
      'Support staff only: retries the error syncs a filter matches, after a fix (a reconnected CRM, a corrected field). A dry run (the ' +
      `default) counts them; \`dryRun: false\` queues at most ${MAX_PER_CALL}, each once: syncs already queued by a bulk re-sync and not run ` +
      'since are skipped, so calling again queues nothing new. Retries resume from their CRM steps and take the connection budget.',
    args: {
      filter: t.arg({ type: Filter, required: true, description: 'Which error syncs.' }),
      dryRun: t.arg.boolean({ required: false, defaultValue: true, description: 'Count only (the default).' }),
    },
    resolve: async (_root, args, ctx) => {
      requireStaff(ctx);
      const { matching, bodyGone } = await matchingSyncs(ctx, args.filter);
      const [gone] = await ctx.heavy.$queryRaw<{ n: number }[]>`SELECT count(*)::int AS n FROM (${bodyGone} LIMIT ${MAX_PER_CALL}) g`;
      if (args.dryRun !== false) {
        const [row] = await ctx.heavy.$queryRaw<{ n: number }[]>`SELECT count(*)::int AS n FROM (${matching} LIMIT ${MAX_PER_CALL + 1}) m`;
        const n = row?.n ?? 0;
        return { dryRun: true, matched: Math.min(n, MAX_PER_CALL), capped: n > MAX_PER_CALL, bulkRetryId: null, bodyGone: gone?.n ?? 0 };
      }
      const staff = ctx.viewer.kind === 'staff' ? ctx.viewer.name : '';
      // One account's bulks are taken one at a time, so two calls never take the same sync.
      const [, [bulk]] = await ctx.prisma.$transaction([
        ctx.prisma.$executeRaw`SELECT pg_advisory_xact_lock(hashtext('bulk-retry'), ${args.filter.accountId}::int)`,
        ctx.prisma.$queryRaw<{ id: bigint; matched: number; more: boolean }[]>`
          WITH candidates AS (${matching} LIMIT ${MAX_PER_CALL + 1}),
          picked AS (SELECT id FROM candidates ORDER BY id LIMIT ${MAX_PER_CALL}),
          bulk AS (
            INSERT INTO bulk_retries (staff, filter, matched)
            VALUES (${staff}, ${JSON.stringify(args.filter)}::jsonb, (SELECT count(*) FROM picked))
            RETURNING id, matched
          ),
          items AS (INSERT INTO bulk_retry_items (bulk_retry_id, sync_id) SELECT bulk.id, picked.id FROM bulk, picked RETURNING 1),
          job AS (SELECT ${queueBulkRetrySql(sql`bulk`)})
          SELECT id, matched, (SELECT count(*) FROM candidates) > ${MAX_PER_CALL} AS more, (SELECT count(*) FROM items) AS items, (SELECT count(*) FROM job) AS jobs
            FROM bulk`,
      ]);
      return { dryRun: false, matched: bulk!.matched, capped: bulk!.more, bulkRetryId: bulk!.id, bodyGone: gone?.n ?? 0 };
    },
  }),
);

builder.queryField('bulkRetry', (t) =>
  t.field({
    type: ProgressRef,
    description: 'Support staff only: the progress of a bulk re-sync.',
    args: { id: t.arg({ type: 'BigInt', required: true, description: 'Bulk re-sync id (retrySyncs answered it).' }) },
    resolve: async (_root, args, ctx) => {
      requireStaff(ctx);
      const [row] = await ctx.prisma.$queryRaw<Progress[]>`
        SELECT b.id, b.staff, b.filter, b.matched, b.queued_all_at AS "queuedAllAt", b.error, b.created_at AS "createdAt",
               count(i.queued_at)::int AS queued,
               count(*) FILTER (WHERE s.updated_at > i.queued_at)::int AS ran,
               count(*) FILTER (WHERE s.updated_at > i.queued_at AND s.status IN ('success', 'warning'))::int AS succeeded,
               count(*) FILTER (WHERE s.updated_at > i.queued_at AND s.status = 'error')::int AS failed
          FROM bulk_retries b
          LEFT JOIN bulk_retry_items i ON i.bulk_retry_id = b.id
          LEFT JOIN syncs s ON s.id = i.sync_id
         WHERE b.id = ${args.id}
         GROUP BY b.id`;
      if (!row) throw serviceError('NOT_FOUND', `Bulk retry ${args.id} not found`);
      return row;
    },
  }),
);

/**
 * The ids of the error syncs a filter matches that a retry can help (as POST /syncs/:id/retry decides:
 * a supported CRM, a live connection, the request and its raw body still stored), less those a bulk
 * already queued that have not run since; and the ids of those left out only because the body is past
 * RAW_BODY_RETENTION_DAYS. A 400 for a bad window, a 404 for an unknown account.
 */
async function matchingSyncs(
  ctx: Context,
  filter: { accountId: number; connectionId?: number | null; sourceId?: number | null; from: string; to: string; errorContains?: string | null },
): Promise<{ matching: Sql; bodyGone: Sql }> {
  const window = requireWindow(filter.from, filter.to);
  const account = await ctx.prisma.account.findUnique({ where: { id: filter.accountId }, select: { id: true } });
  if (!account) throw serviceError('NOT_FOUND', `Account ${filter.accountId} not found`);
  const where: Sql[] = [
    sql`s.account_id = ${filter.accountId}`,
    sql`s.created_at >= ${window.from}`,
    sql`s.created_at <= ${window.to}`,
    sql`s.status = 'error'`,
    sql`upper(c.crm) = ANY(${[...CRM_KINDS]}::text[])`,
    sql`c.deleted_at IS NULL`,
    sql`NOT EXISTS (SELECT 1 FROM bulk_retry_items i WHERE i.sync_id = s.id AND (i.queued_at IS NULL OR s.updated_at <= i.queued_at))`,
  ];
  if (filter.connectionId != null) where.push(sql`s.connection_id = ${filter.connectionId}`);
  if (filter.sourceId != null) where.push(sql`s.source_id = ${filter.sourceId}`);
  if (filter.errorContains != null && filter.errorContains !== '') {
    where.push(sql`s.error::text ILIKE ${`%${filter.errorContains.replace(/[\\%_]/g, (c) => `\\${c}`)}%`}`);
  }
  const select = (body: Sql) =>
    sql`SELECT s.id FROM syncs s JOIN connections c ON c.id = s.connection_id
         WHERE ${join(where, ' AND ')} AND EXISTS (SELECT 1 FROM requests r WHERE r.id = s.request_id AND ${body})`;
  return { matching: select(sql`${requestBodySql('r')} IS NOT NULL`), bodyGone: select(sql`${requestBodySql('r')} IS NULL`) };
}
