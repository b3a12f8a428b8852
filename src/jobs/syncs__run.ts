import type { JobHelpers } from 'graphile-worker';
import { z } from 'zod';
import { crmConnector, CrmError, SUPPORTED_CRMS, type CrmEvent, type CrmOutcome, type CrmState } from '../connectors/crm/index.js';
import type { InboundEvent } from '../connectors/sequencers/event.js';
import type { FailureReason } from '../domain/pipeline-health.js';
import { CrmBudgetStore } from '../db/crm-budget-store.js';
import { openSecret } from '../domain/secrets.js';
import { CredentialRenewals } from './credential-renewals.js';
import { connectionCrmConfig } from './crm-config.js';
import { announceRefusals } from './crm-refusals.js';
import { enqueue } from './enqueue.js';
import { sql, type Sql } from '../db/sql.js';
import { SyncStore, type Final, type SyncContext, type SyncRow } from './sync-store.js';
import { defineTask, type JobEnvironment } from './task.js';

/**
 * `syncs__run {requestId, retry?}`: turns one accepted request into its sync row and the CRM writes.
 * Queued by the ingress with each request it accepts, by `POST /api/v1/syncs/:id/retry` (`retry: true`,
 * which may run again a sync whose outcome was an error), and by itself when the CRM asks it to wait.
 */
export const syncsRun = defineTask({
  identifier: 'syncs__run',
  payload: z.object({
    requestId: z.number().int().positive().max(Number.MAX_SAFE_INTEGER),
    retry: z.boolean().optional(),
    /** Runs so far that only waited for the connection's CRM budget: not failures, so not counted as such. */
    waits: z.number().int().nonnegative().max(1_000_000).optional(),
  }),
  defaults: {
    maxAttempts: 25,
    // A reschedule replaces the request's waiting one, so a request never has two.
    jobKey: (payload) => `sync:${payload.requestId}`,
  },
  healthCheck: 'destinations_activities',
  handler(env) {
    // One store per worker process: it groups the database work of the jobs running at once.
    const store = new SyncStore(env.pool);
    const budgets = new CrmBudgetStore(env.pool);
    const renewals = new CredentialRenewals(env.pool, env.encryptionKey);
    return (payload, helpers) => runSync(env, { store, budgets, renewals }, payload, helpers);
  },
  recordUnrecoverable(env) {
    const store = new SyncStore(env.pool);
    return (payload, message) => store.failUnrecoverable(payload.requestId, payload.retry === true, message);
  },
});

/** The job key of an asked-for retry of sync `syncId`: repeated asks queue one retry. */
export function syncRetryJobKey(syncId: bigint | number): string {
  return `sync-retry:${syncId}`;
}

/** {@link syncRetryJobKey} as SQL over a sync id expression, for statements that queue many retries. */
export function syncRetryJobKeySql(syncId: Sql): Sql {
  return sql`'sync-retry:' || ${syncId}`;
}

/**
 * Runs any number of times for one request with one outcome: the sync row is keyed by the request, a
 * recorded outcome ends the job early, and the connector resumes from the steps `crm_state` says are done.
 */
async function runSync(
  deps: JobEnvironment,
  stores: Stores,
  payload: { requestId: number; retry?: boolean | undefined; waits?: number | undefined },
  helpers: JobHelpers,
): Promise<void> {
  const { store } = stores;
  const { requestId } = payload;
  const retry = payload.retry === true;
  const waits = payload.waits ?? 0;
  const loaded = await store.load(requestId, retry);
  if (loaded.kind === 'done') return;
  const { sync, context, parsed } = loaded;
  if (!parsed.ok)
    return store.finish(sync, context, retry, {
      status: 'error',
      error: { message: `The payload could not be read: ${parsed.reason}` },
      failure: 'payloads_unreadable',
    });
  const blocked = blocker(context);
  if (blocked) return store.finish(sync, context, retry, { status: 'error', ...blocked });

  // Waiting for the connection's budget is not a failure: only the runs that met the CRM's refusals count.
  const failures = Math.max(1, sync.attempts - waits);
  const result = await write(deps, stores, { ...sync, attempts: failures }, context, parsed.event);
  if (result.kind === 'reschedule') {
    if (result.throttled || failures <= (deps.maxReschedules ?? 8)) {
      // A CRM (or its budget) that asks us to wait: come back when it says.
      const next = { requestId, retry, waits: waits + (result.throttled ? 1 : 0) };
      await enqueue(helpers, syncsRun, next, { runAt: new Date(Date.now() + result.waitMs) });
      return;
    }
    return store.finish(sync, context, retry, { status: 'error', error: result.error, failure: 'crm_unavailable' });
  }
  return store.finish(sync, context, retry, result.outcome);
}

