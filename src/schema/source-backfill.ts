import { sql } from '../db/sql.js';
import { builder } from './builder.js';
import { requireStaff, serviceError } from './errors.js';

/**
 * A source's backfill for support staff (issue 33, src/jobs/backfills__run.ts): its progress on the
 * source (`Source.backfill`) and the pause that stops its rounds. Staff only; mutations audited by the
 * explorer. A source without a sequencer account has no backfill.
 */

interface BackfillRecord {
  sourceId: number;
  paused: boolean;
  since: Date | null;
  lastRoundStartedAt: Date | null;
  lastRoundAt: Date | null;
  rounds: number;
  messagesSeen: bigint;
  eventsSynthesised: bigint;
  lastError: string | null;
  failures: number;
}

const SourceBackfillRef = builder.objectRef<BackfillRecord>('SourceBackfill').implement({
  description: "A source's backfill: the rounds that ask its sequencer for the events its webhooks missed.",
  fields: (t) => ({
    sourceId: t.exposeInt('sourceId', { description: 'Source id.' }),
    paused: t.exposeBoolean('paused', { description: 'Paused by staff: no round runs until resumed.' }),
    since: t.expose('since', { type: 'DateTime', nullable: true, description: 'The next round asks for what happened since then (less 10 minutes).' }),
    lastRoundStartedAt: t.expose('lastRoundStartedAt', { type: 'DateTime', nullable: true, description: 'When the last round started (or was queued).' }),
    lastRoundAt: t.expose('lastRoundAt', { type: 'DateTime', nullable: true, description: 'When the last round ended, successfully or not.' }),
    rounds: t.exposeInt('rounds', { description: 'Rounds ended.' }),
    messagesSeen: t.expose('messagesSeen', { type: 'BigInt', description: 'Messages the sequencer listed, over every round.' }),
    eventsSynthesised: t.expose('eventsSynthesised', { type: 'BigInt', description: 'Fetched requests the rounds created: the events no webhook delivered.' }),
    lastError: t.exposeString('lastError', { nullable: true, description: 'Why the last round failed (never a secret); null after one that succeeded.' }),
    failures: t.exposeInt('failures', { description: 'Rounds failed in a row (from 3, GET /account/status warns).' }),
  }),
});

const COLUMNS = sql`source_id AS "sourceId", paused, since, last_round_started_at AS "lastRoundStartedAt", last_round_at AS "lastRoundAt", rounds,
  messages_seen AS "messagesSeen", events_synthesised AS "eventsSynthesised", last_error AS "lastError", failures`;

builder.prismaObjectField('Source', 'backfill', (t) =>
  t.field({
    type: SourceBackfillRef,
    nullable: true,
    description: "Support staff: the source's backfill, when it holds a sequencer account (null otherwise, and before its first round is queued).",
    resolve: async (source, _args, ctx) => {
      requireStaff(ctx);
      const [row] = await ctx.prisma.$queryRaw<BackfillRecord[]>`SELECT ${COLUMNS} FROM source_backfills WHERE source_id = ${source.id}`;
      return row ?? null;
    },
  }),
);

builder.prismaObjectField('Source', 'hasSequencerAccount', (t) =>
  t.boolean({
    description: 'Whether the source holds the sequencer account its backfill reads with (the account itself is never shown).',
    select: { sequencerCredentialsEncrypted: true },
    resolve: (source) => source.sequencerCredentialsEncrypted !== null,
  }),
);

const sourceArg = builder.args((t) => ({ sourceId: t.int({ required: true, description: 'Source id.' }) }));

builder.mutationFields((t) => ({
  pauseBackfill: t.field({
    type: SourceBackfillRef,
    description: "Support staff: pauses a source's backfill (no round runs; one in flight ends). Idempotent. Audited.",
    args: sourceArg,
    resolve: (_root, args, ctx) => setPaused(ctx, args.sourceId, true),
  }),
  resumeBackfill: t.field({
    type: SourceBackfillRef,
    description: "Support staff: resumes a source's backfill; its next round runs within a minute. Idempotent. Audited.",
    args: sourceArg,
    resolve: (_root, args, ctx) => setPaused(ctx, args.sourceId, false),
  }),
}));

/** Pauses or resumes; resuming makes the source due at the next minute. 404 for a source without a sequencer account. */
async function setPaused(ctx: Parameters<typeof requireStaff>[0], sourceId: number, paused: boolean): Promise<BackfillRecord> {
  requireStaff(ctx);
  const [row] = await ctx.prisma.$queryRaw<BackfillRecord[]>`
    INSERT INTO source_backfills AS b (source_id, paused, last_round_started_at, updated_at)
    SELECT s.id, ${paused}, NULL, now() FROM sources s WHERE s.id = ${sourceId} AND s.sequencer_credentials_encrypted IS NOT NULL
    ON CONFLICT (source_id) DO UPDATE SET paused = EXCLUDED.paused,
      last_round_started_at = CASE WHEN EXCLUDED.paused THEN b.last_round_started_at ELSE NULL END, updated_at = now()
    RETURNING ${COLUMNS}`;
  if (!row) throw serviceError('NOT_FOUND', `Source ${sourceId} has no backfill (it holds no sequencer account)`);
  return row;
}
