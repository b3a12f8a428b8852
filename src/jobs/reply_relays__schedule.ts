import { createHash } from 'node:crypto';
import { z } from 'zod';
import { DEFAULT_SMTP_FROM } from '../config.js';
import { parseInbound } from '../connectors/sequencers/index.js';
import { sql, type Sql } from '../db/sql.js';
import { isRelayedReply } from '../domain/reply-relay.js';
import { queueRelaySendSql } from './relay-sends.js';
import { RelayStore, type RelayedRequest } from './relay-store.js';
import { defineTask } from './task.js';

/**
 * `reply_relays__schedule {requestId}`: for a request of a source bound to a reply relay, reads the
 * event; a prospect's reply gets its relay execution, due `delayMinutes` after the request arrived, and
 * that execution's send job, in one statement. Other events end here without a trace. Queued by the
 * ingress with every request of a relay-bound source, so a slow CRM never delays a relay.
 *
 * One email per reply: the execution is keyed by (relay, request), and by (relay, event key): the
 * sequencer's message id of the reply, or the payload itself, so a sequencer's retry of the same reply
 * (a new request) gets a `skipped` row naming the first.
 */
export const replyRelaysSchedule = defineTask({
  identifier: 'reply_relays__schedule',
  payload: z.object({ requestId: z.number().int().positive().max(Number.MAX_SAFE_INTEGER) }),
  // One job per request (a waiting one is replaced); relayScheduleKeySql() below spells the same rule in SQL.
  defaults: { maxAttempts: 10, jobKey: (payload) => `relay-schedule:${payload.requestId}` },
  healthCheck: 'destinations_reply_relays',
  handler(env) {
    const store = new RelayStore(env.pool);
    const domain = senderDomain(env.relays?.from ?? DEFAULT_SMTP_FROM);
    return async ({ requestId }) => {
      const request = await store.relayedRequest(requestId);
      if (!request) return;
      const parsed = parseInbound(request.platform, request.body);
      if (!parsed.ok || !isRelayedReply(parsed.event.eventType)) return;
      const replyId = parsed.event.sequencerIds.messageId;
      const eventKey = createHash('sha256')
        .update(`${request.sourceId}\n${replyId ? `message:${replyId}` : `body:${request.body}`}`)
        .digest('hex');
      const messageId = relayMessageId(request, domain);
      // A duplicate committed while the first statement ran is seen by a second one.
      for (let round = 0; round < 2; round += 1) {
        if (await store.schedule({ request, eventKey, messageId, queueSend: queueRelaySendSql })) return;
      }
    };
  },
  recordUnrecoverable(env) {
    const store = new RelayStore(env.pool);
    const domain = senderDomain(env.relays?.from ?? DEFAULT_SMTP_FROM);
    return async ({ requestId }, message) => {
      const request = await store.relayedRequest(requestId);
      if (!request) return;
      // Only a reply (or a payload that cannot be read, which might be one) gets a failed row; other events never get one.
      if (readsAsOtherThanReply(request)) return;
      await store.failSchedule(request, relayMessageId(request, domain), message);
    };
  },
});

/** Whether the request reads as an event other than a relayed reply; false when it cannot be read, even by a parser that throws. */
function readsAsOtherThanReply(request: RelayedRequest): boolean {
  try {
    const parsed = parseInbound(request.platform, request.body);
    return parsed.ok && !isRelayedReply(parsed.event.eventType);
  } catch {
    return false;
  }
}

/** The Message-ID of a relay's email for a request: one per relay and reply, the same on every attempt. */
function relayMessageId(request: RelayedRequest, domain: string): string {
  return `<relay-${request.relayId}-${request.requestId}@${domain}>`;
}

/**
 * A request's scheduling job key (`relay-schedule:<requestId>`, the rule `defaults` spells above), as SQL
 * over an expression of its id: for the statements that queue scheduling (src/jobs/relay-scheduling.ts).
 */
export function relayScheduleKeySql(requestId: Sql): Sql {
  return sql`'relay-schedule:' || ${requestId}`;
}

// The Message-ID's right side: the sender's domain, so receiving servers see a name that belongs to it.
function senderDomain(from: string): string {
  const address = from.match(/<([^>]+)>/)?.[1] ?? from;
  return address.split('@')[1]!.trim();
}
