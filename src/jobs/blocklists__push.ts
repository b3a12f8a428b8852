import { z } from 'zod';
import { createHttpClient, type HttpClient } from '../connectors/http/client.js';
import { pushValues, type PushAnswer, type PushTarget } from '../connectors/sequencers/blocklist-push.js';
import { sequencerDefinition } from '../connectors/sequencers/registry.js';
import { BlocklistStore, recordListFailure, type BlocklistRow, type PendingEntry } from './blocklist-store.js';
import { enqueue } from './enqueue.js';
import { openSequencerAccount, type AccountProblem } from './sequencer-account.js';
import { defineTask, type JobEnvironment } from './task.js';

/** A 429 asking to wait this long or less is waited out in the job; a longer one reschedules it. */
const MAX_WAIT_IN_JOB_MS = 60_000;

/** A sequencer with no clear answer (5xx, timeout) is asked again this many times, spaced out, before the next round takes over. */
const MAX_RESCHEDULES = 5;

/**
 * `blocklists__push {blocklistId}`: sends the list's pending entries to its sequencer's block list, at
 * most the sequencer's batch per call (1,000 for Smartlead and Instantly: their definitions,
 * src/connectors/sequencers/<platform>/), marking each call's entries pushed once the sequencer accepted
 * them, so a crash between calls resumes with the entries not yet pushed (only the one call in flight
 * at a crash is sent again, and a block list holds a value once). A call refused for its values is split
 * in halves until the refused values stand alone: each is recorded on its entry and the rest go on. A
 * 429 is waited out (its `Retry-After`); a refused key or a sequencer without a clear answer is recorded
 * on the list. A paused list is not pushed: the job stops at its next call. Nothing is ever removed from
 * the sequencer. Queued by the fetch, in the list's queue.
 */
export const blocklistsPush = defineTask({
  identifier: 'blocklists__push',
  payload: z.object({
    blocklistId: z.number().int().positive().max(2_147_483_647),
    reschedules: z.number().int().nonnegative().max(1_000).optional(),
  }),
  defaults: { maxAttempts: 10, jobKey: (p) => `blocklist-push:${p.blocklistId}`, queueName: (p) => blocklistQueue(p.blocklistId) },
  healthCheck: 'destinations_blocklists',
  lane: 'loops',
  handler(env) {
    const store = new BlocklistStore(env.pool);
    const http = createHttpClient({
      allowPrivate: env.outboundAllowPrivate,
      userAgent: 'pipeline-sync-service',
      maxSocketsPerOrigin: 8,
      trustedOrigin: env.sandboxOrigin,
    });
    return async (job, helpers) => {
      const stopped = await pushPending(env, { store, http }, job.blocklistId);
      if (stopped === null) return;
      if (stopped.kind === 'rate_limited' || stopped.kind === 'unavailable') {
        const reschedules = job.reschedules ?? 0;
        const waitMs = stopped.kind === 'rate_limited' ? (stopped.retryAfterMs ?? 60_000) : 30_000 * 2 ** reschedules;
        // Waiting for a 429 is not a failure; a sequencer without answers is, and gives way to the next round.
        if (stopped.kind === 'unavailable') await store.failRound(job.blocklistId, stopped.message);
        if (stopped.kind === 'rate_limited' || reschedules < MAX_RESCHEDULES) {
          const next = { blocklistId: job.blocklistId, reschedules: reschedules + (stopped.kind === 'unavailable' ? 1 : 0) };
          await enqueue(helpers, blocklistsPush, next, { runAt: new Date(Date.now() + waitMs) });
        }
        return;
      }
      await store.failRound(job.blocklistId, stopped.message);
    };
  },
  recordUnrecoverable: recordListFailure,
});

/** The named queue of a list's jobs: its fetch and its push run one after the other. */
export function blocklistQueue(blocklistId: number): string {
  return `blocklist:${blocklistId}`;
}

type Stop = Exclude<PushAnswer, { ok: true } | { kind: 'rejected' }>;

/** Pushes until nothing is pending (null, the list SYNCED), the list is paused (null), or the sequencer stops us (why). */
async function pushPending(env: JobEnvironment, { store, http }: { store: BlocklistStore; http: HttpClient }, id: number): Promise<Stop | null> {
  for (;;) {
    const list = await store.get(id);
    if (!list || !list.isEnabled || !list.allowed) return null;
    const target = pushTarget(env, list);
    if ('message' in target) return { ok: false, kind: 'auth', message: target.message };
    const batch = await store.pending(id, target.push.batch);
    if (batch.length === 0) {
      await store.finishPush(id);
      return null;
    }
    const stopped = await pushSplitting(store, id, (values) => pushValues(http, target, values), batch);
    if (stopped?.kind === 'rate_limited' && (stopped.retryAfterMs ?? Infinity) <= MAX_WAIT_IN_JOB_MS) {
      await new Promise((resolve) => setTimeout(resolve, stopped.retryAfterMs));
      continue;
    }
    if (stopped) return stopped;
  }
}

/**
 * One call for `batch`; when the sequencer refuses it for its values, each half again, down to single
 * values, which are recorded as refused. Accepted entries are marked pushed call by call.
 */
async function pushSplitting(
  store: BlocklistStore,
  id: number,
  push: (values: string[]) => Promise<PushAnswer>,
  batch: readonly PendingEntry[],
): Promise<Stop | null> {
  const answer = await push(batch.map((e) => e.value));
  if (answer.ok) {
    await store.markPushed(
      id,
      batch.map((e) => e.id),
    );
    return null;
  }
  if (answer.kind !== 'rejected') return answer;
  if (batch.length === 1) {
    await store.markRefused(id, batch[0]!.id, answer.message);
    return null;
  }
  const half = Math.ceil(batch.length / 2);
  return (await pushSplitting(store, id, push, batch.slice(0, half))) ?? pushSplitting(store, id, push, batch.slice(half));
}

/** What a list's error says of an account that cannot be used. */
const PUSH_PROBLEMS: Record<AccountProblem, (platform: string) => string> = {
  unreadable: (platform) => `The stored ${platform} credentials cannot be read: connect the sequencer again`,
  no_key: (platform) => `The stored ${platform} credentials hold no API key: connect the sequencer again`,
  no_instance: (platform) => `The stored ${platform} credentials hold no instance URL: connect the sequencer again`,
};

/** Where the list goes, or why it cannot be pushed (recorded on the list). */
function pushTarget(env: JobEnvironment, list: BlocklistRow): PushTarget | { message: string } {
  const sequencer = sequencerDefinition(list.platform.toLowerCase());
  if (!sequencer?.blocklistPush) return { message: `Pushing block lists to ${list.platform} is not supported` };
  if (!list.sequencerCredentialsEncrypted) return { message: `The block list has no ${list.platform} account to push to: connect the sequencer` };
  const push = sequencer.blocklistPush;
  const opened = openSequencerAccount(env.encryptionKey, list.sequencerCredentialsEncrypted, push.endpoint, env.blocklists?.pushUrls?.[sequencer.platform]);
  if (!opened.ok) return { message: PUSH_PROBLEMS[opened.problem](list.platform) };
  const { baseUrl, apiKey } = opened.account;
  return { name: sequencer.name, push, baseUrl, apiKey, clientId: list.clientId };
}
