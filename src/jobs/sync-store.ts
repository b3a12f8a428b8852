import type pg from 'pg';

/** Request bodies one round holds at most (bodies reach 1 MB); octet_length reads a stored body's size without unpacking it. */
const ROUND_BODY_BYTES = 32 * 1024 * 1024;
import { Batcher } from '../db/batcher.js';
import { withTransaction } from '../db/transaction.js';
import { query, rows, sql, type Sql } from '../db/sql.js';
import { requestBodySql } from '../db/history/request-body.js';
import type { CrmState } from '../connectors/crm/index.js';
import { parseInbound, type ParseResult } from '../connectors/sequencers/index.js';
import type { FailureReason, PipelineRef } from '../domain/pipeline-health.js';
import { UNKNOWN_EVENT_TYPE } from '../connectors/sequencers/event.js';
import { leadOf, messageKeyOf } from '../connectors/sequencers/message-key.js';
import { pendingOnOutcomeSql, queueSendingSql } from './delivery-outbox.js';
import { recordPipelineOutcomes } from './pipeline-health-store.js';

export interface SyncRow {
  id: string;
  status: 'success' | 'warning' | 'error' | null;
  crmState: CrmState;
  attempts: number;
}

/** A request with its pipeline: what a drain needs to know before it writes its sync. */
export interface SyncContext {
  requestId: number;
  accountId: number;
  sourceId: number;
  connectionId: number;
  /** The CRM account (portal, org) the connection is connected to. */
  organizationId: string | null;
  platform: string;
  crm: string;
  syncEnabled: boolean;
  connectionDeleted: boolean;
  credentialsEncrypted: string | null;
  /** The connection's own CRM request budget (`crmRateLimit`), if it names one. */
  crmRateLimit: unknown;
  createOrUpdateCompany: boolean;
  createOrUpdateTask: boolean;
  assignContactOwner: boolean;
  crmObjectType: string | null;
  /** Null once past RAW_BODY_RETENTION_DAYS. */
  body: string | null;
  receivedAt: Date;
  /** Fetched from the sequencer by the backfill, not received. */
  fetched: boolean;
  /** Its source holds a sequencer account: the backfill reads its leads and messages (src/jobs/backfills__run.ts). */
  backfilled: boolean;
}

/** A waiting sync of the outbox (`pending_syncs`), as a drain claims it. */
export interface PendingSync {
  requestId: number;
  /** An asked-for retry: it may run again a sync whose outcome was an error. */
  retry: boolean;
  /** Runs that only waited for the connection's CRM budget. */
  waits: number;
  /** How long it has been due, by the database's clock. */
  dueForMs: number;
  /** Its request body's size. */
  bytes: number;
}

/** `done`: nothing to do (request gone, or its outcome already recorded). */
export type Loaded =
  { kind: 'done'; pending: PendingSync } | { kind: 'loaded'; pending: PendingSync; sync: SyncRow; context: SyncContext; parsed: ParseResult };

/** A sync's outcome; `crmState`: the state after the connector's last step, stored with it. */
export type Final = { status: 'success' | 'warning' | 'error'; error: Record<string, unknown> | null; failure?: FailureReason; crmState?: CrmState };

/**
 * The sync outbox (`pending_syncs`) and the sync rows, as the drains use them: claims of due syncs, a
 * round's loads, and its outcomes, grouped across the drains one worker process runs at once (the syncs
 * of a round share one statement or transaction per step, {@link Batcher}), so a worker's commits and
 * round trips grow with the batches, not the events. A batch that fails is run again one sync at a time,
 * so one bad row fails only its own sync.
 */
export class SyncStore {
  private readonly states: Batcher<{ syncId: string; state: CrmState }, void>;
  private readonly finishes: Batcher<Finish, void>;
  private readonly reschedules: Batcher<{ requestId: number; waitMs: number; waited: boolean }, void>;

