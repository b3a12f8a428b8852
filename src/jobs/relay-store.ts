import type pg from 'pg';
import { requestBodySql } from '../db/history/request-body.js';
import { query, sql, type Sql } from '../db/sql.js';
import { withTransaction } from '../db/transaction.js';
import type { LeadCategory } from '../domain/reply-relay.js';

/** A reply of a source bound to a reply relay, as the scheduling job reads it. */
export interface RelayedRequest {
  requestId: string;
  /** Null once past RAW_BODY_RETENTION_DAYS. */
  body: string | null;
  platform: string;
  sourceId: number;
  accountId: number;
  connectionId: number;
  relayId: number;
  delayMinutes: number;
}

/** An execution with what its send needs: the relay as it is now, and its request. */
export interface ExecutionToSend {
  id: string;
  status: string;
  attempts: number;
  messageId: string;
  nextAttemptAt: Date | null;
  sendingSince: Date | null;
  requestId: string;
  connectionId: number;
  relayId: number;
  ccEmail: string;
  description: string;
  bodyTemplates: string[];
  categoryAllowlist: LeadCategory[];
  /** Null once past RAW_BODY_RETENTION_DAYS. */
  body: string | null;
  receivedAt: Date;
  sourceId: number;
  platform: string;
}

interface AttemptLogEntry {
  at: string;
  outcome: 'sent' | 'failed' | 'interrupted';
  error?: string;
  smtpCode?: number;
  response?: string;
}

/** The SQL of reply relays' executions: one row per relay and reply, moved by its send job. */
export class RelayStore {
  constructor(private readonly pool: pg.Pool) {}

  /** The request with its source's reply relay (within its own connection), or undefined when it has none. */
  async relayedRequest(requestId: number): Promise<RelayedRequest | undefined> {
    const { rows } = await query<RelayedRequest>(
      this.pool,
      sql`SELECT r.id::text AS "requestId", ${requestBodySql('r')} AS body, s.platform, s.id AS "sourceId", r.account_id AS "accountId", s.connection_id AS "connectionId",
                 rr.id AS "relayId", rr.delay_minutes AS "delayMinutes"
            FROM requests r
            JOIN sources s ON s.id = r.source_id
            JOIN reply_relays rr ON rr.id = s.reply_relay_id AND rr.connection_id = s.connection_id
           WHERE r.id = ${requestId}`,
    );
    return rows[0];
  }

  /**
   * Writes the execution of a reply and queues its send job (`queueSend` over the inserted row) in one
   * statement; a reply whose event key the relay already holds (the same payload again) gets a skipped
   * row naming the first request instead. False when it wrote nothing and the request has no row yet:
   * a duplicate committed while the statement ran, which a second call sees. An execution's time is its
   * request's: relay_executions is partitioned by it, so its unique (relay, request) holds across partitions.
   */
  async schedule(input: { request: RelayedRequest; eventKey: string; messageId: string; queueSend: (inserted: Sql) => Sql }): Promise<boolean> {
    const { request, eventKey } = input;
    const values = sql`${request.relayId}::int, ${request.requestId}::bigint, ${request.accountId}::int, ${request.connectionId}::int`;
    // One reply per relay and event key, whatever the partitions its requests fall in (a unique index holds
    // only within one): the key's lock, then a statement that sees every execution committed before it.
    const rows = await withTransaction(this.pool, async (client) => {
      await query(client, sql`SELECT pg_advisory_xact_lock(hashtextextended(${`relay:${request.relayId}:${eventKey}`}, 0))`);
      return (await query<{ scheduled: number; duplicate: number; existing: number }>(client, this.scheduleStatement(input, values))).rows;
    });
    const row = rows[0]!;
    // The request had its row already when the job ran before.
    return row.scheduled + row.duplicate + row.existing > 0;
  }

  private scheduleStatement(input: { request: RelayedRequest; eventKey: string; messageId: string; queueSend: (inserted: Sql) => Sql }, values: Sql): Sql {
    const { request, eventKey, messageId } = input;
    return sql`
      WITH inserted AS (
        INSERT INTO relay_executions (relay_id, request_id, account_id, connection_id, event_key, message_id, run_at, created_at)
        SELECT ${values}, ${eventKey}, ${messageId}, r.created_at + make_interval(mins => ${request.delayMinutes}::int), r.created_at
          FROM requests r WHERE r.id = ${request.requestId}::bigint
           AND NOT EXISTS (SELECT 1 FROM relay_executions WHERE relay_id = ${request.relayId}::int AND event_key = ${eventKey})
        ON CONFLICT DO NOTHING
        RETURNING id, run_at
      ),
      first AS (
        SELECT request_id FROM relay_executions WHERE relay_id = ${request.relayId}::int AND event_key = ${eventKey} AND request_id <> ${request.requestId}::bigint
      ),
      duplicate AS (
        INSERT INTO relay_executions (relay_id, request_id, account_id, connection_id, status, reason, message_id, run_at, created_at)
        SELECT ${values}, 'skipped', 'the same reply as request ' || first.request_id || ', relayed once', ${messageId}, now(), r.created_at
          FROM first, requests r
         WHERE r.id = ${request.requestId}::bigint AND NOT EXISTS (SELECT 1 FROM relay_executions WHERE relay_id = ${request.relayId}::int AND request_id = ${request.requestId}::bigint)
        ON CONFLICT DO NOTHING
        RETURNING id
      ),
      queued AS (${input.queueSend(sql`inserted`)})
      SELECT (SELECT count(*)::int FROM inserted) AS scheduled, (SELECT count(*)::int FROM duplicate) AS duplicate,
             (SELECT count(*)::int FROM relay_executions WHERE relay_id = ${request.relayId}::int AND request_id = ${request.requestId}::bigint) AS existing,
             (SELECT count(*) FROM queued) AS queued`;
  }

