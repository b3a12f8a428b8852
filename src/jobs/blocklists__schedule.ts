import type { CronItem } from 'graphile-worker';
import { z } from 'zod';
import { DEFAULT_BLOCKLISTS } from '../config.js';
import { query, sql } from '../db/sql.js';
import { queueFetchSql } from './blocklist-rounds.js';
import { defineTask } from './task.js';

/**
 * `blocklists__schedule`, every minute on graphile-worker's cron (one job per minute whatever the number
 * of worker processes): queues a round for each block list that is due. A list is due when it is
 * enabled, has a CRM source, its account may use block lists and its connection exists, and it rests
 * (CREATED: its first, full fetch, so a seeded list starts within a minute; SYNCED: an incremental
 * round) and was last attempted over BLOCKLIST_REFRESH_MINUTES ago (or never). A list whose round
 * failed is tried again the same way. A paused list is never due.
 */
export const blocklistsSchedule = defineTask({
  identifier: 'blocklists__schedule',
  // graphile-worker's cron adds `_cron` ({ts, backfilled}); nothing of it is needed.
  payload: z.object({}),
  defaults: { maxAttempts: 1 },
  lane: 'loops',
  // Bounded already: one attempt, and the next minute runs it again.
  recordUnrecoverable: null,
  handler(env) {
    const refreshMinutes = env.blocklists?.refreshMinutes ?? DEFAULT_BLOCKLISTS.refreshMinutes;
    return async () => {
      await query(
        env.pool,
        sql`SELECT count(*) FROM ${queueFetchSql(sql`(
              SELECT b.id, CASE WHEN b.status = 'CREATED' THEN 'full' ELSE 'incremental' END AS kind
                FROM blocklists b JOIN connections c ON c.id = b.connection_id JOIN accounts a ON a.id = c.account_id
               WHERE b.is_enabled AND b.has_crm_source AND a.can_block_list AND c.deleted_at IS NULL
                 AND b.status IN ('CREATED', 'SYNCED')
                 AND (b.last_attempted_at IS NULL OR b.last_attempted_at < now() - ${refreshMinutes}::int * interval '1 minute')
               ORDER BY b.id) AS due`)}`,
      );
    };
  },
});

/** The cron items of the loops lane: the schedule, every minute, never backfilled (a missed minute is the next one's work). */
export const BLOCKLIST_CRON: CronItem[] = [
  { task: blocklistsSchedule.identifier, match: '* * * * *', identifier: 'blocklists-schedule', options: { backfillPeriod: 0, maxAttempts: 1 } },
];
