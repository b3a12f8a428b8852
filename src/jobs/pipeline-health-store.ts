import type pg from 'pg';
import { applyOutcomes, pipelineKey, type PipelineHealthState, type PipelineOutcome, type PipelineRef } from '../domain/pipeline-health.js';
import { randomToken } from '../domain/secrets.js';
import { query, rows, sql, type Sql } from '../db/sql.js';
import { fanOutSql, queueWebhookSendingSql } from './webhook-outbox.js';

/**
 * Moves the health of the pipelines behind a batch of recorded sync outcomes, inside the caller's
 * transaction: their `pipeline_health` rows are locked, or created if new (in one order, so batches of
 * several worker processes wait for each other instead of deadlocking), the outcomes are applied in the
 * order given with the pure rule of src/domain/pipeline-health.ts, and each pipeline's new state is
 * written with the platform event of every transition, each event with its deliveries to the account's
 * webhook endpoints and their sending loops: a committed outcome never loses its announcement.
 */
export async function recordPipelineOutcomes(client: pg.PoolClient, outcomes: readonly PipelineOutcome[]): Promise<void> {
  if (outcomes.length === 0) return;
  const pipelines = [...new Map(outcomes.map((o) => [pipelineKey(o.pipeline), o.pipeline])).values()].sort(
    (a, b) => a.sourceId - b.sourceId || a.connectionId - b.connectionId,
  );
  const current = await lockOrCreate(client, pipelines);
  const { updates, transitions } = applyOutcomes(current, outcomes);

  const health = rows(
    'u',
    { sourceId: 'int', connectionId: 'int', state: 'text', errors: 'int', reason: 'text', written: 'boolean', changed: 'boolean' },
    updates.map((u) => ({
      sourceId: u.pipeline.sourceId,
      connectionId: u.pipeline.connectionId,
      state: u.next.state,
      errors: u.next.consecutiveErrors,
      reason: u.lastReason,
      written: u.written,
      changed: u.changed,
    })),
  );
  const events = rows(
    'e',
    { publicId: 'text', accountId: 'int', type: 'text', summary: 'text', data: 'jsonb', connectionId: 'int', sourceId: 'int', requestId: 'bigint' },
    transitions.map((t) => ({
      publicId: randomToken('svcevt_', 24),
      accountId: t.pipeline.accountId,
      type: t.type,
      summary: t.summary,
      data: t.data,
      connectionId: t.pipeline.connectionId,
      sourceId: t.pipeline.sourceId,
      requestId: t.requestId,
    })),
  );
  await query(
    client,
    sql`WITH updated AS (
          UPDATE pipeline_health h
             SET state = u.state::pipeline_state, consecutive_errors = u.errors, last_reason = COALESCE(u.reason, h.last_reason),
                 last_error_at = CASE WHEN u.reason IS NULL THEN h.last_error_at ELSE now() END,
                 last_success_at = CASE WHEN u.written THEN now() ELSE h.last_success_at END,
                 changed_at = CASE WHEN u.changed THEN now() ELSE h.changed_at END
            FROM ${health}
           WHERE h.source_id = u.source_id AND h.connection_id = u.connection_id
        ),
        emitted AS (
          INSERT INTO platform_events (public_id, account_id, type, summary, data, connection_id, source_id, request_id)
          SELECT public_id, account_id, type, summary, data, connection_id, source_id, request_id FROM ${events}
          RETURNING id, account_id, type
        ),
        fanned AS (${fanOutSql(sql`emitted`)}),
        sending AS (SELECT (${queueWebhookSendingSql(sql`fanned`)}) AS n WHERE EXISTS (SELECT 1 FROM fanned))
        SELECT (SELECT count(*) FROM emitted) AS emitted, (SELECT n FROM sending) AS sending`,
  );
}

type HealthRow = PipelineHealthState & { sourceId: number; connectionId: number };

/**
 * The pipelines' current states, their rows locked: the existing rows first (one statement, the usual
 * case), then the missing ones created and locked. Every lock taken in (source, connection) order, and
 * inserts only after the existing rows are held, so batches of several processes never wait in a
 * circle. Only missing rows are offered to the INSERT: each row offered draws an id from the sequence,
 * conflict or not, and an `ON CONFLICT DO NOTHING` of every pipeline in every batch would spend the int
 * ids of pipeline_health at the rate of batches.
 */
async function lockOrCreate(client: pg.PoolClient, pipelines: readonly PipelineRef[]): Promise<Map<string, PipelineHealthState>> {
  const { rows: existing } = await query<HealthRow>(client, lockStatement(pipelines));
  const found = new Set(existing.map(pipelineKey));
  const missing = pipelines.filter((p) => !found.has(pipelineKey(p)));
  let created: HealthRow[] = [];
  if (missing.length > 0) {
    // Another process may be creating the same rows: ON CONFLICT waits for it, then leaves its row.
    await query(
      client,
      sql`INSERT INTO pipeline_health (source_id, connection_id)
          SELECT source_id, connection_id FROM ${keys(missing)} ORDER BY source_id, connection_id
          ON CONFLICT (source_id, connection_id) DO NOTHING`,
    );
    created = (await query<HealthRow>(client, lockStatement(missing))).rows;
  }
  return new Map([...existing, ...created].map(({ sourceId, connectionId, ...state }) => [pipelineKey({ sourceId, connectionId }), state]));
}

function lockStatement(pipelines: readonly PipelineRef[]): Sql {
  return sql`
  SELECT h.source_id AS "sourceId", h.connection_id AS "connectionId", h.state, h.consecutive_errors AS "consecutiveErrors"
    FROM pipeline_health h JOIN ${keys(pipelines)} USING (source_id, connection_id)
   ORDER BY h.source_id, h.connection_id
     FOR UPDATE OF h`;
}

function keys(pipelines: readonly PipelineRef[]): Sql {
  return rows(
    'p',
    { sourceId: 'int', connectionId: 'int' },
    pipelines.map((p) => ({ sourceId: p.sourceId, connectionId: p.connectionId })),
  );
}
