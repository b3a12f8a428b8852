import type pg from 'pg';
import { LEASE_EXPIRY_MS, waitForSlot, type CrmBudget, type Pause } from '../domain/crm-budget.js';
import { query, sql, type Sql } from './sql.js';

/** A request slot: granted (with the token that names it, to release a lease), or how long until one may free. */
export type Slot = { granted: true; token: number } | { granted: false; waitMs: number; pausedUntilMs: number | null };

/**
 * Connections' CRM request budgets in PostgreSQL (`crm_budgets`), so that every worker process shares
 * them: one statement takes a slot or says why not, one pauses a connection. Time is the database's
 * clock, the one clock every process shares; a slot's token is that clock in ms plus a random fraction,
 * so slots taken in the same millisecond stay apart.
 */
export class CrmBudgetStore {
  constructor(private readonly pool: pg.Pool) {}

  /** Takes a slot of `budget` for the connection, unless it is paused or used up. */
  async take(connectionId: number, budget: CrmBudget): Promise<Slot> {
    const { rows } = await query<{ granted: boolean; token: number; hits: number[]; leases: number[]; paused_until_ms: string | null; now_ms: number }>(
      this.pool,
      takeStatement(connectionId, budget),
    );
    const row = rows[0]!;
    if (row.granted) return { granted: true, token: row.token };
    const pausedUntilMs = row.paused_until_ms === null ? null : Number(row.paused_until_ms);
    return { granted: false, waitMs: Math.max(1, waitForSlot({ hits: row.hits, leases: row.leases, pausedUntilMs }, budget, row.now_ms)), pausedUntilMs };
  }

  /** Gives a concurrency lease back (its request ended). */
  async release(connectionId: number, token: number): Promise<void> {
    await query(this.pool, sql`UPDATE crm_budgets SET leases = array_remove(leases, ${token}::float8) WHERE connection_id = ${connectionId}`);
  }

  /** Pauses the connection until `pause.untilMs` (a later pause already set stays). */
  async pause(connectionId: number, pause: Pause): Promise<void> {
    await query(
      this.pool,
      sql`INSERT INTO crm_budgets AS b (connection_id, paused_until, pause_reason, updated_at)
          VALUES (${connectionId}, to_timestamp(${pause.untilMs}::float8 / 1000), ${pause.reason}, clock_timestamp())
          ON CONFLICT (connection_id) DO UPDATE SET
            paused_until = GREATEST(b.paused_until, EXCLUDED.paused_until),
            pause_reason = CASE WHEN b.paused_until > EXCLUDED.paused_until THEN b.pause_reason ELSE EXCLUDED.pause_reason END,
            updated_at = EXCLUDED.updated_at`,
    );
  }
}

// One statement: the row is created or locked by the upsert, the slots still in use kept (hits less than a
// window old, leases not yet expired), and the new slot added only when the connection is not paused and
// has room. `granted` says whether it was.
function takeStatement(connectionId: number, budget: CrmBudget): Sql {
  const column = budget.kind === 'window' ? sql`hits` : sql`leases`;
  const keepFor = budget.kind === 'window' ? budget.windowMs : LEASE_EXPIRY_MS;
  const room = budget.kind === 'window' ? budget.requests : budget.max;
  // The slots still in use, filtered once; the new slot joins them when the connection may send.
  const live = sql`(SELECT COALESCE(array_agg(s ORDER BY s), '{}') FROM unnest(b.${column}) AS s WHERE s > extract(epoch FROM EXCLUDED.updated_at) * 1000 - ${keepFor}::float8)`;
  return sql`
  WITH t AS (SELECT clock_timestamp() AS at, extract(epoch FROM clock_timestamp()) * 1000 + random() * 0.001 AS token)
  INSERT INTO crm_budgets AS b (connection_id, ${column}, updated_at)
  SELECT ${connectionId}, ARRAY[t.token], t.at FROM t
  ON CONFLICT (connection_id) DO UPDATE SET
    ${column} = (
      SELECT CASE WHEN (b.paused_until IS NULL OR b.paused_until <= EXCLUDED.updated_at) AND cardinality(kept.slots) < ${room}::int
                  THEN kept.slots || EXCLUDED.${column} ELSE kept.slots END
        FROM (SELECT ${live} AS slots) AS kept),
    updated_at = EXCLUDED.updated_at
  RETURNING (SELECT t.token FROM t) = ANY(b.${column}) AS granted, (SELECT t.token FROM t) AS token, b.hits, b.leases,
            (extract(epoch FROM b.paused_until) * 1000)::bigint AS paused_until_ms, extract(epoch FROM clock_timestamp()) * 1000 AS now_ms`;
}
