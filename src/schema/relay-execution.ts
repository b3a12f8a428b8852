import { sql } from '../db/sql.js';
import { requireReader, type Reader } from './access.js';
import { builder } from './builder.js';
import type { Context } from './context.js';
import { requireStaff, serviceError } from './errors.js';
import { accountHistoryList, keysetPage, pageArgs, pageType, requireLimit, requireWindow, visibleRows, windowArgs } from './history.js';

/** One reply relay execution as support staff see it (never through REST: it holds what a sales rep was sent). */
export interface RelayExecutionRecord {
  id: bigint;
  relayId: number;
  requestId: bigint;
  status: string;
  reason: string | null;
  messageId: string;
  smtpResponse: string | null;
  attempts: number;
  attemptLog: unknown;
  unknownPlaceholders: string[] | null;
  runAt: Date;
  nextAttemptAt: Date | null;
  sentAt: Date | null;
  createdAt: Date;
  updatedAt: Date;
}

export const RELAY_EXECUTION_COLUMNS = sql`id, relay_id AS "relayId", request_id AS "requestId", status, reason, message_id AS "messageId",
  smtp_response AS "smtpResponse", attempts, attempt_log AS "attemptLog", unknown_placeholders AS "unknownPlaceholders", run_at AS "runAt",
  next_attempt_at AS "nextAttemptAt", sent_at AS "sentAt", created_at AS "createdAt", updated_at AS "updatedAt"`;

export const RelayExecutionRef = builder.objectRef<RelayExecutionRecord>('RelayExecution').implement({
  description: "A reply relay's handling of one reply: the email to the sales rep, sent, skipped or failed, with each attempt.",
  fields: (t) => ({
    id: t.expose('id', { type: 'BigInt', description: 'Execution id.' }),
    relayId: t.exposeInt('relayId', { description: 'The reply relay.' }),
    requestId: t.expose('requestId', { type: 'BigInt', description: 'The request holding the reply.' }),
    status: t.exposeString('status', {
      description:
        '`scheduled` (waiting for its time), `sent`, `skipped` (the allowlist, or the same reply again) or `failed` (retried while `nextAttemptAt` is set).',
    }),
    reason: t.exposeString('reason', { nullable: true, description: 'Why it was skipped or failed (the last failure while retrying).' }),
    messageId: t.exposeString('messageId', { description: 'The Message-ID the email carries, the same on every attempt.' }),
    smtpResponse: t.exposeString('smtpResponse', { nullable: true, description: "The SMTP server's answer to the accepted email." }),
    attempts: t.exposeInt('attempts', { description: 'SMTP attempts made.' }),
    attemptLog: t.field({
      type: 'JSON',
      description: 'Each attempt: {at, outcome (sent, failed, interrupted), error, smtpCode, response}.',
      resolve: (e) => e.attemptLog,
    }),
    unknownPlaceholders: t.stringList({
      description: "Placeholders of the relay's templates that named nothing (rendered empty).",
      resolve: (e) => e.unknownPlaceholders ?? [],
    }),
    runAt: t.expose('runAt', { type: 'DateTime', description: "When it was due: the reply's arrival plus the relay's delay." }),
    nextAttemptAt: t.expose('nextAttemptAt', { type: 'DateTime', nullable: true, description: 'When a failed execution tries again; null once final.' }),
    sentAt: t.expose('sentAt', { type: 'DateTime', nullable: true, description: 'When the SMTP server accepted the email.' }),
    createdAt: t.expose('createdAt', { type: 'DateTime', description: 'When the reply was recognised.' }),
    updatedAt: t.expose('updatedAt', { type: 'DateTime', description: 'Last change.' }),
  }),
});

const RelayExecutionPage = pageType('RelayExecutionPage', RelayExecutionRef);

const RelayExecutionStatus = builder.enumType('RelayExecutionStatus', {
  description: "Where a reply relay's email stands.",
  values: {
    scheduled: { description: 'Waiting for its time.' },
    sent: { description: 'Accepted by the SMTP server.' },
    skipped: { description: 'Not sent: the category allowlist, or the same reply again.' },
    failed: { description: 'Not sent (retried while nextAttemptAt is set).' },
  } as const,
});

const relayExecutionFilters = builder.args((t) => ({
  relayId: t.int({ required: false, description: 'Only this reply relay (404 when not reachable).' }),
  connectionId: t.int({ required: false, description: 'Only this connection.' }),
  status: t.field({ type: RelayExecutionStatus, required: false, description: 'Only this status.' }),
}));

accountHistoryList('relayExecutions', {
  type: RelayExecutionPage,
  description:
    'Support staff only, never through REST: what reply relays did with replies (the emails to sales reps), newest first by when the reply was recognised.',
  args: { ...windowArgs, ...pageArgs, ...relayExecutionFilters },
  resolve: async (ctx, accountId, args) => {
    requireStaff(ctx);
    const viewer = await requireReader(ctx, accountId);
    const window = requireWindow(args.from, args.to);
    const limit = requireLimit(args.limit);
    if (args.relayId != null) await requireRelay(ctx, viewer, args.relayId);
    const where = visibleRows(viewer, window);
    if (args.relayId != null) where.push(sql`relay_id = ${args.relayId}`);
    if (args.connectionId != null) where.push(sql`connection_id = ${args.connectionId}`);
    if (args.status) where.push(sql`status = ${args.status}`);
    return keysetPage<RelayExecutionRecord>(ctx, {
      table: 'relay_executions',
      columns: RELAY_EXECUTION_COLUMNS,
      where,
      limit,
      cursor: args.cursor,
      scope: {
        account: viewer.accountId,
        connections: viewer.connectionIds.join(','),
        relayId: args.relayId,
        connectionId: args.connectionId,
        status: args.status,
        from: window.from.toISOString(),
        to: window.to.toISOString(),
      },
    });
  },
});

/** A 404 unless the reply relay exists on a connection the reader reaches. */
async function requireRelay(ctx: Context, viewer: Reader, relayId: number): Promise<void> {
  const found = await ctx.prisma.replyRelay.findFirst({ where: { id: relayId, connectionId: { in: viewer.connectionIds } }, select: { id: true } });
  if (!found) throw serviceError('NOT_FOUND', `Reply relay ${relayId} not found`);
}
