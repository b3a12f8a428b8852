import type pg from 'pg';
import { Batcher } from '../db/batcher.js';
import { requestBodySql } from '../db/history/request-body.js';
import { query, rows, sql, type Sql } from '../db/sql.js';

/** A pending attempt as the sending loop needs it: the event, where it goes, and how it is bound. */
export interface ClaimedAttempt {
  /** pending_deliveries.id */
  id: string;
  requestId: string;
  attempt: number;
  replayOfDeliveryId: string | null;
  /** The destination's URL now (a replay goes to the current one too). */
  url: string;
  destinationConnectionId: number;
  /** Null once past RAW_BODY_RETENTION_DAYS. */
  body: string | null;
  contentType: string | null;
  accountId: number;
  connectionId: number | null;
  /** Null when the source is gone. */
  sourceId: number | null;
  platform: string | null;
  /** The binding's event types; null when the source is no longer bound to the destination. */
  eventTypes: string[] | null;
}

/** What became of a pending attempt: its delivery row (none when it was not to be sent), and its retry. */
export interface AttemptRecord {
  pendingId: string;
  destinationId: number;
  requestId: string;
  delivery: {
    destinationUrl: string;
    accountId: number;
    connectionId: number;
    sourceId: number;
    eventType: string;
    toEmail: string;
    status: 'success' | 'error';
    httpStatus: number | null;
    error: unknown;
    replayOfDeliveryId: string | null;
    attemptedAt: Date;
  } | null;
  retry: { attempt: number; dueAt: Date } | null;
}

/**
 * The forwarding outbox (`pending_deliveries`) as the sending loops use it: claims of due attempts, and
 * the record of each attempt's outcome, grouped across the loops of one worker process into one
 * statement per batch ({@link Batcher}). Recording an attempt deletes its pending row, writes its
 * delivery row and queues its retry in that one statement, so an attempt is recorded once or not at
 * all (then it is sent again, with the same event id).
 */
export class DeliveryStore {
  private readonly records: Batcher<AttemptRecord, void>;

  constructor(
    private readonly pool: pg.Pool,
    /** Builds the SQL that wakes a destination's loop at a retry's due time (its job's own rule). */
    private readonly wakeUps: (retried: Sql) => Sql,
  ) {
    this.records = new Batcher((items) => this.recordMany(items), { key: (i) => i.pendingId, isolateFailures: true, maxBatch: 500, concurrency: 2 });
  }

  /**
   * Up to `limit` attempts of the destination that are due, oldest first, leaving out those this loop
   * already holds (`holding`). Only one loop runs per destination (its jobs share a named queue), so a
   * claim needs no lock. The due attempts are picked first, in the outbox index's order (a slow
   * destination's backlog is long), then joined to their requests; `NOT IN (SELECT unnest(...))` is a
   * hashed anti-join, where `<> ALL(array)` compared each row with every id held.
   */
  async claim(destinationId: number, holding: readonly string[], limit: number): Promise<ClaimedAttempt[]> {
    const { rows: claimed } = await query<ClaimedAttempt>(
      this.pool,
      sql`
      WITH due AS MATERIALIZED (
        SELECT id, request_id, attempt, replay_of_delivery_id, destination_id, due_at FROM pending_deliveries
         WHERE destination_id = ${destinationId} AND due_at <= now() AND id NOT IN (SELECT unnest(${holding}::bigint[]))
         ORDER BY due_at, id
         LIMIT ${limit}
      )
      SELECT p.id, p.request_id AS "requestId", p.attempt, p.replay_of_delivery_id AS "replayOfDeliveryId",
             d.url, d.connection_id AS "destinationConnectionId",
             ${requestBodySql('r')} AS body, r.content_type AS "contentType", r.account_id AS "accountId", r.connection_id AS "connectionId",
             r.source_id AS "sourceId", s.platform, b.event_types AS "eventTypes"
        FROM due p
        JOIN destinations d ON d.id = p.destination_id
        -- No foreign key keeps a request (history partitions): an attempt whose request is gone is claimed and
        -- recorded as nothing to send, which ends it.
        LEFT JOIN requests r ON r.id = p.request_id
        LEFT JOIN sources s ON s.id = r.source_id
        LEFT JOIN destination_bindings b ON b.source_id = r.source_id AND b.destination_id = p.destination_id
       ORDER BY p.due_at, p.id`,
    );
    return claimed;
  }

