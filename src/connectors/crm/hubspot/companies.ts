import { CrmError } from '../errors.js';
import { asRecord } from '../records.js';
import { SharedCalls, SingleFlight } from '../shared-calls.js';
import { remembered } from '../../../domain/memory-key.js';
import { PORTAL_MEMORY } from './memory.js';
import { search } from './search.js';
import { describeErrors, requireId } from './errors.js';
import type { HubspotSession } from './session.js';
import { hubspotPaths } from './paths.js';

/** HubSpot's search refuses a body over 3,000 characters; the domains of one search stay under this. */
const SEARCH_BODY_MAX = 2_800;
/** HubSpot's largest search page. */
const SEARCH_PAGE = 200;
/** HubSpot's batch association create takes 2,000 inputs; half keeps the answer small. */
const ASSOCIATIONS_PER_CALL = 1_000;

/**
 * The company of a domain: remembered by this connection, else found by a search the syncs looking at
 * once share (`domain IN (...)`, the oldest company of a domain when it has several), else created in a
 * batch create they share. Each sync saves the id before its next step: a create whose answer was lost is
 * found by the next attempt's search.
 */
export async function companyFor(api: HubspotSession, domain: string, name: string | null, createStep: () => Promise<void>): Promise<string> {
  const key = remembered(api.memoryKey(), 'company', domain);
  const known = PORTAL_MEMORY.companies.get(key);
  if (known !== undefined) return known;
  const found = await COMPANY_SEARCHES.load(api.groupKey(), api.gatherMs(), { api, domain });
  // The round's runs create what their search did not find together.
  await createStep();
  // The syncs of one new domain create one company, whichever batch their turn falls in.
  const id = found ?? (await CREATING.run(key, () => createCompany(api, domain, name?.trim() || domain)));
  PORTAL_MEMORY.companies.set(key, id);
  return id;
}

/** Associates the contact with the company (HubSpot's default, unlabeled association), once per pair this connection remembers. */
export async function associateCompany(api: HubspotSession, contactId: string, companyId: string): Promise<void> {
  const key = remembered(api.memoryKey(), 'association', contactId, companyId);
  if (PORTAL_MEMORY.associations.has(key)) return;
  const refused = await ASSOCIATIONS.load(api.groupKey(), api.gatherMs(), { api, contactId, companyId });
  if (refused === 'alone')
    await api.json('association', {
      method: 'PUT',
      path: hubspotPaths.associateDefault('contacts', contactId, 'companies', companyId),
      idempotent: true,
    });
  else if (refused) throw refused;
  PORTAL_MEMORY.associations.set(key, true);
}

// ---------------------------------------------------------------------------------------------
// Search by domain

interface GroupedSearch {
  api: HubspotSession;
  domain: string;
}

const COMPANY_SEARCHES = new SharedCalls<GroupedSearch, string | undefined>(searchGroup, 100, (i) => i.domain);

/** One search per group of domains that fits HubSpot's body limit, every page of it; the oldest company per domain. */
async function searchGroup(items: GroupedSearch[]): Promise<(string | undefined)[]> {
  const api = items[0]!.api;
  const found = new Map<string, { id: string; order: number }>();
  for (const domains of chunks([...new Set(items.map((i) => i.domain))])) {
    let after: string | undefined;
    do {
      const body = await search(api, 'company', 'companies', searchBody(domains, after));
      for (const row of Array.isArray(body.results) ? body.results.map(asRecord) : []) {
        const domain = asRecord(row.properties).domain;
        if (typeof row.id !== 'string' || typeof domain !== 'string') continue;
        const order = Number(row.id);
        const seen = found.get(domain.toLowerCase());
        if (!seen || order < seen.order) found.set(domain.toLowerCase(), { id: row.id, order });
      }
      const next = asRecord(asRecord(body.paging).next).after;
      after = typeof next === 'string' && next !== '' ? next : undefined;
    } while (after !== undefined);
  }
  return items.map((item) => found.get(item.domain)?.id);
}

/** `IN` takes lowercase values (HubSpot's rule for string properties); domains are lowercase already. */
function searchBody(domains: string[], after?: string): Record<string, unknown> {
  return {
    filterGroups: [{ filters: [{ propertyName: 'domain', operator: 'IN', values: domains }] }],
    properties: ['domain'],
    sorts: [{ propertyName: 'hs_object_id', direction: 'ASCENDING' }],
    limit: SEARCH_PAGE,
    ...(after !== undefined ? { after } : {}),
  };
}

/** Domains in groups whose search body stays under {@link SEARCH_BODY_MAX}. */
function chunks(domains: string[]): string[][] {
  const out: string[][] = [];
  let current: string[] = [];
  for (const domain of domains) {
    if (current.length > 0 && JSON.stringify(searchBody([...current, domain], '10000')).length > SEARCH_BODY_MAX) {
      out.push(current);
      current = [];
    }
    current.push(domain);
  }
  if (current.length > 0) out.push(current);
  return out;
}

// ---------------------------------------------------------------------------------------------
// Create