  /** Records a reply whose execution could not be scheduled (a failure on our side no retry changes) as a failed execution saying why. */
  async failSchedule(request: RelayedRequest, messageId: string, message: string): Promise<void> {
    const reason = `Not scheduled: failed on our side and not retried automatically: ${message}`;
    await query(
      this.pool,
      sql`INSERT INTO relay_executions (relay_id, request_id, account_id, connection_id, status, reason, message_id, run_at, created_at)
          SELECT ${request.relayId}::int, ${request.requestId}::bigint, ${request.accountId}::int, ${request.connectionId}::int, 'failed', ${reason}, ${messageId}, now(), r.created_at
            FROM requests r WHERE r.id = ${request.requestId}::bigint
          ON CONFLICT DO NOTHING`,
    );
  }

  async execution(executionId: number): Promise<ExecutionToSend | undefined> {
    const { rows } = await query<ExecutionToSend>(
      this.pool,
      sql`SELECT e.id::text, e.status, e.attempts, e.message_id AS "messageId", e.next_attempt_at AS "nextAttemptAt", e.sending_since AS "sendingSince",
                 e.request_id::text AS "requestId", e.connection_id AS "connectionId", rr.id AS "relayId", rr.cc_email AS "ccEmail",
                 rr.description, rr.body_templates AS "bodyTemplates", rr.category_allowlist AS "categoryAllowlist",
                 ${requestBodySql('r')} AS body, r.created_at AS "receivedAt", r.source_id AS "sourceId", s.platform
            FROM relay_executions e
            JOIN reply_relays rr ON rr.id = e.relay_id
            JOIN requests r ON r.id = e.request_id
            JOIN sources s ON s.id = r.source_id
           WHERE e.id = ${executionId}`,
    );
    return rows[0];
  }

  /** The newest lead-category signal stored for the lead on this connection. */
  async storedCategory(connectionId: number, contact: string): Promise<{ category: LeadCategory; at: Date } | null> {
    const { rows } = await query<{ id: string | null; name: string; at: Date }>(
      this.pool,
      sql`SELECT category_id AS id, category_name AS name, created_at AS at FROM lead_category_signals
           WHERE connection_id = ${connectionId} AND contact = ${contact}
           ORDER BY created_at DESC, id DESC LIMIT 1`,
    );
    const row = rows[0];
    return row ? { category: { id: row.id, name: row.name }, at: row.at } : null;
  }

  async skip(executionId: number, reason: string): Promise<void> {
    await query(
      this.pool,
      sql`UPDATE relay_executions SET status = 'skipped', reason = ${reason}, next_attempt_at = NULL, updated_at = now() WHERE id = ${executionId}`,
    );
  }

  /**
   * Counts an attempt about to go out and notes that it is in flight; an attempt a dead worker left in
   * flight is logged as interrupted (its email may or may not have gone: the next one has the same Message-ID).
   */
  async startAttempt(executionId: number, unknownPlaceholders: string[]): Promise<void> {
    const interrupted = logEntry({ at: new Date().toISOString(), outcome: 'interrupted', error: 'the worker stopped during this attempt' });
    await query(
      this.pool,
      sql`UPDATE relay_executions
             SET attempts = attempts + 1, unknown_placeholders = ${unknownPlaceholders}::text[], updated_at = now(),
                 attempt_log = CASE WHEN sending_since IS NOT NULL THEN attempt_log || ${interrupted} ELSE attempt_log END,
                 sending_since = now()
           WHERE id = ${executionId}`,
    );
  }

  /**
   * Ends an execution that failed on our side for a reason no retry changes as `failed` for good, its
   * attempts as counted; an execution already final (sent, skipped, failed for good) keeps its outcome.
   */
  async failForGood(executionId: number, reason: string): Promise<void> {
    const entry = logEntry({ at: new Date().toISOString(), outcome: 'failed', error: reason });
    await query(
      this.pool,
      sql`UPDATE relay_executions
             SET status = 'failed', reason = ${reason}, next_attempt_at = NULL, sending_since = NULL, attempt_log = attempt_log || ${entry}, updated_at = now()
           WHERE id = ${executionId} AND status NOT IN ('sent', 'skipped') AND NOT (status = 'failed' AND next_attempt_at IS NULL)`,
    );
  }

  /** Records an attempt's outcome: sent; failed with its next attempt's time; or failed for good (`retryAt` null). */
  async record(
    executionId: number,
    outcome: { status: 'sent'; response: string } | { status: 'failed'; reason: string; smtpCode: number | undefined; retryAt: Date | null },
    options: { counted: boolean },
  ): Promise<void> {
    const at = new Date().toISOString();
    const entry =
      outcome.status === 'sent'
        ? logEntry({ at, outcome: 'sent', response: outcome.response })
        : logEntry({ at, outcome: 'failed', error: outcome.reason, ...(outcome.smtpCode !== undefined ? { smtpCode: outcome.smtpCode } : {}) });
    const fields =
      outcome.status === 'sent'
        ? sql`status = 'sent', reason = NULL, smtp_response = ${outcome.response}, sent_at = now(), next_attempt_at = NULL`
        : sql`status = 'failed', reason = ${outcome.reason}, next_attempt_at = ${outcome.retryAt}::timestamptz`;
    await query(
      this.pool,
      sql`UPDATE relay_executions
             SET ${fields}, attempts = attempts + ${options.counted ? 0 : 1}, sending_since = NULL,
                 attempt_log = attempt_log || ${entry}, updated_at = now()
           WHERE id = ${executionId}`,
    );
  }
}

function logEntry(entry: AttemptLogEntry): Sql {
  return sql`jsonb_build_array(${JSON.stringify(entry)}::jsonb)`;
}
