import type { JobHelpers } from 'graphile-worker';
import { z } from 'zod';
import { createHttpClient, OutboundError, retryAfterMs, type HttpClient } from '../connectors/http/client.js';
import { ClientsByTarget } from '../connectors/http/clients-by-target.js';
import { parseInbound } from '../connectors/sequencers/index.js';
import { DEFAULT_FORWARDING_RETRY_SCHEDULE, type ForwardingConfig } from '../config.js';
import { sql, type Sql } from '../db/sql.js';
import { bindingForwards, classifyAttempt, type AttemptResult } from '../domain/forwarding.js';
import { failureMessage, UNRECOVERABLE_AFTER } from '../domain/job-failure.js';
import { retryDelayMs } from '../domain/retry-schedule.js';
import { BODY_GONE } from '../domain/retention.js';
import type { Logger } from '../logger.js';
import { addJobsSql } from './enqueue.js';
import { DeliveryStore, type AttemptRecord, type ClaimedAttempt } from './delivery-store.js';
import { drainOutbox } from './outbox-loop.js';
import { defineTask } from './task.js';

/** Each attempt's deadline: connect, send and the whole answer. */
const ATTEMPT_TIMEOUT_MS = 10_000;
/** Bytes of bodies in flight to one destination at once (bodies reach 1 MB). */
const MAX_IN_FLIGHT_BYTES = 64 * 1024 * 1024;
const USER_AGENT = 'pipeline-sync-service/0.1 (forwarding; +https://github.com/pipeline-sync-service)';

/**
 * `deliveries__send {destinationId}`: sends a destination's due attempts (the `pending_deliveries`
 * outbox) and records each one's delivery row, until none is left. Jobs of one destination share a
 * named queue, so one loop runs per destination however many processes work; a slow destination holds
 * its own loop, never another's, and runs in the worker's lane for loops, never a sync's slot.
 *
 * Queued with the work it sends: by the ingress for bindings that do not wait for the CRM, by the
 * sync's outcome for delayed ones, by a replay, and by a retry for its due time.
 */
export const deliveriesSend = defineTask({
  identifier: 'deliveries__send',
  payload: z.object({ destinationId: z.number().int().positive().max(2_147_483_647) }),
  // One queue per destination (one loop at a time); sendingQueueSql() below spells the same rule in SQL.
  defaults: { maxAttempts: 25, jobKey: (payload) => `deliveries:${payload.destinationId}`, queueName: (payload) => `deliveries:${payload.destinationId}` },
  healthCheck: 'destinations_forwarding',
  lane: 'loops',
  // Bounded per attempt instead: the loop sets a failing attempt aside and records it at its third failure (setAside below).
  recordUnrecoverable: null,
  handler(env) {
    const { attemptTimeoutMs = ATTEMPT_TIMEOUT_MS, ...forwarding } = env.forwarding ?? {};
    const settings = { ...defaultForwarding, ...forwarding };
    // One store per worker process, shared by its loops; connections of their own per destination.
    const clients = new ClientsByTarget(() =>
      createHttpClient({
        allowPrivate: env.outboundAllowPrivate,
        trustedOrigin: env.sandboxOrigin,
        userAgent: USER_AGENT,
        timeoutMs: attemptTimeoutMs,
        keepResponseBytes: 4096,
        maxSocketsPerOrigin: settings.maxInFlight,
      }),
    );
    const store = new DeliveryStore(env.pool, wakeUpsSql);
    return async (payload, helpers) => {
      const http = clients.acquire(payload.destinationId);
      try {
        await sendDue(payload.destinationId, { store, http, settings, logger: env.logger }, helpers);
      } finally {
        clients.release(payload.destinationId);
      }
    };
  },
});

const defaultForwarding: ForwardingConfig = { retrySchedule: DEFAULT_FORWARDING_RETRY_SCHEDULE, concurrency: 64, maxInFlight: 500 };

