import { EventEmitter } from 'node:events';
import { Logger as WorkerLogger, parseCronItems, run, type WorkerEvents } from 'graphile-worker';
import { BACKFILL_CRON } from './jobs/backfills__schedule.js';
import { BLOCKLIST_CRON } from './jobs/blocklists__schedule.js';
import { HISTORY_CRON } from './jobs/history__maintain.js';
import { queueWaitingDrainsSql } from './jobs/sync-outbox.js';
import { query, sql } from './db/sql.js';
import type pg from 'pg';
import { AbandonedLockSweeper } from './jobs/abandoned-locks.js';
import type { Logger } from './logger.js';
import { createTaskList } from './jobs/catalog.js';
import { LANE_SCHEMA } from './jobs/lanes.js';
import type { JobDeps } from './jobs/task.js';

export interface WorkerSettings {
  concurrency: number;
  pollInterval: number;
  /** A worker silent this long is dead, and its locked jobs go to others. */
  staleAfterMs?: number;
  /** Jobs fetched (and locked) per query, handed to the process's job slots without a round trip; 1 or less: off. */
  localQueueSize?: number;
  /** How long a finished job waits for others to complete in the same statement; -1: each alone. */
  completeJobBatchDelay?: number;
}

/** The name worker pools give their connections: /health/ready reads a live one as the worker's heartbeat. */
export const WORKER_APPLICATION_NAME = 'pipeline-sync-worker';

/** graphile-worker settings for `concurrency` job slots (WORKER_CONCURRENCY), with a local queue of twice that. */
export const workerSettings = (concurrency: number): WorkerSettings => ({
  concurrency,
  pollInterval: 2_000,
  staleAfterMs: 60_000,
  localQueueSize: concurrency * 2,
  completeJobBatchDelay: 0,
});

/** The default settings (256 slots); printed at start so benchmarks can report them. */
export const WORKER_SETTINGS: WorkerSettings = workerSettings(256);

/**
 * Connections a worker process needs: graphile-worker's own for each runner (fetch, complete, listen)
 * plus the grouped sync statements, and the sending loops' claims and records.
 */
export const workerPoolSize = (settings: WorkerSettings): number => Math.min(settings.concurrency, 8) + 8;

/** A running worker: its runners, stopped together. */
export interface WorkerHandle {
  stop(): Promise<void>;
}

/**
 * Starts the worker on `pool` (installing or upgrading graphile-worker's schema first): one runner per
 * lane of the job catalog (`jobs` with `settings.concurrency` slots and a local queue; `loops` with
 * FORWARDING_CONCURRENCY slots; `webhooks` with WEBHOOK_CONCURRENCY slots), and the heartbeat that lets
 * other processes take over the jobs of a worker that died. Signals are ours to handle: main.ts stops the
 * worker in order during shutdown; `onFailure` hears of a runner that stopped on an error of its own.
 */
