/**
 * GET /account/status, derived from stored data only (spec: Account status structures). Pure: the
 * caller loads one snapshot per connection, this decides statuses, blockers and warnings.
 */

export interface ConnectionSnapshot {
  id: number;
  crm: string;
  status: 'ready' | 'disconnected';
  organizationId: string | null;
  organizationDomain: string | null;
  syncEnabled: boolean;
  sourcePlatforms: string[];
  /** Distinct forwarding URLs bound to this connection's sources. */
  forwardingUrls: string[];
  /** Event types of those bindings. */
  forwardingEventTypes: string[];
  /** Reply relays of this connection bound to at least one of its sources. */
  boundReplyRelayCount: number;
  blocklists: { isEnabled: boolean; lastError: string | null; lastFetchedAt: Date | null; lastAttemptedAt: Date | null }[];
  /** The backfill of each backfilled source (src/jobs/backfills__run.ts): rounds failed in a row, and whether staff paused it. */
  backfills: { failures: number; paused: boolean }[];
}

/** Rounds a source's backfill fails in a row before the account status warns: one failure is often a blip the next round fixes. */
export const BACKFILL_WARNING_AFTER = 3;

export interface Capabilities {
  canUserAccount: boolean;
  canBlockList: boolean;
}

type ComponentStatus = 'ready' | 'not_configured' | 'disabled';

export interface ConnectionStatus {
  connectionId: number;
  crm: string;
  ready: boolean;
  crmConnection: { status: 'ready' | 'disconnected'; crm: string; organizationId: string | null; organizationDomain: string | null };
  sources: { status: ComponentStatus; count: number; platforms: string[] };
  destinations: { status: ComponentStatus; count: number; eventTypes: string[]; forwardingCount: number; replyRelayCount: number };
  blocklists: { status: ComponentStatus | 'error'; enabledCount: number; lastError: string | null; lastFetchedAt: Date | null };
}

type BlockerCode = 'crm_disconnected' | 'sync_not_enabled' | 'no_sources';
type WarningCode = 'destinations_not_configured' | 'blocklists_not_configured' | 'blocklists_error' | 'backfill_failing';

export interface StatusNotice<Code extends string> {
  code: Code;
  connectionId: number;
  crm: string;
  message: string;
  remediation: string;
  docUrl: string;
}

export interface AccountStatus {
  ready: boolean;
  checkedAt: Date;
  connections: ConnectionStatus[];
  blockers: StatusNotice<BlockerCode>[];
  warnings: StatusNotice<WarningCode>[];
}

