import pg from 'pg';
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
    const { rows } = await this.pool.query<{ hits: number; end_ms: string; now_ms: string }>({
      name: 'rate_limit_fixed',
      text: FIXED_WINDOW_SQL,
      values: [bucket, RATE_WINDOW_MS],
    });
    const row = rows[0]!;
    return fixedWindowDecision(row.hits, limit, Number(row.end_ms), Number(row.now_ms));
  }

  /** Counts a hit in a sliding 60 s window (per-second counts: at most 61 entries, whatever the limit). */
  async hitSlidingWindow(bucket: string, limit: number): Promise<RateLimitDecision> {
    this.pruneNow();
    const { rows } = await this.pool.query<{ seconds: string[]; counts: number[]; now_ms: string }>({
      name: 'rate_limit_sliding',
      text: SLIDING_WINDOW_SQL,
      values: [bucket, RATE_WINDOW_MS / 1000],
    });
    const row = rows[0]!;
    const log = row.seconds.map((second, i) => ({ second: Number(second), count: row.counts[i]! }));
    return slidingWindowDecision(log, limit, RATE_WINDOW_MS, Number(row.now_ms));
  }

  /** Deletes the counters no later request can read: windows that ended, logs idle for a window. */
  async prune(): Promise<void> {
    await this.pool.query(PRUNE_SQL, [RATE_WINDOW_MS]);
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

// The window starts with the bucket's first hit; a hit after it ended starts the next one. GREATEST
// and the >= guard keep a late-arriving statement (its clock read before another's) from going back.
const FIXED_WINDOW_SQL = `
  WITH now AS (SELECT clock_timestamp() AS at)
  INSERT INTO rate_limit_windows AS w (bucket, window_start, hits)
  SELECT $1, now.at, 1 FROM now
  ON CONFLICT (bucket) DO UPDATE SET
    hits = CASE WHEN w.window_start > EXCLUDED.window_start - make_interval(secs => $2::int / 1000.0) THEN w.hits + 1 ELSE 1 END,
    window_start = CASE WHEN w.window_start > EXCLUDED.window_start - make_interval(secs => $2::int / 1000.0) THEN w.window_start ELSE EXCLUDED.window_start END
  RETURNING hits,
    (extract(epoch FROM window_start) * 1000)::bigint + $2::int AS end_ms,
    (extract(epoch FROM clock_timestamp()) * 1000)::bigint AS now_ms`;

// The new log: this second's count plus one, and the previous seconds still in the window (a second
// counts until it is more than the window's length old), oldest first.
const SLIDING_WINDOW_SQL = `
  WITH now AS (SELECT clock_timestamp() AS at)
  INSERT INTO rate_limit_logs AS l (bucket, seconds, counts, updated_at)
  SELECT $1, ARRAY[floor(extract(epoch FROM now.at))::bigint], ARRAY[1], now.at FROM now
  ON CONFLICT (bucket) DO UPDATE SET
    (seconds, counts) = (
      SELECT COALESCE(array_agg(second ORDER BY second), '{}'), COALESCE(array_agg(hits ORDER BY second), '{}')
        FROM (
          SELECT second, sum(hits)::int AS hits
            FROM (SELECT * FROM unnest(l.seconds, l.counts) AS t(second, hits) UNION ALL SELECT EXCLUDED.seconds[1], 1) AS all_hits
           WHERE second >= EXCLUDED.seconds[1] - $2::int
           GROUP BY second
        ) AS kept),
    updated_at = EXCLUDED.updated_at
  RETURNING seconds, counts, (extract(epoch FROM clock_timestamp()) * 1000)::bigint AS now_ms`;

const PRUNE_SQL = `
  WITH w AS (DELETE FROM rate_limit_windows WHERE window_start < clock_timestamp() - make_interval(secs => $1::int / 1000.0))
  DELETE FROM rate_limit_logs WHERE updated_at < clock_timestamp() - make_interval(secs => $1::int / 1000.0)`;
