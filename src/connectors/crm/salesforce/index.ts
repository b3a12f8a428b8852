import { profileUrlVariants } from '../../../domain/profile-url.js';
import { CrmError } from '../errors.js';
import { stepsOf } from '../lockstep.js';
import { renewCredentials, type ConnectorDeps } from '../session.js';
import { sideStep } from '../side-step.js';
import { StateBook } from '../state-book.js';
import type { CrmConnector, CrmEvent, CrmOutcome, CrmRun, CrmWarning } from '../types.js';
import { createRecord } from './creates.js';
import { salesforceCredentials, type SalesforceCredentials } from './credentials.js';
import { activityTask, followUpTask, personFields, socialProfile, type TaskFields } from './fields.js';
import { readSalesforceList } from './lists.js';
import { activeUserId, findPersonByEmail, rememberPerson } from './lookups.js';
import type { KnownPerson } from './memory.js';
import { SalesforceSession, soqlString, type SalesforceOptions } from './session.js';

/**
 * Salesforce REST (facts in shared/docs/crm-apis.md): find the person as a Contact, then as an
 * unconverted Lead, by email (SOQL; Email is no external id), else create the object the source's
 * `crmObjectType` names, owned by the sender's user when the source assigns owners; log the event as a
 * completed Task with `WhoId`, and optionally a follow-up Task. The syncs of a round look people up in
 * shared `Email IN (...)` queries and create people and Tasks in sObject Collections calls (200 records a
 * call), within the connection's concurrency cap. API calls go to the connection's `instanceUrl`; an
 * expired session (401 INVALID_SESSION_ID) is refreshed at the login host, whose answer names the instance.
 */

/** The steps the runs of a round take together (CrmRun.step), each one shared call for all of them. */
const SALESFORCE_STEPS = { owner: 1, contactLookup: 2, leadLookup: 3, personCreate: 4, activity: 5, task: 6 } as const;

/** What each step created, in syncs.crm_state. */
interface SalesforceState {
  [key: string]: unknown;
  whoId?: string;
  whoType?: 'Contact' | 'Lead';
  recordCreated?: boolean;
  ownerDone?: boolean;
  ownerId?: string | null;
  activityId?: string;
  /** ISO time from which a Task of this sync may exist, set just before its create is sent. */
  activityPendingSince?: string;
  taskId?: string;
  taskPendingSince?: string;
}

/** Clock skew allowance when looking for a Task an earlier attempt may have created. */
const SKEW_MS = 5 * 60_000;

export function salesforceConnector(credentials: SalesforceCredentials, options: SalesforceOptions, deps: ConnectorDeps): CrmConnector {
  let current = credentials;
  const session = (run: Pick<CrmRun, 'renewCredentials'>) =>
    new SalesforceSession(current, options, deps, async (used, exchange) => {
      current = await renewCredentials(run, salesforceCredentials, 'Salesforce', used, exchange);
      return current;
    });
  return {
    async write(run) {
      return writeEvent(session(run), run, deps);
    },
    async *readList(read) {
      yield* readSalesforceList(session(read), read);
    },
  };
}

async function writeEvent(api: SalesforceSession, run: CrmRun, deps: ConnectorDeps): Promise<CrmOutcome> {
  const { event, options } = run;
  const book = new StateBook<SalesforceState>(run);
  const state = book.state;
  const warnings: CrmWarning[] = [];
  const result: Record<string, unknown> = { crm: 'SALESFORCE' };
  const reach = stepsOf(run);

  // 1. The owner: the sender's active user (before the person, so that a record we create is theirs from the start).
  await reach(SALESFORCE_STEPS.owner);
  const ownerWanted = options.assignContactOwner && !state.ownerDone;
  let owner: string | null | undefined;
  if (ownerWanted) {
    if (!event.senderEmail) result.ownerSkipped = 'the event names no sender email';
    else {
      await sideStep(warnings, 'owner', async () => {
        owner = await activeUserId(api, event.senderEmail!.trim().toLowerCase());
        if (owner === null) warnings.push({ step: 'owner', message: 'Salesforce owner not assigned: no active user has the sender email' });
      });
    }
  }

  // 2-4. The person: Contact, then Lead, else created (with its owner).
  const ownerDone = owner !== undefined ? { ownerDone: true, ownerId: owner } : {};
  if (state.whoId === undefined) {
    const person = await findOrCreatePerson(api, event, options.crmObjectType, owner ?? null, reach);
    await book.save({ whoId: person.id, whoType: person.type, recordCreated: person.created, ...ownerDone });
  } else if (owner !== undefined) {
    // A person an earlier attempt created before its owner was known (an older release's state).
    if (owner !== null && state.recordCreated) await api.patch('owner', `/sobjects/${state.whoType}/${encodeURIComponent(state.whoId)}`, { OwnerId: owner });
    await book.save(ownerDone);
  }
  const whoId = state.whoId as string;
  result.whoId = whoId;
  result.whoType = state.whoType;
  result.recordCreated = state.recordCreated ?? false;
  if (state.ownerId) result.ownerId = state.ownerId;

  // 5. The event as a completed Task.
  await reach(SALESFORCE_STEPS.activity);
  if (state.activityId === undefined) {
    const id = await createTaskOnce(api, book, 'activity', activityTask(event, whoId, state.ownerId ?? null), deps);
    await book.save({ activityId: id, activityPendingSince: undefined }, { last: !options.createOrUpdateTask });
  }
  result.activityId = state.activityId;

  // 6. Follow-up task.
  if (options.createOrUpdateTask) {
    await reach(SALESFORCE_STEPS.task);
    await sideStep(warnings, 'task', async () => {
      if (state.taskId !== undefined) return;
      const id = await createTaskOnce(api, book, 'task', followUpTask(event, whoId, state.ownerId ?? null), deps);
      await book.save({ taskId: id, taskPendingSince: undefined }, { last: true });
    });
    if (state.taskId !== undefined) result.taskId = state.taskId;
  }

  // The company is the Lead's own (required) Company field; Accounts come from lead conversion.
  if (options.createOrUpdateCompany && state.whoType === 'Contact' && state.recordCreated)
    result.companySkipped = 'Salesforce Contacts take their company from an Account, which this connector does not create';

  if (warnings.length > 0) result.warnings = warnings;
  return { status: warnings.length > 0 ? 'warning' : 'success', result };
}