/** Why this pipeline cannot write at all, before any CRM call. */
function blocker(context: SyncContext): { error: Record<string, unknown>; failure: FailureReason } | null {
  if (context.connectionDeleted || !context.syncEnabled) return { error: { message: 'Sync is not enabled for this connection' }, failure: 'sync_disabled' };
  if (!(SUPPORTED_CRMS as readonly string[]).includes(context.crm.toUpperCase())) {
    return { error: { message: `Writing to ${context.crm} is not supported` }, failure: 'crm_not_supported' };
  }
  if (!context.credentialsEncrypted) return { error: { message: 'The connection holds no CRM credentials: reconnect the CRM' }, failure: 'crm_not_connected' };
  return null;
}

/** The per-process stores a sync's run uses. */
interface Stores {
  store: SyncStore;
  budgets: CrmBudgetStore;
  renewals: CredentialRenewals;
}

type WriteResult = { kind: 'final'; outcome: Final } | { kind: 'reschedule'; waitMs: number; throttled: boolean; error: Record<string, unknown> };

/** The CRM writes, credentials opened here only; a retryable failure asks to be rescheduled. */
async function write(deps: JobEnvironment, stores: Stores, sync: SyncRow, context: SyncContext, event: InboundEvent): Promise<WriteResult> {
  const { store, budgets, renewals } = stores;
  let connector;
  try {
    const config = connectionCrmConfig(deps, budgets, context, { announceRefusals: () => announceRefusals(deps.pool, budgets, context) });
    connector = crmConnector(context.crm, JSON.parse(openSecret(deps.encryptionKey, context.credentialsEncrypted!)), config);
  } catch (error) {
    if (error instanceof CrmError)
      return { kind: 'final', outcome: { status: 'error', error: { message: error.message }, failure: 'crm_authentication_failed' } };
    return {
      kind: 'final',
      outcome: { status: 'error', error: { message: 'The stored CRM credentials cannot be read: reconnect the CRM' }, failure: 'crm_not_connected' },
    };
  }
  // blocker() already refused CRM kinds without a connector.
  if (!connector) throw new Error(`no connector for ${context.crm}`);
  // The state after the last step is stored with the outcome, in the same statement.
  let lastState: CrmState | undefined;
  try {
    const outcome: CrmOutcome = await connector.write({
      event: crmEvent(event, context),
      options: context,
      state: sync.crmState,
      saveState: (state, options) => {
        if (!options?.last) return store.saveState(sync.id, state);
        lastState = state;
        return Promise.resolve();
      },
      renewCredentials: (used, exchange) => renewals.renew(context.connectionId, used, exchange),
    });
    return {
      kind: 'final',
      outcome: { status: outcome.status, error: outcome.status === 'warning' ? outcome.result : null, ...(lastState ? { crmState: lastState } : {}) },
    };
  } catch (error) {
    if (!(error instanceof CrmError)) throw error;
    const details: Record<string, unknown> = { message: error.message };
    if (error.httpStatus !== undefined) details.httpStatus = error.httpStatus;
    if (error.payload !== undefined) details.response = error.payload;
    if (error.retryable) {
      // Throttled syncs of a busy connection come back together when its slots free: run at once, they share
      // the batch calls (a contact upsert and an engagement create per hundred), which is what makes a
      // limited connection fast.
      const waitMs = Math.max(1_000, error.retryAfterMs ?? backoffMs(sync.attempts));
      return { kind: 'reschedule', waitMs, throttled: error.throttled, error: details };
    }
    return {
      kind: 'final',
      outcome: { status: 'error', error: details, failure: error.kind === 'auth' ? 'crm_authentication_failed' : 'crm_rejected_writes' },
    };
  }
}

function crmEvent(event: InboundEvent, context: SyncContext): CrmEvent {
  return {
    eventType: event.eventType,
    platform: context.platform,
    identity: event.identity,
    email: event.contact.email,
    profileUrl: event.contact.profileUrl,
    firstName: event.contact.firstName,
    lastName: event.contact.lastName,
    company: event.contact.company,
    companyDomain: event.contact.companyDomain,
    subject: event.message.subject,
    text: event.message.text,
    direction: event.message.direction,
    campaignName: event.campaign.name,
    senderEmail: event.sequencerIds.mailbox ?? null,
    // Processing time (spec rule: timestamps are processing time), the same on every attempt.
    occurredAt: context.receivedAt,
  };
}

/** Without a Retry-After: 5 s, 10 s, 20 s, ... up to 10 minutes. */
function backoffMs(attempts: number): number {
  return Math.min(600_000, 5_000 * 2 ** Math.max(0, attempts - 1));
}
