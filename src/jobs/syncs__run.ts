import { z } from 'zod';
import { query, sql } from '../db/sql.js';
import { queueDrainsSql } from './sync-outbox.js';
import { defineTask } from './task.js';

/**
 * `syncs__run {requestId, retry?, waits?}`: the job per event that ran a sync before the sync outbox (issue
 * 28), kept so that the jobs an older release's processes still queue during a rolling deploy (its ingress,
 * its retries) are not stranded: each moves its request into the outbox (`pending_syncs`, as an asked-for
 * retry when it was one) and queues its connection's drain, in one statement. The migration moved the
 * jobs waiting when it ran.
 */
export const syncsRun = defineTask({
  identifier: 'syncs__run',
  payload: z.object({
    requestId: z.number().int().positive().max(Number.MAX_SAFE_INTEGER),
    retry: z.boolean().optional(),
    waits: z.number().int().nonnegative().max(1_000_000).optional(),
  }),
  defaults: { maxAttempts: 25 },
  // One statement, which moves the sync or fails only as the database does (a request gone moves nothing).
  recordUnrecoverable: null,
  handler(env) {
    return async ({ requestId, retry = false, waits = 0 }) => {
      await query(
        env.pool,
        sql`WITH moved AS (
              INSERT INTO pending_syncs (request_id, connection_id, retry, waits)
              SELECT id, connection_id, ${retry}, ${waits} FROM requests WHERE id = ${requestId} AND connection_id IS NOT NULL
              ON CONFLICT (request_id) DO UPDATE SET retry = pending_syncs.retry OR EXCLUDED.retry
              RETURNING connection_id
            )
            SELECT (${queueDrainsSql(sql`moved`)}) AS drains`,
      );
    };
  },
});
