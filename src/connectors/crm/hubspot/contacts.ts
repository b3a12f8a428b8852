import { normalizeProfileUrl } from '../../../domain/profile-url.js';
import { CrmError } from '../errors.js';
import { asRecord } from '../records.js';
import { SharedCalls } from '../shared-calls.js';
import type { CrmEvent } from '../types.js';
import { remembered } from '../../../domain/memory-key.js';
import { PORTAL_MEMORY } from './memory.js';
import { searchOne } from './search.js';
import { describeErrors, requireId } from './errors.js';
import type { HubspotSession } from './session.js';
import { hubspotPaths } from './paths.js';

/** The event's contact: its id, whether this step created it, and its owner (undefined when the owner was not asked about). */
export interface ContactResult {
  id: string;
  created: boolean;
  ownerId?: string | null;
}

/**
 * The contact of an event, found or created, with its owner set where the source asks and the contact
 * has none. `owner`: the id of the owner to give it (the sender's user), null when the sender is no
 * HubSpot user, undefined when the source does not assign owners.
 */
export function writeContact(
  api: HubspotSession,
  event: CrmEvent,
  owner: string | null | undefined,
  /** Waits for the round's runs between the read and the upsert (CrmRun.step). */
  upsertStep: () => Promise<void>,
): Promise<ContactResult> {
  return event.email ? contactByEmail(api, event, owner, upsertStep) : socialContact(api, event, owner);
}

/**
 * By email, an upsert (one batch call for the syncs upserting at once), skipped when this process upserted
 * the same properties for the email minutes ago. With an owner to give, the contact's current owner is
 * read first (one batch read for the syncs reading at once), so that an owner the customer chose stays.
 */
async function contactByEmail(api: HubspotSession, event: CrmEvent, owner: string | null | undefined, upsertStep: () => Promise<void>): Promise<ContactResult> {
  const email = (event.email as string).trim().toLowerCase();
  const properties: Record<string, string> = { email, ...nameProperties(event) };
  const profile = event.profileUrl ? normalizeProfileUrl(event.profileUrl) : undefined;
  if (profile?.ok && profile.profile.kind === 'professional') properties.hs_linkedin_url = profile.profile.canonical;
  const key = remembered(api.memoryKey(), 'contact', email);
  const known = PORTAL_MEMORY.contacts.get(key);
  let currentOwner = known?.ownerId;
  let id = known?.id;
  if (typeof owner === 'string' && currentOwner === undefined) {
    const read = await CONTACT_READS.load(api.groupKey(), api.gatherMs(), { api, email });
    currentOwner = read?.ownerId ?? null;
    id = read?.id ?? id;
  }
  await upsertStep();
  const ownerToSet = typeof owner === 'string' && !currentOwner ? owner : undefined;
  const upserted = fingerprint(properties);
  let created = false;
  if (id === undefined || known?.upserted !== upserted || ownerToSet !== undefined) {
    const contact = await upsertContact(api, email, ownerToSet ? { ...properties, hubspot_owner_id: ownerToSet } : properties);
    [id, created] = [contact.id, contact.created];
  }
  const ownerId = ownerToSet ?? currentOwner;
  PORTAL_MEMORY.contacts.set(key, { id, upserted, ...(ownerId !== undefined ? { ownerId } : {}) });
  return { id, created, ...(ownerId !== undefined ? { ownerId } : {}) };
}

/** Gives a known contact `owner` unless it has one; the contact's owner after. */
export async function giveOwner(api: HubspotSession, contactId: string, owner: string): Promise<string> {
  const path = hubspotPaths.object('contacts', contactId);
  const current = asRecord(
    asRecord(await api.json('owner', { method: 'GET', path, query: { properties: 'hubspot_owner_id' }, idempotent: true })).properties,
  ).hubspot_owner_id;
  if (typeof current === 'string' && current !== '') return current;
  await api.json('owner', { method: 'PATCH', path, json: { properties: { hubspot_owner_id: owner } }, idempotent: true });
  return owner;
}