/**
 * A destination's named queue, which is also its loop's job key (`deliveries:<destinationId>`, the rule
 * `defaults` spells above), as SQL over an expression of its id: for the statements that queue loops
 * (src/jobs/delivery-outbox.ts) and for the loop's own wake-ups below.
 */
export function sendingQueueSql(destinationId: Sql): Sql {
  return sql`'deliveries:' || ${destinationId}`;
}

/**
 * SQL that wakes each destination's loop when its retries fall due (`retried`: destination_id, due_at):
 * one job per destination and second, after that second, so a wake-up always finds its retries due.
 */
function wakeUpsSql(retried: Sql): Sql {
  return sql`SELECT count(*) FROM ${addJobsSql(deliveriesSend, {
    from: sql`(SELECT DISTINCT destination_id, ceil(extract(epoch FROM due_at))::bigint AS at FROM ${retried}) AS due`,
    payload: { destinationId: sql`due.destination_id` },
    jobKey: sql`${sendingQueueSql(sql`due.destination_id`)} || ':' || due.at`,
    queueName: sendingQueueSql(sql`due.destination_id`),
    runAt: sql`to_timestamp(due.at)`,
  })}`;
}

/** The headers a destination gets with each event (documented in the README and the OpenAPI document). */
export const FORWARDING_HEADERS = {
  eventId: 'service-event-id',
  eventType: 'service-event-type',
  platform: 'service-source-platform',
  sourceId: 'service-source-id',
  attempt: 'service-delivery-attempt',
} as const;

interface Loop {
  store: DeliveryStore;
  http: HttpClient;
  settings: ForwardingConfig;
  logger: Logger;
}

/**
 * Sends the destination's due attempts through the shared outbox loop (src/jobs/outbox-loop.ts), with
 * their bodies under {@link MAX_IN_FLIGHT_BYTES}; an attempt not recorded stays pending and is sent
 * again later, with the same event id.
 */
function sendDue(destinationId: number, loop: Loop, helpers: JobHelpers): Promise<void> {
  return drainOutbox<ClaimedAttempt>(
    {
      claim: (holding, limit) => loop.store.claim(destinationId, holding, limit),
      deliver: (attempt) => send(destinationId, attempt, loop).then((record) => loop.store.record(record)),
      setAside: (attempt, error) => setAside(destinationId, attempt, error, loop),
      maxInFlight: loop.settings.maxInFlight,
      sizeOf: (attempt) => Buffer.byteLength(attempt.body ?? ''),
      maxInFlightBytes: MAX_IN_FLIGHT_BYTES,
    },
    helpers.abortSignal,
  );
}

/** One attempt: never throws for the destination's sake; its record says what happened. */
async function send(destinationId: number, attempt: ClaimedAttempt, loop: Loop): Promise<AttemptRecord> {
  const base = { pendingId: attempt.id, destinationId, requestId: attempt.requestId };
  const parsed = attempt.platform ? parseInbound(attempt.platform, attempt.body) : ({ ok: false, reason: 'the source is gone' } as const);
  const event = parsed.ok ? ({ ok: true, eventType: parsed.event.eventType } as const) : ({ ok: false } as const);
  // A replay goes whatever the binding says now; a first attempt or a retry only while the binding forwards it.
  const wanted = attempt.replayOfDeliveryId !== null || (attempt.eventTypes !== null && bindingForwards(attempt.eventTypes, event));
  if (!wanted || attempt.sourceId === null || attempt.platform === null) return { ...base, delivery: null, retry: null };

  const eventType = parsed.ok ? parsed.event.eventType : 'UNKNOWN';
  const attemptedAt = new Date();
  // A body past RAW_BODY_RETENTION_DAYS: nothing to send, and no retry brings it back.
  const outcome =
    attempt.body === null
      ? { status: 'error' as const, httpStatus: null, error: { message: BODY_GONE }, retryable: false, retryAfterMs: undefined }
      : classifyAttempt(await post({ ...attempt, body: attempt.body }, eventType, loop.http));
  const wait =
    outcome.retryable && attempt.replayOfDeliveryId === null
      ? retryDelayMs(attempt.attempt, loop.settings.retrySchedule, outcome.retryAfterMs, Math.random())
      : null;
  return {
    ...base,
    delivery: {
      destinationUrl: attempt.url,
      accountId: attempt.accountId,
      connectionId: attempt.connectionId ?? attempt.destinationConnectionId,
      sourceId: attempt.sourceId,
      eventType,
      toEmail: parsed.ok ? parsed.event.identity : '',
      status: outcome.status,
      httpStatus: outcome.httpStatus,
      error: outcome.error,
      replayOfDeliveryId: attempt.replayOfDeliveryId,
      attemptedAt,
    },
    retry: wait === null ? null : { attempt: attempt.attempt + 1, dueAt: new Date(Date.now() + wait) },
  };
}

