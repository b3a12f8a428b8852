import { remembered } from '../../../domain/memory-key.js';
import { asRecord } from '../records.js';
import { SharedCalls, SingleFlight } from '../shared-calls.js';
import { CLOSE_MEMORY, type KnownContact } from './memory.js';
import type { CloseSession } from './session.js';

/** Emails one shared search asks about (an `or` of this many `has_related` clauses). */
const EMAILS_PER_SEARCH = 50;
/** The page a search asks for; the cursor brings the rest. */
const SEARCH_PAGE = 200;
const USERS_PAGE = 100;

/**
 * The contact of an email: remembered by the connection, else the oldest contact whose emails hold it,
 * found through Close's Advanced Filtering (`POST /data/search/`) in a search the round's syncs share: one
 * `or` of up to 50 emails. Close matches text by words, so a hit is kept only when one of its emails is
 * the address itself.
 */
export async function findContactByEmail(api: CloseSession, email: string): Promise<KnownContact | undefined> {
  const key = remembered(api.memoryKey(), 'contact', email);
  const known = CLOSE_MEMORY.contacts.get(key);
  if (known) return known;
  const found = await EMAIL_SEARCHES.load(api.groupKey(), api.gatherMs(), { api, email });
  if (found) CLOSE_MEMORY.contacts.set(key, found);
  return found;
}

/** Remembers a contact the connection created. */
export function rememberContact(api: CloseSession, email: string, contact: KnownContact): void {
  CLOSE_MEMORY.contacts.set(remembered(api.memoryKey(), 'contact', email), contact);
}

/** The oldest contact one of whose URLs is one of `variants` (a profile URL as platforms write it). */
export async function findContactByUrl(api: CloseSession, variants: string[]): Promise<KnownContact | undefined> {
  const wanted = new Set(variants.map((v) => v.toLowerCase()));
  const query = {
    type: 'and',
    queries: [
      { type: 'object_type', object_type: 'contact' },
      { type: 'or', queries: variants.map((url) => related('contact', 'contact_url', 'url', url)) },
    ],
  };
  for await (const hit of search(api, 'contact', 'contact', query, ['id', 'lead_id', 'urls'])) {
    const urls = Array.isArray(hit.urls) ? hit.urls.map(asRecord) : [];
    if (urls.some((u) => typeof u.url === 'string' && wanted.has(u.url.toLowerCase())) && typeof hit.lead_id === 'string')
      return { contactId: String(hit.id), leadId: hit.lead_id };
  }
  return undefined;
}

/**
 * The lead (Close's company) of a domain: remembered by the connection, else the oldest lead whose `url`
 * is on that host (with or without `www.`), searched by the lead's `url` field.
 */
export async function findLeadByDomain(api: CloseSession, domain: string): Promise<string | undefined> {
  const key = remembered(api.memoryKey(), 'lead', domain);
  const known = CLOSE_MEMORY.leadsByDomain.get(key);
  if (known) return known.leadId;
  const query = {
    type: 'and',
    queries: [
      { type: 'object_type', object_type: 'lead' },
      {
        type: 'field_condition',
        field: { type: 'regular_field', object_type: 'lead', field_name: 'url' },
        condition: { type: 'text', mode: 'phrase', value: domain },
      },
    ],
  };
  for await (const hit of search(api, 'company', 'lead', query, ['id', 'url'])) {
    if (typeof hit.url === 'string' && hostOf(hit.url) === domain) {
      rememberLead(api, domain, String(hit.id));
      return String(hit.id);
    }
  }
  return undefined;
}

export function rememberLead(api: CloseSession, domain: string, leadId: string): void {
  CLOSE_MEMORY.leadsByDomain.set(remembered(api.memoryKey(), 'lead', domain), { leadId });
}

/** The id of the organisation's user with `email` (lowercase), or null: the users are listed once per connection for minutes. */
export async function userIdByEmail(api: CloseSession, email: string): Promise<string | null> {
  const key = remembered(api.memoryKey(), 'users');
  // The round's syncs ask at once: one listing for all of them.
  const users = CLOSE_MEMORY.users.get(key) ?? (await USER_LISTINGS.run(key, () => listUsers(api, key)));
  return users.get(email) ?? null;
}

