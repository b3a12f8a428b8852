import { z } from 'zod';
import { crmConnector, CrmError, crmKindOf, type CrmConnector, type CrmEvent, type CrmOutcome, type CrmState } from '../connectors/crm/index.js';
import { Lockstep } from '../connectors/crm/lockstep.js';
import type { InboundEvent } from '../connectors/sequencers/event.js';
import { CrmBudgetStore } from '../db/crm-budget-store.js';
import { query, sql, type Sql } from '../db/sql.js';
import { failureMessage, isTransientFailure, UNRECOVERABLE_AFTER } from '../domain/job-failure.js';
import type { FailureReason } from '../domain/pipeline-health.js';
import { openSecret } from '../domain/secrets.js';
import { CredentialRenewals } from './credential-renewals.js';
import { connectionCrmConfig } from './crm-config.js';
import { announceRefusals } from './crm-refusals.js';
import { addJobsSql, enqueue } from './enqueue.js';
import { RoundMemory } from './round-memory.js';
import { SyncRounds, type RoundResult } from './sync-rounds-log.js';
import { SyncStore, type Final, type PendingSync, type SyncContext, type SyncRow } from './sync-store.js';
import { defineTask, type JobEnvironment } from './task.js';

/** Syncs one round takes at most: ten batch calls per step. */
export const ROUND_SIZE = 1_000;
/** Request bodies the rounds of one worker process hold at once (a round alone may hold more). */
const PROCESS_BODY_BYTES = 256 * 1024 * 1024;
/** A round not full starts when no sync of its connection arrived for this long... */
const ROUND_QUIET_MS = 100;
/** ...or its oldest sync has been due this long. */
const ROUND_GATHER_MAX_MS = 2_000;
/** How long a round's CRM call may wait in the drain for a slot of the connection's budget before its syncs wait in the outbox. */
const MAX_WAIT_FOR_BUDGET_MS = 15_000;

/**
 * `syncs__drain {connectionId}`: writes a connection's waiting syncs (the `pending_syncs` outbox) into its
 * CRM, oldest first, a round of up to a thousand at a time, until none is due. Each round loads its
 * requests and their sync rows in two statements, runs every sync's CRM steps together, in step
 * (src/connectors/crm/lockstep.ts), so that each step is one batch call per hundred syncs at the pace of
 * the connection's budget, and records the outcomes (deleting their outbox rows) a statement per batch.
 * Jobs of one connection share a named queue, so one drain runs per connection however many processes
 * work, and a busy connection holds one worker slot, never another connection's syncs.
 *
 * Queued with the work: by the ingress with each batch of requests, by an asked-for retry, by a bulk
 * re-sync, and by itself for when the CRM said to come back.
 */
export const syncsDrain = defineTask({
  identifier: 'syncs__drain',
  payload: z.object({ connectionId: z.number().int().positive().max(2_147_483_647) }),
  // One queue per connection (one drain at a time); drainQueueSql() below spells the same rule in SQL.
  defaults: { maxAttempts: 25, jobKey: (p) => `syncs:${p.connectionId}`, queueName: (p) => `syncs:${p.connectionId}` },
  healthCheck: 'destinations_activities',
  // Bounded per sync instead: one failing on our side is set aside and recorded at its third failure (setAside below).
  recordUnrecoverable: null,
  handler(env) {
    // One set of stores per worker process: they group the database work of the drains running at once.
    const stores: Stores = {
      memory: new RoundMemory(PROCESS_BODY_BYTES),
      store: new SyncStore(env.pool, drainWakeUpsSql),
      budgets: new CrmBudgetStore(env.pool),
      renewals: new CredentialRenewals(env.pool, env.encryptionKey),
      rounds: new SyncRounds(env.logger),
    };
    return async (payload, helpers) => {
      const stopped = await drain(env, stores, payload.connectionId, helpers.abortSignal);
      // The worker stops with syncs still due: another worker (or this one's next start) drains them.
      if (stopped) await enqueue(helpers, syncsDrain, payload);
    };
  },
});

