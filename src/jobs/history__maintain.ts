import type { CronItem } from 'graphile-worker';
import { z } from 'zod';
import { DEFAULT_RETENTION } from '../config.js';
import { maintainHistory } from '../db/history/maintain.js';
import { defineTask } from './task.js';

/**
 * `history__maintain`, every hour on graphile-worker's cron (one job per hour whatever the number of
 * worker processes): one round of src/db/history/maintain.ts. Partitions are created two weeks ahead, so
 * a round that fails leaves days before an insert could miss its partition; /health/ready warns after a
 * week. A table still being moved onto partitions copies a slice per round (a crash resumes the copy).
 */
export const historyMaintain = defineTask({
  identifier: 'history__maintain',
  // graphile-worker's cron adds `_cron` ({ts, backfilled}); nothing of it is needed.
  payload: z.object({}),
  defaults: { maxAttempts: 1 },
  lane: 'loops',
  // Bounded already: one attempt, and the next hour runs it again.
  recordUnrecoverable: null,
  handler(env) {
    const retention = env.retention ?? DEFAULT_RETENTION;
    return async () => {
      const report = await maintainHistory(env.pool, {
        retention,
        maxBatches: BATCHES_PER_ROUND,
        log: (message, fields) => env.logger.info(fields ?? {}, message),
      });
      if (report.skipped) env.logger.info('history: another process is running the round');
    };
  },
});

/** Copy batches one round spends on a table still being moved onto partitions (10,000 rows each): the rest waits for the next hour. */
const BATCHES_PER_ROUND = 3_000;

/** The cron item: every hour at minute 17 (off the hour's crowd), never backfilled (a missed hour is the next one's work). */
export const HISTORY_CRON: CronItem[] = [
  { task: historyMaintain.identifier, match: '17 * * * *', identifier: 'history-maintain', options: { backfillPeriod: 0, maxAttempts: 1 } },
];
