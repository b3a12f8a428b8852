import type pg from 'pg';
import { waitForSlot } from '../domain/crm-budget.js';
import { query, sql } from './sql.js';

/** A sequencer account's window budget: `requests` per `windowMs`. */
export interface WindowBudget {
  requests: number;
  windowMs: number;
}

/**
 * Sequencer accounts' API budgets in PostgreSQL (`sequencer_budgets`), shared by every worker process as
 * the CRM budgets are (src/db/crm-budget-store.ts, whose rule, src/domain/crm-budget.ts, this one
 * shares): one statement takes a slot or says how long until one frees, one pauses an account after a
 * 429. Accounts are named by a fingerprint (src/jobs/backfill-store.ts), never by their key.
 */
export class SequencerBudgetStore {
  constructor(private readonly pool: pg.Pool) {}

  /** Takes a slot of the account's budget: 0 when taken, else how long until one may free (ms). */
  async take(account: string, budget: WindowBudget): Promise<number> {
    const live = sql`(SELECT COALESCE(array_agg(s ORDER BY s), '{}') FROM unnest(b.hits) AS s WHERE s > extract(epoch FROM EXCLUDED.updated_at) * 1000 - ${budget.windowMs}::float8)`;
    const { rows } = await query<{ granted: boolean; hits: number[]; paused_until_ms: string | null; now_ms: number }>(
      this.pool,
      sql`WITH t AS (SELECT clock_timestamp() AS at, extract(epoch FROM clock_timestamp()) * 1000 + random() * 0.001 AS token)
          INSERT INTO sequencer_budgets AS b (account, hits, updated_at)
          SELECT ${account}, ARRAY[t.token], t.at FROM t
          ON CONFLICT (account) DO UPDATE SET
            hits = (SELECT CASE WHEN (b.paused_until IS NULL OR b.paused_until <= EXCLUDED.updated_at) AND cardinality(kept.slots) < ${budget.requests}::int
                                THEN kept.slots || EXCLUDED.hits ELSE kept.slots END
                      FROM (SELECT ${live} AS slots) AS kept),
            updated_at = EXCLUDED.updated_at
          RETURNING (SELECT t.token FROM t) = ANY(b.hits) AS granted, b.hits, (extract(epoch FROM b.paused_until) * 1000)::bigint AS paused_until_ms,
                    extract(epoch FROM clock_timestamp()) * 1000 AS now_ms`,
    );
    const row = rows[0]!;
    if (row.granted) return 0;
    const pausedUntilMs = row.paused_until_ms === null ? null : Number(row.paused_until_ms);
    return Math.max(1, waitForSlot({ hits: row.hits, leases: [], pausedUntilMs }, { kind: 'window', ...budget }, row.now_ms));
  }

  /** Holds every call of the account for `ms` (a later pause already set stays). */
  async pause(account: string, ms: number): Promise<void> {
    await query(
      this.pool,
      sql`INSERT INTO sequencer_budgets AS b (account, paused_until, updated_at)
          VALUES (${account}, clock_timestamp() + ${Math.round(ms)}::int * interval '1 millisecond', clock_timestamp())
          ON CONFLICT (account) DO UPDATE SET paused_until = GREATEST(b.paused_until, EXCLUDED.paused_until), updated_at = EXCLUDED.updated_at`,
    );
  }
}
