import { LRUCache } from 'lru-cache';
import { asRecord } from '../records.js';
import type { HubspotSession } from './session.js';
import { hubspotPaths, type HubspotObjectType } from './paths.js';

/**
 * HubSpot's search API takes five requests a second per account, outside the ten-second window (and a
 * search answered 429 pauses every call of the connection): this process spaces a portal's searches a
 * quarter second apart, four a second, whatever the connection's budget allows otherwise.
 */
const SEARCH_SPACING_MS = 250;
/** When each portal's next search may go (epoch ms). */
const NEXT_SEARCH = new LRUCache<string, number>({ max: 10_000, ttl: 60_000 });

/** One search call (`POST /crm/objects/<version>/<type>/search`), at the portal's search pace. */
export async function search(api: HubspotSession, step: string, type: HubspotObjectType, body: Record<string, unknown>): Promise<Record<string, unknown>> {
  const key = api.memoryKey();
  const now = Date.now();
  const at = Math.max(now, NEXT_SEARCH.get(key) ?? 0);
  NEXT_SEARCH.set(key, at + SEARCH_SPACING_MS);
  if (at > now) await new Promise((resolve) => setTimeout(resolve, at - now));
  return asRecord(await api.json(step, { method: 'POST', path: hubspotPaths.search(type), json: body, idempotent: true }));
}

export interface SearchFilter {
  propertyName: string;
  operator: 'EQ';
  value: string;
}

/** The first object of `type` every filter matches (with `properties`), or undefined. */
export async function searchOne(
  api: HubspotSession,
  step: string,
  type: HubspotObjectType,
  filters: SearchFilter[],
  properties: string[] = [],
): Promise<{ id: string; properties: Record<string, string> } | undefined> {
  const body = await search(api, step, type, { filterGroups: [{ filters }], properties: ['hs_object_id', ...properties], limit: 1 });
  const first = Array.isArray(body.results) ? asRecord(body.results[0]) : {};
  if (typeof first.id !== 'string') return undefined;
  const values = Object.entries(asRecord(first.properties)).filter((e): e is [string, string] => typeof e[1] === 'string');
  return { id: first.id, properties: Object.fromEntries(values) };
}