  constructor(
    private readonly pool: pg.Pool,
    /** Builds the SQL that wakes a connection's drain when its rescheduled syncs fall due (its job's own rule). */
    private readonly wakeUps: (rescheduled: Sql) => Sql,
  ) {
    this.states = new Batcher((items) => this.saveStates(items), { key: (i) => i.syncId, isolateFailures: true, maxBatch: 200 });
    // One at a time per process: the batch locks its pipelines' health rows until it commits.
    this.finishes = new Batcher((items) => this.finishMany(items), { key: (i) => i.sync.id, isolateFailures: true, maxBatch: 200 });
    this.reschedules = new Batcher((items) => this.rescheduleMany(items), { key: (i) => i.requestId, isolateFailures: true, maxBatch: 500 });
  }

  /**
   * Up to `limit` waiting syncs of the connection that are due, oldest first, and within 32 MB of
   * request bodies (a round holds them). Only one drain runs per connection (its jobs share a named
   * queue), so a claim needs no lock: each sync of a round leaves the outbox with its outcome or moves to
   * a later due time before the next claim.
   */
  async claim(connectionId: number, limit: number): Promise<PendingSync[]> {
    const { rows: claimed } = await query<{ requestId: string; retry: boolean; waits: number; dueForMs: number; bytes: number }>(
      this.pool,
      sql`SELECT request_id AS "requestId", retry, waits, (extract(epoch FROM now() - due_at) * 1000)::float8 AS "dueForMs", bytes FROM (
            SELECT request_id, retry, waits, due_at, bytes, sum(bytes) OVER (ORDER BY due_at, request_id) - bytes AS before FROM (
              SELECT p.request_id, p.retry, p.waits, p.due_at, COALESCE(octet_length(${requestBodySql('r')}), 0) AS bytes
                FROM (SELECT * FROM pending_syncs WHERE connection_id = ${connectionId} AND due_at <= now() ORDER BY due_at, request_id LIMIT ${limit}) p
                -- No foreign key keeps a request (history partitions): a waiting sync whose request is gone is claimed, and forgotten.
                LEFT JOIN requests r ON r.id = p.request_id
            ) sized
          ) due
          WHERE before < ${ROUND_BODY_BYTES}
          ORDER BY due_at, request_id`,
    );
    return claimed.map((c) => ({ requestId: Number(c.requestId), retry: c.retry, waits: c.waits, dueForMs: c.dueForMs, bytes: c.bytes }));
  }

  /** How many of the connection's waiting syncs are due now, counted up to `limit`. */
  async countDue(connectionId: number, limit: number): Promise<number> {
    const { rows } = await query<{ n: number }>(
      this.pool,
      sql`SELECT count(*)::int AS n FROM (SELECT 1 FROM pending_syncs WHERE connection_id = ${connectionId} AND due_at <= now() LIMIT ${limit}) due`,
    );
    return rows[0]?.n ?? 0;
  }

  /**
   * The requests of a round and their pipelines, the parsed events, then in one statement the sync rows
   * (created on the first run, their attempts counted on every run) and the lead category signals (once
   * per request). A recorded outcome is `done`, unless this is an asked-for retry of an error; so is a
   * request that is gone (its outbox row went with it).
   */
  loadRound(claimed: PendingSync[]): Promise<Loaded[]> {
    return this.loadMany(claimed);
  }

  /** Drops the outbox rows of syncs with nothing to do. */
  async forget(requestIds: number[]): Promise<void> {
    await query(this.pool, sql`DELETE FROM pending_syncs WHERE request_id = ANY(${requestIds}::bigint[])`);
  }

  /**
   * Moves a waiting sync to when the CRM (or its budget) said to come back, counting a wait for the budget
   * as such (not a failure), and queues its connection's drain for then, in one statement.
   */
  reschedule(requestId: number, waitMs: number, waited: boolean): Promise<void> {
    return this.reschedules.load({ requestId, waitMs, waited });
  }

