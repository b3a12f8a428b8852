import { z } from 'zod';
import { escapeHtml } from '../../domain/html.js';
import { Batcher } from '../../db/batcher.js';
import { eventTraits } from '../../domain/event-types.js';
import { companyDomainOf } from '../../domain/company-domain.js';
import { normalizeProfileUrl } from '../../domain/profile-url.js';
import { OutboundError, retryAfterMs, type HttpResponse } from '../http/client.js';
import { CrmError } from './errors.js';
import { asRecord } from './records.js';
import { CrmSession, renewCredentials, type ConnectorDeps } from './session.js';
import { sideStep } from './side-step.js';
import { StateBook } from './state-book.js';
import { eventLabel, truncate } from './text.js';
import { readHubspotList } from './hubspot-lists.js';
import type { CrmConnector, CrmEvent, CrmOutcome, CrmRun, CrmWarning } from './types.js';

/**
 * HubSpot CRM v3/v4 (developers.hubspot.com; facts in shared/docs/crm-apis.md):
 * contact upsert by email (or search/create by profile property for social-only events), company by
 * domain with a contact↔company association, an email or note engagement associated with the
 * contact, an optional follow-up task, and an optional owner from the sender's email.
 */

/** Decrypted connection credentials. `clientId`/`clientSecret` are needed to refresh OAuth tokens. */
export const hubspotCredentials = z.looseObject({
  accessToken: z.string().min(1),
  refreshToken: z.string().min(1).optional(),
  clientId: z.string().min(1).optional(),
  clientSecret: z.string().min(1).optional(),
  /** ISO time the access token expires (OAuth tokens live 30 minutes; private-app tokens never expire). */
  expiresAt: z.string().optional(),
});
export type HubspotCredentials = z.infer<typeof hubspotCredentials>;

/** What each step created, in syncs.crm_state. */
interface HubspotState {
  [key: string]: unknown;
  contactId?: string;
  contactCreated?: boolean;
  companyId?: string;
  companyAssociated?: boolean;
  ownerDone?: boolean;
  ownerId?: string | null;
  /** hs_timestamp shared by the activity and task of this sync, fixed on the first attempt. */
  timestamp?: string;
  activityType?: 'emails' | 'notes';
  activityId?: string;
  /** Set just before the create is sent, cleared when its id is saved: a create that may have been written. */
  activityPending?: boolean;
  taskId?: string;
  taskPending?: boolean;
}

// Association type ids (HUBSPOT_DEFINED) for engagements → contacts.
const TO_CONTACT = { emails: 198, notes: 202, tasks: 204 } as const;
/** contact → company, unlabeled; used when the labels endpoint does not name one. */
const CONTACT_TO_COMPANY_DEFAULT = 279;
/** Refresh this long before the access token's expiry. */
const EXPIRY_MARGIN_MS = 60_000;
const NOTE_MAX = 65_536;

export function hubspotConnector(credentials: HubspotCredentials, baseUrl: string, deps: ConnectorDeps): CrmConnector {
  let current = credentials;
  const session = (run: Pick<CrmRun, 'renewCredentials'>) =>
    new HubspotSession(current, baseUrl, deps, async (used, exchange) => {
      current = await renewCredentials(run, hubspotCredentials, 'HubSpot', used, exchange);
      return current;
    });
  return {
    async write(run) {
      return writeEvent(session(run), run);
    },
    async *readList(read) {
      const api = session(read);
      await api.refreshIfExpiring();
      yield* readHubspotList(api, read);
    },
  };
}

