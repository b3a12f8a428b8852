import { createHash } from 'node:crypto';
import { z } from 'zod';
import { DEFAULT_BACKFILL } from '../config.js';
import { createHttpClient, OutboundError, retryAfterMs, type HttpClient, type HttpRequest } from '../connectors/http/client.js';
import { vendorMessage } from '../connectors/sequencers/blocklist-push.js';
import type { ApiAccount } from '../connectors/sequencers/definition.js';
import type { HistoryCall } from '../connectors/sequencers/history.js';
import { messageKeyOf } from '../connectors/sequencers/message-key.js';
import { sequencerDefinition, type HistorySequencer } from '../connectors/sequencers/registry.js';
import { SequencerBudgetStore, type WindowBudget } from '../db/sequencer-budget-store.js';
import { sql, type Sql } from '../db/sql.js';
import { BackfillStore, type FoundMessage } from './backfill-store.js';
import { openSequencerAccount, type AccountProblem } from './sequencer-account.js';
import { defineTask, type JobEnvironment } from './task.js';

/** How far before the last round's start the next one asks again: a sequencer's times lag its events a little. */
const OVERLAP_MS = 10 * 60_000;
/** 429s one call waits out before the round gives up (the next round tries again). */
const MAX_REFUSALS = 5;
/** A 429 without a Retry-After holds the account this long. */
const DEFAULT_PAUSE_MS = 60_000;
const CALL_TIMEOUT_MS = 30_000;
/** Messages a statement records at most. */
const BATCH_MESSAGES = 500;
/** How often a round looks whether staff paused it. */
const PAUSE_CHECK_MS = 5_000;

/**
 * `backfills__run {sourceId}`: one round of a source's backfill. It asks the source's sequencer, within
 * the account's budget (shared by every process), for the messages of the leads the source has seen in
 * the last BACKFILL_LOOKBACK_DAYS since its last round, and turns every message no request of the source
 * holds yet (by the sequencer's message id: src/connectors/sequencers/message-key.ts) into a request
 * marked fetched, accepted as the ingress accepts one: parsed, synced, forwarded and relayed like any
 * other. A batch of found messages is one statement, so a round cut short (a crash, a stop) loses nothing and
 * the next finds what it had done. A round that fails records why on the source (never the key) and
 * leaves its start where it was. Queued by the schedule (./backfills__schedule.ts); one round per source
 * at a time (its named queue).
 */
export const backfillsRun = defineTask({
  identifier: 'backfills__run',
  payload: z.object({ sourceId: z.number().int().positive().max(2_147_483_647) }),
  defaults: { maxAttempts: 5, jobKey: (p) => backfillQueue(p.sourceId), queueName: (p) => backfillQueue(p.sourceId) },
  lane: 'loops',
  // A round records its own failures on the source; one failing on our side is retried by the queue, then recorded.
  recordUnrecoverable: (env) => (payload, message) => new BackfillStore(env.pool).fail(payload.sourceId, `The round failed on our side: ${message}`),
  handler(env) {
    const store = new BackfillStore(env.pool);
    const budgets = new SequencerBudgetStore(env.pool);
    const http = createHttpClient({
      allowPrivate: env.outboundAllowPrivate,
      userAgent: 'pipeline-sync-service',
      maxSocketsPerOrigin: 4,
      trustedOrigin: env.sandboxOrigin,
    });
    return async ({ sourceId }, helpers) => {
      await round(env, { store, budgets, http }, sourceId, helpers.abortSignal);
    };
  },
});

/** A source's named queue and job key: `backfill:<sourceId>` ({@link backfillQueueSql} spells it in SQL). */
function backfillQueue(sourceId: number): string {
  return `backfill:${sourceId}`;
}

/** The same rule as SQL over an expression of the source's id: for the schedule, which queues rounds in a statement. */
export function backfillQueueSql(sourceId: Sql): Sql {
  return sql`'backfill:' || ${sourceId}`;
}

/** What a round fails for: the sequencer's answer or its absence, in words that carry no secret. */
class RoundFailure extends Error {}

interface Deps {
  store: BackfillStore;
  budgets: SequencerBudgetStore;
  http: HttpClient;
}

