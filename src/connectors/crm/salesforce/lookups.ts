import { asRecord } from '../records.js';
import { SharedCalls } from '../shared-calls.js';
import { remembered } from '../../../domain/memory-key.js';
import { ORG_MEMORY, type KnownPerson } from './memory.js';
import { soqlString, type SalesforceSession } from './session.js';

/** The longest SOQL statement a shared lookup sends (the query goes in the URL, which Salesforce caps at 16 KB with headers). */
const SOQL_MAX = 6_000;
/** Emails one shared lookup asks about at most. */
const LOOKUPS_PER_CALL = 200;

/**
 * The person of an email: remembered by the connection, else the oldest Contact with it, else the oldest
 * unconverted Lead (a Contact is the converted, curated record), each looked up in a query the round's
 * syncs share (`Email IN (...)`). `leadStep` waits for the round between the two lookups.
 */
export async function findPersonByEmail(api: SalesforceSession, email: string, leadStep: () => Promise<void>): Promise<KnownPerson | undefined> {
  const key = remembered(api.memoryKey(), 'person', email);
  const known = ORG_MEMORY.people.get(key);
  if (known) return known;
  const contact = await LOOKUPS.Contact.load(api.groupKey(), api.gatherMs(), { api, email });
  await leadStep();
  const lead = contact === undefined ? await LOOKUPS.Lead.load(api.groupKey(), api.gatherMs(), { api, email }) : undefined;
  const person: KnownPerson | undefined =
    contact !== undefined ? { id: contact, type: 'Contact' } : lead !== undefined ? { id: lead, type: 'Lead' } : undefined;
  if (person) ORG_MEMORY.people.set(key, person);
  return person;
}

/** The active user whose email is `email` (remembered by the connection for minutes), or null. */
export async function activeUserId(api: SalesforceSession, email: string): Promise<string | null> {
  const key = remembered(api.memoryKey(), 'user', email);
  const known = ORG_MEMORY.users.get(key);
  if (known) return known.id;
  const id = (await LOOKUPS.User.load(api.groupKey(), api.gatherMs(), { api, email })) ?? null;
  ORG_MEMORY.users.set(key, { id });
  return id;
}

/** Remembers a person the connection created. */
export function rememberPerson(api: SalesforceSession, email: string, person: KnownPerson): void {
  ORG_MEMORY.people.set(remembered(api.memoryKey(), 'person', email), person);
}

interface GroupedLookup {
  api: SalesforceSession;
  /** Lowercase. */
  email: string;
}

type Sobject = 'Contact' | 'Lead' | 'User';

/** Per object, the lookups by email of the syncs looking at once: one query for up to 200 emails. */
const LOOKUPS: Record<Sobject, SharedCalls<GroupedLookup, string | undefined>> = {
  Contact: new SharedCalls(
    (items) => lookupGroup('Contact', items),
    LOOKUPS_PER_CALL,
    (i) => i.email,
  ),
  Lead: new SharedCalls(
    (items) => lookupGroup('Lead', items),
    LOOKUPS_PER_CALL,
    (i) => i.email,
  ),
  User: new SharedCalls(
    (items) => lookupGroup('User', items),
    LOOKUPS_PER_CALL,
    (i) => i.email,
  ),
};

/** What a record of each object must also be: a Lead not yet converted, an active user. */
const CONDITION: Record<Sobject, string> = { Contact: '', Lead: ' AND IsConverted = false', User: ' AND IsActive = true' };
const STEP: Record<Sobject, string> = { Contact: 'contact', Lead: 'contact', User: 'owner' };

/**
 * The oldest record of `object` per email: alone, the query for that email; together, `Email IN (...)`
 * queries of at most {@link SOQL_MAX} characters, every batch of their answers.
 */
async function lookupGroup(object: Sobject, items: GroupedLookup[]): Promise<(string | undefined)[]> {
  const api = items[0]!.api;
  const emails = [...new Set(items.map((i) => i.email))];
  const order = object === 'User' ? '' : ' ORDER BY CreatedDate ASC';
  if (emails.length === 1) {
    const id = await api.queryFirstId(STEP[object], `SELECT Id FROM ${object} WHERE Email = ${soqlString(emails[0]!)}${CONDITION[object]}${order} LIMIT 1`);
    return items.map(() => id);
  }
  const found = new Map<string, string>();
  for (const chunk of soqlChunks(emails, (list) => `SELECT Id, Email FROM ${object} WHERE Email IN (${list})${CONDITION[object]}${order}`)) {
    for await (const records of api.queryAll(STEP[object], chunk)) {
      for (const record of records.map(asRecord)) {
        const email = typeof record.Email === 'string' ? record.Email.toLowerCase() : undefined;
        if (email !== undefined && typeof record.Id === 'string' && !found.has(email)) found.set(email, record.Id);
      }
    }
  }
  return items.map((item) => found.get(item.email));
}

/** Statements over the values, each under {@link SOQL_MAX} characters. */
function soqlChunks(values: string[], statement: (list: string) => string): string[] {
  const out: string[] = [];
  let current: string[] = [];
  for (const value of values) {
    const next = [...current, soqlString(value)];
    if (current.length > 0 && statement(next.join(', ')).length > SOQL_MAX) {
      out.push(statement(current.join(', ')));
      current = [soqlString(value)];
    } else current = next;
  }
  if (current.length > 0) out.push(statement(current.join(', ')));
  return out;
}