  /**
   * Counts a failure on our side of a waiting sync (src/jobs/syncs__drain.ts `setAside`) and moves it a
   * second later per failure so far, queueing its drain for then; the failures counted, or undefined when
   * the sync is no longer waiting.
   */
  async countInternalFailure(requestId: number): Promise<number | undefined> {
    const { rows } = await query<{ failures: number }>(
      this.pool,
      sql`WITH counted AS (
            UPDATE pending_syncs SET internal_failures = internal_failures + 1, due_at = now() + make_interval(secs => internal_failures + 1)
             WHERE request_id = ${requestId}
            RETURNING connection_id, due_at, internal_failures
          )
          SELECT internal_failures AS failures, (${this.wakeUps(sql`counted`)}) AS woken FROM counted`,
    );
    return rows[0]?.failures;
  }

  /**
   * Records an error outcome for a request whose sync failed on our side in a way no retry changes (a
   * value PostgreSQL refused, a programming error), with the pipeline's health, without the parsed event
   * (it may be what failed): the sync row is created if the failure came before it, and an outcome
   * already recorded stands, except an error a retry (`retry`) was asked to replace: the retry's failure
   * is its new outcome (and the sync counts as run for a bulk re-sync). The request's delayed forwarding
   * goes out as for any first outcome, never again for a retry.
   */
  async failUnrecoverable(requestId: number, retry: boolean, message: string): Promise<void> {
    const error = { message: `The sync failed on our side and will not be retried automatically: ${message}` };
    await withTransaction(this.pool, async (client) => {
      const { rows } = await query<PipelineRef & { recorded: boolean }>(
        client,
        sql`WITH target AS (
              SELECT r.id AS request_id, r.account_id, s.id AS source_id, c.id AS connection_id, s.platform, c.crm, r.created_at
                FROM requests r JOIN sources s ON s.id = r.source_id JOIN connections c ON c.id = s.connection_id
               WHERE r.id = ${requestId}
            ),
            recorded AS (
              INSERT INTO syncs (account_id, connection_id, source_id, request_id, platform, event_type, to_email, status, error, attempts, created_at, updated_at)
              SELECT account_id, connection_id, source_id, request_id, platform, ${UNKNOWN_EVENT_TYPE}, '', 'error', ${JSON.stringify(error)}::jsonb, 1, created_at, now()
                FROM target
              ON CONFLICT (request_id, created_at) DO UPDATE SET status = 'error', error = EXCLUDED.error, updated_at = now()
                WHERE syncs.status IS NULL OR (${retry}::boolean AND syncs.status = 'error')
              RETURNING request_id, source_id, event_type
            ),
            waiting AS (DELETE FROM pending_syncs WHERE request_id = ${requestId}),
            forwarded AS (${pendingOnOutcomeSql(sql`(SELECT request_id, source_id, event_type, false AS readable FROM recorded WHERE NOT ${retry}::boolean)`)}),
            sending AS (SELECT (${queueSendingSql(sql`forwarded`)}) AS n WHERE EXISTS (SELECT 1 FROM forwarded))
            SELECT account_id AS "accountId", source_id AS "sourceId", connection_id AS "connectionId", platform, crm,
                   EXISTS (SELECT 1 FROM recorded) AS recorded, (SELECT n FROM sending) AS sending
              FROM target`,
      );
      const target = rows[0];
      if (target?.recorded) await recordPipelineOutcomes(client, [{ pipeline: target, requestId, result: { written: false, reason: 'internal_error' } }]);
    });
  }

  /** Persists what the CRM steps created so far (syncs.crm_state). */
  saveState(syncId: string, state: CrmState): Promise<void> {
    return this.states.load({ syncId, state });
  }

  /**
   * Records the outcome and moves the pipeline's health, in one transaction: the health rows are locked,
   * so syncs of one pipeline count their errors one after another, and a transition stores its platform
   * event with it. An outcome another run recorded first stands, with its health update.
   */
  finish(sync: SyncRow, context: SyncContext, retry: boolean, final: Final): Promise<void> {
    return this.finishes.load({ sync, context, retry, final });
  }