  /**
   * Counts a failure on our side of the pending attempt (src/jobs/outbox-loop.ts `setAside`) and moves it
   * back n seconds after its nth, with its loop's wake-up. Resolves to the failures so far, or undefined
   * when the attempt is no longer pending.
   */
  async countInternalFailure(pendingId: string): Promise<number | undefined> {
    const { rows: counted } = await query<{ failures: number }>(
      this.pool,
      sql`WITH counted AS (
            UPDATE pending_deliveries SET internal_failures = internal_failures + 1, due_at = now() + make_interval(secs => internal_failures + 1)
             WHERE id = ${pendingId}::bigint
            RETURNING destination_id, due_at, internal_failures
          ),
          retried AS (SELECT destination_id, due_at FROM counted)
          SELECT internal_failures AS failures, (${this.wakeUps(sql`retried`)}) AS woken FROM counted`,
    );
    return counted[0]?.failures;
  }

  /** Records an attempt's outcome; resolves once committed. */
  record(outcome: AttemptRecord): Promise<void> {
    return this.records.load(outcome);
  }

  private async recordMany(items: AttemptRecord[]): Promise<void[]> {
    const outcomes = rows(
      'o',
      {
        pendingId: 'bigint',
        destinationId: 'int',
        requestId: 'bigint',
        destinationUrl: 'text',
        accountId: 'int',
        connectionId: 'int',
        sourceId: 'int',
        eventType: 'text',
        toEmail: 'text',
        status: 'text',
        httpStatus: 'int',
        error: 'jsonb',
        replayOf: 'bigint',
        attemptedAt: 'timestamptz',
        retryAttempt: 'int',
        retryDueAt: 'timestamptz',
      },
      items.map(({ pendingId, destinationId, requestId, delivery, retry }) => ({
        pendingId,
        destinationId,
        requestId,
        destinationUrl: delivery?.destinationUrl ?? null,
        accountId: delivery?.accountId ?? null,
        connectionId: delivery?.connectionId ?? null,
        sourceId: delivery?.sourceId ?? null,
        eventType: delivery?.eventType ?? null,
        toEmail: delivery?.toEmail ?? null,
        status: delivery?.status ?? null,
        httpStatus: delivery?.httpStatus ?? null,
        error: delivery?.error ?? null,
        replayOf: delivery?.replayOfDeliveryId ?? null,
        attemptedAt: delivery?.attemptedAt ?? null,
        retryAttempt: retry?.attempt ?? null,
        retryDueAt: retry?.dueAt ?? null,
      })),
    );
    await query(this.pool, recordStatement(outcomes, this.wakeUps(sql`retried`)));
    return items.map(() => undefined);
  }
}

// Only attempts whose pending row this statement deletes are recorded: an attempt recorded twice (a
// loop that lost its job's lock and another that took it over) writes one delivery. The retry's wake-up
// is queued in the same statement, so a retry is never left without one.
function recordStatement(outcomes: Sql, wakeUps: Sql): Sql {
  return sql`
  WITH outcome AS (SELECT * FROM ${outcomes}),
  cleared AS (
    DELETE FROM pending_deliveries p USING outcome o WHERE p.id = o.pending_id RETURNING p.id
  ),
  delivered AS (
    INSERT INTO deliveries (account_id, destination_id, destination_url, connection_id, source_id, request_id, event_type, to_email,
                            status, http_status, error, replay_of_delivery_id, created_at)
    SELECT o.account_id, o.destination_id, o.destination_url, o.connection_id, o.source_id, o.request_id, o.event_type, o.to_email,
           o.status::delivery_status, o.http_status, o.error, o.replay_of, o.attempted_at
      FROM outcome o JOIN cleared c ON c.id = o.pending_id
     WHERE o.status IS NOT NULL
  ),
  retried AS (
    INSERT INTO pending_deliveries (destination_id, request_id, attempt, due_at)
    SELECT o.destination_id, o.request_id, o.retry_attempt, o.retry_due_at
      FROM outcome o JOIN cleared c ON c.id = o.pending_id
     WHERE o.retry_due_at IS NOT NULL
    RETURNING destination_id, due_at
  ),
  woken AS (SELECT (${wakeUps}) AS n WHERE EXISTS (SELECT 1 FROM retried))
  SELECT (SELECT count(*) FROM cleared) AS cleared, (SELECT n FROM woken) AS woken`;
}
