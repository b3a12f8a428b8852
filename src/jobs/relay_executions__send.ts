import type { JobHelpers } from 'graphile-worker';
import { z } from 'zod';
import { DEFAULT_RELAY_RETRY_SCHEDULE, DEFAULT_SMTP_FROM } from '../config.js';
import { createMailer, type Mailer } from '../connectors/smtp/mailer.js';
import { parseInbound } from '../connectors/sequencers/index.js';
import { sequencerName } from '../connectors/sequencers/registry.js';
import { sql, type Sql } from '../db/sql.js';
import { retryDelayMs } from '../domain/retry-schedule.js';
import { relayEmail } from '../domain/relay-email.js';
import { allowlistDecision, currentCategory } from '../domain/reply-relay.js';
import { classifySmtpFailure } from '../domain/smtp-failure.js';
import { enqueue } from './enqueue.js';
import { RelayStore, type ExecutionToSend } from './relay-store.js';
import { defineTask } from './task.js';

/**
 * `relay_executions__send {executionId}`: at the execution's time, decides with the lead's category as
 * it is now, then emails the relay's sales rep through SMTP. A transient failure (no SMTP server, a
 * 4xx reply, a dropped connection) is recorded and retried on REPLY_RELAY_RETRY_SCHEDULE; a 5xx reply is
 * final. Runs any number of times for one execution with one email: a final status ends it at once, and
 * a worker that died mid-send leaves the attempt marked, so the next one (same Message-ID) is logged as
 * a repeat.
 */
export const relayExecutionsSend = defineTask({
  identifier: 'relay_executions__send',
  payload: z.object({ executionId: z.number().int().positive().max(Number.MAX_SAFE_INTEGER) }),
  // A reschedule replaces the execution's waiting job (the key), so an execution never has two;
  // relayJobKeySql() below spells the same rule in SQL.
  defaults: { maxAttempts: 10, jobKey: (payload) => relayJobKey(payload.executionId) },
  healthCheck: 'destinations_reply_relays',
  handler(env) {
    const store = new RelayStore(env.pool);
    const mailer = createMailer(env.relays?.smtpUrl);
    const settings = {
      from: env.relays?.from ?? DEFAULT_SMTP_FROM,
      schedule: env.relays?.retrySchedule ?? DEFAULT_RELAY_RETRY_SCHEDULE,
    };
    return async ({ executionId }, helpers) => {
      const execution = await store.execution(executionId);
      if (!execution || isFinal(execution)) return;
      // A run ahead of its time (a failed job graphile-worker retried early) waits for it.
      if (execution.nextAttemptAt && execution.nextAttemptAt.getTime() > Date.now() + 1_000) {
        await enqueue(helpers, relayExecutionsSend, { executionId }, { runAt: execution.nextAttemptAt });
        return;
      }
      await send(execution, { store, mailer, ...settings }, helpers);
    };
  },
  recordUnrecoverable(env) {
    const store = new RelayStore(env.pool);
    // The email may have gone out before the failure (a record that failed after the server took it): the reason says only what is known.
    return ({ executionId }, message) => store.failForGood(executionId, `Failed on our side and not retried automatically: ${message}`);
  },
});

function relayJobKey(executionId: number): string {
  return `relay:${executionId}`;
}

/**
 * An execution's send job key (`relay:<executionId>`, the rule `defaults` spells above), as SQL over an
 * expression of its id: for the statement that writes executions and queues their sends (src/jobs/relay-sends.ts).
 */
export function relayJobKeySql(executionId: Sql): Sql {
  return sql`'relay:' || ${executionId}`;
}

interface Sending {
  store: RelayStore;
  mailer: Mailer;
  from: string;
  schedule: readonly number[];
}

async function send(execution: ExecutionToSend, deps: Sending, helpers: JobHelpers): Promise<void> {
  const id = Number(execution.id);
  const parsed = parseInbound(execution.platform, execution.body);
  if (!parsed.ok) {
    await deps.store.record(
      id,
      { status: 'failed', reason: `The payload could not be read: ${parsed.reason}`, smtpCode: undefined, retryAt: null },
      { counted: false },
    );
    return;
  }
  const event = parsed.event;
  const stored = await deps.store.storedCategory(execution.connectionId, event.identity);
  const category = currentCategory(stored, { category: event.leadCategory, at: execution.receivedAt });
  const decision = allowlistDecision(execution.categoryAllowlist, category);
  if (!decision.proceed) return deps.store.skip(id, decision.reason);

  const email = relayEmail({
    lead: event.contact,
    campaign: event.campaign,
    reply: { subject: event.message.subject, text: event.message.text },
    inboxUrl: event.inboxUrl,
    source: { id: execution.sourceId, platformName: sequencerName(execution.platform) },
    relay: { id: execution.relayId, description: execution.description, bodyTemplates: execution.bodyTemplates },
  });
  await deps.store.startAttempt(id, email.unknownPlaceholders);
  const result = await deps.mailer.send({
    from: deps.from,
    to: execution.ccEmail,
    replyTo: email.replyTo,
    subject: email.subject,
    text: email.text,
    html: email.html,
    messageId: execution.messageId,
    headers: { 'X-Pipeline-Sync-Request-Id': execution.requestId },
  });
  if (result.ok) return deps.store.record(id, { status: 'sent', response: result.response }, { counted: true });

  const attempt = execution.attempts + 1;
  const delay = classifySmtpFailure(result.failure) === 'transient' ? retryDelayMs(attempt, deps.schedule, undefined, Math.random()) : null;
  const retryAt = delay === null ? null : new Date(Date.now() + delay);
  await deps.store.record(id, { status: 'failed', reason: result.failure.message, smtpCode: result.failure.responseCode, retryAt }, { counted: true });
  if (retryAt) await enqueue(helpers, relayExecutionsSend, { executionId: id }, { runAt: retryAt });
}

// Sent and skipped are final; failed is final once no next attempt is planned.
function isFinal(execution: ExecutionToSend): boolean {
  return execution.status === 'sent' || execution.status === 'skipped' || (execution.status === 'failed' && execution.nextAttemptAt === null);
}