/** Only what the event knows: an absent value never blanks what the CRM has. */
function nameProperties(event: CrmEvent): Record<string, string> {
  const out: Record<string, string> = {};
  if (event.firstName?.trim()) out.firstname = event.firstName.trim();
  if (event.lastName?.trim()) out.lastname = event.lastName.trim();
  if (event.company?.trim()) out.company = event.company.trim();
  return out;
}

function fingerprint(properties: Record<string, string>): string {
  return JSON.stringify(Object.entries(properties).sort(([a], [b]) => a.localeCompare(b)));
}

// ---------------------------------------------------------------------------------------------
// Reads by email

interface GroupedRead {
  api: HubspotSession;
  email: string;
}

/**
 * The contacts of the syncs reading at once, per HubSpot account: one batch read by email (up to 100),
 * with their owner. A contact HubSpot does not have reads as null.
 */
const CONTACT_READS = new SharedCalls<GroupedRead, { id: string; ownerId: string | null } | null>(readGroup, 100, (i) => i.email);

async function readGroup(items: GroupedRead[]): Promise<({ id: string; ownerId: string | null } | null)[]> {
  const emails = [...new Set(items.map((i) => i.email))];
  const body = asRecord(
    await items[0]!.api.json('owner', {
      method: 'POST',
      path: hubspotPaths.batch('contacts', 'read'),
      json: { idProperty: 'email', properties: ['email', 'hubspot_owner_id'], inputs: emails.map((email) => ({ id: email })) },
      idempotent: true,
    }),
  );
  const found = new Map<string, { id: string; ownerId: string | null }>();
  for (const row of Array.isArray(body.results) ? body.results.map(asRecord) : []) {
    const properties = asRecord(row.properties);
    const owner = properties.hubspot_owner_id;
    if (typeof row.id === 'string' && typeof properties.email === 'string')
      found.set(properties.email.toLowerCase(), { id: row.id, ownerId: typeof owner === 'string' && owner !== '' ? owner : null });
  }
  return items.map((item) => found.get(item.email) ?? null);
}

// ---------------------------------------------------------------------------------------------
// Upserts by email

async function upsertContact(api: HubspotSession, email: string, properties: Record<string, string>): Promise<{ id: string; created: boolean }> {
  const grouped = await CONTACT_UPSERTS.upsert(api, email, properties);
  if (grouped) return grouped;
  const body = await api.json('contact', {
    method: 'POST',
    path: hubspotPaths.batch('contacts', 'upsert'),
    json: { inputs: [{ id: email, idProperty: 'email', properties }] },
    idempotent: true,
  });
  const first = asRecord(body).results;
  const row = Array.isArray(first) ? asRecord(first[0]) : {};
  if (typeof row.id !== 'string') {
    // 207 Multi-Status with the input in `errors`.
    throw new CrmError('rejected', `HubSpot contact failed: ${describeErrors(body) ?? 'no contact in the answer'}`, { payload: body });
  }
  return { id: row.id, created: row.new === true };
}

interface GroupedUpsert {
  api: HubspotSession;
  email: string;
  properties: Record<string, string>;
}

/**
 * The email upserts of the syncs running at once in this process, per HubSpot account (access token):
 * one batch upsert call for up to 100 of them, instead of one call each. An optimisation only: a sync
 * whose answer is anything but a clean result goes back to its own upsert call, whose errors, retries and
 * token refresh are those of every other step; but a 429 is the account's answer to all of them, and
 * every sync of the group is rescheduled after its `Retry-After` instead.
 */
class ContactUpserts {
  private readonly calls = new SharedCalls(upsertGroup, 100, (i: GroupedUpsert) => i.email);

