import { sql } from '../db/sql.js';
import { builder } from './builder.js';

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