interface GroupedCreate {
  api: HubspotSession;
  domain: string;
  name: string;
}

const CREATING = new SingleFlight<string>();

const COMPANY_CREATES = new SharedCalls<GroupedCreate, string | CrmError | undefined>(createGroup);

async function createCompany(api: HubspotSession, domain: string, name: string): Promise<string> {
  const grouped = await COMPANY_CREATES.load(api.groupKey(), api.gatherMs(), { api, domain, name });
  if (grouped instanceof CrmError) throw grouped;
  if (grouped !== undefined) return grouped;
  const body = await api.json('company', { method: 'POST', path: hubspotPaths.object('companies'), json: { properties: { domain, name } }, idempotent: false });
  return requireId(body, 'company');
}

/**
 * One batch create for the domains of a group (one input per domain): per sync, the company's id, its own
 * call (undefined: the batch was refused before HubSpot wrote anything, or its input was), or why not now
 * (no clear answer: the next attempt searches first).
 */
async function createGroup(items: GroupedCreate[]): Promise<(string | CrmError | undefined)[]> {
  const domains = new Map<string, { name: string; trace: string }>();
  for (const item of items) if (!domains.has(item.domain)) domains.set(item.domain, { name: item.name, trace: `company-${domains.size}-${randomTag()}` });
  if (domains.size === 1 && items.length === 1) return [undefined];
  const api = items[0]!.api;
  const answer = await api.tryPost('company', hubspotPaths.batch('companies', 'create'), {
    inputs: [...domains].map(([domain, { name, trace }]) => ({ properties: { domain, name }, associations: [], objectWriteTraceId: trace })),
  });
  const unknown = () => new CrmError('unavailable', 'HubSpot company batch create: no clear answer, the next attempt searches for the company first');
  if (!answer.ok) return items.map(() => (answer.written === 'no' ? undefined : unknown()));
  const body = asRecord(answer.body);
  const created = new Map<string, string>();
  for (const row of Array.isArray(body.results) ? body.results.map(asRecord) : []) {
    const domain = asRecord(row.properties).domain;
    const trace = typeof row.objectWriteTraceId === 'string' ? row.objectWriteTraceId : undefined;
    const byTrace = [...domains].find(([, d]) => d.trace === trace)?.[0];
    const key = byTrace ?? (typeof domain === 'string' ? domain.toLowerCase() : undefined);
    if (key !== undefined && typeof row.id === 'string') created.set(key, row.id);
  }
  const refused = new Map<string, CrmError>();
  for (const e of Array.isArray(body.errors) ? body.errors.map(asRecord) : []) {
    const named = asRecord(e.context).objectWriteTraceId;
    for (const trace of Array.isArray(named) ? named : []) {
      const domain = [...domains].find(([, d]) => d.trace === trace)?.[0];
      if (domain !== undefined)
        refused.set(domain, new CrmError('rejected', api.scrub(`HubSpot company failed: ${describeErrors(e) ?? 'refused'}`), { payload: api.scrub(e) }));
    }
  }
  return items.map((item) => created.get(item.domain) ?? refused.get(item.domain) ?? unknown());
}

function randomTag(): string {
  return Math.random().toString(36).slice(2, 10);
}

// ---------------------------------------------------------------------------------------------
// Associations

interface GroupedAssociation {
  api: HubspotSession;
  contactId: string;
  companyId: string;
}

/** Per sync: undefined (associated), `alone` (its own call: the batch was refused before anything was written), or why not. */
const ASSOCIATIONS = new SharedCalls<GroupedAssociation, CrmError | 'alone' | undefined>(associateGroup, ASSOCIATIONS_PER_CALL);

async function associateGroup(items: GroupedAssociation[]): Promise<(CrmError | 'alone' | undefined)[]> {
  if (items.length === 1) return ['alone'];
  const pair = (from: unknown, to: unknown) => `${String(from)}/${String(to)}`;
  const pairs = new Map<string, GroupedAssociation>();
  for (const item of items) pairs.set(pair(item.contactId, item.companyId), item);
  const api = items[0]!.api;
  const answer = await api.tryPost('association', hubspotPaths.associateDefaultBatch('contacts', 'companies'), {
    inputs: [...pairs.values()].map((p) => ({ from: { id: p.contactId }, to: { id: p.companyId } })),
  });
  if (!answer.ok)
    return items.map(() =>
      answer.written === 'no' ? 'alone' : new CrmError('unavailable', 'HubSpot association batch: no clear answer, the next attempt associates again'),
    );
  const body = asRecord(answer.body);
  const done = new Set<string>();
  for (const row of Array.isArray(body.results) ? body.results.map(asRecord) : []) done.add(pair(asRecord(row.from).id, asRecord(row.to).id));
  const why = Array.isArray(body.errors) ? describeErrors(body) : undefined;
  return items.map((item) =>
    done.has(pair(item.contactId, item.companyId))
      ? undefined
      : new CrmError('rejected', api.scrub(`HubSpot association failed: ${why ?? 'the answer does not name it'}`), { payload: api.scrub(body.errors ?? body) }),
  );
}