  // Two statements, no transaction: the read, then one statement that upserts the sync rows and stores
  // the category signals of the rows still to be written.
  private async loadMany(items: PendingSync[]): Promise<Loaded[]> {
    const { rows: contexts } = await query<SyncContext & { requestId: string }>(this.pool, contextStatement(items.map((i) => i.requestId)));
    const byRequest = new Map(contexts.map((c) => [Number(c.requestId), { ...c, requestId: Number(c.requestId) }]));
    const parsedAll = items.flatMap((item) => {
      const context = byRequest.get(item.requestId);
      return context ? [{ item, context, parsed: parseInbound(context.platform, context.body) }] : [];
    });
    const duplicates = await this.recordMessages(parsedAll);
    const found = parsedAll.filter((f) => !duplicates.has(f.context.requestId));
    if (found.length === 0) return items.map((pending) => ({ kind: 'done' as const, pending }));

    const input = rows(
      'i',
      {
        accountId: 'int',
        connectionId: 'int',
        sourceId: 'int',
        requestId: 'bigint',
        platform: 'text',
        eventType: 'text',
        toEmail: 'text',
        createdAt: 'timestamptz',
        retry: 'boolean',
        categoryId: 'text',
        categoryName: 'text',
      },
      found.map(({ item, context, parsed }) => {
        const event = parsed.ok ? parsed.event : null;
        return {
          accountId: context.accountId,
          connectionId: context.connectionId,
          sourceId: context.sourceId,
          requestId: context.requestId,
          platform: context.platform,
          eventType: event?.eventType ?? 'UNKNOWN',
          toEmail: event?.identity ?? '',
          createdAt: context.receivedAt,
          retry: item.retry,
          categoryId: event?.leadCategory?.id ?? null,
          categoryName: event?.leadCategory?.name ?? null,
        };
      }),
    );
    const { rows: syncs } = await query<SyncRow & { requestId: string }>(this.pool, loadSyncsStatement(input));
    const syncOf = new Map(syncs.map(({ requestId, ...sync }) => [Number(requestId), sync]));
    const loaded = new Map(
      found.flatMap((f) => {
        const sync = syncOf.get(f.context.requestId)!;
        const live = sync.status === null || (f.item.retry && sync.status === 'error');
        return live ? [[f.item.requestId, { kind: 'loaded' as const, pending: f.item, sync, context: f.context, parsed: f.parsed }] as const] : [];
      }),
    );
    return items.map((pending) => loaded.get(pending.requestId) ?? { kind: 'done' as const, pending });
  }

  /**
   * For the requests of backfilled sources: the leads they name (whose history the backfill asks for)
   * and the sequencer messages they are, each message's first request owning its key. A request whose
   * message another request owns, one of the two fetched, is a duplicate: marked on the request and
   * answered here (it gets no sync). Two requests the sequencer itself posted twice stay two syncs, as
   * before there was a backfill.
   */
  private async recordMessages(loaded: Array<{ context: SyncContext; parsed: ParseResult }>): Promise<Set<number>> {
    const events = loaded.flatMap(({ context, parsed }) => (context.backfilled && parsed.ok ? [{ context, event: parsed.event }] : []));
    if (events.length === 0) return new Set();
    const leads = new Map<string, { sourceId: number; key: string; campaignId: string | null; leadId: string | null; contact: string; seenAt: Date }>();
    for (const { context, event } of events) {
      const lead = leadOf(event);
      leads.set(`${context.sourceId}:${lead.key}`, { sourceId: context.sourceId, ...lead, seenAt: context.receivedAt });
    }
    await query(this.pool, rememberLeadsStatement([...leads.values()]));
    const messages = events.flatMap(({ context, event }) => {
      const key = messageKeyOf(event);
      return key === null ? [] : [{ sourceId: context.sourceId, requestId: context.requestId, key, fetched: context.fetched, createdAt: context.receivedAt }];
    });
    if (messages.length === 0) return new Set();
    const input = rows('i', { sourceId: 'int', requestId: 'bigint', key: 'text', fetched: 'boolean', createdAt: 'timestamptz' }, messages);
    // The first request of a message owns its key (lowest id first within the batch); a second statement sees every owner.
    await query(
      this.pool,
      sql`INSERT INTO message_keys (source_id, key, request_id, fetched, created_at)
          SELECT source_id, key, request_id, fetched, created_at FROM ${input} ORDER BY request_id
          ON CONFLICT (source_id, key) DO NOTHING`,
    );
    const { rows: duplicates } = await query<{ requestId: string }>(
      this.pool,
      sql`WITH duplicate AS (
            SELECT i.request_id, i.created_at, k.request_id AS owner
              FROM ${input} JOIN message_keys k ON k.source_id = i.source_id AND k.key = i.key
             WHERE k.request_id <> i.request_id AND (i.fetched OR k.fetched)
          ),
          marked AS (UPDATE requests r SET duplicate_of = d.owner FROM duplicate d WHERE r.id = d.request_id AND r.created_at = d.created_at)
          SELECT request_id AS "requestId" FROM duplicate`,
    );
    return new Set(duplicates.map((d) => Number(d.requestId)));
  }