/**
 * By email: Contact first (the converted, curated record), then an unconverted Lead, in lookups the
 * round's syncs share. Social-only events: an unconverted Lead whose Website is the profile URL (any
 * stored variant); Contacts have no standard field for it. Else the person is created (syncs of one new
 * email at once create one record).
 */
async function findOrCreatePerson(
  api: SalesforceSession,
  event: CrmEvent,
  crmObjectType: string | null,
  ownerId: string | null,
  reach: (step: number) => Promise<void>,
): Promise<KnownPerson & { created: boolean }> {
  await reach(SALESFORCE_STEPS.contactLookup);
  const email = event.email?.trim().toLowerCase();
  const found = email ? await findPersonByEmail(api, email, () => reach(SALESFORCE_STEPS.leadLookup)) : await findSocialLead(api, event);
  await reach(SALESFORCE_STEPS.personCreate);
  if (found) return { ...found, created: false };
  const requested = (crmObjectType ?? 'Lead').trim().toLowerCase();
  if (requested !== 'lead' && requested !== 'contact') {
    throw new CrmError(
      'rejected',
      `Salesforce contact failed: crmObjectType "${crmObjectType}" is not supported (Lead or Contact: a Task's WhoId names one of them)`,
    );
  }
  // A social-only person is always a Lead: only a Lead has a standard field (Website) to find them by again.
  const type = email ? (requested === 'contact' ? 'Contact' : 'Lead') : 'Lead';
  const id = await createRecord(api, 'contact', type, personFields(event, type, ownerId), email);
  if (email) rememberPerson(api, email, { id, type });
  return { id, type, created: true };
}

async function findSocialLead(api: SalesforceSession, event: CrmEvent): Promise<KnownPerson | undefined> {
  const variants = profileUrlVariants(socialProfile(event)).map(soqlString).join(', ');
  const lead = await api.queryFirstId(
    'contact',
    `SELECT Id, OwnerId FROM Lead WHERE Website IN (${variants}) AND IsConverted = false ORDER BY CreatedDate ASC LIMIT 1`,
  );
  return lead ? { id: lead, type: 'Lead' } : undefined;
}

/**
 * Creates a Task exactly once across attempts: written ahead (the time from which it may exist) before
 * the create is sent, so an attempt after a lost answer looks for it first. When the create surely was not
 * sent (kept back by the connection's budget, or answered 429), the mark is taken back: a later attempt's
 * search could otherwise take another sync's Task of the same person and subject for this one's.
 */
async function createTaskOnce(
  api: SalesforceSession,
  book: StateBook<SalesforceState>,
  step: 'activity' | 'task',
  fields: TaskFields,
  deps: ConnectorDeps,
): Promise<string> {
  const pending = step === 'activity' ? 'activityPendingSince' : 'taskPendingSince';
  const since = book.state[pending];
  const found = since ? await findTask(api, step, fields.WhoId!, fields.Subject, since) : undefined;
  if (found !== undefined) return found;
  await book.save({ [pending]: since ?? new Date(deps.now() - SKEW_MS).toISOString() });
  try {
    return await createRecord(api, step, 'Task', fields);
  } catch (error) {
    if (error instanceof CrmError && error.unsent) await book.save({ [pending]: undefined });
    throw error;
  }
}

/** A Task of this sync that an attempt whose answer was lost may have created. */
async function findTask(api: SalesforceSession, step: string, whoId: string, subject: string, since: string): Promise<string | undefined> {
  const sinceLiteral = new Date(since).toISOString().replace(/\.\d{3}Z$/, 'Z');
  return api.queryFirstId(
    step,
    `SELECT Id FROM Task WHERE WhoId = ${soqlString(whoId)} AND Subject = ${soqlString(subject)} AND CreatedDate >= ${sinceLiteral} LIMIT 1`,
  );
}
