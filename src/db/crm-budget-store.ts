import type pg from 'pg';
import {
  LEASE_EXPIRY_MS,
  REFUSAL_RUN_GAP_MS,
  REFUSALS_WARNING_AFTER_MS,
  waitForSlot,
  type CrmBudget,
  type Pause,
  type RefusalRun,
} from '../domain/crm-budget.js';
import { query, sql, type Sql } from './sql.js';

/** A request slot: granted (with the token that names it, to release a lease), or how long until one may free. */
export type Slot = { granted: true; token: number } | { granted: false; waitMs: number; pausedUntilMs: number | null; refusals: RefusalRun; nowMs: number };

/** The connection's run of refusals after a pause, and the database's clock then. */
export type PauseResult = { refusals: RefusalRun; nowMs: number };

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
    const { rows } = await query<{ granted: boolean; token: number; hits: number[]; leases: number[]; paused_until_ms: string | null } & RefusalColumns>(
      this.pool,
      takeStatement(connectionId, budget),
    );
    const row = rows[0]!;
    if (row.granted) return { granted: true, token: row.token };
    const pausedUntilMs = row.paused_until_ms === null ? null : Number(row.paused_until_ms);
    const waitMs = Math.max(1, waitForSlot({ hits: row.hits, leases: row.leases, pausedUntilMs }, budget, row.now_ms));
    return { granted: false, waitMs, pausedUntilMs, refusals: refusalRun(row), nowMs: row.now_ms };
  }

  /** Gives a concurrency lease back (its request ended). */
  async release(connectionId: number, token: number): Promise<void> {
    await query(this.pool, sql`UPDATE crm_budgets SET leases = array_remove(leases, ${token}::float8) WHERE connection_id = ${connectionId}`);
  }

  /**
   * Pauses the connection until `pause.untilMs` (a later pause already set stays). A refusal extends the
   * connection's run of refusals, or starts a new one when the last ended over a minute ago.
   */
  async pause(connectionId: number, pause: Pause): Promise<PauseResult> {
    const until = sql`to_timestamp(${pause.untilMs}::float8 / 1000)`;
    const refused = sql`${pause.refused}::boolean`;
    const { rows } = await query<RefusalColumns>(
      this.pool,
      sql`INSERT INTO crm_budgets AS b (connection_id, paused_until, pause_reason, limited_since, limited_until, updated_at)
          VALUES (${connectionId}, ${until}, ${pause.reason},
                  CASE WHEN ${refused} THEN clock_timestamp() END, CASE WHEN ${refused} THEN ${until} END, clock_timestamp())
          ON CONFLICT (connection_id) DO UPDATE SET
            paused_until = GREATEST(b.paused_until, EXCLUDED.paused_until),
            pause_reason = CASE WHEN b.paused_until > EXCLUDED.paused_until THEN b.pause_reason ELSE EXCLUDED.pause_reason END,
            limited_since = CASE WHEN NOT ${refused} THEN b.limited_since
                                 WHEN b.limited_until > EXCLUDED.updated_at - ${REFUSAL_RUN_GAP_MS}::int * interval '1 millisecond' THEN b.limited_since
                                 ELSE EXCLUDED.updated_at END,
            limited_until = CASE WHEN ${refused} THEN GREATEST(b.limited_until, EXCLUDED.paused_until) ELSE b.limited_until END,
            updated_at = EXCLUDED.updated_at
          RETURNING ${REFUSAL_COLUMNS}`,
    );
    const row = rows[0]!;
    return { refusals: refusalRun(row), nowMs: row.now_ms };
  }

  /**
   * Claims the announcement of the connection's run of refusals, inside the caller's transaction: true
   * once per run, for the first process to ask once the run is overdue (the database's clock decides).
   */
  async claimRefusalsWarning(client: pg.PoolClient, connectionId: number): Promise<boolean> {
    const { rowCount } = await query(
      client,
      sql`UPDATE crm_budgets SET warned_for = limited_since
           WHERE connection_id = ${connectionId}
             AND limited_since <= clock_timestamp() - ${REFUSALS_WARNING_AFTER_MS}::int * interval '1 millisecond'
             AND limited_until > clock_timestamp() - ${REFUSAL_RUN_GAP_MS}::int * interval '1 millisecond'
             AND warned_for IS DISTINCT FROM limited_since`,
    );
    return rowCount === 1;
  }
}

type RefusalColumns = { limited_since_ms: string | null; limited_until_ms: string | null; warned_for_ms: string | null; now_ms: number };

const REFUSAL_COLUMNS = sql`(extract(epoch FROM b.limited_since) * 1000)::bigint AS limited_since_ms,
  (extract(epoch FROM b.limited_until) * 1000)::bigint AS limited_until_ms,
  (extract(epoch FROM b.warned_for) * 1000)::bigint AS warned_for_ms, extract(epoch FROM clock_timestamp()) * 1000 AS now_ms`;

function refusalRun(row: RefusalColumns): RefusalRun {
  const ms = (value: string | null) => (value === null ? null : Number(value));
  return { sinceMs: ms(row.limited_since_ms), untilMs: ms(row.limited_until_ms), warnedForMs: ms(row.warned_for_ms) };
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
            (extract(epoch FROM b.paused_until) * 1000)::bigint AS paused_until_ms, ${REFUSAL_COLUMNS}`;
}
