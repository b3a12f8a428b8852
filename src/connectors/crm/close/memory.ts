import { LRUCache } from 'lru-cache';

/** A contact the connection wrote or found, with its lead. */
export interface KnownContact {
  contactId: string;
  leadId: string;
}

/**
 * What the syncs of Close connections remember of their organisations between syncs, in this process,
 * keyed by connection: an email's contact, a domain's lead, the users by email. A sequencer sends several
 * events per lead, so most of a campaign's events find their contact here instead of searching again.
 * Bounded and kept for minutes: Close stays the truth, and a forgotten entry costs a search.
 */
export const CLOSE_MEMORY = {
  contacts: new LRUCache<string, KnownContact>({ max: 200_000, ttl: 10 * 60_000 }),
  leadsByDomain: new LRUCache<string, { leadId: string }>({ max: 50_000, ttl: 10 * 60_000 }),
  /** The organisation's users, email (lowercase) to id. */
  users: new LRUCache<string, Map<string, string>>({ max: 10_000, ttl: 5 * 60_000 }),
};