  private async rescheduleMany(items: { requestId: number; waitMs: number; waited: boolean }[]): Promise<void[]> {
    const moves = rows(
      'i',
      { requestId: 'bigint', waitMs: 'int', waited: 'boolean' },
      items.map((i) => ({ requestId: i.requestId, waitMs: Math.round(i.waitMs), waited: i.waited })),
    );
    await query(
      this.pool,
      sql`WITH moved AS (
            UPDATE pending_syncs p SET due_at = now() + i.wait_ms * interval '1 millisecond', waits = p.waits + CASE WHEN i.waited THEN 1 ELSE 0 END
              FROM ${moves} WHERE p.request_id = i.request_id
            RETURNING p.connection_id, p.due_at
          )
          SELECT (${this.wakeUps(sql`moved`)}) AS woken`,
    );
    return items.map(() => undefined);
  }

  private async saveStates(items: { syncId: string; state: CrmState }[]): Promise<void[]> {
    const states = rows(
      'i',
      { id: 'bigint', state: 'jsonb' },
      items.map((i) => ({ id: i.syncId, state: i.state })),
    );
    await query(this.pool, sql`UPDATE syncs s SET crm_state = i.state, updated_at = now() FROM ${states} WHERE s.id = i.id`);
    return items.map(() => undefined);
  }

  // The outcomes, then the health of the pipelines whose outcome this batch recorded (one transaction).
  private async finishMany(items: Finish[]): Promise<void[]> {
    await withTransaction(this.pool, async (client) => {
      const outcomes = rows(
        'i',
        { id: 'bigint', requestId: 'bigint', status: 'text', error: 'jsonb', retry: 'boolean', state: 'jsonb', readable: 'boolean' },
        items.map((i) => ({
          id: i.sync.id,
          requestId: i.context.requestId,
          status: i.final.status,
          error: i.final.error,
          retry: i.retry,
          state: i.final.crmState ?? null,
          readable: i.final.failure !== 'payloads_unreadable',
        })),
      );
      const { rows: recorded } = await query<{ id: string }>(client, finishStatement(outcomes));
      const ids = new Set(recorded.map((r) => r.id));
      await recordPipelineOutcomes(
        client,
        items
          .filter((i) => ids.has(i.sync.id))
          .map(({ context, final }) => ({
            pipeline: context,
            requestId: context.requestId,
            result: final.status === 'error' ? { written: false, reason: final.failure ?? 'crm_rejected_writes' } : { written: true },
          })),
      );
    });
    return items.map(() => undefined);
  }
}

interface Finish {
  sync: SyncRow;
  context: SyncContext;
  retry: boolean;
  final: Final;
}

function contextStatement(requestIds: number[]): Sql {
  return sql`
  SELECT r.id AS "requestId", r.account_id AS "accountId", s.id AS "sourceId", c.id AS "connectionId", c.organization_id AS "organizationId", s.platform, c.crm,
         c.sync_enabled AS "syncEnabled", c.deleted_at IS NOT NULL AS "connectionDeleted",
         c.credentials_encrypted AS "credentialsEncrypted", c.crm_rate_limit AS "crmRateLimit",
         s.create_or_update_company AS "createOrUpdateCompany", s.create_or_update_task AS "createOrUpdateTask",
         s.assign_contact_owner AS "assignContactOwner", s.crm_object_type AS "crmObjectType",
         ${requestBodySql('r')} AS body, r.created_at AS "receivedAt", r.fetched,
         s.sequencer_credentials_encrypted IS NOT NULL AS backfilled
    FROM requests r
    JOIN sources s ON s.id = r.source_id
    JOIN connections c ON c.id = s.connection_id
   WHERE r.id = ANY(${requestIds}::bigint[])`;
}

