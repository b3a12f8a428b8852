import { profileUrlVariants } from '../../../domain/profile-url.js';
import { CrmError } from '../errors.js';
import { stepsOf } from '../lockstep.js';
import { asRecord } from '../records.js';
import type { ConnectorDeps } from '../session.js';
import { SingleFlight } from '../shared-calls.js';
import { sideStep } from '../side-step.js';
import { StateBook } from '../state-book.js';
import type { CrmConnector, CrmEvent, CrmOutcome, CrmRun, CrmWarning, SourceOptions } from '../types.js';
import { closeCredentials, type CloseCredentials } from './credentials.js';
import { contactFields, emailActivity, followUpTask, isEmailActivity, leadFields, noteActivity, socialProfile } from './fields.js';
import { readCloseList } from './lists.js';
import { findContactByEmail, findContactByUrl, findLeadByDomain, rememberContact, rememberLead, userIdByEmail } from './lookups.js';
import type { KnownContact } from './memory.js';
import { CloseSession } from './session.js';

/**
 * Close (docs/vendors/close.md): a person is a contact on a lead (Close's company). Found by email (or
 * profile URL) through Advanced Filtering searches the round's syncs share; else created, on the lead of
 * its company's domain when the source creates companies (the lead created with it when there is none),
 * or alone (Close then makes a lead named after the contact). The event is logged as an email activity
 * (`sent` or `inbox`, never a status Close would send) or a note, backdated to the event; the follow-up
 * task is a lead task. Close has no batch creates: each create is one call, each written ahead so that an
 * attempt after a lost answer looks before creating again.
 */

/** The steps the runs of a round take together (CrmRun.step), so that their searches leave as one. */
const CLOSE_STEPS = { owner: 1, lookup: 2, company: 3, person: 4, activity: 5, task: 6 } as const;

/** What each step created or found, in syncs.crm_state. */
interface CloseState {
  [key: string]: unknown;
  leadId?: string;
  contactId?: string;
  contactCreated?: boolean;
  leadCreated?: boolean;
  ownerDone?: boolean;
  userId?: string | null;
  activityId?: string;
  activityType?: 'email' | 'note';
  /** ISO time from which an activity of this sync may exist, set just before its create is sent. */
  activityPendingSince?: string;
  taskId?: string;
  taskPendingSince?: string;
}

/** Clock skew allowed when looking for what an earlier attempt may have created. */
const SKEW_MS = 5 * 60_000;
const LIST_PAGE = 100;

export function closeConnector(credentials: CloseCredentials, baseUrl: string, deps: ConnectorDeps): CrmConnector {
  let current = credentials;
  const session = (run: Pick<CrmRun, 'renewCredentials'>) =>
    new CloseSession(current, baseUrl, deps, async (used, exchange) => {
      const stored = closeCredentials.safeParse(await run.renewCredentials(used, exchange));
      if (!stored.success) throw new CrmError('auth', 'The stored Close credentials cannot be read: reconnect the CRM');
      current = stored.data;
      return current;
    });
  return {
    async write(run) {
      return writeEvent(session(run), run, deps);
    },
    async *readList(read) {
      yield* readCloseList(session(read), read);
    },
  };
}