export async function startWorker(
  pool: pg.Pool,
  logger: Logger,
  deps: JobDeps,
  settings: WorkerSettings = WORKER_SETTINGS,
  onFailure: (error: unknown) => void = () => {},
): Promise<WorkerHandle> {
  let stopping = false;
  const onRunnerFailure = (lane: string, error: unknown) => {
    if (stopping) return;
    logger.fatal({ err: error, lane }, 'a worker runner stopped on an error');
    onFailure(error);
  };
  const sweeper = new AbandonedLockSweeper(pool, settings.staleAfterMs ?? 60_000, (error) => logger.warn({ err: error }, 'worker heartbeat failed'));
  const events: WorkerEvents = new EventEmitter();
  // graphile-worker locks jobs in the pool's name (its local queue fetches ahead for all slots); the
  // slots' own ids are beaten too, for versions that lock per worker.
  events.on('pool:create', ({ workerPool }) => sweeper.add(workerPool.id));
  events.on('worker:create', ({ worker }) => sweeper.add(worker.workerId));
  const env = { ...deps, pool, logger };
  const common = { pgPool: pool, parsedCronItems: [], noHandleSignals: true, pollInterval: settings.pollInterval, events, logger: workerLogger(logger) };
  const completion =
    settings.completeJobBatchDelay !== undefined
      ? { completeJobBatchDelay: settings.completeJobBatchDelay, failJobBatchDelay: settings.completeJobBatchDelay }
      : {};
  const jobs = await run({
    ...common,
    schema: LANE_SCHEMA.jobs,
    taskList: createTaskList(env, 'jobs'),
    concurrency: settings.concurrency,
    // Only reachable through a preset in graphile-worker.
    preset: {
      worker: {
        ...(settings.localQueueSize !== undefined && settings.localQueueSize > 1 ? { localQueue: { size: settings.localQueueSize } } : {}),
        ...completion,
      },
    },
  });
  // Loops hold their slot while their outbox has work: a runner (and job table) of their own. Its small
  // local queue makes one fetch per wake-up rather than one per idle slot (each new batch of jobs, of any
  // lane, notifies every runner); kept small, since a fetched job waiting for a slot holds its
  // destination's queue.
  //
  // Loop jobs complete one at a time: their keys are re-queued by statements that queue many loops at once
  // (add_jobs re-keys the running ones, row by row), and a batched completion deleting several of those
  // rows in another order deadlocked with them, which stops graphile-worker's runner.
  const loops = await run({
    ...common,
    // Block lists' and history's rounds are scheduled here: cron jobs are the loops lane's, like the rounds they queue.
    parsedCronItems: parseCronItems([...BLOCKLIST_CRON, ...HISTORY_CRON, ...BACKFILL_CRON]),
    schema: LANE_SCHEMA.loops,
    taskList: createTaskList(env, 'loops'),
    concurrency: deps.forwarding?.concurrency ?? DEFAULT_LOOP_CONCURRENCY,
    preset: { worker: { localQueue: { size: LOOP_LOCAL_QUEUE }, ...ONE_AT_A_TIME } },
  });
  const webhooks = await run({
    ...common,
    schema: LANE_SCHEMA.webhooks,
    taskList: createTaskList(env, 'webhooks'),
    concurrency: deps.webhooks?.concurrency ?? DEFAULT_LOOP_CONCURRENCY,
    preset: { worker: { localQueue: { size: LOOP_LOCAL_QUEUE }, ...ONE_AT_A_TIME } },
  });
  // A runner that fails (its own statements, not a job's) has stopped working: say so, and let the
  // caller end the process so that it is restarted, rather than live on without that lane.
  for (const [lane, runner] of [
    ['jobs', jobs],
    ['loops', loops],
    ['webhooks', webhooks],
  ] as const) {
    runner.promise.catch((error: unknown) => onRunnerFailure(lane, error));
  }
  sweeper.start();
  // Waiting syncs whose drain is not queued (moved from an older release's jobs, or a wake-up lost to a
  // restored backup) are picked up at every start: one statement, a job per connection.
  await query(pool, sql`SELECT (${queueWaitingDrainsSql()}) AS queued`);
  return {
    async stop() {
      stopping = true;
      // A runner that already failed has nothing left to stop.
      await Promise.all([jobs, loops, webhooks].map((runner) => runner.stop().catch(() => {})));
      await sweeper.stop();
    },
  };
}

/** graphile-worker's setting for completing (and failing) each job in a statement of its own. */
const ONE_AT_A_TIME = { completeJobBatchDelay: -1, failJobBatchDelay: -1 };
/** FORWARDING_CONCURRENCY's and WEBHOOK_CONCURRENCY's default. */
const DEFAULT_LOOP_CONCURRENCY = 64;
/** Loop jobs one fetch of the loops runner takes. */
const LOOP_LOCAL_QUEUE = 8;

/** graphile-worker's logger, writing to ours. */
function workerLogger(logger: Logger): WorkerLogger {
  return new WorkerLogger((scope) => (level, message, meta) => {
    // Its advice of a connection per job slot does not apply (our jobs share grouped statements), nor that of
    // a local queue as large as the slots (the loops runner's is small on purpose: see startWorker).
    const expected = message.startsWith('WARNING: having maxPoolSize') || message.startsWith('Your job batch size');
    // One line per completed job is the whole log at a busy ingress's rate: the sync drains log their rounds instead.
    const routine = message.startsWith('Completed task ');
    // LogLevel is an ambient const enum, which isolated modules cannot read: compare its string values.
    const name: string = level;
    const method = expected || routine ? 'debug' : name === 'error' ? 'error' : name === 'warning' ? 'warn' : name === 'info' ? 'info' : 'debug';
    logger[method]({ worker: scope, ...withoutPayload(meta) }, message);
  });
}

/**
 * graphile-worker's log metadata without the job's payload (a payload may carry what a log must not):
 * the job is named by id, task and attempt; its error goes where pino's serializer reads it.
 */
function withoutPayload(meta: Record<string, unknown> | undefined): Record<string, unknown> {
  if (!meta) return {};
  const { job, error, ...rest } = meta;
  const named = job as { id?: string; task_identifier?: string; attempts?: number; max_attempts?: number } | undefined;
  return {
    ...rest,
    ...(named ? { job: { id: named.id, task: named.task_identifier, attempts: named.attempts, maxAttempts: named.max_attempts } } : {}),
    ...(error !== undefined ? { err: error } : {}),
  };
}