const USER_LISTINGS = new SingleFlight<Map<string, string>>();

async function listUsers(api: CloseSession, key: string): Promise<Map<string, string>> {
  const users = new Map<string, string>();
  for (let skip = 0; ; skip += USERS_PAGE) {
    const page = await api.json('owner', { method: 'GET', path: '/user/', query: { _skip: String(skip), _limit: String(USERS_PAGE) }, idempotent: true });
    for (const user of Array.isArray(page.data) ? page.data.map(asRecord) : []) {
      if (typeof user.email === 'string' && typeof user.id === 'string') users.set(user.email.toLowerCase(), user.id);
    }
    if (page.has_more !== true) break;
  }
  CLOSE_MEMORY.users.set(key, users);
  return users;
}

interface EmailLookup {
  api: CloseSession;
  /** Lowercase. */
  email: string;
}

const EMAIL_SEARCHES = new SharedCalls<EmailLookup, KnownContact | undefined>(searchEmails, EMAILS_PER_SEARCH, (i) => i.email);

/** One search for the group's emails (up to 50), every page of it; per item, the oldest contact holding its email. */
async function searchEmails(items: EmailLookup[]): Promise<(KnownContact | undefined)[]> {
  const api = items[0]!.api;
  const emails = [...new Set(items.map((i) => i.email))];
  const query = {
    type: 'and',
    queries: [
      { type: 'object_type', object_type: 'contact' },
      { type: 'or', queries: emails.map((email) => related('contact', 'contact_email', 'email', email)) },
    ],
  };
  const found = new Map<string, KnownContact>();
  for await (const hit of search(api, 'contact', 'contact', query, ['id', 'lead_id', 'emails', 'date_created'])) {
    if (typeof hit.lead_id !== 'string') continue;
    for (const entry of Array.isArray(hit.emails) ? hit.emails.map(asRecord) : []) {
      const email = typeof entry.email === 'string' ? entry.email.toLowerCase() : undefined;
      if (email !== undefined && !found.has(email)) found.set(email, { contactId: String(hit.id), leadId: hit.lead_id });
    }
  }
  return items.map((item) => found.get(item.email));
}

/** A `has_related` clause: `this` objects with a related row whose `field` holds `value` as a phrase. */
function related(thisType: string, relatedType: string, field: string, value: string): Record<string, unknown> {
  return {
    type: 'has_related',
    this_object_type: thisType,
    related_object_type: relatedType,
    related_query: {
      type: 'field_condition',
      field: { type: 'regular_field', object_type: relatedType, field_name: field },
      condition: { type: 'text', mode: 'phrase', value },
    },
  };
}

/** Every hit of an Advanced Filtering query for `objectType`, with those `fields`. */
async function* search(
  api: CloseSession,
  step: string,
  objectType: 'contact' | 'lead',
  query: unknown,
  fields: string[],
): AsyncGenerator<Record<string, unknown>> {
  for await (const page of searchPages(api, step, objectType, query, fields)) yield* page;
}

/**
 * The hits of an Advanced Filtering query for `objectType`, a page (`_limit` 200) at a time following the
 * answer's `cursor`, with those `fields` (what a list reader needs of a session will do: its `json` call).
 */
export async function* searchPages(
  api: Pick<CloseSession, 'json'>,
  step: string,
  objectType: 'contact' | 'lead',
  query: unknown,
  fields: string[],
): AsyncGenerator<Record<string, unknown>[]> {
  let cursor: string | null = null;
  do {
    const json: Record<string, unknown> = { query, _fields: { [objectType]: fields }, _limit: SEARCH_PAGE, ...(cursor ? { cursor } : {}) };
    const page = await api.json(step, { method: 'POST', path: '/data/search/', json, idempotent: true });
    yield Array.isArray(page.data) ? page.data.map(asRecord) : [];
    cursor = typeof page.cursor === 'string' && page.cursor !== '' ? page.cursor : null;
  } while (cursor);
}

function hostOf(url: string): string | undefined {
  const parsed = URL.canParse(url) ? new URL(url) : URL.canParse(`https://${url}`) ? new URL(`https://${url}`) : undefined;
  return parsed?.hostname.toLowerCase().replace(/^www\./, '');
}