async function writeEvent(api: HubspotSession, run: CrmRun): Promise<CrmOutcome> {
  const { event, options } = run;
  const book = new StateBook<HubspotState>(run);
  const state = book.state;
  const warnings: CrmWarning[] = [];
  const result: Record<string, unknown> = { crm: 'HUBSPOT' };
  await api.refreshIfExpiring();

  // 1. Contact.
  if (state.contactId === undefined) {
    if (event.email) {
      // An upsert by email is safe to repeat: the next save carries its id.
      const contact = await upsertContactByEmail(api, event);
      book.note({ contactId: contact.id, contactCreated: contact.created });
    } else {
      const contact = await findOrCreateSocialContact(api, event);
      await book.save({ contactId: contact.id, contactCreated: contact.created });
    }
  }
  const contactId = state.contactId as string;
  result.contactId = contactId;
  result.contactCreated = state.contactCreated ?? false;

  // 2-3. Company by domain, and the association.
  if (options.createOrUpdateCompany) {
    const domain = companyDomainOf(event);
    if (!domain) result.companySkipped = 'the event names no company domain';
    else {
      await sideStep(warnings, 'company', async () => {
        if (state.companyId === undefined) await book.save({ companyId: await findOrCreateCompany(api, domain, event.company) });
        if (!state.companyAssociated) {
          await associateCompany(api, contactId, state.companyId as string);
          await book.save({ companyAssociated: true });
        }
      });
      if (state.companyId !== undefined) result.companyId = state.companyId;
    }
  }

  // 4. Owner, before the task so the task can be assigned to them too.
  if (options.assignContactOwner && !state.ownerDone) {
    if (!event.senderEmail) result.ownerSkipped = 'the event names no sender email';
    else {
      await sideStep(warnings, 'owner', async () => {
        const ownerId = await assignOwner(api, contactId, event.senderEmail as string, warnings);
        await book.save({ ownerDone: true, ownerId });
      });
    }
  }
  if (state.ownerId) result.ownerId = state.ownerId;

  // 5. The event as an email or note engagement.
  // One hs_timestamp for this sync's engagements, fixed by the first attempt that writes one.
  const timestamp = state.timestamp ?? String(event.occurredAt.getTime());
  if (state.activityId === undefined) {
    const type = state.activityType ?? (isEmailEngagement(event) ? 'emails' : 'notes');
    const found = state.activityPending ? await findEngagement(api, type, contactId, timestamp) : undefined;
    let id = found;
    if (id === undefined) {
      // Written ahead: if the create's answer is lost, the next attempt looks before creating again.
      await book.save({ activityType: type, activityPending: true, timestamp });
      id = await unlessUnsent(book, { activityPending: undefined }, () => createEngagement(api, type, contactId, activityProperties(type, event, timestamp)));
    }
    await book.save({ activityType: type, activityId: id, activityPending: undefined }, { last: !options.createOrUpdateTask });
  }
  result.activity = { type: state.activityType, id: state.activityId };

  // 6. Follow-up task.
  if (options.createOrUpdateTask) {
    await sideStep(warnings, 'task', async () => {
      if (state.taskId !== undefined) return;
      const found = state.taskPending ? await findEngagement(api, 'tasks', contactId, timestamp) : undefined;
      let id = found;
      if (id === undefined) {
        await book.save({ taskPending: true, timestamp });
        id = await unlessUnsent(book, { taskPending: undefined }, () =>
          createEngagement(api, 'tasks', contactId, taskProperties(event, timestamp, state.ownerId ?? null)),
        );
      }
      await book.save({ taskId: id, taskPending: undefined }, { last: true });
    });
    if (state.taskId !== undefined) result.taskId = state.taskId;
  }

  if (warnings.length > 0) result.warnings = warnings;
  return { status: warnings.length > 0 ? 'warning' : 'success', result };
}

// ---------------------------------------------------------------------------------------------
// Steps

/**
 * Runs a create written ahead; when it surely wrote nothing (kept back by the connection's budget, or
 * answered 429), the write-ahead mark is taken back first, so the next attempt creates at once instead of
 * searching for what was never written: after a 429 on a shared batch create, a search per sync would
 * spend the budget the 429 just said was gone.
 */
async function unlessUnsent<T>(book: StateBook<HubspotState>, clear: Partial<HubspotState>, create: () => Promise<T>): Promise<T> {
  try {
    return await create();
  } catch (error) {
    if (error instanceof CrmError && error.unsent) await book.save(clear);
    throw error;
  }
}