async function writeEvent(api: CloseSession, run: CrmRun, deps: ConnectorDeps): Promise<CrmOutcome> {
  const { event, options } = run;
  const book = new StateBook<CloseState>(run);
  const state = book.state;
  const warnings: CrmWarning[] = [];
  const result: Record<string, unknown> = { crm: 'CLOSE' };
  const reach = stepsOf(run);

  // 1. The sender's user: the activity's and the task's user.
  await reach(CLOSE_STEPS.owner);
  let userId: string | null | undefined;
  if (options.assignContactOwner && !state.ownerDone) {
    if (!event.senderEmail) result.ownerSkipped = 'the event names no sender email';
    else {
      await sideStep(warnings, 'owner', async () => {
        userId = await userIdByEmail(api, event.senderEmail!.trim().toLowerCase());
        if (userId === null) warnings.push({ step: 'owner', message: 'Close user not assigned: no user of the organization has the sender email' });
      });
    }
  }
  const ownerDone = userId !== undefined ? { ownerDone: true, userId } : {};

  // 2-4. The contact and its lead.
  if (state.contactId === undefined) {
    const person = await findOrCreateContact(api, event, options, reach, warnings);
    await book.save({ contactId: person.contactId, leadId: person.leadId, contactCreated: person.created, leadCreated: person.leadCreated, ...ownerDone });
  } else if (userId !== undefined) await book.save(ownerDone);
  const ids = { leadId: state.leadId as string, contactId: state.contactId as string, userId: state.userId ?? null };
  Object.assign(result, { leadId: ids.leadId, contactId: ids.contactId, contactCreated: state.contactCreated ?? false });
  if (state.leadCreated) result.leadCreated = true;
  if (state.userId) result.userId = state.userId;

  // 5. The event: an email activity or a note.
  await reach(CLOSE_STEPS.activity);
  if (state.activityId === undefined) {
    const email = isEmailActivity(event);
    const fields = email ? emailActivity(event, ids) : noteActivity(event, ids);
    const id = await createOnce(api, book, 'activity', email ? '/activity/email/' : '/activity/note/', fields, deps);
    await book.save({ activityId: id, activityType: email ? 'email' : 'note', activityPendingSince: undefined }, { last: !options.createOrUpdateTask });
  }
  result.activityId = state.activityId;
  result.activityType = state.activityType;

  // 6. The follow-up task.
  if (options.createOrUpdateTask) {
    await reach(CLOSE_STEPS.task);
    await sideStep(warnings, 'task', async () => {
      if (state.taskId !== undefined) return;
      const id = await createOnce(api, book, 'task', '/task/', followUpTask(event, ids), deps);
      await book.save({ taskId: id, taskPendingSince: undefined }, { last: true });
    });
    if (state.taskId !== undefined) result.taskId = state.taskId;
  }

  if (warnings.length > 0) result.warnings = warnings;
  return { status: warnings.length > 0 ? 'warning' : 'success', result };
}

/**
 * By email (or, for a social-only event, profile URL) in the round's shared search; else created: on the
 * lead of the company's domain when the source creates companies (that lead created with the contact when
 * Close has none), else alone. The syncs of one new person at once create one contact.
 */
async function findOrCreateContact(
  api: CloseSession,
  event: CrmEvent,
  options: SourceOptions,
  reach: (step: number) => Promise<void>,
  warnings: CrmWarning[],
): Promise<KnownContact & { created: boolean; leadCreated: boolean }> {
  await reach(CLOSE_STEPS.lookup);
  const email = event.email?.trim().toLowerCase() || undefined;
  const found = email ? await findContactByEmail(api, email) : await findContactByUrl(api, profileUrlVariants(socialProfile(event)));
  await reach(CLOSE_STEPS.company);
  const domain = options.createOrUpdateCompany ? companyDomain(event) : undefined;
  let lead: { id: string; created: boolean } | undefined;
  if (!found && domain) await sideStep(warnings, 'company', async () => void (lead = await leadOfDomain(api, event, domain)));
  await reach(CLOSE_STEPS.person);
  if (found) return { ...found, created: false, leadCreated: false };
  const key = `${api.memoryKey()}\n${email ?? socialProfile(event).canonical}`;
  const made = await CREATING.run(key, async () => {
    const contact = await createContact(api, event, lead?.id);
    if (email) rememberContact(api, email, contact);
    return contact;
  });
  // Without a company's lead, Close made one named after the contact.
  return { ...made, created: true, leadCreated: lead === undefined ? true : lead.created };
}

const CREATING = new SingleFlight<KnownContact>();
const LEADS = new SingleFlight<{ id: string; created: boolean }>();

/**
 * The lead (Close's company) of a domain, found by its website or else created: once for the syncs of
 * one new domain at once, whichever round they are in. A create whose answer was lost is found by the
 * next attempt's search.
 */
