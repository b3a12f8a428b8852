import { CRM_KINDS } from '../connectors/crm/index.js';
import { requestBodySql } from '../db/history/request-body.js';
import { sql } from '../db/sql.js';
import { bodyGoneConflict } from '../domain/retention.js';
import { queueDrainsSql, retriesSql } from '../jobs/sync-outbox.js';
import { builder } from './builder.js';
import { serviceError } from './errors.js';
import { writableRows } from './key-access.js';

const RetryRef = builder.objectRef<{ queued: true; syncId: bigint }>('SyncRetry').implement({
  description: 'A queued retry of a failed sync.',
  fields: (t) => ({
    queued: t.exposeBoolean('queued', { description: 'Always true: the retry is queued; the sync keeps its status until it runs.' }),
    syncId: t.expose('syncId', { type: 'BigInt', description: 'The id of the retried sync (the original one).' }),
  }),
});

const NOT_ELIGIBLE = 'Sync is not eligible for retry';

builder.mutationField('retrySync', (t) =>
  t.field({
    type: RetryRef,
    description:
      'Queues a retry of a sync whose status is `error`, on a connection to a CRM we write to. Write scope, checked before anything is ' +
      'looked up. The retry resumes from the CRM steps the sync already completed, so it never writes an activity twice. Support staff may ' +
      'retry a sync of any account (audited). A sync whose request body is past RAW_BODY_RETENTION_DAYS cannot be retried (409, saying so).',
    args: { id: t.arg({ type: 'BigInt', required: true, description: 'Sync id.' }) },
    resolve: async (_root, args, ctx) => {
      const writable = writableRows(ctx, { account: sql`s.account_id`, connection: sql`s.connection_id` });
      // One statement: the visibility check, the eligibility checks, and the retry in the sync outbox (one
      // row per request, so repeated calls queue one retry) with its connection's drain. The sync keeps its
      // status until the retry runs.
      const [row] = await ctx.prisma.$queryRaw<{ visible: boolean; eligible: boolean; queued: boolean; gone: boolean }[]>`
        WITH target AS (
          SELECT s.id, s.request_id, s.connection_id, s.status, c.crm, c.deleted_at, r.id AS request,
                 r.id IS NOT NULL AND ${requestBodySql('r')} IS NOT NULL AS kept
            FROM syncs s
            JOIN connections c ON c.id = s.connection_id
            LEFT JOIN requests r ON r.id = s.request_id
           WHERE s.id = ${args.id} AND ${writable}
        ),
        eligible AS (
          SELECT * FROM target
           WHERE status = 'error' AND upper(crm) = ANY(${[...CRM_KINDS]}::text[]) AND deleted_at IS NULL AND request IS NOT NULL AND kept
        ),
        queued AS (${retriesSql(sql`eligible`)}),
        drained AS (SELECT (${queueDrainsSql(sql`queued`)}) AS n)
        SELECT EXISTS (SELECT 1 FROM target) AS visible, EXISTS (SELECT 1 FROM eligible) AS eligible,
               EXISTS (SELECT 1 FROM target WHERE status = 'error' AND request IS NOT NULL AND NOT kept) AS gone,
               EXISTS (SELECT 1 FROM queued) AND (SELECT n FROM drained) >= 0 AS queued`;
      if (!row?.visible) throw serviceError('NOT_FOUND', `Sync ${args.id} not found`);
      if (row.gone) throw serviceError('CONFLICT', bodyGoneConflict('sync'));
      if (!row.eligible || !row.queued) throw serviceError('CONFLICT', NOT_ELIGIBLE);
      return { queued: true as const, syncId: args.id };
    },
  }),
);
