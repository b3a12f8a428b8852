import type pg from 'pg';
import { Batcher } from '../db/batcher.js';
import { query, rows, sql, type Sql } from '../db/sql.js';
import { withTransaction } from '../db/transaction.js';
import { UNRECOVERABLE_AFTER } from '../domain/job-failure.js';
import { endpointAfter, tallyOutcomes, type WebhookAttemptOutcome } from '../domain/webhook-delivery.js';

/** A due delivery as the sending loop needs it: the event's body fields, where it goes, and how it is signed. */
export interface ClaimedWebhookDelivery {
  /** webhook_deliveries.id */
  id: string;
  /** `svcwhd_` id: the Service-Delivery-Id header. */
  publicId: string;
  /** This attempt's number (1 = the first). */
  attempt: number;
  /** The endpoint's URL now (a retry after an update goes to the new one). */
  url: string;
  secretEncrypted: string;
  /** The rotated-out secret while it still signs; null otherwise. */
  previousSecretEncrypted: string | null;
  event: { id: string; type: string; summary: string; data: unknown; created: Date };
}

/** A loop's claim: its endpoint, what it holds in flight, and how many more it takes. */
interface ClaimRequest {
  endpointId: number;
  holding: readonly string[];
  limit: number;
}

/** What one attempt made of its delivery. */
export interface WebhookAttemptRecord {
  id: string;
  endpointId: number;
  outcome: WebhookAttemptOutcome;
  attemptedAt: Date;
}

/** How a delivery's public id is made in SQL: `svcwhd_` and 32 random hex digits. */
export const DELIVERY_PUBLIC_ID_SQL = sql`'svcwhd_' || replace(gen_random_uuid()::text, '-', '')`;

/** The message of a delivery closed without another attempt because its endpoint went away. */
export const CLOSED_MESSAGE = {
  disabled: 'Not attempted again: the endpoint was disabled',
  deleted: 'Not attempted again: the endpoint was deleted',
} as const;

/**
 * SQL that closes the PENDING deliveries of the endpoints in `endpointIds` (an int[] expression) as DEAD,
 * without counting them against the endpoint: when it is disabled (replays and test pings asked for
 * since stay, as the customer asked for them) or deleted (all of them).
 */
export function closePendingSql(endpointIds: Sql, why: keyof typeof CLOSED_MESSAGE): Sql {
  const which = why === 'disabled' ? sql`AND replay_of_delivery_id IS NULL` : sql``;
  return sql`UPDATE webhook_deliveries SET status = 'DEAD', next_attempt_at = NULL, last_error = ${CLOSED_MESSAGE[why]}, updated_at = now()
              WHERE endpoint_id = ANY(${endpointIds}) AND status = 'PENDING' ${which}`;
}

/**
 * Platform webhook deliveries as the sending loops use them: claims of due deliveries, and the record of
 * each attempt, grouped across the loops of one worker process into one transaction per batch
 * ({@link Batcher}). Recording an attempt updates its delivery (only while it is PENDING: an attempt is
 * recorded once), queues its retry's wake-up, and moves its endpoint's count of DEAD deliveries in a row
 * by the pure rule of src/domain/webhook-delivery.ts, disabling it at 20 or on a 410.
 */
export class WebhookDeliveryStore {
  private readonly records: Batcher<WebhookAttemptRecord, void>;
  private readonly claims: Batcher<ClaimRequest, ClaimedWebhookDelivery[]>;

  constructor(
    private readonly pool: pg.Pool,
    /** Builds the SQL that wakes an endpoint's loop at a retry's due time (its job's own rule). */
    private readonly wakeUps: (retried: Sql) => Sql,
  ) {
    this.records = new Batcher((items) => this.recordMany(items), { key: (i) => i.id, isolateFailures: true, maxBatch: 500, concurrency: 2 });
    // One claim per endpoint in a batch (its loop waits for its answer before it claims again).
    this.claims = new Batcher((requests) => this.claimMany(requests), { key: (r) => r.endpointId, maxBatch: 200, concurrency: 2 });
  }

  /**
   * Up to `limit` due deliveries of the endpoint, oldest first, leaving out those this loop holds. One
   * loop runs per endpoint (its jobs share a named queue), so a claim needs no lock. The claims of the
   * process's loops are grouped into one statement per batch: fifty endpoints' loops claiming a few
   * rows each would otherwise hold most of the pool. The picked rows are joined back by their whole key
   * (id and created_at: the table is partitioned) and ordered by the picked columns: ordered by the joined
   * rows, PostgreSQL chose to sort every row of the table (a 17 s claim at 150,000 rows, bench:webhooks x10).
   */
  claim(endpointId: number, holding: readonly string[], limit: number): Promise<ClaimedWebhookDelivery[]> {
    return this.claims.load({ endpointId, holding, limit });
  }