async function upsertContactByEmail(api: HubspotSession, event: CrmEvent): Promise<{ id: string; created: boolean }> {
  const email = (event.email as string).trim().toLowerCase();
  const properties: Record<string, string> = { email, ...nameProperties(event) };
  const profile = event.profileUrl ? normalizeProfileUrl(event.profileUrl) : undefined;
  if (profile?.ok && profile.profile.kind === 'professional') properties.hs_linkedin_url = profile.profile.canonical;
  const grouped = await CONTACT_UPSERTS.upsert(api, email, properties);
  if (grouped) return grouped;
  const body = await api.json('contact', {
    method: 'POST',
    path: '/crm/v3/objects/contacts/batch/upsert',
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

/**
 * Shared calls in flight per account and kind: one, so that everything arriving while it waits for its
 * budget slot and its answer goes in the next (a hundred inputs per call is what makes a rate-limited
 * account fast).
 */
const GROUP_CALLS_AT_ONCE = 1;

/**
 * Calls that the syncs of one key (an account, and a kind of call) running at once in this process share:
 * a batcher per key, kept while some sync uses it, so the entry (and its token) goes with the last one.
 */
class SharedCalls<I, O> {
  private readonly groups = new Map<string, { batcher: Batcher<I, O>; users: number }>();

  constructor(private readonly run: (items: I[]) => Promise<O[]>) {}

  async load(key: string, api: HubspotSession, item: I): Promise<O> {
    let group = this.groups.get(key);
    if (!group) {
      group = { batcher: new Batcher(this.run, { concurrency: GROUP_CALLS_AT_ONCE, maxBatch: 100, gatherMs: api.gatherMs() }), users: 0 };
      this.groups.set(key, group);
    }
    group.users += 1;
    try {
      return await group.batcher.load(item);
    } finally {
      group.users -= 1;
      if (group.users === 0 && this.groups.get(key) === group) this.groups.delete(key);
    }
  }

  get size(): number {
    return this.groups.size;
  }
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
  private readonly calls = new SharedCalls(upsertGroup);

  upsert(api: HubspotSession, email: string, properties: Record<string, string>): Promise<{ id: string; created: boolean } | undefined> {
    return this.calls.load(api.groupKey(), api, { api, email, properties });
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
  const answer = await items[0]!.api.tryPost('contact', '/crm/v3/objects/contacts/batch/upsert', {
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

/**
 * Social-only events: HubSpot requires a valid email for `email`, so the profile goes into its own
 * built-in property (`hs_linkedin_url` for professional profiles, `twitterhandle` for microblogs),
 * searched first and set on create.
 */
async function findOrCreateSocialContact(api: HubspotSession, event: CrmEvent): Promise<{ id: string; created: boolean }> {
  const parsed = normalizeProfileUrl(event.profileUrl ?? event.identity);
  if (!parsed.ok) throw new CrmError('rejected', `HubSpot contact failed: the event has no email and ${parsed.reason}`);
  const { kind, canonical } = parsed.profile;
  const property = kind === 'professional' ? 'hs_linkedin_url' : 'twitterhandle';
  const value = kind === 'professional' ? canonical : canonical.replace(/^https:\/\/x\.com\//, '');
  const existing = await searchOne(api, 'contact', 'contacts', [{ propertyName: property, operator: 'EQ', value }]);
  if (existing) return { id: existing, created: false };
  const body = await api.json('contact', {
    method: 'POST',
    path: '/crm/v3/objects/contacts',
    json: { properties: { [property]: value, ...nameProperties(event) } },
    idempotent: false,
  });
  return { id: requireId(body, 'contact'), created: true };
}

async function findOrCreateCompany(api: HubspotSession, domain: string, name: string | null): Promise<string> {
  const existing = await searchOne(api, 'company', 'companies', [{ propertyName: 'domain', operator: 'EQ', value: domain }]);
  if (existing) return existing;
  const body = await api.json('company', {
    method: 'POST',
    path: '/crm/v3/objects/companies',
    json: { properties: { domain, name: name?.trim() || domain } },
    idempotent: false,
  });
  return requireId(body, 'company');
}

async function associateCompany(api: HubspotSession, contactId: string, companyId: string): Promise<void> {
  // The portal's own type ids for contact → company; the unlabeled one is the plain association.
  const labels = asRecord(await api.json('association', { method: 'GET', path: '/crm/v4/associations/contacts/companies/labels', idempotent: true })).results;
  const unlabeled = Array.isArray(labels)
    ? labels.map(asRecord).find((l) => l.category === 'HUBSPOT_DEFINED' && (l.label === null || l.label === undefined || l.label === ''))
    : undefined;
  const typeId = typeof unlabeled?.typeId === 'number' ? unlabeled.typeId : CONTACT_TO_COMPANY_DEFAULT;
  await api.json('association', {
    method: 'PUT',
    path: `/crm/v4/objects/contacts/${encodeURIComponent(contactId)}/associations/companies/${encodeURIComponent(companyId)}`,
    json: [{ associationCategory: 'HUBSPOT_DEFINED', associationTypeId: typeId }],
    idempotent: true,
  });
}

/** The owner whose email is the sender's; set on the contact unless it already has one. */
async function assignOwner(api: HubspotSession, contactId: string, senderEmail: string, warnings: CrmWarning[]): Promise<string | null> {
  const owners = asRecord(
    await api.json('owner', { method: 'GET', path: '/crm/v3/owners', query: { email: senderEmail.trim().toLowerCase(), limit: '1' }, idempotent: true }),
  ).results;
  const ownerId = Array.isArray(owners) ? asRecord(owners[0]).id : undefined;
  if (typeof ownerId !== 'string' && typeof ownerId !== 'number') {
    warnings.push({ step: 'owner', message: 'HubSpot owner not assigned: no HubSpot user has the sender email' });
    return null;
  }
  const contact = asRecord(
    await api.json('owner', {
      method: 'GET',
      path: `/crm/v3/objects/contacts/${encodeURIComponent(contactId)}`,
      query: { properties: 'hubspot_owner_id' },
      idempotent: true,
    }),
  );
  const currentOwner = asRecord(contact.properties).hubspot_owner_id;
  if (typeof currentOwner === 'string' && currentOwner !== '') return currentOwner;
  await api.json('owner', {
    method: 'PATCH',
    path: `/crm/v3/objects/contacts/${encodeURIComponent(contactId)}`,
    json: { properties: { hubspot_owner_id: String(ownerId) } },
    idempotent: true,
  });
  return String(ownerId);
}

type EngagementType = 'emails' | 'notes' | 'tasks';

async function createEngagement(api: HubspotSession, type: EngagementType, contactId: string, properties: Record<string, string>): Promise<string> {
  const step = type === 'tasks' ? 'task' : 'activity';
  const grouped = await ENGAGEMENT_CREATES.create(api, type, contactId, properties);
  if (grouped !== undefined) return grouped;
  const body = await api.json(step, {
    method: 'POST',
    path: `/crm/v3/objects/${type}`,
    json: {
      properties,
      associations: [{ to: { id: contactId }, types: [{ associationCategory: 'HUBSPOT_DEFINED', associationTypeId: TO_CONTACT[type] }] }],
    },
    idempotent: false,
  });
  return requireId(body, step);
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
    const outcome = await this.calls.load(`${api.groupKey()}\n${type}`, api, { api, type, contactId, properties });
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
  const answer = await api.tryPost(step, `/crm/v3/objects/${type}/batch/create`, {
    inputs: items.map((item, i) => ({
      properties: item.properties,
      associations: [{ to: { id: item.contactId }, types: [{ associationCategory: 'HUBSPOT_DEFINED', associationTypeId: TO_CONTACT[type] }] }],
      objectWriteTraceId: traces[i],
    })),
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

/** An engagement of this sync written by an attempt whose answer was lost: same contact, same hs_timestamp. */
async function findEngagement(api: HubspotSession, type: EngagementType, contactId: string, timestamp: string): Promise<string | undefined> {
  return searchOne(api, type === 'tasks' ? 'task' : 'activity', type, [
    { propertyName: 'associations.contact', operator: 'EQ', value: contactId },
    { propertyName: 'hs_timestamp', operator: 'EQ', value: timestamp },
  ]);
}

async function searchOne(
  api: HubspotSession,
  step: string,
  type: string,
  filters: Array<{ propertyName: string; operator: 'EQ'; value: string }>,
): Promise<string | undefined> {
  const body = asRecord(
    await api.json(step, {
      method: 'POST',
      path: `/crm/v3/objects/${type}/search`,
      json: { filterGroups: [{ filters }], properties: ['hs_object_id'], limit: 1 },
      idempotent: true,
    }),
  );
  const first = Array.isArray(body.results) ? asRecord(body.results[0]) : {};
  return typeof first.id === 'string' ? first.id : undefined;
}

// ---------------------------------------------------------------------------------------------
// Properties

function nameProperties(event: CrmEvent): Record<string, string> {
  const out: Record<string, string> = {};
  // Only what the event knows: an absent value never blanks what the CRM has.
  if (event.firstName?.trim()) out.firstname = event.firstName.trim();
  if (event.lastName?.trim()) out.lastname = event.lastName.trim();
  if (event.company?.trim()) out.company = event.company.trim();
  return out;
}

/** Sent emails and replies are email engagements; everything else (opens, social, calls, labels) a note. */
function isEmailEngagement(event: CrmEvent): boolean {
  return eventTraits(event.eventType).channel === 'email' && eventTraits(event.eventType).contact;
}

function activityProperties(type: 'emails' | 'notes', event: CrmEvent, timestamp: string): Record<string, string> {
  if (type === 'emails') {
    const inbound = event.direction === 'inbound' || (event.direction === null && eventTraits(event.eventType).reply);
    const props: Record<string, string> = {
      hs_timestamp: timestamp,
      hs_email_direction: inbound ? 'INCOMING_EMAIL' : 'EMAIL',
      hs_email_status: 'SENT',
      hs_email_subject: truncate(event.subject ?? eventLabel(event.eventType), 255),
    };
    if (event.text) props.hs_email_text = truncate(event.text, NOTE_MAX);
    return props;
  }
  return { hs_timestamp: timestamp, hs_note_body: truncate(noteBody(event), NOTE_MAX) };
}

function taskProperties(event: CrmEvent, timestamp: string, ownerId: string | null): Record<string, string> {
  const channel = eventTraits(event.eventType).channel;
  const props: Record<string, string> = {
    hs_timestamp: timestamp,
    hs_task_subject: truncate(`Follow up: ${eventLabel(event.eventType)}${event.subject ? ` - ${event.subject}` : ''}`, 255),
    hs_task_body: truncate(noteBody(event), NOTE_MAX),
    hs_task_status: 'NOT_STARTED',
    hs_task_priority: 'MEDIUM',
    hs_task_type: channel === 'email' ? 'EMAIL' : channel === 'call' ? 'CALL' : 'TODO',
  };
  if (ownerId) props.hubspot_owner_id = ownerId;
  return props;
}

function noteBody(event: CrmEvent): string {
  const lines = [`${eventLabel(event.eventType)} (${event.platform})`];
  if (event.campaignName) lines.push(`Campaign: ${event.campaignName}`);
  if (event.profileUrl) lines.push(`Profile: ${event.profileUrl}`);
  if (event.subject) lines.push(`Subject: ${event.subject}`);
  if (event.text) lines.push('', event.text);
  // hs_note_body is rich text.
  return lines.map(escapeHtml).join('<br>');
}

// ---------------------------------------------------------------------------------------------
// Session: bearer auth, OAuth refresh, HubSpot's error format

class HubspotSession extends CrmSession {
  constructor(
    private credentials: HubspotCredentials,
    private readonly baseUrl: string,
    deps: ConnectorDeps,
    private readonly renew: (used: HubspotCredentials, exchange: () => Promise<HubspotCredentials>) => Promise<HubspotCredentials>,
  ) {
    super(deps, 'HubSpot');
  }

  async json(step: string, request: { method: string; path: string; query?: Record<string, string>; json?: unknown; idempotent: boolean }): Promise<unknown> {
    const url = new URL(`${this.baseUrl}${request.path}`);
    for (const [key, value] of Object.entries(request.query ?? {})) url.searchParams.set(key, value);
    const response = await this.send(step, () => ({ method: request.method, url, json: request.json, idempotent: request.idempotent }));
    return response.json();
  }

  /** How long a shared call waits for more syncs (ConnectorDeps.shareGatherMs). */
  gatherMs(): number {
    return this.deps.shareGatherMs ?? 0;
  }

  /** Sessions with one key act for one HubSpot account with the same token, so they may share a call. */
  groupKey(): string {
    return `${this.baseUrl}\n${this.credentials.accessToken}`;
  }

  /**
   * One POST, no retry and no refresh, for a call several syncs share: its answer if it is a 2xx; else
   * whether the CRM may have written it (`maybe`: no answer, or a 5xx) or certainly did not (`no`: a 4xx,
   * or refused before sending). A 429 is the account's answer to everyone sharing the call: thrown as
   * `rate_limited` with its `Retry-After` (each caller asking again at once would be the storm it stops).
   */
  async tryPost(step: string, path: string, json: unknown): Promise<{ ok: true; body: unknown } | { ok: false; written: 'no' | 'maybe' }> {
    let response: HttpResponse;
    try {
      response = await this.deps.http.request({
        method: 'POST',
        url: `${this.baseUrl}${path}`,
        json,
        headers: { authorization: `Bearer ${this.credentials.accessToken}` },
        timeoutMs: this.deps.timeoutMs,
      });
    } catch (error) {
      if (error instanceof CrmError) throw error;
      return { ok: false, written: error instanceof OutboundError && !error.maybeSent ? 'no' : 'maybe' };
    }
    if (response.status === 429) throw this.errorFor(step, response, retryAfterMs(response.headers['retry-after']));
    if (response.status >= 200 && response.status < 300) return { ok: true, body: response.json() };
    return { ok: false, written: response.status >= 500 ? 'maybe' : 'no' };
  }

  /** OAuth tokens live 30 minutes and HubSpot says a 401 is no reliable refresh signal: refresh ahead. */
  async refreshIfExpiring(): Promise<void> {
    const expiresAt = this.credentials.expiresAt ? Date.parse(this.credentials.expiresAt) : NaN;
    if (Number.isFinite(expiresAt) && expiresAt - this.deps.now() < EXPIRY_MARGIN_MS && this.canRefresh()) await this.refresh('token refresh');
  }

  protected accessToken(): string {
    return this.credentials.accessToken;
  }

  protected secrets(): string[] {
    const c = this.credentials;
    return [c.accessToken, c.refreshToken, c.clientSecret].filter((s): s is string => typeof s === 'string');
  }

  protected canRefresh(): boolean {
    return Boolean(this.credentials.refreshToken && this.credentials.clientId && this.credentials.clientSecret);
  }

  protected isExpired(response: HttpResponse): boolean {
    return response.status === 401;
  }

  protected async refresh(step: string): Promise<void> {
    this.credentials = await this.renew(this.credentials, () => this.exchange(step));
  }

  /** One refresh-token grant at the token endpoint: the new credentials, not yet stored. */
  private async exchange(step: string): Promise<HubspotCredentials> {
    const c = this.credentials;
    const answer = await this.sendRaw('token refresh', {
      method: 'POST',
      url: `${this.baseUrl}/oauth/v1/token`,
      form: { grant_type: 'refresh_token', client_id: c.clientId ?? '', client_secret: c.clientSecret ?? '', refresh_token: c.refreshToken ?? '' },
      idempotent: false,
    });
    if (!answer.ok) {
      const error = this.errorFor('token refresh', answer.response, answer.retryAfterMs);
      // A refused refresh token needs the customer to reconnect, whatever the status says.
      throw error.kind === 'rejected'
        ? new CrmError('auth', `${error.message} while refreshing for ${step}`, { httpStatus: answer.response.status, payload: error.payload })
        : error;
    }
    const body = asRecord(answer.response.json());
    if (typeof body.access_token !== 'string') throw new CrmError('unavailable', 'HubSpot token refresh answered without an access token');
    const next: HubspotCredentials = {
      ...c,
      accessToken: body.access_token,
      ...(typeof body.refresh_token === 'string' ? { refreshToken: body.refresh_token } : {}),
      ...(typeof body.expires_in === 'number' ? { expiresAt: new Date(this.deps.now() + body.expires_in * 1000).toISOString() } : {}),
    };
    return next;
  }

  protected vendorMessage(body: unknown): string | undefined {
    return describeErrors(body);
  }
}

/** `{status, message, category, errors: [{message}]}` or a batch's `{errors: [{message}]}`. */
function describeErrors(body: unknown): string | undefined {
  const record = asRecord(body);
  const parts: string[] = [];
  if (typeof record.category === 'string') parts.push(record.category);
  if (typeof record.message === 'string') parts.push(record.message);
  if (parts.length === 0 && Array.isArray(record.errors)) {
    for (const e of record.errors.map(asRecord)) if (typeof e.message === 'string') parts.push(e.message);
  }
  return parts.length > 0 ? parts.join(': ') : undefined;
}

function requireId(body: unknown, step: string): string {
  const id = asRecord(body).id;
  if (typeof id !== 'string') throw new CrmError('unavailable', `HubSpot ${step} answered without an id`);
  return id;
}