/**
 * A connection's named queue, which is also its drain's job key (`syncs:<connectionId>`, the rule
 * `defaults` spells above), as SQL over an expression of its id: for the statements that queue drains
 * (src/jobs/sync-outbox.ts) and for the drain's own wake-ups below.
 */
export function drainQueueSql(connectionId: Sql): Sql {
  return sql`'syncs:' || ${connectionId}`;
}

/**
 * SQL that wakes each connection's drain when its rescheduled syncs fall due (`rescheduled`:
 * connection_id, due_at): one job per connection and second, after that second. For the drain's own
 * reschedules and next wake-up below, and for a worker's start (src/jobs/sync-outbox.ts).
 */
export function drainWakeUpsSql(rescheduled: Sql): Sql {
  return sql`SELECT count(*) FROM ${addJobsSql(syncsDrain, {
    from: sql`(SELECT DISTINCT connection_id, ceil(extract(epoch FROM due_at))::bigint AS at FROM ${rescheduled}) AS due ORDER BY due.connection_id, due.at`,
    payload: { connectionId: sql`due.connection_id` },
    jobKey: sql`${drainQueueSql(sql`due.connection_id`)} || ':' || due.at`,
    queueName: drainQueueSql(sql`due.connection_id`),
    runAt: sql`to_timestamp(due.at)`,
  })}`;
}

/**
 * SQL queueing the connection's drain for when its next waiting sync falls due, if any waits: a drain that
 * ends with nothing due leaves the next one queued, whatever wrote the syncs (a reschedule queues its own
 * wake-up too; an older release's jobs moved to the outbox, a restored backup, do not).
 */
function nextWakeUpSql(connectionId: number): Sql {
  return drainWakeUpsSql(
    sql`(SELECT connection_id, min(due_at) AS due_at FROM pending_syncs WHERE connection_id = ${connectionId} AND due_at > now() GROUP BY connection_id) AS waiting`,
  );
}

/** The per-process stores a drain uses. */
interface Stores {
  memory: RoundMemory;
  store: SyncStore;
  budgets: CrmBudgetStore;
  renewals: CredentialRenewals;
  rounds: SyncRounds;
}

/**
 * Rounds until nothing of the connection is due (false), or the worker stops (`signal`: the round in
 * flight ends, and true says syncs may be left).
 */
async function drain(env: JobEnvironment, stores: Stores, connectionId: number, signal: AbortSignal | undefined): Promise<boolean> {
  for (;;) {
    if (signal?.aborted) return true;
    let claimed = await stores.store.claim(connectionId, ROUND_SIZE);
    if (claimed.length === 0) {
      await query(env.pool, sql`SELECT (${nextWakeUpSql(connectionId)}) AS woken`);
      return false;
    }
    if (claimed.length < ROUND_SIZE) claimed = await gather(stores.store, connectionId, claimed);
    const bytes = claimed.reduce((sum, c) => sum + c.bytes, 0);
    await stores.memory.acquire(bytes);
    try {
      await round(env, stores, connectionId, claimed);
    } finally {
      stores.memory.release(bytes);
    }
  }
}

/**
 * A round not full waits while the connection's syncs keep arriving: a burst's events come over a moment,
 * and a round of ten costs as many calls as a round of a thousand (a call per step), which a CRM's budget
 * makes the scarce thing. It starts once a round's worth is due, none arrived for {@link ROUND_QUIET_MS}
 * (a trickle waits that long), or its oldest sync has been due {@link ROUND_GATHER_MAX_MS}.
 */
async function gather(store: SyncStore, connectionId: number, claimed: PendingSync[]): Promise<PendingSync[]> {
  let due = claimed.length;
  let oldest = Math.max(...claimed.map((c) => c.dueForMs));
  while (due < ROUND_SIZE && oldest < ROUND_GATHER_MAX_MS) {
    await new Promise((resolve) => setTimeout(resolve, ROUND_QUIET_MS));
    oldest += ROUND_QUIET_MS;
    const now = await store.countDue(connectionId, ROUND_SIZE);
    if (now <= due) break;
    due = now;
  }
  return due === claimed.length ? claimed : store.claim(connectionId, ROUND_SIZE);
}

