import { companyDomainOf } from '../../../domain/company-domain.js';
import { CrmError } from '../errors.js';
import { renewCredentials, type ConnectorDeps } from '../session.js';
import { stepsOf } from '../lockstep.js';
import { sideStep } from '../side-step.js';
import { StateBook } from '../state-book.js';
import type { CrmConnector, CrmOutcome, CrmRun, CrmWarning } from '../types.js';
import { associateCompany, companyFor } from './companies.js';
import { giveOwner, writeContact } from './contacts.js';
import { hubspotCredentials, type HubspotCredentials } from './credentials.js';
import { createEngagement, findEngagement, type EngagementType } from './engagements.js';
import { readHubspotList } from './lists.js';
import { ownerIdFor } from './owners.js';
import { activityProperties, isEmailEngagement, taskProperties } from './properties.js';
import { HubspotSession } from './session.js';

export { CONTACT_UPSERTS } from './contacts.js';
export { ENGAGEMENT_CREATES } from './engagements.js';

/**
 * HubSpot's CRM APIs at the version of ./paths.ts (facts in shared/docs/crm-apis.md): the contact upserted by
 * email (or searched and created by profile property for social-only events), with the sender's user as
 * its owner when it has none; the company by domain with a contact↔company association; the event as an
 * email or note engagement associated with the contact; an optional follow-up task. Every step the syncs
 * of one account make at once is one batch call for all of them (src/connectors/crm/shared-calls.ts), and
 * what a connection learns of its portal (a domain's company, an email's contact, its owners) is
 * remembered for minutes, so a campaign's repeated leads cost a fraction of a call per event.
 */

/**
 * The steps the runs of a round take together (CrmRun.step): each is one batch call for all of them. A run
 * with nothing to do at a step passes it with the others.
 */
const HUBSPOT_STEPS = { contactRead: 1, contactUpsert: 2, companySearch: 3, companyCreate: 4, association: 5, activity: 6, task: 7 } as const;

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
  const reach = stepsOf(run);
  await api.refreshIfExpiring();
  await reach(HUBSPOT_STEPS.contactRead);

  // 1. The owner to give the contact: the sender's user (the portal's owners are read once per connection).
  const ownerWanted = options.assignContactOwner && !state.ownerDone;
  let owner: string | null | undefined;
  if (ownerWanted) {
    if (!event.senderEmail) result.ownerSkipped = 'the event names no sender email';
    else {
      await sideStep(warnings, 'owner', async () => {
        owner = await ownerIdFor(api, event.senderEmail as string);
        if (owner === null) warnings.push({ step: 'owner', message: 'HubSpot owner not assigned: no HubSpot user has the sender email' });
      });
    }
  }

  // 2. The contact, with that owner where it has none; saved before the next step, so no retry upserts it again.
  if (state.contactId === undefined) {
    const contact = await writeContact(api, event, owner, () => reach(HUBSPOT_STEPS.contactUpsert));
    await book.save({
      contactId: contact.id,
      contactCreated: contact.created,
      ...(owner !== undefined ? { ownerDone: true, ownerId: contact.ownerId ?? null } : {}),
    });
  } else if (owner !== undefined) {
    // A contact an earlier attempt wrote before its owner was known (an older release's state, or an owner
    // lookup that failed then): its owner is given on its own, never by writing the contact again.
    await book.save({ ownerDone: true, ownerId: typeof owner === 'string' ? await giveOwner(api, state.contactId, owner) : null });
  }
  const contactId = state.contactId as string;
  result.contactId = contactId;
  result.contactCreated = state.contactCreated ?? false;
  if (state.ownerId) result.ownerId = state.ownerId;

  // 3. Company by domain, and the association.
  if (options.createOrUpdateCompany) {
    const domain = companyDomainOf(event);
    if (!domain) result.companySkipped = 'the event names no company domain';
    else {
      await sideStep(warnings, 'company', async () => {
        if (state.companyId === undefined) {
          await reach(HUBSPOT_STEPS.companySearch);
          await book.save({ companyId: await companyFor(api, domain, event.company, () => reach(HUBSPOT_STEPS.companyCreate)) });
        }
        if (!state.companyAssociated) {
          await reach(HUBSPOT_STEPS.association);
          await associateCompany(api, contactId, state.companyId as string);
          await book.save({ companyAssociated: true });
        }
      });
      if (state.companyId !== undefined) result.companyId = state.companyId;
    }
  }

  // 4. The event as an email or note engagement.
  // One hs_timestamp for this sync's engagements, fixed by the first attempt that writes one.
  const timestamp = state.timestamp ?? String(event.occurredAt.getTime());
  await reach(HUBSPOT_STEPS.activity);
  if (state.activityId === undefined) {
    const type = state.activityType ?? (isEmailEngagement(event) ? 'emails' : 'notes');
    const id = await createOnce(api, book, type, contactId, timestamp, 'activityPending', () => activityProperties(type, event, timestamp));
    await book.save({ activityType: type, activityId: id, activityPending: undefined }, { last: !options.createOrUpdateTask });
  }
  result.activity = { type: state.activityType, id: state.activityId };

  // 5. Follow-up task.
  if (options.createOrUpdateTask) {
    await reach(HUBSPOT_STEPS.task);
    await sideStep(warnings, 'task', async () => {
      if (state.taskId !== undefined) return;
      const id = await createOnce(api, book, 'tasks', contactId, timestamp, 'taskPending', () => taskProperties(event, timestamp, state.ownerId ?? null));
      await book.save({ taskId: id, taskPending: undefined }, { last: true });
    });
    if (state.taskId !== undefined) result.taskId = state.taskId;
  }

  if (warnings.length > 0) result.warnings = warnings;
  return { status: warnings.length > 0 ? 'warning' : 'success', result };
}

/**
 * Creates an engagement exactly once across attempts: written ahead (`pending` with the sync's
 * hs_timestamp) before the create is sent, so an attempt after a lost answer looks for it first. When the
 * create surely wrote nothing (kept back by the connection's budget, or answered 429), the mark is taken
 * back, so the next attempt creates at once instead of searching for what was never written: after a 429
 * on a shared batch create, a search per sync would spend the budget the 429 just said was gone.
 */
async function createOnce(
  api: HubspotSession,
  book: StateBook<HubspotState>,
  type: EngagementType,
  contactId: string,
  timestamp: string,
  pending: 'activityPending' | 'taskPending',
  properties: () => Record<string, string>,
): Promise<string> {
  const found = book.state[pending] ? await findEngagement(api, type, contactId, timestamp) : undefined;
  if (found !== undefined) return found;
  await book.save({ [pending]: true, timestamp, ...(type === 'tasks' ? {} : { activityType: type }) });
  try {
    return await createEngagement(api, type, contactId, properties());
  } catch (error) {
    if (error instanceof CrmError && error.unsent) await book.save({ [pending]: undefined });
    throw error;
  }
}
