import type { JobHelpers, Task } from 'graphile-worker';
import type pg from 'pg';
import { crmConnector, CrmError, SUPPORTED_CRMS, type CrmConfig, type CrmEvent, type CrmOutcome, type CrmState } from '../connectors/crm/index.js';
import { parseInbound } from '../connectors/sequencers/index.js';
import type { InboundEvent } from '../connectors/sequencers/event.js';
import { nextPipelineHealth, REMEDIATION, type FailureReason, type SyncResult } from '../domain/pipeline-health.js';
import { openSecret, randomToken, sealSecret } from '../domain/secrets.js';
import { SYNC_TASK } from '../ingress/accept.js';

export interface SyncJobDeps {
  crm: CrmConfig;
  /** Opens and seals connection credentials. */
  encryptionKey: Buffer;
  /** Reschedules of a CRM that keeps answering 429/5xx before the sync records an error. */
  maxReschedules?: number;
}

/**
 * `syncs__run {requestId}`: turns one accepted request into its sync row and the CRM writes. Runs any
 * number of times for one request with one outcome: the sync row is keyed by the request, a recorded
 * outcome ends the job early, and the connector resumes from the steps `crm_state` says are done.
 */
export function syncsRun(deps: SyncJobDeps): Task {
  return async (payload, helpers) => {
    const { requestId, retry } = payloadOf(payload);
    const prepared = await helpers.withPgClient((client) => prepare(client, requestId, retry));
    if (prepared.kind === 'done') return;
    const { sync, context } = prepared;
    if (prepared.kind === 'failed') return finish(helpers, sync, context, retry, { status: 'error', error: prepared.error, failure: prepared.failure });

    const result = await write(deps, helpers, sync, context, prepared.event);
    if (result.kind === 'reschedule') {
      if (sync.attempts <= (deps.maxReschedules ?? 8)) {
        // A CRM that asks us to wait: come back when it says, under one job key so a request never has two.
        await helpers.addJob(SYNC_TASK, { requestId, retry }, { runAt: new Date(Date.now() + result.waitMs), jobKey: `sync:${requestId}` });
        return;
      }
      return finish(helpers, sync, context, retry, { status: 'error', error: result.error, failure: 'crm_unavailable' });
    }
    return finish(helpers, sync, context, retry, result.outcome);
  };
}

interface SyncRow {
  id: string;
  status: 'success' | 'warning' | 'error' | null;
  crmState: CrmState;
  attempts: number;
}