function leadOfDomain(api: CloseSession, event: CrmEvent, domain: string): Promise<{ id: string; created: boolean }> {
  return LEADS.run(`${api.memoryKey()}\n${domain}`, async () => {
    const existing = await findLeadByDomain(api, domain);
    if (existing !== undefined) return { id: existing, created: false };
    const made = await api.json('company', { method: 'POST', path: '/lead/', json: leadFields(event, domain), idempotent: false });
    if (typeof made.id !== 'string') throw new CrmError('unavailable', 'Close lead create answered without an id');
    rememberLead(api, domain, made.id);
    return { id: made.id, created: true };
  });
}

/** A contact on `leadId`, or alone (Close then creates a lead named after it). */
async function createContact(api: CloseSession, event: CrmEvent, leadId: string | undefined): Promise<KnownContact> {
  const contact = contactFields(event);
  const made = await api.json('contact', { method: 'POST', path: '/contact/', json: leadId ? { lead_id: leadId, ...contact } : contact, idempotent: false });
  if (typeof made.id !== 'string' || typeof made.lead_id !== 'string') throw new CrmError('unavailable', 'Close contact create answered without an id');
  return { contactId: made.id, leadId: made.lead_id };
}

/** The company's domain: the event's, else its email's (a free-mail domain names no company, but the sequencer's data is the customer's to judge). */
function companyDomain(event: CrmEvent): string | undefined {
  const domain = event.companyDomain?.trim().toLowerCase() || event.email?.split('@')[1]?.trim().toLowerCase();
  return domain ? domain.replace(/^www\./, '') : undefined;
}

/**
 * Creates an activity or task exactly once across attempts: the time from which it may exist is saved
 * before the create is sent, so an attempt after a lost answer lists the lead's objects created since
 * and takes the one of this contact and content instead of creating another. When the create surely
 * was not sent (kept back by the budget, answered 429), the mark is taken back.
 */
async function createOnce(
  api: CloseSession,
  book: StateBook<CloseState>,
  step: 'activity' | 'task',
  path: string,
  fields: Record<string, unknown>,
  deps: ConnectorDeps,
): Promise<string> {
  const pending = step === 'activity' ? 'activityPendingSince' : 'taskPendingSince';
  const since = book.state[pending];
  const found = since ? await findCreated(api, step, path, fields, since) : undefined;
  if (found !== undefined) return found;
  await book.save({ [pending]: since ?? new Date(deps.now() - SKEW_MS).toISOString() });
  try {
    const made = await api.json(step, { method: 'POST', path, json: fields, idempotent: false });
    if (typeof made.id !== 'string') throw new CrmError('unavailable', `Close ${step} create answered without an id`);
    return made.id;
  } catch (error) {
    if (error instanceof CrmError && error.unsent) await book.save({ [pending]: undefined });
    throw error;
  }
}

/** What an attempt whose answer was lost may have created: the lead's objects since `since` with this contact and content. */
async function findCreated(api: CloseSession, step: string, path: string, fields: Record<string, unknown>, since: string): Promise<string | undefined> {
  const same = (o: Record<string, unknown>) =>
    o.contact_id === fields.contact_id &&
    (path === '/task/'
      ? o.text === fields.text && o.date === fields.date
      : Date.parse(String(o.activity_at)) === Date.parse(String(fields.activity_at)) && (o.subject ?? o.title) === (fields.subject ?? fields.title));
  for (let skip = 0; ; skip += LIST_PAGE) {
    const page = await api.json(step, {
      method: 'GET',
      path,
      query: { lead_id: String(fields.lead_id), date_created__gte: since, _skip: String(skip), _limit: String(LIST_PAGE) },
      idempotent: true,
    });
    const hit = (Array.isArray(page.data) ? page.data.map(asRecord) : []).find(same);
    if (hit && typeof hit.id === 'string') return hit.id;
    if (page.has_more !== true) return undefined;
  }
}
