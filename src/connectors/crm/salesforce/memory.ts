import { LRUCache } from 'lru-cache';

/** A Contact or Lead the connection wrote or found. */
export interface KnownPerson {
  id: string;
  type: 'Contact' | 'Lead';
}

/**
 * What the syncs of Salesforce connections remember of their orgs between syncs, in this process, keyed by
 * connection: an email's person (Contact or Lead) and a sender's user. A sequencer sends several events per
 * lead, so most of a campaign's events find their person here instead of querying again. Bounded across all
 * connections and kept for minutes: Salesforce stays the truth, and a forgotten entry costs a query.
 */
export const ORG_MEMORY = {
  people: new LRUCache<string, KnownPerson>({ max: 200_000, ttl: 10 * 60_000 }),
  /** An active user's id by email; null: no active user has it. */
  users: new LRUCache<string, { id: string | null }>({ max: 10_000, ttl: 5 * 60_000 }),
};
