import { LRUCache } from 'lru-cache';

/** A contact as this process last wrote or read it. */
export interface KnownContact {
  id: string;
  /** Its owner as last seen (null: none); undefined: not looked at. */
  ownerId?: string | null;
  /** The properties last upserted for it: the same ones again need no call. */
  upserted?: string;
}

/**
 * What the syncs of HubSpot connections remember of their portals between syncs, in this process, keyed by
 * connection: an email's contact, a domain's company, the contact-company pairs already associated. A
 * sequencer sends several events per lead (sent, follow-up, opened, reply, category), so most of a
 * campaign's events find their contact and company here instead of asking HubSpot again. Bounded across
 * all connections (the least recently used entries go first) and kept for minutes: HubSpot stays the
 * truth, and a forgotten entry costs a lookup, never a wrong write.
 */
export const PORTAL_MEMORY = {
  contacts: new LRUCache<string, KnownContact>({ max: 200_000, ttl: 10 * 60_000 }),
  companies: new LRUCache<string, string>({ max: 100_000, ttl: 60 * 60_000 }),
  associations: new LRUCache<string, true>({ max: 200_000, ttl: 60 * 60_000 }),
};
