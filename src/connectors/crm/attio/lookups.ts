import { remembered } from '../../../domain/memory-key.js';
import { CrmError } from '../errors.js';
import { asRecord } from '../records.js';
import { SingleFlight } from '../shared-calls.js';
import { ATTIO_MEMORY } from './memory.js';
import type { AttioSession } from './session.js';

/** A person or company record as the connector reads it: its id and its values. */
export interface AttioRecordView {
  recordId: string;
  values: Record<string, unknown[]>;
  createdAt: string;
}

/** How far Attio's clock may be from ours when an assert's answer tells whether it created the record. */
const CLOCK_SKEW_MS = 5_000;

/**
 * The person of an email, asserted: `PUT /objects/people/records?matching_attribute=email_addresses` with
 * the address alone (the matching attribute is appended to, never replaced; every other attribute we sent
 * would overwrite the rep's). Once for the syncs of one email at once; remembered by the connection.
 */
export async function assertPerson(api: AttioSession, email: string): Promise<AttioRecordView & { known: boolean; created: boolean }> {
  const key = remembered(api.memoryKey(), 'person', email);
  const known = ATTIO_MEMORY.people.get(key);
  if (known) return { recordId: known.recordId, values: {}, createdAt: '', known: true, created: false };
  const asked = Date.now();
  const record = await ASSERTS.run(key, async () =>
    recordOf(
      await api.data('contact', {
        method: 'PUT',
        path: '/objects/people/records',
        query: { matching_attribute: 'email_addresses' },
        json: { data: { values: { email_addresses: [email] } } },
        idempotent: true,
      }),
      'person',
    ),
  );
  ATTIO_MEMORY.people.set(key, { recordId: record.recordId });
  // Attio's answer does not say whether the assert created the person: its creation time does.
  return { ...record, known: false, created: Date.parse(record.createdAt) >= asked - CLOCK_SKEW_MS };
}

/**
 * The company of a domain, asserted by `domains` alone, once for the syncs of one domain, and whether it
 * has a name; remembered by the connection.
 */
export async function assertCompany(api: AttioSession, domain: string): Promise<{ recordId: string; named: boolean }> {
  const key = remembered(api.memoryKey(), 'company', domain);
  const known = ATTIO_MEMORY.companies.get(key);
  if (known) return known;
  const record = await ASSERTS.run(key, async () =>
    recordOf(
      await api.data('company', {
        method: 'PUT',
        path: '/objects/companies/records',
        query: { matching_attribute: 'domains' },
        json: { data: { values: { domains: [domain] } } },
        idempotent: true,
      }),
      'company',
    ),
  );
  const company = { recordId: record.recordId, named: (record.values.name ?? []).some((v) => textOf(v) !== '') };
  ATTIO_MEMORY.companies.set(key, company);
  return company;
}

/** Remembers that the connection named a domain's company. */
export function rememberNamed(api: AttioSession, domain: string, recordId: string): void {
  ATTIO_MEMORY.companies.set(remembered(api.memoryKey(), 'company', domain), { recordId, named: true });
}

const ASSERTS = new SingleFlight<AttioRecordView>();

/** The oldest person whose `linkedin` is one of `variants` (the attribute is plain text: queried by the slug, compared here). */
export async function findPersonByProfile(api: AttioSession, slug: string, variants: string[]): Promise<string | undefined> {
  const wanted = new Set(variants.map((v) => v.toLowerCase().replace(/\/+$/, '')));
  const rows = await api.data('contact', {
    method: 'POST',
    path: '/objects/people/records/query',
    json: { filter: { linkedin: { $contains: slug } }, limit: 50 },
    idempotent: true,
  });
  for (const row of Array.isArray(rows) ? rows.map(asRecord) : []) {
    const record = recordOf(row, 'person');
    const urls = (record.values.linkedin ?? []).map((v) => textOf(v).toLowerCase().replace(/\/+$/, ''));
    if (urls.some((u) => wanted.has(u))) return record.recordId;
  }
  return undefined;
}

/** Whether an active (not suspended) member of the workspace has `email`: the members are listed once per connection for minutes. */
export async function isActiveMember(api: AttioSession, email: string): Promise<boolean> {
  const key = remembered(api.memoryKey(), 'members');
  const members = ATTIO_MEMORY.members.get(key) ?? (await MEMBER_LISTINGS.run(key, () => listMembers(api, key)));
  return members.has(email);
}

const MEMBER_LISTINGS = new SingleFlight<Set<string>>();

async function listMembers(api: AttioSession, key: string): Promise<Set<string>> {
  const rows = await api.data('owner', { method: 'GET', path: '/workspace_members', idempotent: true });
  const members = new Set(
    (Array.isArray(rows) ? rows.map(asRecord) : [])
      .filter((m) => m.access_level !== 'suspended' && typeof m.email_address === 'string')
      .map((m) => String(m.email_address).toLowerCase()),
  );
  ATTIO_MEMORY.members.set(key, members);
  return members;
}

/** A record's id and values from Attio's answer. */
export function recordOf(body: unknown, what: string): AttioRecordView {
  const record = asRecord(body);
  const id = asRecord(record.id).record_id;
  if (typeof id !== 'string') throw new CrmError('unavailable', `Attio ${what} answered without a record id`);
  const values = asRecord(record.values);
  return {
    recordId: id,
    values: Object.fromEntries(Object.entries(values).map(([k, v]) => [k, Array.isArray(v) ? v : []])),
    createdAt: typeof record.created_at === 'string' ? record.created_at : '',
  };
}

/** A text attribute value's text. */
function textOf(value: unknown): string {
  const v = asRecord(value);
  return typeof v.value === 'string' ? v.value : '';
}
