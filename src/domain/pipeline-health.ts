/**
 * Health of one pipeline (a source writing into a connection's CRM) and when it changes (spec: Events,
 * `sync.failed` / `sync.recovered`). Pure.
 *
 * The rule: a written sync (success or warning) makes the pipeline healthy. A failure that no retry can
 * fix without the customer (credentials refused, no credentials, sync switched off, a CRM we cannot
 * write to) makes it failing at once; any other failure (the CRM rejecting a write, being unavailable
 * past our retries, a payload we cannot read) after {@link FAILING_AFTER} in a row.
 */

export const FAILING_AFTER = 5;

type PipelineState = 'healthy' | 'failing';

/** Why syncs fail, as `sync.failed` reports it (`data.reason`), each paired with its remediation. */
export type FailureReason =
  | 'crm_authentication_failed'
  | 'crm_not_connected'
  | 'sync_disabled'
  | 'crm_not_supported'
  | 'crm_rejected_writes'
  | 'crm_unavailable'
  | 'crm_rate_limited'
  | 'payloads_unreadable'
  | 'internal_error';

/**
 * Failures announced at once. `crm_rate_limited` is never a sync's outcome: it is the connection's CRM
 * refusing for over 15 minutes (src/domain/crm-budget.ts, refusalsOverdue) while its syncs wait.
 */
const IMMEDIATE: ReadonlySet<FailureReason> = new Set([
  'crm_authentication_failed',
  'crm_not_connected',
  'sync_disabled',
  'crm_not_supported',
  'crm_rate_limited',
]);

export const REMEDIATION: Record<FailureReason, string> = {
  crm_authentication_failed: 'Reconnect the CRM in the dashboard: its credentials were refused or have expired.',
  crm_not_connected: 'Connect the CRM in the dashboard: the connection holds no credentials.',
  sync_disabled: 'Turn sync on for this connection, or remove the source from the sequencer.',
  // Every CRM of the registry (src/connectors/crm/registry.ts), named here since domain/ imports no values of
  // ours; test/unit/pipeline-health.test.ts fails when a CRM is added without its name.
  crm_not_supported: 'Move the source to a HubSpot, Salesforce, Close or Attio connection: this CRM cannot be written to.',
  crm_rejected_writes: 'Check the sync errors (GET /api/v1/syncs?status=error): the CRM refuses the writes, often over a required field or a permission.',
  crm_unavailable:
    'Nothing to do if it passes: the CRM kept answering 429 or 5xx past our retries. Failed syncs can be retried with POST /api/v1/syncs/:id/retry.',
  crm_rate_limited:
    "Nothing is lost: the CRM has refused requests with its rate limit for over 15 minutes and the syncs wait for it. Check for another app using the same CRM account's API limit, or raise the limit; sync.recovered follows the next written sync.",
  payloads_unreadable: "Check the source's sequencer webhook settings: its payloads cannot be read (see the sync errors).",
  internal_error:
    'The service failed on its side with these events (the sync errors say how) and has been alerted; once fixed, they can be retried with POST /api/v1/syncs/:id/retry.',
};

export interface PipelineHealthState {
  state: PipelineState;
  consecutiveErrors: number;
}

export type SyncResult = { written: true } | { written: false; reason: FailureReason };

/** A recorded outcome of a pipeline, and the request it was recorded for (none for a refusal announced on a pipeline's behalf). */
export interface PipelineOutcome {
  pipeline: PipelineRef;
  result: SyncResult;
  requestId?: number;
}

export interface HealthChange {
  next: PipelineHealthState;
  /** The transition to announce, if the state changed. */
  event: 'sync.failed' | 'sync.recovered' | null;
}

/** The pipeline's next state after one sync's final outcome. */
export function nextPipelineHealth(current: PipelineHealthState, result: SyncResult): HealthChange {
  if (result.written) {
    return { next: { state: 'healthy', consecutiveErrors: 0 }, event: current.state === 'failing' ? 'sync.recovered' : null };
  }
  const consecutiveErrors = current.consecutiveErrors + 1;
  const failing = current.state === 'failing' || IMMEDIATE.has(result.reason) || consecutiveErrors >= FAILING_AFTER;
  return {
    next: { state: failing ? 'failing' : 'healthy', consecutiveErrors },
    event: failing && current.state === 'healthy' ? 'sync.failed' : null,
  };
}

/** A pipeline as its platform events name it. */
export interface PipelineRef {
  accountId: number;
  sourceId: number;
  connectionId: number;
  /** The source's sequencer platform. */
  platform: string;
  crm: string;
}

/** What one batch of recorded outcomes does to each of its pipelines. */
export interface PipelineUpdate {
  pipeline: PipelineRef;
  next: PipelineHealthState;
  /** The last failure's reason in the batch, if any failed. */
  lastReason: FailureReason | null;
  /** Whether any sync of the batch was written. */
  written: boolean;
  /** Whether the batch announced a transition (the state may have changed back within the batch). */
  changed: boolean;
}

/** A transition to announce as a platform event. */
export interface PipelineTransition {
  pipeline: PipelineRef;
  /** The request whose outcome caused it, when one did (the support explorer's lineage). */
  requestId: number | null;
  type: 'sync.failed' | 'sync.recovered';
  summary: string;
  data: Record<string, unknown>;
}

/**
 * Applies outcomes, in the order they were recorded, to their pipelines' current states (`current`,
 * keyed by {@link pipelineKey}; a pipeline without a row starts healthy): each pipeline's new state, and
 * every transition on the way, so a burst of errors counts each one and announces the failure once.
 */
export function applyOutcomes(
  current: ReadonlyMap<string, PipelineHealthState>,
  outcomes: readonly PipelineOutcome[],
): { updates: PipelineUpdate[]; transitions: PipelineTransition[] } {
  const updates = new Map<string, PipelineUpdate>();
  const transitions: PipelineTransition[] = [];
  for (const { pipeline, result, requestId } of outcomes) {
    const key = pipelineKey(pipeline);
    const update = updates.get(key) ?? {
      pipeline,
      next: current.get(key) ?? { state: 'healthy', consecutiveErrors: 0 },
      lastReason: null,
      written: false,
      changed: false,
    };
    const change = nextPipelineHealth(update.next, result);
    update.next = change.next;
    if (result.written) update.written = true;
    else update.lastReason = result.reason;
    if (change.event) {
      update.changed = true;
      transitions.push({ ...transition(pipeline, change.event, result.written ? null : result.reason), requestId: requestId ?? null });
    }
    updates.set(key, update);
  }
  return { updates: [...updates.values()], transitions };
}

/** `source:connection`, the identity of a pipeline. */
export function pipelineKey(pipeline: { sourceId: number; connectionId: number }): string {
  return `${pipeline.sourceId}:${pipeline.connectionId}`;
}

/** The platform event of a transition: what changed, and for a failure its reason and remediation. */
function transition(pipeline: PipelineRef, type: 'sync.failed' | 'sync.recovered', reason: FailureReason | null): Omit<PipelineTransition, 'requestId'> {
  const base = { connectionId: pipeline.connectionId, crm: pipeline.crm, sourceId: pipeline.sourceId, sourcePlatform: pipeline.platform };
  const data = type === 'sync.failed' && reason ? { ...base, reason, remediation: REMEDIATION[reason] } : base;
  const name = `${pipeline.platform} source ${pipeline.sourceId} to ${pipeline.crm} connection ${pipeline.connectionId}`;
  const summary = type === 'sync.failed' ? `Syncs from ${name} are failing (${reason})` : `Syncs from ${name} have recovered`;
  return { pipeline, type, summary, data };
}