  private async claimMany(requests: ClaimRequest[]): Promise<ClaimedWebhookDelivery[][]> {
    const wanted = rows(
      'w',
      { endpointId: 'int', take: 'int' },
      requests.map((r) => ({ endpointId: r.endpointId, take: r.limit })),
    );
    // Delivery ids are unique across endpoints: one list of what every loop holds.
    const holding = requests.flatMap((r) => r.holding);
    const { rows: claimed } = await query<ClaimedWebhookDelivery & { endpointId: number }>(
      this.pool,
      sql`
      WITH due AS MATERIALIZED (
        SELECT due.* FROM ${wanted}
        CROSS JOIN LATERAL (
          SELECT id, created_at, next_attempt_at FROM webhook_deliveries
           WHERE endpoint_id = w.endpoint_id AND status = 'PENDING' AND next_attempt_at <= now() AND id NOT IN (SELECT unnest(${holding}::bigint[]))
           ORDER BY next_attempt_at, id
           LIMIT w.take
        ) due
      )
      SELECT d.id::text, d.endpoint_id AS "endpointId", d.public_id AS "publicId", d.attempts + 1 AS attempt, e.url, e.secret_encrypted AS "secretEncrypted",
             CASE WHEN e.previous_secret_expires_at > now() THEN e.previous_secret_encrypted END AS "previousSecretEncrypted",
             json_build_object('id', ev.public_id, 'type', ev.type, 'summary', ev.summary, 'data', ev.data, 'created', ev.created_at) AS event
        FROM due JOIN webhook_deliveries d ON d.id = due.id AND d.created_at = due.created_at
        JOIN webhook_endpoints e ON e.id = d.endpoint_id
        JOIN platform_events ev ON ev.id = d.event_id
       ORDER BY due.next_attempt_at, due.id`,
    );
    // json_build_object gives the timestamp as text.
    const byEndpoint = new Map<number, ClaimedWebhookDelivery[]>();
    for (const { endpointId, ...row } of claimed) {
      byEndpoint.set(endpointId, [...(byEndpoint.get(endpointId) ?? []), { ...row, event: { ...row.event, created: new Date(row.event.created) } }]);
    }
    return requests.map((r) => byEndpoint.get(r.endpointId) ?? []);
  }

  /**
   * Counts a failure on our side of the PENDING delivery (src/jobs/outbox-loop.ts `setAside`): it is due
   * again n seconds after its nth, with its loop's wake-up, and its {@link UNRECOVERABLE_AFTER}th makes it DEAD with `finalMessage`, not counted against the endpoint (the
   * endpoint was not at fault) nor as an attempt (none was recorded; one may have reached the endpoint
   * before what failed). Resolves to the failures so far, or undefined when the delivery is no longer PENDING.
   */
  async countInternalFailure(id: string, finalMessage: string): Promise<number | undefined> {
    const { rows: counted } = await query<{ failures: number }>(
      this.pool,
      sql`WITH counted AS (
            UPDATE webhook_deliveries d
               SET internal_failures = d.internal_failures + 1, updated_at = now(),
                   status = CASE WHEN d.internal_failures + 1 >= ${UNRECOVERABLE_AFTER} THEN 'DEAD'::webhook_delivery_status ELSE d.status END,
                   last_error = CASE WHEN d.internal_failures + 1 >= ${UNRECOVERABLE_AFTER} THEN ${finalMessage} ELSE d.last_error END,
                   next_attempt_at = CASE WHEN d.internal_failures + 1 < ${UNRECOVERABLE_AFTER} THEN now() + make_interval(secs => d.internal_failures + 1) END
             WHERE d.id = ${id}::bigint AND d.status = 'PENDING'
            RETURNING d.endpoint_id, d.next_attempt_at AS due_at, d.internal_failures
          ),
          retried AS (SELECT endpoint_id, due_at FROM counted WHERE due_at IS NOT NULL)
          SELECT internal_failures AS failures, (${this.wakeUps(sql`retried`)}) AS woken FROM counted`,
    );
    return counted[0]?.failures;
  }

  /** Records an attempt; resolves once committed. */
  record(attempt: WebhookAttemptRecord): Promise<void> {
    return this.records.load(attempt);
  }

