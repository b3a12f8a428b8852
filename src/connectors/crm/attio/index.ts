import { profileUrlVariants } from '../../../domain/profile-url.js';
import { CrmError } from '../errors.js';
import { stepsOf } from '../lockstep.js';
import { asRecord } from '../records.js';
import type { ConnectorDeps } from '../session.js';
import { SingleFlight } from '../shared-calls.js';
import { sideStep } from '../side-step.js';
import { StateBook } from '../state-book.js';
import type { CrmConnector, CrmEvent, CrmOutcome, CrmRun, CrmWarning } from '../types.js';
import type { AttioCredentials } from './credentials.js';
import { followUpTask, note, personName, socialProfile } from './fields.js';
import { readAttioList } from './lists.js';
import { assertCompany, assertPerson, findPersonByProfile, isActiveMember, recordOf, rememberNamed } from './lookups.js';
import { AttioSession } from './session.js';

/**
 * Attio (docs/vendors/attio.md): a person is asserted by email (`PUT` matching `email_addresses`, the address
 * alone, so nothing a rep wrote is overwritten; our name, profile URL and company only fill what is empty,
 * with a `PATCH`), or for a social-only event found by its LinkedIn URL, else created with it. The company is
 * asserted by domain where the source asks. The event is a markdown note on the person backdated to the
 * event, the follow-up a task assigned to the sender when they are a member. Notes and tasks are plain
 * creates: each is written ahead and, after a lost answer, found on the person before it is created again.
 */

/** The steps the runs of a round take together (CrmRun.step). */
const ATTIO_STEPS = { owner: 1, company: 2, person: 3, note: 4, task: 5 } as const;

interface AttioState {
  [key: string]: unknown;
  recordId?: string;
  personCreated?: boolean;
  companyId?: string;
  ownerDone?: boolean;
  /** The sender, when an active member: the task's assignee. */
  assignee?: string | null;
  noteId?: string;
  notePendingSince?: string;
  taskId?: string;
  taskPendingSince?: string;
}

/** Clock skew allowed when looking for what an earlier attempt may have created. */
const SKEW_MS = 5 * 60_000;
const NOTES_PAGE = 50;
const TASKS_PAGE = 500;

export function attioConnector(credentials: AttioCredentials, baseUrl: string, deps: ConnectorDeps): CrmConnector {
  const session = () => new AttioSession(credentials, baseUrl, deps);
  return {
    async write(run) {
      return writeEvent(session(), run, deps);
    },
    async *readList(read) {
      yield* readAttioList(session(), read);
    },
  };
}

