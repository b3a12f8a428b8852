/**
 * Block list rules (issue 16), pure: what a CRM value becomes as a block list entry, and how a list's
 * status moves. The spec names the statuses and the pause and resync transitions; the rest is ours
 * (docs/decisions.md):
 *
 *   CREATED --first round--> FETCHING --entries written--> SYNCING --all pushed--> SYNCED
 *   SYNCED --round (BLOCKLIST_REFRESH_MINUTES)--> SYNCING_NEW_CONTACTS --fetched, all pushed--> SYNCED
 *   resync (any status but FETCHING or SYNCING) --> FETCHING (a full reload)
 *   pause: FETCHING or SYNCING --> SYNCING_NEW_CONTACTS, others unchanged; isEnabled false
 *   an error in a round: lastError set, the list back to where it rests (SYNCED once a fetch completed,
 *   else CREATED; a paused list keeps its status, as a finished fetch or push leaves it); the next round
 *   or a resync tries again.
 */
import { normalizeEmail } from './email-address.js';
import { registrableDomain } from './registrable-domain.js';

export type BlockType = 'ADDRESS' | 'DOMAIN';

export type BlocklistStatus = 'CREATED' | 'FETCHING' | 'SYNCING' | 'SYNCED' | 'SYNCING_NEW_CONTACTS';

/**
 * The entry a CRM value makes, or null for a value that blocks nothing: `ADDRESS` an email address
 * (trimmed, lowercased, valid), `DOMAIN` a registrable domain (from a URL, an email or a host; scheme,
 * `www.` and other subdomains dropped).
 */
export function blockValue(blockType: BlockType, raw: unknown): string | null {
  if (typeof raw !== 'string') return null;
  return blockType === 'ADDRESS' ? normalizeEmail(raw) : registrableDomain(raw);
}

/** A round: `full` (the first fetch, or a resync) replaces the local entries; `incremental` adds new ones. */
export type RoundKind = 'full' | 'incremental';

/** The status a round runs under. */
export function roundStatus(kind: RoundKind): BlocklistStatus {
  return kind === 'full' ? 'FETCHING' : 'SYNCING_NEW_CONTACTS';
}

/** After a round's fetch wrote its entries: pushing follows, unless the list was paused meanwhile. */
export function afterFetch(list: { status: BlocklistStatus; isEnabled: boolean }): BlocklistStatus {
  if (!list.isEnabled) return list.status;
  return list.status === 'FETCHING' ? 'SYNCING' : list.status;
}

/** Once nothing is left to push (a paused list is not pushed, so keeps its status). */
export function afterPush(list: { status: BlocklistStatus; isEnabled: boolean }): BlocklistStatus {
  return list.isEnabled ? 'SYNCED' : list.status;
}

/** Where a list rests after a round failed: SYNCED once a fetch completed, else CREATED; a paused list keeps the status its pause left. */
export function afterError(list: { status: BlocklistStatus; isEnabled: boolean; lastFetchedAt: Date | null }): BlocklistStatus {
  if (!list.isEnabled || list.status === 'SYNCED' || list.status === 'CREATED') return list.status;
  return list.lastFetchedAt ? 'SYNCED' : 'CREATED';
}

/** Spec: pausing moves FETCHING or SYNCING to SYNCING_NEW_CONTACTS; other statuses stay. */
export function afterPause(status: BlocklistStatus): BlocklistStatus {
  return status === 'FETCHING' || status === 'SYNCING' ? 'SYNCING_NEW_CONTACTS' : status;
}

/** Why a resync is refused (spec, in this order after the scope and capability checks), or null. */
export function resyncRefusal(list: { status: BlocklistStatus; hasCrmSource: boolean; roundQueued: boolean }): 'in_progress' | 'no_source' | null {
  if (list.status === 'FETCHING' || list.status === 'SYNCING' || list.roundQueued) return 'in_progress';
  if (!list.hasCrmSource) return 'no_source';
  return null;
}
