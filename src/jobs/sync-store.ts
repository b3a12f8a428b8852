import type pg from 'pg';
import { Batcher } from '../db/batcher.js';
import type { CrmState } from '../connectors/crm/index.js';
import { parseInbound, type ParseResult } from '../connectors/sequencers/index.js';
import { nextPipelineHealth, REMEDIATION, type FailureReason, type PipelineHealthState, type SyncResult } from '../domain/pipeline-health.js';
import { randomToken } from '../domain/secrets.js';

export interface SyncRow {
  id: string;
  status: 'success' | 'warning' | 'error' | null;
  crmState: CrmState;
  attempts: number;
}

/** A request with its pipeline: what the sync job needs to know before it writes. */
export interface SyncContext {
  requestId: number;
  accountId: number;
  sourceId: number;
  connectionId: number;
  platform: string;
  crm: string;
  syncEnabled: boolean;
  connectionDeleted: boolean;
  credentialsEncrypted: string | null;
  createOrUpdateCompany: boolean;
  createOrUpdateTask: boolean;
  assignContactOwner: boolean;
  crmObjectType: string | null;
  body: string;
  receivedAt: Date;
}

/** `done`: nothing to do (request gone, or its outcome already recorded). */
export type Loaded = { kind: 'done' } | { kind: 'loaded'; sync: SyncRow; context: SyncContext; parsed: ParseResult };

/** A sync's outcome; `crmState`: the state after the connector's last step, stored with it. */
export type Final = { status: 'success' | 'warning' | 'error'; error: Record<string, unknown> | null; failure?: FailureReason; crmState?: CrmState };

/**
 * The sync job's reads and writes, grouped across the jobs one worker process runs at once: concurrent
 * jobs share one statement or transaction per step ({@link Batcher}), so a worker's commits and round
 * trips grow with the batches, not the events. A batch that fails is run again one job at a time, so one bad row fails
 * only its own job.
 */
export class SyncStore {
  private readonly loads: Batcher<{ requestId: number; retry: boolean }, Loaded>;
  private readonly states: Batcher<{ syncId: string; state: CrmState }, void>;
  private readonly finishes: Batcher<Finish, void>;
  /** The last renewal queued per connection. */
  private readonly renewals = new Map<number, Promise<void>>();

  constructor(private readonly pool: pg.Pool) {
    this.loads = new Batcher((items) => this.loadMany(items), { key: (i) => i.requestId, isolateFailures: true, maxBatch: 200 });
    this.states = new Batcher((items) => this.saveStates(items), { key: (i) => i.syncId, isolateFailures: true, maxBatch: 200 });
    // One at a time per process: the batch locks its pipelines' health rows until it commits.
    this.finishes = new Batcher((items) => this.finishMany(items), { key: (i) => i.sync.id, isolateFailures: true, maxBatch: 200 });
  }

