import { z } from 'zod';
import { createHttpClient, OutboundError, retryAfterMs, type HttpClient } from '../connectors/http/client.js';
import { ClientsByTarget } from '../connectors/http/clients-by-target.js';
import { DEFAULT_WEBHOOK_RETRY_SCHEDULE, type WebhookConfig } from '../config.js';
import { sql, type Sql } from '../db/sql.js';
import type { AttemptResult } from '../domain/forwarding.js';
import { webhookBody } from '../domain/platform-events.js';
import { openSecret } from '../domain/secrets.js';
import { classifyWebhookAttempt } from '../domain/webhook-delivery.js';
import { checkEndpointUrl } from '../domain/webhook-endpoint.js';
import { isSandboxUrl } from '../domain/sandbox.js';
import { signatureHeader } from '../domain/webhook-signature.js';
import { addJobsSql } from './enqueue.js';
import { drainOutbox } from './outbox-loop.js';
import { failureMessage } from '../domain/job-failure.js';
import { defineTask } from './task.js';
import { WebhookDeliveryStore, type ClaimedWebhookDelivery, type WebhookAttemptRecord } from './webhook-delivery-store.js';

/** Each attempt's deadline: a 2xx within 15 s is a success, anything later a failure. */
const ATTEMPT_TIMEOUT_MS = 15_000;
/** The least time between two claims of one endpoint's loop (the process's claims share statements). */
const CLAIM_EVERY_MS = 20;
/** How long an endpoint's loop with nothing to send waits for more before it ends (events come in bursts). */
const LINGER_MS = 1_000;
const USER_AGENT = 'pipeline-sync-service/0.1 (platform webhooks; +https://github.com/pipeline-sync-service)';

/**
 * `webhook_deliveries__send {endpointId}`: sends an endpoint's due deliveries (PENDING rows of
 * `webhook_deliveries`), signed, and records each attempt, until none is left. Jobs of one endpoint
 * share a named queue, so one loop runs per endpoint however many processes work; a slow or failing
 * endpoint holds its own loop only, in the worker's webhooks lane.
 *
 * Queued with the deliveries it sends: by a pipeline's transition (fan-out), a test ping, a replay, a
 * re-enabled endpoint, and by a retry for its due time.
 */
export const webhookDeliveriesSend = defineTask({
  identifier: 'webhook_deliveries__send',
  payload: z.object({ endpointId: z.number().int().positive().max(2_147_483_647) }),
  // One queue per endpoint (one loop at a time); webhookQueueSql() below spells the same rule in SQL.
  defaults: { maxAttempts: 25, jobKey: (payload) => `webhooks:${payload.endpointId}`, queueName: (payload) => `webhooks:${payload.endpointId}` },
  lane: 'webhooks',
  // Bounded per delivery instead: the loop sets a failing delivery aside and makes it DEAD at its third failure.
  recordUnrecoverable: null,
  handler(env) {
    const { attemptTimeoutMs = ATTEMPT_TIMEOUT_MS, ...webhooks } = env.webhooks ?? {};
    const settings = { ...defaultWebhooks, ...webhooks };
    const clients = new ClientsByTarget(() =>
      createHttpClient({
        allowPrivate: env.outboundAllowPrivate,
        trustedOrigin: env.sandboxOrigin,
        userAgent: USER_AGENT,
        timeoutMs: attemptTimeoutMs,
        keepResponseBytes: 2048,
        maxSocketsPerOrigin: settings.maxInFlight,
      }),
    );
    const store = new WebhookDeliveryStore(env.pool, wakeUpsSql);
    const secrets = new SecretCache(env.encryptionKey);
    return async ({ endpointId }, helpers) => {
      const http = clients.acquire(endpointId);
      try {
        await drainOutbox<ClaimedWebhookDelivery>(
          {
            claim: (holding, limit) => store.claim(endpointId, holding, limit),
            deliver: (delivery) =>
              attempt(endpointId, delivery, { http, settings, secrets, sandboxOrigin: env.sandboxOrigin }).then((record) => store.record(record)),
            setAside: async (delivery, error) => {
              const message = `Not attempted again: failed on our side, not the endpoint's fault (it may have received an attempt): ${failureMessage(error)}`;
              const failures = await store.countInternalFailure(delivery.id, message);
              env.logger.error({ err: error, endpointId, deliveryId: delivery.publicId, failures }, 'webhook delivery failed on our side');
            },
            maxInFlight: settings.maxInFlight,
            claimEveryMs: CLAIM_EVERY_MS,
            lingerMs: LINGER_MS,
          },
          helpers.abortSignal,
        );
      } finally {
        clients.release(endpointId);
      }
    };
  },
});