  private async recordMany(items: WebhookAttemptRecord[]): Promise<void[]> {
    const endpointIds = [...new Set(items.map((i) => i.endpointId))].sort((a, b) => a - b);
    await withTransaction(this.pool, async (client) => {
      // Endpoints first, in id order: a PATCH or DELETE locks its endpoint before its deliveries too. NO KEY
      // UPDATE, as an UPDATE of these columns takes: a fan-out's inserts (their foreign keys' KEY SHARE
      // locks) never wait for it, nor it for them.
      const { rows: endpoints } = await query<{ id: number; consecutiveDead: number; isActive: boolean }>(
        client,
        sql`SELECT id, consecutive_dead_count AS "consecutiveDead", is_active AS "isActive" FROM webhook_endpoints
             WHERE id = ANY(${endpointIds}::int[]) ORDER BY id FOR NO KEY UPDATE`,
      );
      const { rows: recorded } = await query<{ id: string }>(client, attemptsStatement(items, this.wakeUps(sql`retried`)));
      const counted = new Set(recorded.map((r) => r.id));
      const changes = endpoints.map((endpoint) => {
        const outcomes = items.filter((i) => i.endpointId === endpoint.id && counted.has(i.id)).map((i) => i.outcome);
        return { id: endpoint.id, ...endpointAfter(endpoint, tallyOutcomes(outcomes)) };
      });
      await query(client, endpointsStatement(changes));
    });
    return items.map(() => undefined);
  }
}

// Only deliveries still PENDING are updated: an attempt recorded twice (a loop that lost its job's lock
// and another that took it over), or one of a delivery closed meanwhile, changes nothing. The retry's
// wake-up is queued in the same statement, so a retry is never left without one.
function attemptsStatement(items: readonly WebhookAttemptRecord[], wakeUps: Sql): Sql {
  const outcomes = rows(
    'o',
    {
      id: 'bigint',
      status: 'text',
      httpStatus: 'int',
      error: 'text',
      excerpt: 'text',
      nextAttemptAt: 'timestamptz',
      attemptedAt: 'timestamptz',
    },
    items.map(({ id, outcome, attemptedAt }) => ({
      id,
      status: outcome.status,
      httpStatus: outcome.httpStatus,
      error: outcome.error,
      excerpt: outcome.responseExcerpt,
      nextAttemptAt: outcome.retryInMs === null ? null : new Date(attemptedAt.getTime() + outcome.retryInMs),
      attemptedAt,
    })),
  );
  return sql`
  WITH updated AS (
    UPDATE webhook_deliveries d
       SET status = o.status::webhook_delivery_status, attempts = d.attempts + 1, last_attempt_at = o.attempted_at,
           last_http_status = o.http_status, last_error = o.error, response_excerpt = o.excerpt,
           next_attempt_at = CASE WHEN o.status = 'PENDING' THEN o.next_attempt_at END, updated_at = now()
      FROM ${outcomes}
     WHERE d.id = o.id AND d.status = 'PENDING'
    RETURNING d.id, d.endpoint_id, d.status, d.next_attempt_at
  ),
  retried AS (SELECT endpoint_id, next_attempt_at AS due_at FROM updated WHERE status = 'PENDING'),
  woken AS (SELECT (${wakeUps}) AS n WHERE EXISTS (SELECT 1 FROM retried))
  SELECT id::text, (SELECT n FROM woken) AS woken FROM updated`;
}

// The new counts; an endpoint disabled now gets its reason and time, and its PENDING deliveries
// (the retries just recorded among them) are closed.
function endpointsStatement(changes: ReadonlyArray<{ id: number; consecutiveDead: number; disable: string | null }>): Sql {
  const counts = rows(
    'c',
    { id: 'int', consecutiveDead: 'int', disable: 'text' },
    changes.map((c) => ({ id: c.id, consecutiveDead: c.consecutiveDead, disable: c.disable })),
  );
  const disabled = changes.filter((c) => c.disable !== null).map((c) => c.id);
  return sql`
  WITH counted AS (
    UPDATE webhook_endpoints e
       SET consecutive_dead_count = c.consecutive_dead,
           is_active = e.is_active AND c.disable IS NULL,
           disabled_reason = COALESCE(c.disable, e.disabled_reason),
           disabled_at = CASE WHEN c.disable IS NULL THEN e.disabled_at ELSE now() END,
           updated_at = CASE WHEN c.disable IS NULL THEN e.updated_at ELSE now() END
      FROM ${counts}
     WHERE e.id = c.id
    RETURNING e.id
  ),
  closed AS (${closePendingSql(sql`${disabled}::int[]`, 'disabled')} RETURNING id)
  SELECT (SELECT count(*) FROM counted) AS counted, (SELECT count(*) FROM closed) AS closed`;
}