  /**
   * The request and its pipeline, the parsed event, then in one statement the sync row (created on the
   * first run, its attempts counted on every run) and the lead category signal (once per request).
   * A recorded outcome is `done`, unless this is an asked-for retry of an error.
   */
  load(requestId: number, retry: boolean): Promise<Loaded> {
    return this.loads.load({ requestId, retry });
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

  /**
   * Runs `renew` with the connection's sealed credentials while holding the connection row's lock, and
   * stores the sealed credentials it returns (undefined: unchanged). Renewals of one connection, in any
   * process, run one after another.
   */
  async withCredentials(connectionId: number, renew: (sealed: string | null) => Promise<string | undefined>): Promise<void> {
    // One at a time per connection in this process: the others wait here, not holding a pool connection
    // to wait on the row lock, and find the renewed credentials when their turn comes.
    const previous = this.renewals.get(connectionId) ?? Promise.resolve();
    const turn = previous.then(() => this.renewUnderLock(connectionId, renew));
    const settled = turn.then(
      () => {},
      () => {},
    );
    this.renewals.set(connectionId, settled);
    try {
      await turn;
    } finally {
      if (this.renewals.get(connectionId) === settled) this.renewals.delete(connectionId);
    }
  }

  private async renewUnderLock(connectionId: number, renew: (sealed: string | null) => Promise<string | undefined>): Promise<void> {
    await this.transaction(async (client) => {
      const { rows } = await client.query<{ sealed: string | null }>('SELECT credentials_encrypted AS sealed FROM connections WHERE id = $1 FOR UPDATE', [
        connectionId,
      ]);
      const next = await renew(rows[0]?.sealed ?? null);
      if (next !== undefined) await client.query('UPDATE connections SET credentials_encrypted = $2, updated_at = now() WHERE id = $1', [connectionId, next]);
    });
  }

  // Two statements, no transaction: the read, then one statement that upserts the sync rows and stores
  // the category signals of the rows still to be written.
  private async loadMany(items: { requestId: number; retry: boolean }[]): Promise<Loaded[]> {
    const { rows: contexts } = await this.pool.query<SyncContext & { requestId: string }>(CONTEXT_SQL, [items.map((i) => i.requestId)]);
    const byRequest = new Map(contexts.map((c) => [Number(c.requestId), { ...c, requestId: Number(c.requestId) }]));
    const found = items.flatMap((item) => {
      const context = byRequest.get(item.requestId);
      return context ? [{ item, context, parsed: parseInbound(context.platform, context.body) }] : [];
    });
    if (found.length === 0) return items.map(() => ({ kind: 'done' as const }));

    const event = (f: (typeof found)[number]) => (f.parsed.ok ? f.parsed.event : null);
    const { rows: syncs } = await this.pool.query<SyncRow & { requestId: string }>(LOAD_SYNCS_SQL, [
      found.map((f) => f.context.accountId),
      found.map((f) => f.context.connectionId),
      found.map((f) => f.context.sourceId),
      found.map((f) => f.context.requestId),
      found.map((f) => f.context.platform),
      found.map((f) => event(f)?.eventType ?? 'UNKNOWN'),
      found.map((f) => event(f)?.identity ?? ''),
      found.map((f) => f.context.receivedAt),
      found.map((f) => f.item.retry),
      found.map((f) => event(f)?.leadCategory?.id ?? null),
      found.map((f) => event(f)?.leadCategory?.name ?? null),
    ]);
    const syncOf = new Map(syncs.map(({ requestId, ...sync }) => [Number(requestId), sync]));
    const loaded = new Map(
      found.flatMap((f) => {
        const sync = syncOf.get(f.context.requestId)!;
        const live = sync.status === null || (f.item.retry && sync.status === 'error');
        return live ? [[f.item.requestId, { kind: 'loaded' as const, sync, context: f.context, parsed: f.parsed }] as const] : [];
      }),
    );
    return items.map((item) => loaded.get(item.requestId) ?? { kind: 'done' as const });
  }

  private async saveStates(items: { syncId: string; state: CrmState }[]): Promise<void[]> {
    await this.pool.query(SAVE_STATES_SQL, [items.map((i) => i.syncId), items.map((i) => JSON.stringify(i.state))]);
    return items.map(() => undefined);
  }

  private async finishMany(items: Finish[]): Promise<void[]> {
    await this.transaction(async (client) => {
      const { rows } = await client.query<{ id: string }>(FINISH_SQL, [
        items.map((i) => i.sync.id),
        items.map((i) => i.final.status),
        items.map((i) => (i.final.error === null ? null : JSON.stringify(i.final.error))),
        items.map((i) => i.retry),
        items.map((i) => i.context.sourceId),
        items.map((i) => i.context.connectionId),
        items.map((i) => (i.final.crmState === undefined ? null : JSON.stringify(i.final.crmState))),
      ]);
      const recorded = new Set(rows.map((r) => r.id));
      await moveHealth(
        client,
        items.filter((i) => recorded.has(i.sync.id)),
      );
    });
    return items.map(() => undefined);
  }

  private async transaction<T>(work: (client: pg.PoolClient) => Promise<T>): Promise<T> {
    const client = await this.pool.connect();
    try {
      await client.query('BEGIN');
      const result = await work(client);
      await client.query('COMMIT');
      return result;
    } catch (error) {
      await client.query('ROLLBACK').catch(() => {});
      throw error;
    } finally {
      client.release();
    }
  }
}

interface Finish {
  sync: SyncRow;
  context: SyncContext;
  retry: boolean;
  final: Final;
}

/**
 * Applies the recorded outcomes, in batch order, to their pipelines' health (pure rules in
 * src/domain/pipeline-health.ts): one locked read and one write for all pipelines of the batch, plus the
 * platform event of each transition.
 */
async function moveHealth(client: pg.PoolClient, recorded: Finish[]): Promise<void> {
  if (recorded.length === 0) return;
  const keyOf = (c: SyncContext) => `${c.sourceId}:${c.connectionId}`;
  const pipelines = [...new Map(recorded.map((r) => [keyOf(r.context), r.context])).values()].sort(
    (a, b) => a.sourceId - b.sourceId || a.connectionId - b.connectionId,
  );
  const keys = [pipelines.map((p) => p.sourceId), pipelines.map((p) => p.connectionId)];
  // Locked in one order, so batches of several processes wait for each other instead of deadlocking.
  const { rows } = await client.query<PipelineHealthState & { key: string }>(LOCK_HEALTH_SQL, keys);
  const health = new Map(rows.map(({ key, ...h }) => [key, { now: h, errorReason: null as FailureReason | null, success: false, changed: false }]));
  const events: { context: SyncContext; type: 'sync.failed' | 'sync.recovered'; reason: FailureReason | null }[] = [];
  for (const { context, final } of recorded) {
    const pipeline = health.get(keyOf(context))!;
    const result: SyncResult = final.status === 'error' ? { written: false, reason: final.failure ?? 'crm_rejected_writes' } : { written: true };
    const change = nextPipelineHealth(pipeline.now, result);
    pipeline.now = change.next;
    if (result.written) pipeline.success = true;
    else pipeline.errorReason = result.reason;
    if (change.event) {
      pipeline.changed = true;
      events.push({ context, type: change.event, reason: result.written ? null : result.reason });
    }
  }
  const updates = pipelines.map((p) => ({ p, h: health.get(keyOf(p))! }));
  const created = events.map(({ context, type, reason }) => {
    const base = { connectionId: context.connectionId, crm: context.crm, sourceId: context.sourceId, sourcePlatform: context.platform };
    const data = type === 'sync.failed' && reason ? { ...base, reason, remediation: REMEDIATION[reason] } : base;
    const pipeline = `${context.platform} source ${context.sourceId} to ${context.crm} connection ${context.connectionId}`;
    const summary = type === 'sync.failed' ? `Syncs from ${pipeline} are failing (${reason})` : `Syncs from ${pipeline} have recovered`;
    return {
      publicId: randomToken('svcevt_', 24),
      accountId: context.accountId,
      type,
      summary,
      data: JSON.stringify(data),
      connectionId: context.connectionId,
      sourceId: context.sourceId,
    };
  });
  await client.query(UPDATE_HEALTH_SQL, [
    updates.map((u) => u.p.sourceId),
    updates.map((u) => u.p.connectionId),
    updates.map((u) => u.h.now.state),
    updates.map((u) => u.h.now.consecutiveErrors),
    updates.map((u) => u.h.errorReason),
    updates.map((u) => u.h.success),
    updates.map((u) => u.h.changed),
    created.map((r) => r.publicId),
    created.map((r) => r.accountId),
    created.map((r) => r.type),
    created.map((r) => r.summary),
    created.map((r) => r.data),
    created.map((r) => r.connectionId),
    created.map((r) => r.sourceId),
  ]);
}

const CONTEXT_SQL = `
  SELECT r.id AS "requestId", r.account_id AS "accountId", s.id AS "sourceId", c.id AS "connectionId", s.platform, c.crm,
         c.sync_enabled AS "syncEnabled", c.deleted_at IS NOT NULL AS "connectionDeleted",
         c.credentials_encrypted AS "credentialsEncrypted",
         s.create_or_update_company AS "createOrUpdateCompany", s.create_or_update_task AS "createOrUpdateTask",
         s.assign_contact_owner AS "assignContactOwner", s.crm_object_type AS "crmObjectType",
         r.body, r.created_at AS "receivedAt"
    FROM requests r
    JOIN sources s ON s.id = r.source_id
    JOIN connections c ON c.id = s.connection_id
   WHERE r.id = ANY($1::bigint[])`;

// The sync's time is the request's (processing time of the inbound payload), so lists and windows agree.
// A signal is stored once per request, with the sync row's first run (or an asked-for retry of an error).
const LOAD_SYNCS_SQL = `
  WITH input AS (
    SELECT * FROM unnest($1::int[], $2::int[], $3::int[], $4::bigint[], $5::text[], $6::text[], $7::text[], $8::timestamptz[], $9::boolean[], $10::text[], $11::text[])
           AS i(account_id, connection_id, source_id, request_id, platform, event_type, to_email, created_at, retry, category_id, category_name)
  ),
  upserted AS (
    INSERT INTO syncs (account_id, connection_id, source_id, request_id, platform, event_type, to_email, attempts, created_at, updated_at)
    SELECT account_id, connection_id, source_id, request_id, platform, event_type, to_email, 1, created_at, now() FROM input
    ON CONFLICT (request_id) DO UPDATE SET attempts = syncs.attempts + 1, updated_at = now()
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

const SAVE_STATES_SQL = `
  UPDATE syncs s SET crm_state = i.state::jsonb, updated_at = now()
    FROM unnest($1::bigint[], $2::text[]) AS i(id, state)
   WHERE s.id = i.id`;

// The outcome, and a health row for each pipeline that recorded one (rows inserted here are locked by
// the next statement, which sees them).
const FINISH_SQL = `
  WITH finished AS (
    UPDATE syncs s SET status = i.status::sync_status, error = i.error::jsonb, crm_state = COALESCE(i.state::jsonb, s.crm_state), updated_at = now()
      FROM unnest($1::bigint[], $2::text[], $3::text[], $4::boolean[], $7::text[]) AS i(id, status, error, retry, state)
     WHERE s.id = i.id AND (s.status IS NULL OR (i.retry AND s.status = 'error'))
    RETURNING s.id
  ),
  ensured AS (
    INSERT INTO pipeline_health (source_id, connection_id)
    SELECT DISTINCT p.source_id, p.connection_id
      FROM unnest($1::bigint[], $5::int[], $6::int[]) AS p(id, source_id, connection_id)
     WHERE p.id IN (SELECT id FROM finished)
     ORDER BY p.source_id, p.connection_id
    ON CONFLICT (source_id, connection_id) DO NOTHING
  )
  SELECT id FROM finished`;

const LOCK_HEALTH_SQL = `
  SELECT h.source_id || ':' || h.connection_id AS key, h.state, h.consecutive_errors AS "consecutiveErrors"
    FROM pipeline_health h JOIN unnest($1::int[], $2::int[]) AS i(source_id, connection_id) USING (source_id, connection_id)
   ORDER BY h.source_id, h.connection_id
     FOR UPDATE OF h`;

// The new health of each pipeline of the batch, and the platform event of each transition.
const UPDATE_HEALTH_SQL = `
  WITH updated AS (
    UPDATE pipeline_health h
       SET state = i.state::pipeline_state, consecutive_errors = i.errors, last_reason = COALESCE(i.reason, h.last_reason),
           last_error_at = CASE WHEN i.reason IS NULL THEN h.last_error_at ELSE now() END,
           last_success_at = CASE WHEN i.success THEN now() ELSE h.last_success_at END,
           changed_at = CASE WHEN i.changed THEN now() ELSE h.changed_at END
      FROM unnest($1::int[], $2::int[], $3::text[], $4::int[], $5::text[], $6::boolean[], $7::boolean[])
           AS i(source_id, connection_id, state, errors, reason, success, changed)
     WHERE h.source_id = i.source_id AND h.connection_id = i.connection_id
  )
  INSERT INTO platform_events (public_id, account_id, type, summary, data, connection_id, source_id)
  SELECT public_id, account_id, type, summary, data::jsonb, connection_id, source_id
    FROM unnest($8::text[], $9::int[], $10::text[], $11::text[], $12::text[], $13::int[], $14::int[])
         AS e(public_id, account_id, type, summary, data, connection_id, source_id)`;