/**
 * One round: the syncs' rows and contexts, then every sync's outcome. A sync that fails on our side for a
 * reason no retry changes is set aside (due again a second or two later) and recorded as an error at its
 * third failure; any other failure (the database gone) ends the drain, its syncs still waiting.
 */
async function round(env: JobEnvironment, stores: Stores, connectionId: number, claimed: PendingSync[]): Promise<void> {
  const { store } = stores;
  const tally = stores.rounds.start(connectionId);
  const loaded = await loadIsolated(env, stores, claimed);
  const gone = loaded.filter((l) => l.kind === 'done').map((l) => l.pending.requestId);
  if (gone.length > 0) await store.forget(gone);
  const runs = loaded.flatMap((l) => (l.kind === 'loaded' ? [l] : []));
  const writers = new Set(runs.filter((r) => r.parsed.ok && blocker(r.context) === null));
  const lockstep = new Lockstep(writers.size);
  const first = writers.values().next();
  const connector = first.done ? undefined : openConnector(env, stores, first.value.context);
  let failure: Error | undefined;
  const fail = (error: unknown) => (failure ??= error instanceof Error ? error : new Error(failureMessage(error)));
  await Promise.all(
    runs.map(async (loadedRun) => {
      const { pending } = loadedRun;
      const writes = writers.has(loadedRun);
      try {
        tally.count(await runSync(env, stores, loadedRun, writes ? { connector: connector!, lockstep } : undefined));
      } catch (error) {
        if (isTransientFailure(error)) fail(error);
        else await setAside(env, stores, pending, error).catch(fail);
      } finally {
        if (writes) lockstep.leave();
      }
    }),
  );
  tally.end();
  // The round's other syncs are recorded; the drain fails and runs again, the failed ones still waiting.
  if (failure !== undefined) throw failure;
}

/**
 * The round's loads in one statement; when it fails for a reason no retry changes (a row PostgreSQL
 * refuses), each sync alone, so that the one that fails is set aside and the others go on.
 */
async function loadIsolated(env: JobEnvironment, stores: Stores, claimed: PendingSync[]): Promise<Awaited<ReturnType<SyncStore['loadRound']>>> {
  try {
    return await stores.store.loadRound(claimed);
  } catch (error) {
    if (isTransientFailure(error)) throw error;
  }
  const loaded = [];
  for (const pending of claimed) {
    try {
      loaded.push(...(await stores.store.loadRound([pending])));
    } catch (error) {
      if (isTransientFailure(error)) throw error;
      await setAside(env, stores, pending, error);
    }
  }
  return loaded;
}

type Loaded = Extract<Awaited<ReturnType<SyncStore['loadRound']>>[number], { kind: 'loaded' }>;
type Opened = { kind: 'connector'; connector: CrmConnector } | { kind: 'final'; outcome: Final };

/**
 * Runs any number of times for one request with one outcome: the sync row is keyed by the request, a
 * recorded outcome ends the run early, and the connector resumes from the steps `crm_state` says are done.
 */
async function runSync(
  deps: JobEnvironment,
  stores: Stores,
  { pending, sync, context, parsed }: Loaded,
  crm: { connector: Opened; lockstep: Lockstep } | undefined,
): Promise<RoundResult> {
  const { store } = stores;
  const { retry } = pending;
  const finish = async (final: Final): Promise<RoundResult> => {
    await store.finish(sync, context, retry, final);
    return final.status === 'error' ? 'error' : 'written';
  };
  if (!parsed.ok) return finish({ status: 'error', error: { message: `The payload could not be read: ${parsed.reason}` }, failure: 'payloads_unreadable' });
  const blocked = blocker(context);
  if (blocked) return finish({ status: 'error', ...blocked });
  // Every sync past those checks writes, with the round's connector.
  if (!crm) throw new Error('a sync to write has no connector');
  if (crm.connector.kind === 'final') return finish(crm.connector.outcome);

  // Waiting for the connection's budget is not a failure: only the runs that met the CRM's refusals count.
  const failures = Math.max(1, sync.attempts - pending.waits);
  const result = await write(stores, crm.connector.connector, crm.lockstep, { ...sync, attempts: failures }, context, parsed.event);
  if (result.kind === 'reschedule') {
    if (result.throttled || failures <= (deps.maxReschedules ?? 8)) {
      // A CRM (or its budget) that asks us to wait: the sync waits in the outbox until it says.
      await store.reschedule(pending.requestId, result.waitMs, result.throttled);
      return 'rescheduled';
    }
    return finish({ status: 'error', error: result.error, failure: 'crm_unavailable' });
  }
  return finish(result.outcome);
}

