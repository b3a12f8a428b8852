import pg from 'pg';
import { query, sql, type Sql } from './sql.js';
import { fixedWindowDecision, slidingWindowDecision, type RateLimitDecision } from '../domain/rate-limit.js';

/** Every limit of the spec counts over 60 s. */
const RATE_WINDOW_MS = 60_000;

/**
 * Rate-limit counters in PostgreSQL, so that every API process shares them. One statement per check,
 * on a small pool of its own whose sessions commit asynchronously: a counter is not worth a disk flush
 * per request (a crash forgets the last few milliseconds of hits, never an accepted event).
 * Time is the database's clock, the one clock all processes share.
 */
export class RateLimitStore {
  private readonly pool: pg.Pool;
  private checks = 0;

  constructor(databaseUrl: string, onError: (error: Error) => void = () => {}) {
    this.pool = new pg.Pool({ connectionString: databaseUrl, max: 4, options: '-c synchronous_commit=off' });
    // A dropped idle connection must not crash the process; the pool replaces it.
    this.pool.on('error', onError);
  }

  /** Counts a hit in a fixed window that opens with the bucket's first hit and lasts 60 s. */
  async hitFixedWindow(bucket: string, limit: number): Promise<RateLimitDecision> {
    this.pruneNow();
    const { rows } = await query<{ hits: number; end_ms: string; now_ms: string }>(this.pool, fixedWindowStatement(bucket, RATE_WINDOW_MS), 'rate_limit_fixed');
    const row = rows[0]!;
    return fixedWindowDecision(row.hits, limit, Number(row.end_ms), Number(row.now_ms));
  }

  /** Counts a hit in a sliding 60 s window (the times of the newest `limit + 1` hits, to the millisecond). */
  async hitSlidingWindow(bucket: string, limit: number): Promise<RateLimitDecision> {
    this.pruneNow();
    const { rows } = await query<{ hits: string[]; now_ms: string }>(this.pool, slidingWindowStatement(bucket, RATE_WINDOW_MS, limit), 'rate_limit_sliding');
    const row = rows[0]!;
    return slidingWindowDecision(row.hits.map(Number), limit, RATE_WINDOW_MS, Number(row.now_ms));
  }

  /** Deletes the counters no later request can read: windows that ended, logs idle for a window. */
  async prune(): Promise<void> {
    await query(this.pool, pruneStatement(RATE_WINDOW_MS));
  }

  close(): Promise<void> {
    return this.pool.end();
  }

  /** Every few thousand checks, off the request path: idle buckets (one per client IP) would pile up. */
  private pruneNow(): void {
    this.checks += 1;
    if (this.checks % 5_000 === 0) this.prune().catch(() => {});
  }
}

// The window starts with the bucket's first hit; a hit after it ended starts the next one. A hit whose
// clock was read before the current window began (its statement waited for the row lock behind the one
// that opened it) counts in that window: the CASEs never move window_start back.
function fixedWindowStatement(bucket: string, windowMs: number): Sql {
  const length = sql`make_interval(secs => ${windowMs}::int / 1000.0)`;
  return sql`
  WITH now AS (SELECT clock_timestamp() AS at)
  INSERT INTO rate_limit_windows AS w (bucket, window_start, hits)
  SELECT ${bucket}, now.at, 1 FROM now
  ON CONFLICT (bucket) DO UPDATE SET
    hits = CASE WHEN w.window_start > EXCLUDED.window_start - ${length} THEN w.hits + 1 ELSE 1 END,
    window_start = CASE WHEN w.window_start > EXCLUDED.window_start - ${length} THEN w.window_start ELSE EXCLUDED.window_start END
  RETURNING hits,
    (extract(epoch FROM window_start) * 1000)::bigint + ${windowMs}::int AS end_ms,
    (extract(epoch FROM clock_timestamp()) * 1000)::bigint AS now_ms`;
}

// The new log: this hit's time and the newest earlier ones less than a window old, at most limit + 1
// in all (what the decision needs, whatever a flood of rejected requests adds), oldest first.
function slidingWindowStatement(bucket: string, windowMs: number, limit: number): Sql {
  return sql`
  WITH now AS (SELECT clock_timestamp() AS at)
  INSERT INTO rate_limit_logs AS l (bucket, hits, updated_at)
  SELECT ${bucket}, ARRAY[(extract(epoch FROM now.at) * 1000)::bigint], now.at FROM now
  ON CONFLICT (bucket) DO UPDATE SET
    hits = (
      SELECT COALESCE(array_agg(hit ORDER BY hit), '{}')
        FROM (
          SELECT hit FROM (SELECT unnest(l.hits) AS hit UNION ALL SELECT EXCLUDED.hits[1]) AS all_hits
           WHERE hit > EXCLUDED.hits[1] - ${windowMs}::int
           ORDER BY hit DESC
           LIMIT ${limit + 1}::int
        ) AS kept),
    updated_at = EXCLUDED.updated_at
  RETURNING hits, (extract(epoch FROM clock_timestamp()) * 1000)::bigint AS now_ms`;
}

function pruneStatement(windowMs: number): Sql {
  const cutoff = sql`clock_timestamp() - make_interval(secs => ${windowMs}::int / 1000.0)`;
  return sql`
  WITH w AS (DELETE FROM rate_limit_windows WHERE window_start < ${cutoff})
  DELETE FROM rate_limit_logs WHERE updated_at < ${cutoff}`;
}