/** Ready iff there is a connection and every one is ready; blockers gate readiness, warnings never do. */
export function deriveAccountStatus(snapshots: ConnectionSnapshot[], capabilities: Capabilities, docsUrl: string, now = new Date()): AccountStatus {
  const blockers: StatusNotice<BlockerCode>[] = [];
  const warnings: StatusNotice<WarningCode>[] = [];
  const connections = snapshots.map((c) => {
    const notice = <Code extends string>(code: Code) => ({
      code,
      connectionId: c.id,
      crm: c.crm,
      ...TEXT[code as BlockerCode | WarningCode],
      docUrl: `${docsUrl}#${ANCHOR[code as BlockerCode | WarningCode]}`,
    });
    const own: BlockerCode[] = [];
    if (c.status === 'disconnected') own.push('crm_disconnected');
    if (!c.syncEnabled) own.push('sync_not_enabled');
    if (c.sourcePlatforms.length === 0) own.push('no_sources');
    blockers.push(...own.map(notice));

    const sources: ConnectionStatus['sources'] = {
      status: !c.syncEnabled ? 'disabled' : c.sourcePlatforms.length === 0 ? 'not_configured' : 'ready',
      count: c.sourcePlatforms.length,
      platforms: [...new Set(c.sourcePlatforms)].sort(),
    };
    const forwardingCount = new Set(c.forwardingUrls).size;
    const destinationCount = forwardingCount + c.boundReplyRelayCount;
    const destinations: ConnectionStatus['destinations'] = {
      status: !capabilities.canUserAccount ? 'disabled' : destinationCount === 0 ? 'not_configured' : 'ready',
      count: destinationCount,
      eventTypes: [...new Set(c.forwardingEventTypes)].sort(),
      forwardingCount,
      replyRelayCount: c.boundReplyRelayCount,
    };
    const enabled = c.blocklists.filter((b) => b.isEnabled);
    const failing = enabled.filter((b) => b.lastError !== null).sort((a, b) => time(b.lastAttemptedAt) - time(a.lastAttemptedAt));
    const fetched = c.blocklists.map((b) => b.lastFetchedAt).filter((d): d is Date => d !== null);
    const blocklists: ConnectionStatus['blocklists'] = {
      status: !capabilities.canBlockList ? 'disabled' : c.blocklists.length === 0 ? 'not_configured' : failing.length > 0 ? 'error' : 'ready',
      enabledCount: enabled.length,
      lastError: failing[0]?.lastError ?? null,
      lastFetchedAt: fetched.length > 0 ? new Date(Math.max(...fetched.map(time))) : null,
    };
    if (destinations.status === 'not_configured') warnings.push(notice('destinations_not_configured'));
    if (blocklists.status === 'not_configured') warnings.push(notice('blocklists_not_configured'));
    if (blocklists.status === 'error') warnings.push(notice('blocklists_error'));
    if (c.backfills.some((b) => !b.paused && b.failures >= BACKFILL_WARNING_AFTER)) warnings.push(notice('backfill_failing'));
    return {
      connectionId: c.id,
      crm: c.crm,
      ready: own.length === 0,
      crmConnection: { status: c.status, crm: c.crm, organizationId: c.organizationId, organizationDomain: c.organizationDomain },
      sources,
      destinations,
      blocklists,
    };
  });
  return { ready: connections.length > 0 && connections.every((c) => c.ready), checkedAt: now, connections, blockers, warnings };
}

function time(date: Date | null): number {
  return date?.getTime() ?? 0;
}

const TEXT: Record<BlockerCode | WarningCode, { message: string; remediation: string }> = {
  crm_disconnected: {
    message: 'The CRM connection is disconnected: events are received but not written to the CRM.',
    remediation: 'Reconnect the CRM in the dashboard; failed syncs can then be retried.',
  },
  sync_not_enabled: {
    message: 'CRM sync is turned off for this connection: received events are not written to the CRM.',
    remediation: 'Turn on sync for the connection in the dashboard.',
  },
  no_sources: {
    message: 'The connection has no source: no sequencer can send it events.',
    remediation: "Create a source in the dashboard and paste its URL into the sequencer's webhook settings.",
  },
  destinations_not_configured: {
    message: 'No forwarding destination or reply relay is bound to this connection’s sources.',
    remediation: 'Optional: bind a forwarding URL or a reply relay to a source in the dashboard.',
  },
  blocklists_not_configured: {
    message: 'No block list is synced for this connection.',
    remediation: 'Optional: create a block list in the dashboard to keep CRM exclusions in the sequencer.',
  },
  blocklists_error: {
    message: 'A block list failed its last fetch or push.',
    remediation: 'Read lastError on GET /api/v1/blocklists, fix the cause (often CRM or sequencer credentials), then resync the list.',
  },
  backfill_failing: {
    message: "A source's backfill keeps failing: events its sequencer did not deliver by webhook are not fetched.",
    remediation: 'Check the sequencer account given for the source (its API key, and for EmailBison its instance URL); each round tries again.',
  },
};

const ANCHOR: Record<BlockerCode | WarningCode, string> = {
  crm_disconnected: 'crm-disconnected',
  sync_not_enabled: 'sync-not-enabled',
  no_sources: 'no-sources',
  destinations_not_configured: 'destinations-not-configured',
  blocklists_not_configured: 'blocklists-not-configured',
  blocklists_error: 'blocklists-error',
  backfill_failing: 'backfill-failing',
};