/** Remembers (or refreshes, at most hourly: a hot lead is not a row update per event) the leads a round's requests name. */
function rememberLeadsStatement(
  leads: Array<{ sourceId: number; key: string; campaignId: string | null; leadId: string | null; contact: string; seenAt: Date }>,
): Sql {
  const input = rows('i', { sourceId: 'int', key: 'text', campaignId: 'text', leadId: 'text', contact: 'text', seenAt: 'timestamptz' }, leads);
  return sql`
  INSERT INTO source_leads AS l (source_id, lead_key, campaign_id, lead_id, contact, last_seen_at)
  SELECT source_id, key, campaign_id, lead_id, contact, seen_at FROM ${input}
  ON CONFLICT (source_id, lead_key) DO UPDATE SET last_seen_at = EXCLUDED.last_seen_at
   WHERE l.last_seen_at < EXCLUDED.last_seen_at - interval '1 hour'`;
}

// The sync's time is the request's (processing time of the inbound payload), so lists and windows agree.
// A signal is stored once per request, with the sync row's first run (or an asked-for retry of an error).
function loadSyncsStatement(input: Sql): Sql {
  return sql`
  WITH input AS (SELECT * FROM ${input}),
  upserted AS (
    INSERT INTO syncs (account_id, connection_id, source_id, request_id, platform, event_type, to_email, attempts, created_at, updated_at)
    SELECT account_id, connection_id, source_id, request_id, platform, event_type, to_email, 1, created_at, now() FROM input
    ON CONFLICT (request_id, created_at) DO UPDATE SET attempts = syncs.attempts + 1, updated_at = now()
    RETURNING request_id, id, status, crm_state, attempts
  ),
  signals AS (
    INSERT INTO lead_category_signals (account_id, connection_id, source_id, request_id, platform, contact, category_id, category_name, created_at)
    SELECT i.account_id, i.connection_id, i.source_id, i.request_id, i.platform, i.to_email, i.category_id, i.category_name, i.created_at
      FROM input i JOIN upserted u USING (request_id)
     WHERE i.category_name IS NOT NULL
       AND (u.status IS NULL OR (i.retry AND u.status = 'error'))
       AND NOT EXISTS (SELECT 1 FROM lead_category_signals l WHERE l.request_id = i.request_id)
  )
  SELECT request_id AS "requestId", id, status, crm_state AS "crmState", attempts FROM upserted`;
}

// An outcome another run recorded first stands (unless this is an asked-for retry of an error); either
// way the sync leaves the outbox. A first outcome (not an asked-for retry) writes the first attempt of the
// source's delayed forwarding bindings.
function finishStatement(outcomes: Sql): Sql {
  return sql`
  WITH input AS (SELECT * FROM ${outcomes}),
  waiting AS (DELETE FROM pending_syncs p USING input i WHERE p.request_id = i.request_id),
  finished AS (
    UPDATE syncs s SET status = i.status::sync_status, error = i.error, crm_state = COALESCE(i.state, s.crm_state), updated_at = now()
      FROM input i
     WHERE s.id = i.id AND (s.status IS NULL OR (i.retry AND s.status = 'error'))
    RETURNING s.id, s.request_id, s.source_id, s.event_type, i.readable, i.retry
  ),
  forwarded AS (${pendingOnOutcomeSql(sql`(SELECT request_id, source_id, event_type, readable FROM finished WHERE NOT retry)`)}),
  sending AS (SELECT (${queueSendingSql(sql`forwarded`)}) AS n WHERE EXISTS (SELECT 1 FROM forwarded))
  SELECT id, (SELECT n FROM sending) AS sending FROM finished`;
}
