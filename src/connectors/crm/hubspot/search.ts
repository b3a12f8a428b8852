import { asRecord } from '../records.js';
import type { HubspotSession } from './session.js';

export interface SearchFilter {
  propertyName: string;
  operator: 'EQ';
  value: string;
}

/** The first object of `type` every filter matches (with `properties`), or undefined. */
export async function searchOne(
  api: HubspotSession,
  step: string,
  type: string,
  filters: SearchFilter[],
  properties: string[] = [],
): Promise<{ id: string; properties: Record<string, string> } | undefined> {
  const body = asRecord(
    await api.json(step, {
      method: 'POST',
      path: `/crm/v3/objects/${type}/search`,
      json: { filterGroups: [{ filters }], properties: ['hs_object_id', ...properties], limit: 1 },
      idempotent: true,
    }),
  );
  const first = Array.isArray(body.results) ? asRecord(body.results[0]) : {};
  if (typeof first.id !== 'string') return undefined;
  const values = Object.entries(asRecord(first.properties)).filter((e): e is [string, string] => typeof e[1] === 'string');
  return { id: first.id, properties: Object.fromEntries(values) };
}
