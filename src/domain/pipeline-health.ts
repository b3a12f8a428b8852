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
  'crm_authentication_failed' | 'crm_not_connected' | 'sync_disabled' | 'crm_not_supported' | 'crm_rejected_writes' | 'crm_unavailable' | 'payloads_unreadable';

const IMMEDIATE: ReadonlySet<FailureReason> = new Set(['crm_authentication_failed', 'crm_not_connected', 'sync_disabled', 'crm_not_supported']);

export const REMEDIATION: Record<FailureReason, string> = {
  crm_authentication_failed: 'Reconnect the CRM in the dashboard: its credentials were refused or have expired.',
  crm_not_connected: 'Connect the CRM in the dashboard: the connection holds no credentials.',
  sync_disabled: 'Turn sync on for this connection, or remove the source from the sequencer.',
  crm_not_supported: 'Move the source to a HubSpot or Salesforce connection: this CRM cannot be written to.',
  crm_rejected_writes: 'Check the sync errors (GET /api/v1/syncs?status=error): the CRM refuses the writes, often over a required field or a permission.',
  crm_unavailable:
    'Nothing to do if it passes: the CRM kept answering 429 or 5xx past our retries. Failed syncs can be retried with POST /api/v1/syncs/:id/retry.',
  payloads_unreadable: "Check the source's sequencer webhook settings: its payloads cannot be read (see the sync errors).",
};

export interface PipelineHealthState {
  state: PipelineState;
  consecutiveErrors: number;
}

export type SyncResult = { written: true } | { written: false; reason: FailureReason };

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