/**
 * An attempt whose send or record failed on our side for a reason no retry changes: tried again later,
 * and recorded at its third such failure as an error delivery saying so (no retry: the destination
 * was never at fault), so it never holds up the destination's other events.
 */
async function setAside(destinationId: number, attempt: ClaimedAttempt, error: unknown, loop: Loop): Promise<void> {
  const failures = await loop.store.countInternalFailure(attempt.id);
  const final = failures !== undefined && failures >= UNRECOVERABLE_AFTER;
  loop.logger.error(
    { err: error, destinationId, requestId: attempt.requestId, failures },
    `forwarding failed on our side${final ? ': recorded as an error' : ''}`,
  );
  if (!final) return;
  const event = eventOf(attempt);
  // The POST may have gone out and been answered before what failed (recording it): say only what is known.
  const message = `Failed on our side and not retried automatically (the destination may have received it): ${failureMessage(error)}`;
  await loop.store.record({
    pendingId: attempt.id,
    destinationId,
    requestId: attempt.requestId,
    delivery:
      attempt.sourceId === null
        ? null
        : {
            destinationUrl: attempt.url,
            accountId: attempt.accountId,
            connectionId: attempt.connectionId ?? attempt.destinationConnectionId,
            sourceId: attempt.sourceId,
            eventType: event?.eventType ?? 'UNKNOWN',
            toEmail: event?.identity ?? '',
            status: 'error',
            httpStatus: null,
            error: { message },
            replayOfDeliveryId: attempt.replayOfDeliveryId,
            attemptedAt: new Date(),
          },
    retry: null,
  });
}

/** The event's type and contact for the record, or null when the payload cannot be read (the parser may be what failed). */
function eventOf(attempt: ClaimedAttempt): { eventType: string; identity: string } | null {
  try {
    const parsed = attempt.platform ? parseInbound(attempt.platform, attempt.body) : null;
    return parsed?.ok ? parsed.event : null;
  } catch {
    return null;
  }
}

/** POSTs the sequencer's body as it came, with its content type and the event's headers. */
async function post(attempt: ClaimedAttempt & { body: string }, eventType: string, http: HttpClient): Promise<AttemptResult> {
  try {
    const response = await http.request({
      method: 'POST',
      url: attempt.url,
      body: attempt.body,
      headers: {
        'content-type': attempt.contentType ?? 'application/json',
        [FORWARDING_HEADERS.eventId]: attempt.requestId,
        [FORWARDING_HEADERS.eventType]: eventType,
        [FORWARDING_HEADERS.platform]: attempt.platform ?? '',
        [FORWARDING_HEADERS.sourceId]: String(attempt.sourceId),
        [FORWARDING_HEADERS.attempt]: String(attempt.attempt),
      },
    });
    return { kind: 'answer', status: response.status, retryAfterMs: retryAfterMs(response.headers['retry-after']), body: response.body };
  } catch (error) {
    if (error instanceof OutboundError) return { kind: 'failure', code: error.code, message: error.message };
    throw error;
  }
}
