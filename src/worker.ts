import { Logger as WorkerLogger, run, type Runner } from 'graphile-worker';
import type pg from 'pg';
import type { Logger } from './logger.js';
import { createTaskList, type JobDeps } from './jobs/index.js';

export interface WorkerSettings {
  concurrency: number;
  pollInterval: number;
}

/** The name worker pools give their connections: /health/ready reads a live one as the worker's heartbeat. */
export const WORKER_APPLICATION_NAME = 'pipeline-sync-worker';

/** graphile-worker settings; printed at start so benchmarks can report them. */
export const WORKER_SETTINGS: WorkerSettings = { concurrency: 4, pollInterval: 2_000 };

/**
 * Starts the graphile-worker runner on `pool` (installing or upgrading its schema first).
 * Signals are ours to handle: main.ts stops the runner in order during shutdown.
 */
export function startWorker(pool: pg.Pool, logger: Logger, deps: JobDeps, settings: WorkerSettings = WORKER_SETTINGS): Promise<Runner> {
  return run({
    pgPool: pool,
    taskList: createTaskList(deps),
    parsedCronItems: [],
    noHandleSignals: true,
    concurrency: settings.concurrency,
    pollInterval: settings.pollInterval,
    logger: new WorkerLogger((scope) => (level, message, meta) => {
      const method = level === 'error' ? 'error' : level === 'warning' ? 'warn' : level === 'info' ? 'info' : 'debug';
      logger[method]({ worker: scope, ...meta }, message);
    }),
  });
}
