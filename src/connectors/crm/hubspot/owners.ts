import { LRUCache } from 'lru-cache';
import { asRecord } from '../records.js';
import type { HubspotSession } from './session.js';
import { hubspotPaths } from './paths.js';

/** HubSpot's owners page size (its default; larger limits are not documented). */
const OWNERS_PER_PAGE = 100;

/**
 * The portal's owners (users) by email, read once per connection and kept for five minutes: an owner
 * joining or leaving is seen within them. Syncs asking at once share one read.
 */
const DIRECTORIES = new LRUCache<string, Map<string, string>, HubspotSession>({
  max: 10_000,
  ttl: 5 * 60_000,
  fetchMethod: (_key, _stale, { context }) => readOwners(context),
});

/** The id of the active owner whose email is `email`, or null when no HubSpot user has it. */
export async function ownerIdFor(api: HubspotSession, email: string): Promise<string | null> {
  const owners = await DIRECTORIES.fetch(api.memoryKey(), { context: api });
  return owners?.get(email.trim().toLowerCase()) ?? null;
}

/** Every page of `GET /crm/owners/<version>` (active owners only). */
async function readOwners(api: HubspotSession): Promise<Map<string, string>> {
  const owners = new Map<string, string>();
  let after: string | undefined;
  do {
    const query: Record<string, string> = { limit: String(OWNERS_PER_PAGE), archived: 'false', ...(after ? { after } : {}) };
    const body = asRecord(await api.json('owner', { method: 'GET', path: hubspotPaths.owners, query, idempotent: true }));
    for (const owner of Array.isArray(body.results) ? body.results.map(asRecord) : []) {
      const id = typeof owner.id === 'string' || typeof owner.id === 'number' ? String(owner.id) : undefined;
      if (id !== undefined && typeof owner.email === 'string' && owner.archived !== true) owners.set(owner.email.trim().toLowerCase(), id);
    }
    const next = asRecord(asRecord(body.paging).next).after;
    after = typeof next === 'string' && next !== '' ? next : undefined;
  } while (after !== undefined);
  return owners;
}