async function writeEvent(api: AttioSession, run: CrmRun, deps: ConnectorDeps): Promise<CrmOutcome> {
  const { event, options } = run;
  const book = new StateBook<AttioState>(run);
  const state = book.state;
  const warnings: CrmWarning[] = [];
  const result: Record<string, unknown> = { crm: 'ATTIO' };
  const reach = stepsOf(run);

  // 1. The sender as the task's assignee, when a member of the workspace.
  await reach(ATTIO_STEPS.owner);
  let assignee: string | null | undefined;
  if (options.assignContactOwner && !state.ownerDone) {
    const sender = event.senderEmail?.trim().toLowerCase();
    if (!sender) result.ownerSkipped = 'the event names no sender email';
    else {
      await sideStep(warnings, 'owner', async () => {
        assignee = (await isActiveMember(api, sender)) ? sender : null;
        if (assignee === null) warnings.push({ step: 'owner', message: 'Attio assignee not set: no active workspace member has the sender email' });
      });
    }
  }
  const ownerDone = assignee !== undefined ? { ownerDone: true, assignee } : {};

  // 2-3. The company and the person.
  if (state.recordId === undefined) {
    await reach(ATTIO_STEPS.company);
    const domain = options.createOrUpdateCompany ? companyDomain(event) : undefined;
    let companyId: string | undefined;
    if (domain) await sideStep(warnings, 'company', async () => void (companyId = await company(api, event, domain)));
    await reach(ATTIO_STEPS.person);
    const person = await findOrCreatePerson(api, event, companyId);
    await book.save({ recordId: person.recordId, personCreated: person.created, ...(companyId ? { companyId } : {}), ...ownerDone });
  } else if (assignee !== undefined) await book.save(ownerDone);
  const recordId = state.recordId as string;
  Object.assign(result, { recordId, personCreated: state.personCreated ?? false });
  if (state.companyId) result.companyId = state.companyId;

  // 4. The event as a note.
  await reach(ATTIO_STEPS.note);
  if (state.noteId === undefined) {
    const id = await createOnce(api, book, 'note', note(event, recordId, deps.now()), deps);
    await book.save({ noteId: id, notePendingSince: undefined }, { last: !options.createOrUpdateTask });
  }
  result.noteId = state.noteId;

  // 5. The follow-up task.
  if (options.createOrUpdateTask) {
    await reach(ATTIO_STEPS.task);
    await sideStep(warnings, 'task', async () => {
      if (state.taskId !== undefined) return;
      const id = await createOnce(api, book, 'task', followUpTask(event, recordId, state.assignee ?? null), deps);
      await book.save({ taskId: id, taskPendingSince: undefined }, { last: true });
    });
    if (state.taskId !== undefined) result.taskId = state.taskId;
  }

  if (warnings.length > 0) result.warnings = warnings;
  return { status: warnings.length > 0 ? 'warning' : 'success', result };
}

/** The company of the domain, asserted; named after the event's company when Attio has no name for it. */
function company(api: AttioSession, event: CrmEvent, domain: string): Promise<string> {
  const name = event.company?.trim();
  // The syncs of one domain at once: one assert, and one naming (by the first event that names it) for all.
  return COMPANIES.run(`${api.memoryKey()}\n${domain}\n${name ? 'named' : ''}`, async () => {
    const asserted = await assertCompany(api, domain);
    if (!asserted.named && name) {
      const path = `/objects/companies/records/${asserted.recordId}`;
      await api.data('company', { method: 'PATCH', path, json: { data: { values: { name } } }, idempotent: true });
      rememberNamed(api, domain, asserted.recordId);
    }
    return asserted.recordId;
  });
}

const COMPANIES = new SingleFlight<string>();

/**
 * By email: asserted (found or created by Attio in one call). Social-only: found by its LinkedIn URL, else
 * created with it. What Attio lacks (a name, the profile URL, the company) is then filled in, never replaced.
 */
