import type pg from 'pg';
import { query, raw, sql, type Sql } from '../db/sql.js';
import { LANE_SCHEMA, LANES } from './lanes.js';

/**
 * Recovery of jobs a killed worker left locked. graphile-worker only frees a lock after 4 hours; until
 * then an accepted request whose worker died (SIGKILL, a lost machine) would wait. Every worker process
 * beats for the ids its jobs are locked under (the worker pool's, and each slot's), and frees the jobs
 * locked under ids whose beat stopped more than `staleAfterMs` ago (their jobs then run again; each task
 * is safe to rerun). A live process's jobs are never freed, however long they are held.
 */
export class AbandonedLockSweeper {
  private readonly ids = new Set<string>();
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly pool: pg.Pool,
    private readonly staleAfterMs: number,
    private readonly onError: (error: unknown) => void,
  ) {}

  /** Beats (and sweeps) every third of the stale time, from now on. */
  start(): void {
    void this.tick();
    this.timer = setInterval(() => void this.tick(), Math.max(250, Math.floor(this.staleAfterMs / 3)));
    this.timer.unref();
  }

  add(workerId: string): void {
    this.ids.add(workerId);
  }

  /** Stops beating and says goodbye, so no sweep waits on a worker that stopped cleanly. */
  async stop(): Promise<void> {
    clearInterval(this.timer);
    const ids = [...this.ids];
    this.ids.clear();
    if (ids.length > 0) await query(this.pool, sql`DELETE FROM worker_heartbeats WHERE worker_id = ANY(${ids}::text[])`).catch(this.onError);
  }

  async tick(): Promise<void> {
    try {
      const ids = [...this.ids];
      if (ids.length > 0) await query(this.pool, beatStatement(ids));
      for (const lane of LANES) await query(this.pool, sweepStatement(LANE_SCHEMA[lane], ids, this.staleAfterMs));
    } catch (error) {
      this.onError(error);
    }
  }
}

function beatStatement(ids: string[]): Sql {
  return sql`
  INSERT INTO worker_heartbeats (worker_id, seen_at) SELECT unnest(${ids}::text[]), now()
  ON CONFLICT (worker_id) DO UPDATE SET seen_at = EXCLUDED.seen_at`;
}

// A worker is stale when it holds a lock older than the stale time (a younger one's worker may not have
// beaten yet), has not beaten within that time, and is none of this process's own ids; all of a stale
// worker's jobs are freed, its younger locks too.
function sweepStatement(schema: string, ownIds: string[], staleAfterMs: number): Sql {
  const staleBefore = sql`now() - make_interval(secs => ${staleAfterMs}::int / 1000.0)`;
  return sql`
  WITH stale AS (
    SELECT DISTINCT j.locked_by AS worker_id
      FROM ${raw(schema)}._private_jobs j
     WHERE j.locked_by IS NOT NULL
       AND j.locked_at < ${staleBefore}
       AND j.locked_by <> ALL(${ownIds}::text[])
       AND NOT EXISTS (SELECT 1 FROM worker_heartbeats h WHERE h.worker_id = j.locked_by AND h.seen_at > ${staleBefore})
  ),
  forgotten AS (
    DELETE FROM worker_heartbeats WHERE seen_at < now() - interval '1 day'
  )
  SELECT ${raw(schema)}.force_unlock_workers(ARRAY(SELECT worker_id FROM stale)) WHERE EXISTS (SELECT 1 FROM stale)`;
}