const defaultWebhooks: WebhookConfig = { retrySchedule: DEFAULT_WEBHOOK_RETRY_SCHEDULE, concurrency: 64, maxInFlight: 32 };

/** The headers of every delivery (documented in the README and the OpenAPI document). */
export const WEBHOOK_HEADERS = {
  eventId: 'service-event-id',
  deliveryId: 'service-delivery-id',
  signature: 'service-signature',
} as const;

/**
 * An endpoint's named queue, which is also its loop's job key (`webhooks:<endpointId>`, the rule
 * `defaults` spells above), as SQL over an expression of its id: for the statements that queue loops
 * (src/jobs/webhook-outbox.ts) and for the loop's own wake-ups below.
 */
export function webhookQueueSql(endpointId: Sql): Sql {
  return sql`'webhooks:' || ${endpointId}`;
}

/**
 * SQL that wakes each endpoint's loop when its retries fall due (`retried`: endpoint_id, due_at): one
 * job per endpoint and second, after that second, so a wake-up always finds its retries due.
 */
function wakeUpsSql(retried: Sql): Sql {
  return sql`SELECT count(*) FROM ${addJobsSql(webhookDeliveriesSend, {
    from: sql`(SELECT DISTINCT endpoint_id, ceil(extract(epoch FROM due_at))::bigint AS at FROM ${retried}) AS due`,
    payload: { endpointId: sql`due.endpoint_id` },
    jobKey: sql`${webhookQueueSql(sql`due.endpoint_id`)} || ':' || due.at`,
    queueName: webhookQueueSql(sql`due.endpoint_id`),
    runAt: sql`to_timestamp(due.at)`,
  })}`;
}

interface Sending {
  http: HttpClient;
  /** SANDBOX: the service's origin, whose sandbox receiver may be reached over http. */
  sandboxOrigin: string | undefined;
  settings: WebhookConfig;
  secrets: SecretCache;
}

/** One attempt: never throws for the endpoint's sake; its record says what happened. */
async function attempt(endpointId: number, delivery: ClaimedWebhookDelivery, sending: Sending): Promise<WebhookAttemptRecord> {
  const attemptedAt = new Date();
  const result = await post(delivery, sending);
  const outcome = classifyWebhookAttempt(result, delivery.attempt, sending.settings.retrySchedule, Math.random());
  return { id: delivery.id, endpointId, outcome, attemptedAt };
}

/** POSTs the event, freshly signed; the URL is held to the https rule again (the client holds it to the address rule). */
async function post(delivery: ClaimedWebhookDelivery, sending: Sending): Promise<AttemptResult> {
  const url = checkEndpointUrl(delivery.url, isSandboxUrl(delivery.url, sending.sandboxOrigin));
  if (!url.ok) return { kind: 'failure', code: 'invalid_url', message: `Not sent: ${url.message}` };
  const body = webhookBody(delivery.event);
  const secrets = [delivery.secretEncrypted, delivery.previousSecretEncrypted].filter((s): s is string => s !== null).map((s) => sending.secrets.open(s));
  try {
    const response = await sending.http.request({
      method: 'POST',
      url: url.value,
      body,
      headers: {
        'content-type': 'application/json',
        [WEBHOOK_HEADERS.eventId]: delivery.event.id,
        [WEBHOOK_HEADERS.deliveryId]: delivery.publicId,
        [WEBHOOK_HEADERS.signature]: signatureHeader(body, secrets, Math.floor(Date.now() / 1000)),
      },
    });
    return { kind: 'answer', status: response.status, retryAfterMs: retryAfterMs(response.headers['retry-after']), body: response.body };
  } catch (error) {
    if (error instanceof OutboundError) return { kind: 'failure', code: error.code, message: error.message };
    throw error;
  }
}

/** Signing secrets opened once per worker process (the sealed text is the key: a rotation seals a new one). */
class SecretCache {
  private readonly opened = new Map<string, string>();

  constructor(private readonly key: Buffer) {}

  open(sealed: string): string {
    let secret = this.opened.get(sealed);
    if (secret === undefined) {
      secret = openSecret(this.key, sealed);
      if (this.opened.size >= 10_000) this.opened.clear();
      this.opened.set(sealed, secret);
    }
    return secret;
  }
}