async function findOrCreatePerson(api: AttioSession, event: CrmEvent, companyId: string | undefined): Promise<{ recordId: string; created: boolean }> {
  const email = event.email?.trim().toLowerCase();
  if (email) {
    // The syncs of one new person at once: one assert and one fill-in for all of them.
    return PEOPLE.run(`${api.memoryKey()}\n${email}`, async () => {
      const person = await assertPerson(api, email);
      if (!person.known) await fillIn(api, person.recordId, person.values, event, companyId);
      return { recordId: person.recordId, created: person.created };
    });
  }
  const profile = socialProfile(event);
  const slug = profile.canonical.replace(/^https:\/\/[^/]+\//, '');
  const found = await findPersonByProfile(api, slug, profileUrlVariants(profile));
  if (found) return { recordId: found, created: false };
  const values: Record<string, unknown> = { linkedin: profile.canonical, ...(personName(event) ? { name: [personName(event)] } : {}) };
  if (companyId) values.company = [{ target_object: 'companies', target_record_id: companyId }];
  const made = recordOf(
    await api.data('contact', { method: 'POST', path: '/objects/people/records', json: { data: { values } }, idempotent: false }),
    'person',
  );
  return { recordId: made.recordId, created: true };
}

const PEOPLE = new SingleFlight<{ recordId: string; created: boolean }>();

/** A `PATCH` of what the person lacks and we know: the name, the profile URL, the company. */
async function fillIn(api: AttioSession, recordId: string, values: Record<string, unknown[]>, event: CrmEvent, companyId: string | undefined): Promise<void> {
  const empty = (slug: string) => (values[slug] ?? []).length === 0;
  const patch: Record<string, unknown> = {};
  const name = personName(event);
  if (name && empty('name')) patch.name = [name];
  if (event.profileUrl && empty('linkedin')) patch.linkedin = socialProfile(event).canonical;
  if (companyId && empty('company')) patch.company = [{ target_object: 'companies', target_record_id: companyId }];
  if (Object.keys(patch).length === 0) return;
  await api.data('contact', { method: 'PATCH', path: `/objects/people/records/${recordId}`, json: { data: { values: patch } }, idempotent: true });
}

/** The company's domain: the event's, else its email's. */
function companyDomain(event: CrmEvent): string | undefined {
  const domain = event.companyDomain?.trim().toLowerCase() || event.email?.split('@')[1]?.trim().toLowerCase();
  return domain ? domain.replace(/^www\./, '') : undefined;
}

/**
 * Creates a note or task exactly once across attempts: the time from which it may exist is saved before the
 * create is sent; an attempt after a lost answer lists the person's notes (or tasks) and takes the one with
 * this title and time (or content and deadline). When the create surely was not sent, the mark is taken back.
 */
async function createOnce(
  api: AttioSession,
  book: StateBook<AttioState>,
  step: 'note' | 'task',
  data: Record<string, unknown>,
  deps: ConnectorDeps,
): Promise<string> {
  const pending = step === 'note' ? 'notePendingSince' : 'taskPendingSince';
  const since = book.state[pending];
  const found = since ? await findCreated(api, step, data) : undefined;
  if (found !== undefined) return found;
  await book.save({ [pending]: since ?? new Date(deps.now() - SKEW_MS).toISOString() });
  try {
    const made = asRecord(await api.data(step, { method: 'POST', path: step === 'note' ? '/notes' : '/tasks', json: { data }, idempotent: false }));
    const id = asRecord(made.id)[step === 'note' ? 'note_id' : 'task_id'];
    if (typeof id !== 'string') throw new CrmError('unavailable', `Attio ${step} create answered without an id`);
    return id;
  } catch (error) {
    if (error instanceof CrmError && error.unsent) await book.save({ [pending]: undefined });
    throw error;
  }
}

async function findCreated(api: AttioSession, step: 'note' | 'task', data: Record<string, unknown>): Promise<string | undefined> {
  const recordId = step === 'note' ? String(data.parent_record_id) : String(asRecord((data.linked_records as unknown[])[0]).target_record_id);
  const page = step === 'note' ? NOTES_PAGE : TASKS_PAGE;
  for (let offset = 0; ; offset += page) {
    const query: Record<string, string> =
      step === 'note'
        ? { parent_object: 'people', parent_record_id: recordId, limit: String(page), offset: String(offset) }
        : { linked_object: 'people', linked_record_id: recordId, limit: String(page), offset: String(offset) };
    const rows = await api.data(step, { method: 'GET', path: step === 'note' ? '/notes' : '/tasks', query, idempotent: true });
    const list = Array.isArray(rows) ? rows.map(asRecord) : [];
    const hit = list.find((row) =>
      step === 'note'
        ? row.title === data.title && Date.parse(String(row.created_at)) === Date.parse(String(data.created_at))
        : row.content_plaintext === data.content && Date.parse(String(row.deadline_at)) === Date.parse(String(data.deadline_at)),
    );
    const id = hit ? asRecord(hit.id)[step === 'note' ? 'note_id' : 'task_id'] : undefined;
    if (typeof id === 'string') return id;
    if (list.length < page) return undefined;
  }
}