/** Why this pipeline cannot write at all, before any CRM call. */
function blocker(context: SyncContext): { error: Record<string, unknown>; failure: FailureReason } | null {
  if (context.connectionDeleted || !context.syncEnabled) return { error: { message: 'Sync is not enabled for this connection' }, failure: 'sync_disabled' };
  if (crmKindOf(context.crm) === undefined) {
    return { error: { message: `Writing to ${context.crm} is not supported` }, failure: 'crm_not_supported' };
  }
  if (!context.credentialsEncrypted) return { error: { message: 'The connection holds no CRM credentials: reconnect the CRM' }, failure: 'crm_not_connected' };
  return null;
}

/** The round's connector (one per round: its runs share credentials, renewed once); credentials opened here only. */
function openConnector(deps: JobEnvironment, { budgets }: Stores, context: SyncContext): Opened {
  try {
    const config = connectionCrmConfig(deps, budgets, context, {
      maxWaitMs: MAX_WAIT_FOR_BUDGET_MS,
      announceRefusals: () => announceRefusals(deps.pool, budgets, context),
    });
    const connector = crmConnector(context.crm, JSON.parse(openSecret(deps.encryptionKey, context.credentialsEncrypted!)), config);
    // blocker() already refused CRM kinds without a connector.
    if (!connector) throw new Error(`no connector for ${context.crm}`);
    return { kind: 'connector', connector };
  } catch (error) {
    if (error instanceof CrmError)
      return { kind: 'final', outcome: { status: 'error', error: { message: error.message }, failure: 'crm_authentication_failed' } };
    return {
      kind: 'final',
      outcome: { status: 'error', error: { message: 'The stored CRM credentials cannot be read: reconnect the CRM' }, failure: 'crm_not_connected' },
    };
  }
}

type WriteResult = { kind: 'final'; outcome: Final } | { kind: 'reschedule'; waitMs: number; throttled: boolean; error: Record<string, unknown> };

/** The CRM writes of one sync; a retryable failure asks to be rescheduled. */
async function write(
  { store, renewals }: Stores,
  connector: CrmConnector,
  lockstep: Lockstep,
  sync: SyncRow,
  context: SyncContext,
  event: InboundEvent,
): Promise<WriteResult> {
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
      step: () => lockstep.step(),
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
      const waitMs = Math.max(1_000, error.retryAfterMs ?? backoffMs(sync.attempts));
      return { kind: 'reschedule', waitMs, throttled: error.throttled, error: details };
    }
    return {
      kind: 'final',
      outcome: { status: 'error', error: details, failure: error.kind === 'auth' ? 'crm_authentication_failed' : 'crm_rejected_writes' },
    };
  }
}

/**
 * A sync that failed on our side for a reason no retry changes (a value PostgreSQL refuses, a programming
 * error): due again a second, then two, later while the round's others go on; its third failure is its
 * outcome, an error the customer sees (`internal_error`), rather than retries spent in silence.
 */
async function setAside(env: JobEnvironment, { store }: Stores, pending: PendingSync, error: unknown): Promise<void> {
  const failures = await store.countInternalFailure(pending.requestId);
  const final = failures !== undefined && failures >= UNRECOVERABLE_AFTER;
  env.logger.error({ err: error, requestId: pending.requestId, failures }, `sync failed on our side${final ? ': recorded as an error' : ''}`);
  if (final) await store.failUnrecoverable(pending.requestId, pending.retry, failureMessage(error));
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
