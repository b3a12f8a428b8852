import { LRUCache } from 'lru-cache';

/**
 * What the syncs of Attio connections remember of their workspaces between syncs, in this process, keyed by
 * connection: an email's person, a domain's company, the active members' emails. Bounded and kept for
 * minutes: Attio stays the truth, and a forgotten entry costs an assert.
 */
export const ATTIO_MEMORY = {
  people: new LRUCache<string, { recordId: string }>({ max: 200_000, ttl: 10 * 60_000 }),
  /** A domain's company, and whether it has a name (ours, or Attio's enrichment's). */
  companies: new LRUCache<string, { recordId: string; named: boolean }>({ max: 50_000, ttl: 10 * 60_000 }),
  /** The emails (lowercase) of the workspace's members who are not suspended. */
  members: new LRUCache<string, Set<string>>({ max: 10_000, ttl: 5 * 60_000 }),
};
