import type { CronItem } from 'graphile-worker';
import { z } from 'zod';
import { DEFAULT_BACKFILL } from '../config.js';
import { HISTORY_SEQUENCERS } from '../connectors/sequencers/registry.js';
import { query, sql } from '../db/sql.js';
import { backfillQueueSql, backfillsRun } from './backfills__run.js';
import { addJobsSql } from './enqueue.js';
import { defineTask } from './task.js';

/**
 * `backfills__schedule`, every minute on graphile-worker's cron: queues a round for each source that is
 * due. A source is due when it holds a sequencer account, its sequencer has a history the backfill reads,
 * its connection exists, its backfill is not paused, and its last round started over
 * BACKFILL_INTERVAL_MINUTES ago (or never). The start is set as the round is queued, so a round longer
 * than a minute is not queued again behind itself. It also deletes, a slice at a time, the message keys
 * and leads older than the lookback and two days: no round asks about them again.
 */
export const backfillsSchedule = defineTask({
  identifier: 'backfills__schedule',
  // graphile-worker's cron adds `_cron` ({ts, backfilled}); nothing of it is needed.
  payload: z.object({}),
  defaults: { maxAttempts: 1 },
  lane: 'loops',
  // Bounded already: one attempt, and the next minute runs it again.
  recordUnrecoverable: null,
  handler(env) {
    const minutes = env.backfill?.intervalMinutes ?? DEFAULT_BACKFILL.intervalMinutes;
    const lookbackDays = env.backfill?.lookbackDays ?? DEFAULT_BACKFILL.lookbackDays;
    const platforms = HISTORY_SEQUENCERS.map((s) => s.platform);
    return async () => {
      // Keys and leads past the lookback (and two days' margin for late webhooks) no round asks about again: a slice a minute.
      await query(
        env.pool,
        sql`WITH expired AS (SELECT source_id, key FROM message_keys WHERE created_at < now() - ${lookbackDays + 2}::int * interval '1 day' ORDER BY created_at LIMIT ${PRUNE_BATCH})
            DELETE FROM message_keys k USING expired e WHERE k.source_id = e.source_id AND k.key = e.key`,
      );
      await query(
        env.pool,
        sql`WITH expired AS (SELECT source_id, lead_key FROM source_leads WHERE last_seen_at < now() - ${lookbackDays + 2}::int * interval '1 day' LIMIT ${PRUNE_BATCH})
            DELETE FROM source_leads l USING expired e WHERE l.source_id = e.source_id AND l.lead_key = e.lead_key`,
      );
      await query(
        env.pool,
        sql`WITH known AS (
              INSERT INTO source_backfills (source_id)
              SELECT s.id FROM sources s WHERE s.sequencer_credentials_encrypted IS NOT NULL AND s.platform = ANY(${platforms}::text[])
              ON CONFLICT (source_id) DO NOTHING
            ),
            due AS (
              UPDATE source_backfills b SET last_round_started_at = now(), updated_at = now()
                FROM sources s JOIN connections c ON c.id = s.connection_id AND c.deleted_at IS NULL
               WHERE s.id = b.source_id AND s.sequencer_credentials_encrypted IS NOT NULL AND s.platform = ANY(${platforms}::text[])
                 AND NOT b.paused AND (b.last_round_started_at IS NULL OR b.last_round_started_at < now() - ${minutes}::int * interval '1 minute')
              RETURNING b.source_id
            )
            SELECT (${addJobsSql(backfillsRun, {
              from: sql`due ORDER BY source_id`,
              payload: { sourceId: sql`due.source_id` },
              jobKey: backfillQueueSql(sql`due.source_id`),
              queueName: backfillQueueSql(sql`due.source_id`),
            })}) AS queued`,
      );
    };
  },
});

/** Expired keys or leads one minute deletes at most. */
const PRUNE_BATCH = 10_000;

/** The cron item of the schedule: every minute, never backfilled by graphile-worker (a missed minute is the next one's work). */
export const BACKFILL_CRON: CronItem[] = [
  { task: backfillsSchedule.identifier, match: '* * * * *', identifier: 'backfills-schedule', options: { backfillPeriod: 0, maxAttempts: 1 } },
];