interface Context {
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

type Prepared =
  | { kind: 'done' }
  | { kind: 'failed'; sync: SyncRow; context: Context; error: Record<string, unknown>; failure: FailureReason }
  | { kind: 'ready'; sync: SyncRow; context: Context; event: InboundEvent };

type Final = { status: 'success' | 'warning' | 'error'; error: Record<string, unknown> | null; failure?: FailureReason };

/**
 * In one transaction: the request and its pipeline, the parsed event, the sync row (created on the first
 * run, its attempts counted on every run) and the lead category signal (once per request).
 */
async function prepare(client: pg.PoolClient, requestId: number, retry: boolean): Promise<Prepared> {
  await client.query('BEGIN');
  try {
    const { rows } = await client.query<Context>(CONTEXT_SQL, [requestId]);
    const context = rows[0];
    if (!context) {
      // The request (or its source) is gone: nothing left to sync.
      await client.query('COMMIT');
      return { kind: 'done' };
    }
    const parsed = parseInbound(context.platform, context.body);
    const eventType = parsed.ok ? parsed.event.eventType : 'UNKNOWN';
    const identity = parsed.ok ? parsed.event.identity : '';
    const sync = (
      await client.query<SyncRow>(UPSERT_SYNC_SQL, [context.accountId, context.connectionId, context.sourceId, requestId, context.platform, eventType, identity, context.receivedAt])
    ).rows[0]!;
    // A recorded outcome ends the job, unless this is an asked-for retry of an error.
    if (sync.status !== null && !(retry && sync.status === 'error')) {
      await client.query('COMMIT');
      return { kind: 'done' };
    }
    if (parsed.ok && parsed.event.leadCategory) {
      const { id, name } = parsed.event.leadCategory;
      await client.query(SIGNAL_SQL, [context.accountId, context.connectionId, context.sourceId, requestId, context.platform, identity, id, name, context.receivedAt]);
    }
    await client.query('COMMIT');
    if (!parsed.ok) return { kind: 'failed', sync, context, error: { message: `The payload could not be read: ${parsed.reason}` }, failure: 'payloads_unreadable' };
    const blocked = blocker(context);
    if (blocked) return { kind: 'failed', sync, context, ...blocked };
    return { kind: 'ready', sync, context, event: parsed.event };
  } catch (error) {
    await client.query('ROLLBACK').catch(() => {});
    throw error;
  }
}

/** Why this pipeline cannot write at all, before any CRM call. */
function blocker(context: Context): { error: Record<string, unknown>; failure: FailureReason } | null {
  if (context.connectionDeleted || !context.syncEnabled) return { error: { message: 'Sync is not enabled for this connection' }, failure: 'sync_disabled' };
  if (!(SUPPORTED_CRMS as readonly string[]).includes(context.crm.toUpperCase())) {
    return { error: { message: `Writing to ${context.crm} is not supported` }, failure: 'crm_not_supported' };
  }
  if (!context.credentialsEncrypted) return { error: { message: 'The connection holds no CRM credentials: reconnect the CRM' }, failure: 'crm_not_connected' };
  return null;
}

type WriteResult = { kind: 'final'; outcome: Final } | { kind: 'reschedule'; waitMs: number; error: Record<string, unknown> };

/** The CRM writes, credentials opened here only; a retryable failure asks to be rescheduled. */
async function write(deps: SyncJobDeps, helpers: JobHelpers, sync: SyncRow, context: Context, event: InboundEvent): Promise<WriteResult> {
  let connector;
  try {
    connector = crmConnector(context.crm, JSON.parse(openSecret(deps.encryptionKey, context.credentialsEncrypted!)), deps.crm);
  } catch (error) {
    if (error instanceof CrmError) return { kind: 'final', outcome: { status: 'error', error: { message: error.message }, failure: 'crm_authentication_failed' } };
    return { kind: 'final', outcome: { status: 'error', error: { message: 'The stored CRM credentials cannot be read: reconnect the CRM' }, failure: 'crm_not_connected' } };
  }
  // blocker() already refused CRM kinds without a connector.
  if (!connector) throw new Error(`no connector for ${context.crm}`);
  try {
    const outcome: CrmOutcome = await connector.write({
      event: crmEvent(event, context, sync),
      options: context,
      state: sync.crmState,
      saveState: (state) => helpers.withPgClient((client) => client.query('UPDATE syncs SET crm_state = $2, updated_at = now() WHERE id = $1', [sync.id, JSON.stringify(state)])).then(() => {}),
      saveCredentials: (credentials) =>
        helpers
          .withPgClient((client) =>
            client.query('UPDATE connections SET credentials_encrypted = $2, updated_at = now() WHERE id = $1', [context.connectionId, sealSecret(deps.encryptionKey, JSON.stringify(credentials))]),
          )
          .then(() => {}),
    });
    return { kind: 'final', outcome: { status: outcome.status, error: outcome.status === 'warning' ? outcome.result : null } };
  } catch (error) {
    if (!(error instanceof CrmError)) throw error;
    const details: Record<string, unknown> = { message: error.message };
    if (error.httpStatus !== undefined) details.httpStatus = error.httpStatus;
    if (error.payload !== undefined) details.response = error.payload;
    if (error.retryable) return { kind: 'reschedule', waitMs: Math.max(1_000, error.retryAfterMs ?? backoffMs(sync.attempts)), error: details };
    return { kind: 'final', outcome: { status: 'error', error: details, failure: error.kind === 'auth' ? 'crm_authentication_failed' : 'crm_rejected_writes' } };
  }
}

function crmEvent(event: InboundEvent, context: Context, sync: SyncRow): CrmEvent {
  return {
    eventType: event.eventType,
    platform: context.platform,
    identity: event.identity,
    email: event.contact.email,
    profileUrl: event.contact.profileUrl,
    firstName: event.contact.firstName,
    lastName: event.contact.lastName,
    company: event.contact.company,
    companyDomain: event.contact.companyDomain,
    subject: event.message.subject,
    text: event.message.text,
    direction: event.message.direction,
    campaignName: event.campaign.name,
    senderEmail: event.sequencerIds.mailbox ?? null,
    // Processing time (spec rule: timestamps are processing time), the same on every attempt.
    occurredAt: context.receivedAt,
    requestId: String(sync.id),
  };
}

/**
 * Records the outcome and moves the pipeline's health, in one transaction: the health row is locked, so
 * concurrent syncs of one pipeline count their errors one after another, and a transition stores its
 * platform event with it.
 */
async function finish(helpers: JobHelpers, sync: SyncRow, context: Context, retry: boolean, final: Final): Promise<void> {
  await helpers.withPgClient(async (client) => {
    await client.query('BEGIN');
    try {
      const { rowCount } = await client.query(FINISH_SQL, [sync.id, final.status, final.error === null ? null : JSON.stringify(final.error), retry]);
      // Another run recorded the outcome first: its health update stands.
      if (rowCount === 0) {
        await client.query('COMMIT');
        return;
      }
      const result: SyncResult = final.status === 'error' ? { written: false, reason: final.failure ?? 'crm_rejected_writes' } : { written: true };
      await moveHealth(client, context, result);
      await client.query('COMMIT');
    } catch (error) {
      await client.query('ROLLBACK').catch(() => {});
      throw error;
    }
  });
}

async function moveHealth(client: pg.PoolClient, context: Context, result: SyncResult): Promise<void> {
  await client.query('INSERT INTO pipeline_health (source_id, connection_id) VALUES ($1, $2) ON CONFLICT (source_id, connection_id) DO NOTHING', [context.sourceId, context.connectionId]);
  const { rows } = await client.query<{ state: 'healthy' | 'failing'; consecutiveErrors: number }>(HEALTH_SQL, [context.sourceId, context.connectionId]);
  const current = rows[0]!;
  const change = nextPipelineHealth(current, result);
  const reason = result.written ? null : result.reason;
  await client.query(
    `UPDATE pipeline_health SET state = $3, consecutive_errors = $4, last_reason = COALESCE($5, last_reason),
            last_error_at = CASE WHEN $5::text IS NULL THEN last_error_at ELSE now() END,
            last_success_at = CASE WHEN $5::text IS NULL THEN now() ELSE last_success_at END,
            changed_at = CASE WHEN $6 THEN now() ELSE changed_at END
      WHERE source_id = $1 AND connection_id = $2`,
    [context.sourceId, context.connectionId, change.next.state, change.next.consecutiveErrors, reason, change.event !== null],
  );
  if (!change.event) return;
  const base = { connectionId: context.connectionId, crm: context.crm, sourceId: context.sourceId, sourcePlatform: context.platform };
  const data = change.event === 'sync.failed' && reason ? { ...base, reason, remediation: REMEDIATION[reason] } : base;
  const summary =
    change.event === 'sync.failed'
      ? `Syncs from ${context.platform} source ${context.sourceId} to ${context.crm} connection ${context.connectionId} are failing (${reason})`
      : `Syncs from ${context.platform} source ${context.sourceId} to ${context.crm} connection ${context.connectionId} have recovered`;
  await client.query(
    'INSERT INTO platform_events (public_id, account_id, type, summary, data, connection_id, source_id) VALUES ($1, $2, $3, $4, $5, $6, $7)',
    [randomToken('svcevt_', 24), context.accountId, change.event, summary, JSON.stringify(data), context.connectionId, context.sourceId],
  );
}

/** `{requestId}` from the ingress; `{requestId, retry: true}` from POST /api/v1/syncs/:id/retry. */
function payloadOf(payload: unknown): { requestId: number; retry: boolean } {
  const { requestId, retry } = (payload ?? {}) as { requestId?: unknown; retry?: unknown };
  if (typeof requestId !== 'number' || !Number.isSafeInteger(requestId) || requestId < 1) throw new Error('syncs__run needs {requestId: positive integer}');
  return { requestId, retry: retry === true };
}

/** Without a Retry-After: 5 s, 10 s, 20 s, ... up to 10 minutes. */
function backoffMs(attempts: number): number {
  return Math.min(600_000, 5_000 * 2 ** Math.max(0, attempts - 1));
}

const CONTEXT_SQL = `
  SELECT r.account_id AS "accountId", s.id AS "sourceId", c.id AS "connectionId", s.platform, c.crm,
         c.sync_enabled AS "syncEnabled", c.deleted_at IS NOT NULL AS "connectionDeleted",
         c.credentials_encrypted AS "credentialsEncrypted",
         s.create_or_update_company AS "createOrUpdateCompany", s.create_or_update_task AS "createOrUpdateTask",
         s.assign_contact_owner AS "assignContactOwner", s.crm_object_type AS "crmObjectType",
         r.body, r.created_at AS "receivedAt"
    FROM requests r
    JOIN sources s ON s.id = r.source_id
    JOIN connections c ON c.id = s.connection_id
   WHERE r.id = $1`;

// The sync's time is the request's (processing time of the inbound payload), so lists and windows agree.
const UPSERT_SYNC_SQL = `
  INSERT INTO syncs (account_id, connection_id, source_id, request_id, platform, event_type, to_email, attempts, created_at, updated_at)
  VALUES ($1, $2, $3, $4, $5, $6, $7, 1, $8, now())
  ON CONFLICT (request_id) DO UPDATE SET attempts = syncs.attempts + 1, updated_at = now()
  RETURNING id, status, crm_state AS "crmState", attempts`;

const SIGNAL_SQL = `
  INSERT INTO lead_category_signals (account_id, connection_id, source_id, request_id, platform, contact, category_id, category_name, created_at)
  SELECT $1, $2, $3, $4, $5, $6, $7, $8, $9
   WHERE NOT EXISTS (SELECT 1 FROM lead_category_signals WHERE request_id = $4)`;

const FINISH_SQL = `
  UPDATE syncs SET status = $2::sync_status, error = $3::jsonb, updated_at = now()
   WHERE id = $1 AND (status IS NULL OR ($4::boolean AND status = 'error'))`;

const HEALTH_SQL = `SELECT state, consecutive_errors AS "consecutiveErrors" FROM pipeline_health WHERE source_id = $1 AND connection_id = $2 FOR UPDATE`;
