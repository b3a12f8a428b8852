import pg from 'pg';
import { Batcher } from '../db/batcher.js';
import { query, rows, sql, type Sql } from '../db/sql.js';
import { pendingOnArrivalSql, queueSendingSql } from '../jobs/delivery-outbox.js';
import { queueRelaySchedulingSql } from '../jobs/relay-scheduling.js';
import { queueDrainsSql } from '../jobs/sync-outbox.js';
import type { IngressTarget } from './path.js';

export type Acceptance = { accepted: true; requestId: number } | { accepted: false };

interface Pending {
  target: IngressTarget;
  body: string;
  contentType: string | null;
}

export interface AcceptorOptions {
  /** Batch statements in flight at once (each commits on its own); while they run, new requests gather into the next batch. */
  concurrency?: number;
  /** The most requests one statement takes. */
  maxBatch?: number;
}

/**
 * Commits accepted requests, grouped ({@link Batcher}): every request arriving while a commit is in
 * flight joins the next one, and each caller is answered after the commit that holds its row. One
 * statement per batch finds the sources, inserts the request rows (and their bodies, kept for a shorter time) with their waiting syncs and queues
 * their connections' drains (graphile-worker's `add_jobs` is plain SQL), so a request is either committed
 * with its sync to run or not at all.
 */
export class RequestAcceptor {
  private readonly pool: pg.Pool;
  private readonly batcher: Batcher<Pending, Acceptance>;

  constructor(databaseUrl: string, options: AcceptorOptions = {}, onError: (error: Error) => void = () => {}) {
    const concurrency = options.concurrency ?? 2;
    this.pool = new pg.Pool({ connectionString: databaseUrl, max: concurrency });
    // A dropped idle connection must not crash the process; the pool replaces it.
    this.pool.on('error', onError);
    this.batcher = new Batcher((batch) => this.commit(batch), { concurrency, maxBatch: options.maxBatch ?? 500 });
  }

  /** Resolves once the request is committed (or known to address no source); rejects if the commit failed. */
  accept(target: IngressTarget, body: string, contentType: string | null = null): Promise<Acceptance> {
    return this.batcher.load({ target, body, contentType });
  }

  async close(): Promise<void> {
    await this.batcher.drain();
    await this.pool.end();
  }

  /** One answer per batch entry: accepted with its request id, or addressing no live source. */
  private async commit(batch: Pending[]): Promise<Acceptance[]> {
    const input = rows(
      'i',
      { idx: 'int', code: 'text', legacy1: 'text', legacy2: 'text', body: 'text', contentType: 'text' },
      batch.map((p, idx) => ({
        idx,
        code: 'code' in p.target ? p.target.code : null,
        legacy1: 'legacy' in p.target ? p.target.legacy[0] : null,
        legacy2: 'legacy' in p.target ? p.target.legacy[1] : null,
        body: p.body,
        contentType: p.contentType,
      })),
    );
    const { rows: accepted } = await retryTransient(() => query<{ idx: number; id: string }>(this.pool, acceptStatement(input), 'ingress_accept'));
    const requestIds = new Map(accepted.map((r) => [r.idx, Number(r.id)]));
    return batch.map((_, i) => {
      const requestId = requestIds.get(i);
      return requestId === undefined ? { accepted: false } : { accepted: true, requestId };
    });
  }
}

/**
 * Runs `statement` again when PostgreSQL gave it up as a deadlock victim or a serialization failure (it
 * rolled it back whole, so running it again is safe): DDL of the history job (a partition's attach or a
 * table's move onto partitions) may briefly take locks in another order than the ingress, and a sequencer
 * should never see a 503 for that.
 */
async function retryTransient<T>(statement: () => Promise<T>, attempts = 3): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await statement();
    } catch (error) {
      const code = (error as { code?: string }).code;
      if (attempt >= attempts || (code !== '40P01' && code !== '40001')) throw error;
    }
  }
}

/**
 * One statement for a batch: find each request's source, then {@link acceptRowsSql}. Ids are drawn up
 * front so each row's waiting sync can name it; `matched` is materialised once (nextval is volatile). A
 * source whose connection was deleted accepts nothing.
 */
function acceptStatement(input: Sql): Sql {
  return acceptRowsSql({
    matched: sql`
      SELECT i.idx, nextval('requests_id_seq') AS id, s.id AS source_id, s.connection_id, c.account_id, s.ingress_code, s.reply_relay_id, i.body, i.content_type
        FROM ${input}
        JOIN sources s ON (i.code IS NOT NULL AND s.ingress_code = i.code)
                       OR (i.code IS NULL AND s.legacy_id_1 = i.legacy1 AND s.legacy_id_2 = i.legacy2)
        JOIN connections c ON c.id = s.connection_id AND c.deleted_at IS NULL`,
  });
}

/**
 * The statement that accepts requests, received or fetched by the backfill (src/jobs/backfill-store.ts):
 * `matched` selects one row per request (idx, id, source_id, connection_id, account_id, ingress_code,
 * reply_relay_id, body, content_type), after the data-modifying CTEs of `before` if any. It inserts the
 * request rows and their bodies (kept for a shorter time) with their waiting syncs (the `pending_syncs`
 * outbox), queues the drain of each connection (one job per connection and batch, replacing a waiting
 * one), writes the first attempt of each forwarding binding that does not wait for the CRM and queues its
 * destination's sending loop, queues the reply relay scheduling of requests whose source has a relay,
 * and notes the sources' last event time (a received one: what the backfill fetched was not). Data-modifying CTEs always run; `jobs`, `sending` and `relays`
 * are plain SELECTs, so the answer reads them to make them run. The sources' last_event_received_at moves
 * at most once a minute, so hot sources do not serialise batches on one row lock. Answers each request's
 * idx and id.
 */
export function acceptRowsSql({ before, matched, fetched = false }: { before?: Sql; matched: Sql; fetched?: boolean }): Sql {
  return sql`
  WITH ${before ? sql`${before},` : sql``}
  matched AS MATERIALIZED (${matched}),
  inserted AS (
    INSERT INTO requests (id, account_id, source_id, connection_id, path, content_type, fetched, created_at)
    SELECT id, account_id, source_id, connection_id, ingress_code, content_type, ${fetched}::boolean, now() FROM matched
  ),
  bodies AS (
    INSERT INTO request_bodies (request_id, created_at, body) SELECT id, now(), body FROM matched
  ),
  waiting AS (
    INSERT INTO pending_syncs (request_id, connection_id) SELECT id, connection_id FROM matched
  ),
  jobs AS (
    SELECT (${queueDrainsSql(sql`matched`)}) AS n
  ),
  forwarded AS (${pendingOnArrivalSql(sql`matched`)}),
  sending AS (
    SELECT (${queueSendingSql(sql`forwarded`)}) AS n WHERE EXISTS (SELECT 1 FROM forwarded)
  ),
  relays AS (
    SELECT (${queueRelaySchedulingSql(sql`matched`)}) AS n WHERE EXISTS (SELECT 1 FROM matched WHERE reply_relay_id IS NOT NULL)
  ),
  touched AS (
    UPDATE sources SET last_event_received_at = now()
     WHERE NOT ${fetched}::boolean AND id IN (SELECT source_id FROM matched)
       AND (last_event_received_at IS NULL OR last_event_received_at < now() - interval '1 minute')
  )
  SELECT m.idx, m.id, (SELECT n FROM jobs) AS jobs, (SELECT n FROM sending) AS sending, (SELECT n FROM relays) AS relays FROM matched m`;
}