  upsert(api: HubspotSession, email: string, properties: Record<string, string>): Promise<{ id: string; created: boolean } | undefined> {
    return this.calls.load(api.groupKey(), api.gatherMs(), { api, email, properties });
  }

  /** Accounts with syncs upserting now (tests: nothing stays behind). */
  get size(): number {
    return this.calls.size;
  }
}

export const CONTACT_UPSERTS = new ContactUpserts();

/** One batch upsert for a group of syncs; those of one email share an input (the last one's properties win, as in turn). */
async function upsertGroup(items: GroupedUpsert[]): Promise<({ id: string; created: boolean } | undefined)[]> {
  // Alone, a sync takes the ordinary path: the same call, with retries and refresh.
  if (items.length === 1) return [undefined];
  const inputs = new Map<string, Record<string, string>>();
  for (const item of items) inputs.set(item.email, { ...inputs.get(item.email), ...item.properties });
  const answer = await items[0]!.api.tryPost('contact', hubspotPaths.batch('contacts', 'upsert'), {
    inputs: [...inputs].map(([email, properties]) => ({ id: email, idProperty: 'email', properties })),
  });
  // An upsert is safe to repeat: whatever became of the shared call, each sync may make its own.
  const { results } = asRecord(answer.ok ? answer.body : undefined);
  // Results come in no promised order: matched by the email they carry.
  const byEmail = new Map<string, Record<string, unknown>>();
  for (const row of Array.isArray(results) ? results.map(asRecord) : []) {
    const email = asRecord(row.properties).email;
    if (typeof email === 'string' && typeof row.id === 'string') byEmail.set(email.toLowerCase(), row);
  }
  const answered = new Set<string>();
  return items.map((item) => {
    const row = byEmail.get(item.email);
    if (!row) return undefined;
    const first = !answered.has(item.email);
    answered.add(item.email);
    return { id: row.id as string, created: first && row.new === true };
  });
}

// ---------------------------------------------------------------------------------------------
// Social-only events

/**
 * Social-only events: HubSpot requires a valid email for `email`, so the profile goes into its own
 * built-in property (`hs_linkedin_url` for professional profiles, `twitterhandle` for microblogs),
 * searched first and set on create (with the owner, when one is to be given); a contact found without
 * an owner gets it.
 */
async function socialContact(api: HubspotSession, event: CrmEvent, owner: string | null | undefined): Promise<ContactResult> {
  const parsed = normalizeProfileUrl(event.profileUrl ?? event.identity);
  if (!parsed.ok) throw new CrmError('rejected', `HubSpot contact failed: the event has no email and ${parsed.reason}`);
  const { kind, canonical } = parsed.profile;
  const property = kind === 'professional' ? 'hs_linkedin_url' : 'twitterhandle';
  const value = kind === 'professional' ? canonical : canonical.replace(/^https:\/\/x\.com\//, '');
  const existing = await searchOne(api, 'contact', 'contacts', [{ propertyName: property, operator: 'EQ', value }], ['hubspot_owner_id']);
  if (existing) {
    const current = existing.properties.hubspot_owner_id;
    if (typeof owner !== 'string') return { id: existing.id, created: false, ...(owner === null ? { ownerId: current || null } : {}) };
    if (current) return { id: existing.id, created: false, ownerId: current };
    await api.json('owner', {
      method: 'PATCH',
      path: hubspotPaths.object('contacts', existing.id),
      json: { properties: { hubspot_owner_id: owner } },
      idempotent: true,
    });
    return { id: existing.id, created: false, ownerId: owner };
  }
  const body = await api.json('contact', {
    method: 'POST',
    path: hubspotPaths.object('contacts'),
    json: { properties: { [property]: value, ...nameProperties(event), ...(typeof owner === 'string' ? { hubspot_owner_id: owner } : {}) } },
    idempotent: false,
  });
  return { id: requireId(body, 'contact'), created: true, ...(owner !== undefined ? { ownerId: owner } : {}) };
}