async function round(env: JobEnvironment, deps: Deps, sourceId: number, signal: AbortSignal | undefined): Promise<void> {
  const { store } = deps;
  const source = await store.source(sourceId);
  if (!source?.live || source.paused || source.credentialsEncrypted === null) return;
  const sequencer = sequencerDefinition(source.platform);
  const config = { ...DEFAULT_BACKFILL, ...env.backfill };
  const { startedAt, since } = await store.begin(sourceId, config.lookbackDays, OVERLAP_MS);
  try {
    if (!sequencer?.history) throw new RoundFailure(`The backfill does not read ${sequencer?.name ?? source.platform}`);
    const history = sequencer as HistorySequencer;
    const account = accountOf(env, history, source.credentialsEncrypted, config.urls[history.platform] ?? env.blocklists?.pushUrls?.[history.platform]);
    const budget = {
      requests: config.budgets[history.platform] ?? history.history.budget.requests,
      windowMs: config.windows?.[history.platform] ?? history.history.budget.windowMs,
    };
    const call = budgetedCall(deps, history, account, budget, signal);
    const leads = await store.leads(sourceId, config.lookbackDays);
    // Pages are recorded in batches (one statement each): what a crash loses of a batch, the next round reads again.
    const batch = new Batch(history);
    let checked = Date.now();
    for await (const page of history.history.read({ account, leads, since, call })) {
      batch.add(page);
      if (batch.full()) await batch.flush(store, sourceId);
      if (signal?.aborted) throw new RoundFailure('The worker stopped during the round: the next round asks again');
      if (Date.now() - checked >= PAUSE_CHECK_MS) {
        checked = Date.now();
        // Paused by staff: the round ends here, its start unchanged (a resumed backfill asks again from there).
        if (await store.paused(sourceId)) return await batch.flush(store, sourceId);
      }
    }
    await batch.flush(store, sourceId);
    await store.finish(sourceId, startedAt);
  } catch (error) {
    if (!(error instanceof RoundFailure)) throw error;
    env.logger.warn({ sourceId, platform: source.platform }, `backfill round failed: ${error.message}`);
    await store.fail(sourceId, error.message);
  }
}

/**
 * The messages found and not yet recorded: those the platform's parser reads and that carry a key, each
 * once, and how many the sequencer listed. Recorded every {@link BATCH_MESSAGES} messages (a page of a
 * lead holds a few), so a round over thousands of leads is a statement per batch, not per call.
 */
class Batch {
  private found = new Map<string, FoundMessage>();
  private seen = 0;

  constructor(private readonly sequencer: HistorySequencer) {}

  add(page: readonly Record<string, unknown>[]): void {
    this.seen += page.length;
    for (const body of page) {
      const parsed = this.sequencer.parse(body);
      const key = parsed.ok ? messageKeyOf(parsed.event) : null;
      if (key !== null && !this.found.has(key)) this.found.set(key, { key, body: JSON.stringify(body) });
    }
  }

  full(): boolean {
    return this.found.size >= BATCH_MESSAGES;
  }

  async flush(store: BackfillStore, sourceId: number): Promise<void> {
    if (this.seen === 0) return;
    await store.record(sourceId, [...this.found.values()], this.seen);
    this.found = new Map();
    this.seen = 0;
  }
}

/** The source's account, or the round's failure, worded for staff reading the source's backfill. */
function accountOf(env: JobEnvironment, sequencer: HistorySequencer, sealed: string, configured: string | undefined): ApiAccount {
  const opened = openSequencerAccount(env.encryptionKey, sealed, sequencer.history.endpoint, configured);
  if (opened.ok) return opened.account;
  throw new RoundFailure(ROUND_PROBLEMS[opened.problem](sequencer.name));
}

const ROUND_PROBLEMS: Record<AccountProblem, (name: string) => string> = {
  unreadable: (name) => `The stored ${name} credentials cannot be read: set the source's sequencer account again`,
  no_key: (name) => `The stored ${name} credentials hold no API key: set the source's sequencer account again`,
  no_instance: (name) => `The stored ${name} credentials hold no instance URL`,
};

/**
 * Calls within the account's budget: a slot first (waiting for it), a 429 holding the account for its
 * Retry-After (every process then waits) and asked again up to {@link MAX_REFUSALS} times; a 404 is
 * `null`; anything else not 2xx fails the round with the sequencer's words, the key cut out.
 */
function budgetedCall(
  { budgets, http }: Deps,
  sequencer: HistorySequencer,
  account: ApiAccount,
  budget: WindowBudget,
  signal: AbortSignal | undefined,
): HistoryCall {
  const name = sequencer.name;
  // The account's name in the shared budget: the platform and a hash of its key and instance, never the key.
  const fingerprint = `${sequencer.platform}:${createHash('sha256').update(`${account.baseUrl}\n${account.apiKey}`).digest('hex').slice(0, 32)}`;
  return async (request: HttpRequest) => {
    for (let refusals = 0; ;) {
      for (let wait = await budgets.take(fingerprint, budget); wait > 0; wait = await budgets.take(fingerprint, budget)) {
        if (signal?.aborted) throw new RoundFailure('The worker stopped during the round: the next round asks again');
        await new Promise((resolve) => setTimeout(resolve, Math.min(wait, 5_000)));
      }
      let response;
      try {
        response = await http.request({ ...request, timeoutMs: CALL_TIMEOUT_MS, ...(signal ? { signal } : {}) });
      } catch (error) {
        if (error instanceof OutboundError) throw new RoundFailure(`${name}: ${error.code === 'timeout' ? 'no answer in time' : error.message}`);
        throw error;
      }
      if (response.status >= 200 && response.status < 300) return response.json() ?? null;
      if (response.status === 404) return null;
      if (response.status === 429 && refusals < MAX_REFUSALS) {
        refusals += 1;
        await budgets.pause(fingerprint, retryAfterMs(response.headers['retry-after']) ?? DEFAULT_PAUSE_MS);
        continue;
      }
      const said = vendorMessage(response, account.apiKey);
      const auth = response.status === 401 || response.status === 403 ? ' (check the sequencer API key)' : '';
      throw new RoundFailure(`${name} answered ${response.status}${said ? `: ${said}` : ''}${auth}`);
    }
  };
}
