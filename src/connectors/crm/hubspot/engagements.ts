import { CrmError } from '../errors.js';
import { asRecord } from '../records.js';
import { SharedCalls } from '../shared-calls.js';
import { searchOne } from './search.js';
import { requireId } from './errors.js';
import type { HubspotSession } from './session.js';
import { hubspotPaths } from './paths.js';

export type EngagementType = 'emails' | 'notes' | 'tasks';

// Association type ids (HUBSPOT_DEFINED) for engagements → contacts.
const TO_CONTACT = { emails: 198, notes: 202, tasks: 204 } as const;

/** Creates an email, note or task associated with the contact: in a batch create the syncs creating at once share, else alone. */
export async function createEngagement(api: HubspotSession, type: EngagementType, contactId: string, properties: Record<string, string>): Promise<string> {
  const step = type === 'tasks' ? 'task' : 'activity';
  const grouped = await ENGAGEMENT_CREATES.create(api, type, contactId, properties);
  if (grouped !== undefined) return grouped;
  const body = await api.json(step, {
    method: 'POST',
    path: hubspotPaths.object(type),
    json: { properties, associations: [association(type, contactId)] },
    idempotent: false,
  });
  return requireId(body, step);
}

/** An engagement of this sync written by an attempt whose answer was lost: same contact, same hs_timestamp. */
export async function findEngagement(api: HubspotSession, type: EngagementType, contactId: string, timestamp: string): Promise<string | undefined> {
  const found = await searchOne(api, type === 'tasks' ? 'task' : 'activity', type, [
    { propertyName: 'associations.contact', operator: 'EQ', value: contactId },
    { propertyName: 'hs_timestamp', operator: 'EQ', value: timestamp },
  ]);
  return found?.id;
}

function association(type: EngagementType, contactId: string) {
  return { to: { id: contactId }, types: [{ associationCategory: 'HUBSPOT_DEFINED', associationTypeId: TO_CONTACT[type] }] };
}

interface GroupedCreate {
  api: HubspotSession;
  type: EngagementType;
  contactId: string;
  properties: Record<string, string>;
}

/**
 * The engagement creates of the syncs running at once in this process, per HubSpot account and type: one
 * batch create call for up to 100 of them, each input with its contact association, instead of one call
 * each. Each sync has written its create ahead (`activityPending`/`taskPending` with its hs_timestamp)
 * before it gets here, so exactly-once holds as for a single create: an input the CRM refused goes back
 * to the sync's own call (nothing was written), while a call whose fate is unknown (no answer, a 5xx, an
 * input the answer does not mention) is `unavailable` for its syncs, whose next attempt looks for the
 * engagement before creating it again.
 */
class EngagementCreates {
  private readonly calls = new SharedCalls(createGroup);

  async create(api: HubspotSession, type: EngagementType, contactId: string, properties: Record<string, string>): Promise<string | undefined> {
    const outcome = await this.calls.load(`${api.groupKey()}\n${type}`, api.gatherMs(), { api, type, contactId, properties });
    if (outcome instanceof CrmError) throw outcome;
    return outcome;
  }

  /** Accounts and types with syncs creating now (tests: nothing stays behind). */
  get size(): number {
    return this.calls.size;
  }
}

export const ENGAGEMENT_CREATES = new EngagementCreates();

/** One batch create for a group of syncs: per sync, the new id, its own call (undefined), or why not now. */
async function createGroup(items: GroupedCreate[]): Promise<(string | CrmError | undefined)[]> {
  if (items.length === 1) return [undefined];
  const { type, api } = items[0]!;
  const step = type === 'tasks' ? 'task' : 'activity';
  const traces = items.map((_, i) => `sync-${i}-${Math.random().toString(36).slice(2, 10)}`);
  const answer = await api.tryPost(step, hubspotPaths.batch(type, 'create'), {
    inputs: items.map((item, i) => ({ properties: item.properties, associations: [association(type, item.contactId)], objectWriteTraceId: traces[i] })),
  });
  const unknown = () => new CrmError('unavailable', `HubSpot ${step} batch create: no clear answer, the next attempt looks for the engagement first`);
  if (!answer.ok) return items.map(() => (answer.written === 'no' ? undefined : unknown()));
  const body = asRecord(answer.body);
  const created = new Map<string, string>();
  for (const row of Array.isArray(body.results) ? body.results.map(asRecord) : []) {
    if (typeof row.objectWriteTraceId === 'string' && typeof row.id === 'string') created.set(row.objectWriteTraceId, row.id);
  }
  const refused = new Set<string>();
  for (const e of Array.isArray(body.errors) ? body.errors.map(asRecord) : []) {
    const named = asRecord(e.context).objectWriteTraceId;
    for (const trace of Array.isArray(named) ? named : []) if (typeof trace === 'string') refused.add(trace);
  }
  return traces.map((trace) => created.get(trace) ?? (refused.has(trace) ? undefined : unknown()));
}
