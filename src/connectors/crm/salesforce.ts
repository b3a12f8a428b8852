import { z } from 'zod';
import { eventTraits } from '../../domain/event-types.js';
import { normalizeProfileUrl, profileUrlVariants } from '../../domain/profile-url.js';
import type { HttpResponse } from '../http/client.js';
import { CrmError } from './errors.js';
import { asRecord } from './records.js';
import { CrmSession, renewCredentials, type ConnectorDeps } from './session.js';
import { sideStep } from './side-step.js';
import { StateBook } from './state-book.js';
import { eventLabel, truncate } from './text.js';
import { readSalesforceList } from './salesforce-lists.js';
import type { CrmConnector, CrmEvent, CrmOutcome, CrmRun, CrmWarning } from './types.js';

/**
 * Salesforce REST (facts in shared/docs/crm-apis.md): find the person as a Contact, then as an
 * unconverted Lead, by email (SOQL; Email is no external id), else create the object the source's
 * `crmObjectType` names; log the event as a completed Task with `WhoId`; optionally a follow-up Task
 * and an owner from the sender's email. API calls go to the connection's `instanceUrl`; an expired
 * session (401 INVALID_SESSION_ID) is refreshed at the login host, whose answer names the instance.
 */

export const salesforceCredentials = z.looseObject({
  instanceUrl: z.url({ protocol: /^https?$/ }),
  accessToken: z.string().min(1),
  refreshToken: z.string().min(1).optional(),
  /** The connected app's consumer key and secret, needed to refresh. */
  clientId: z.string().min(1).optional(),
  clientSecret: z.string().min(1).optional(),
});
export type SalesforceCredentials = z.infer<typeof salesforceCredentials>;

export interface SalesforceOptions {
  loginUrl: string;
  /** REST API version, `vXX.X`. */
  apiVersion: string;
}

export const DEFAULT_SALESFORCE_API_VERSION = 'v62.0';

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

const NOT_PROVIDED = '[not provided]';
const SUBJECT_MAX = 255;
const DESCRIPTION_MAX = 32_000;
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

  // 1. The person: Contact, then Lead, else create.
  if (state.whoId === undefined) {
    const found = await findPerson(api, event);
    const person = found ?? (await createPerson(api, event, options.crmObjectType));
    await book.save({ whoId: person.id, whoType: person.type, recordCreated: found === undefined });
  }
  const whoId = state.whoId as string;
  result.whoId = whoId;
  result.whoType = state.whoType;
  result.recordCreated = state.recordCreated ?? false;

  // 2. Owner, before the tasks so they can be assigned too.
  if (options.assignContactOwner && !state.ownerDone) {
    if (!event.senderEmail) result.ownerSkipped = 'the event names no sender email';
    else {
      await sideStep(warnings, 'owner', async () => {
        const ownerId = await findUser(api, event.senderEmail as string);
        if (ownerId === undefined) warnings.push({ step: 'owner', message: 'Salesforce owner not assigned: no active user has the sender email' });
        // Only records we created change hands: an existing record keeps the owner the org gave it.
        else if (state.recordCreated) await api.patch('owner', `/sobjects/${state.whoType}/${encodeURIComponent(whoId)}`, { OwnerId: ownerId });
        await book.save({ ownerDone: true, ownerId: ownerId ?? null });
      });
    }
  }
  if (state.ownerId) result.ownerId = state.ownerId;

  // 3. The event as a completed Task.
  if (state.activityId === undefined) {
    const fields = activityTask(event, whoId, state.ownerId ?? null);
    let id = state.activityPendingSince ? await findTask(api, 'activity', whoId, fields.Subject, state.activityPendingSince) : undefined;
    if (id === undefined) {
      // Written ahead: if the create's answer is lost, the next attempt looks before creating again.
      await book.save({ activityPendingSince: state.activityPendingSince ?? new Date(deps.now() - SKEW_MS).toISOString() });
      id = await api.create('activity', 'Task', fields);
    }
    await book.save({ activityId: id, activityPendingSince: undefined }, { last: !options.createOrUpdateTask });
  }
  result.activityId = state.activityId;

  // 4. Follow-up task.
  if (options.createOrUpdateTask) {
    await sideStep(warnings, 'task', async () => {
      if (state.taskId !== undefined) return;
      const fields = followUpTask(event, whoId, state.ownerId ?? null);
      let id = state.taskPendingSince ? await findTask(api, 'task', whoId, fields.Subject, state.taskPendingSince) : undefined;
      if (id === undefined) {
        await book.save({ taskPendingSince: state.taskPendingSince ?? new Date(deps.now() - SKEW_MS).toISOString() });
        id = await api.create('task', 'Task', fields);
      }
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

// ---------------------------------------------------------------------------------------------
// Steps

type Person = { id: string; type: 'Contact' | 'Lead' };

/**
 * By email: Contact first (the converted, curated record), then an unconverted Lead. Social-only
 * events: an unconverted Lead whose Website is the profile URL (any stored variant); Contacts have
 * no standard field for it.
 */
async function findPerson(api: SalesforceSession, event: CrmEvent): Promise<Person | undefined> {
  if (event.email) {
    const email = soqlString(event.email.trim().toLowerCase());
    const contact = await api.queryFirstId('contact', `SELECT Id, OwnerId FROM Contact WHERE Email = ${email} ORDER BY CreatedDate ASC LIMIT 1`);
    if (contact) return { id: contact, type: 'Contact' };
    const lead = await api.queryFirstId(
      'contact',
      `SELECT Id, OwnerId FROM Lead WHERE Email = ${email} AND IsConverted = false ORDER BY CreatedDate ASC LIMIT 1`,
    );
    return lead ? { id: lead, type: 'Lead' } : undefined;
  }
  const profile = socialProfile(event);
  const variants = profileUrlVariants(profile).map(soqlString).join(', ');
  const lead = await api.queryFirstId(
    'contact',
    `SELECT Id, OwnerId FROM Lead WHERE Website IN (${variants}) AND IsConverted = false ORDER BY CreatedDate ASC LIMIT 1`,
  );
  return lead ? { id: lead, type: 'Lead' } : undefined;
}

async function createPerson(api: SalesforceSession, event: CrmEvent, crmObjectType: string | null): Promise<Person> {
  const requested = (crmObjectType ?? 'Lead').trim().toLowerCase();
  if (requested !== 'lead' && requested !== 'contact') {
    throw new CrmError(
      'rejected',
      `Salesforce contact failed: crmObjectType "${crmObjectType}" is not supported (Lead or Contact: a Task's WhoId names one of them)`,
    );
  }
  // A social-only person is always a Lead: only a Lead has a standard field (Website) to find them by again.
  const type = event.email ? (requested === 'contact' ? 'Contact' : 'Lead') : 'Lead';
  const fields: Record<string, string> = { LastName: truncate(event.lastName?.trim() || NOT_PROVIDED, 80) };
  if (event.firstName?.trim()) fields.FirstName = truncate(event.firstName.trim(), 40);
  if (event.email) fields.Email = event.email.trim().toLowerCase();
  if (type === 'Lead') {
    fields.Company = truncate(event.company?.trim() || event.companyDomain?.trim() || NOT_PROVIDED, 255);
    if (!event.email) fields.Website = socialProfile(event).canonical;
  }
  return { id: await api.create('contact', type, fields), type };
}

async function findUser(api: SalesforceSession, email: string): Promise<string | undefined> {
  return api.queryFirstId('owner', `SELECT Id FROM User WHERE Email = ${soqlString(email.trim().toLowerCase())} AND IsActive = true LIMIT 1`);
}

/** A Task of this sync that an attempt whose answer was lost may have created. */
async function findTask(api: SalesforceSession, step: string, whoId: string, subject: string, since: string): Promise<string | undefined> {
  const sinceLiteral = new Date(since).toISOString().replace(/\.\d{3}Z$/, 'Z');
  return api.queryFirstId(
    step,
    `SELECT Id FROM Task WHERE WhoId = ${soqlString(whoId)} AND Subject = ${soqlString(subject)} AND CreatedDate >= ${sinceLiteral} LIMIT 1`,
  );
}

// ---------------------------------------------------------------------------------------------
// Fields

type TaskFields = Record<string, string> & { Subject: string };

function activityTask(event: CrmEvent, whoId: string, ownerId: string | null): TaskFields {
  const channel = eventTraits(event.eventType).channel;
  const fields: TaskFields = {
    WhoId: whoId,
    Subject: truncate(`[${event.platform}] ${eventLabel(event.eventType)}${event.subject ? `: ${event.subject}` : ''}`, SUBJECT_MAX),
    Description: truncate(description(event), DESCRIPTION_MAX),
    ActivityDate: isoDate(event.occurredAt),
    Status: 'Completed',
    Priority: 'Normal',
    TaskSubtype: channel === 'email' ? 'Email' : channel === 'call' ? 'Call' : 'Task',
  };
  if (ownerId) fields.OwnerId = ownerId;
  return fields;
}

function followUpTask(event: CrmEvent, whoId: string, ownerId: string | null): TaskFields {
  const fields: TaskFields = {
    WhoId: whoId,
    Subject: truncate(`Follow up: ${eventLabel(event.eventType)}${event.subject ? ` - ${event.subject}` : ''}`, SUBJECT_MAX),
    Description: truncate(description(event), DESCRIPTION_MAX),
    ActivityDate: isoDate(new Date(event.occurredAt.getTime() + 24 * 3600_000)),
    Status: 'Not Started',
    Priority: 'Normal',
    TaskSubtype: 'Task',
  };
  if (ownerId) fields.OwnerId = ownerId;
  return fields;
}

function description(event: CrmEvent): string {
  const lines = [`${eventLabel(event.eventType)} (${event.platform})`];
  if (event.campaignName) lines.push(`Campaign: ${event.campaignName}`);
  if (event.profileUrl) lines.push(`Profile: ${event.profileUrl}`);
  if (event.subject) lines.push(`Subject: ${event.subject}`);
  if (event.text) lines.push('', event.text);
  return lines.join('\n');
}

function socialProfile(event: CrmEvent) {
  const parsed = normalizeProfileUrl(event.profileUrl ?? event.identity);
  if (!parsed.ok) throw new CrmError('rejected', `Salesforce contact failed: the event has no email and ${parsed.reason}`);
  return parsed.profile;
}

function isoDate(date: Date): string {
  return date.toISOString().slice(0, 10);
}

/** A SOQL string literal: backslash and quote escaped, and the other escapes SOQL defines. */
function soqlString(value: string): string {
  const escaped = value.replace(/\\/g, '\\\\').replace(/'/g, "\\'").replace(/\n/g, '\\n').replace(/\r/g, '\\r').replace(/\t/g, '\\t');
  return `'${escaped}'`;
}

// ---------------------------------------------------------------------------------------------
// Session: bearer auth on the instance, OAuth refresh at the login host, Salesforce's error format

class SalesforceSession extends CrmSession {
  constructor(
    private credentials: SalesforceCredentials,
    private readonly options: SalesforceOptions,
    deps: ConnectorDeps,
    private readonly renew: (used: SalesforceCredentials, exchange: () => Promise<SalesforceCredentials>) => Promise<SalesforceCredentials>,
  ) {
    super(deps, 'Salesforce');
  }

  private url(path: string): URL {
    return new URL(`${this.credentials.instanceUrl.replace(/\/+$/, '')}/services/data/${this.options.apiVersion}${path}`);
  }

  async queryFirstId(step: string, soql: string): Promise<string | undefined> {
    const url = () => {
      const query = this.url('/query');
      query.searchParams.set('q', soql);
      return query;
    };
    const body = asRecord((await this.send(step, () => ({ method: 'GET', url: url(), idempotent: true }))).json());
    const first = Array.isArray(body.records) ? asRecord(body.records[0]) : {};
    return typeof first.Id === 'string' ? first.Id : undefined;
  }

  /** Every record a query matches, a batch at a time (`nextRecordsUrl` while `done` is false). */
  async *queryAll(step: string, soql: string): AsyncGenerator<Record<string, unknown>[]> {
    let next: (() => URL) | undefined = () => {
      const query = this.url('/query');
      query.searchParams.set('q', soql);
      return query;
    };
    while (next) {
      const url = next;
      const body = asRecord((await this.send(step, () => ({ method: 'GET', url: url(), idempotent: true }))).json());
      yield Array.isArray(body.records) ? body.records.map(asRecord) : [];
      const more = body.done === false && typeof body.nextRecordsUrl === 'string' ? body.nextRecordsUrl : undefined;
      // The locator is a path on the instance; built again after a refresh, which may move the instance.
      next = more === undefined ? undefined : () => new URL(more, `${this.credentials.instanceUrl.replace(/\/+$/, '')}/`);
    }
  }

  async create(step: string, sobject: string, fields: Record<string, string>): Promise<string> {
    const body = asRecord((await this.send(step, () => ({ method: 'POST', url: this.url(`/sobjects/${sobject}`), json: fields, idempotent: false }))).json());
    if (typeof body.id !== 'string') throw new CrmError('unavailable', `Salesforce ${step} answered without an id`);
    return body.id;
  }

  async patch(step: string, path: string, fields: Record<string, string>): Promise<void> {
    await this.send(step, () => ({ method: 'PATCH', url: this.url(path), json: fields, idempotent: true }));
  }

  protected accessToken(): string {
    return this.credentials.accessToken;
  }

  protected secrets(): string[] {
    const c = this.credentials;
    return [c.accessToken, c.refreshToken, c.clientSecret].filter((s): s is string => typeof s === 'string');
  }

  protected canRefresh(): boolean {
    return Boolean(this.credentials.refreshToken && this.credentials.clientId);
  }

  protected isExpired(response: HttpResponse): boolean {
    return response.status === 401;
  }

  protected override errorFor(step: string, response: HttpResponse, retryAfterMs: number | undefined): CrmError {
    // The org's rolling 24-hour allowance is spent: later, not never.
    if (response.status === 403 && errorCodes(response.json()).includes('REQUEST_LIMIT_EXCEEDED'))
      return this.error('rate_limited', step, response, retryAfterMs);
    return super.errorFor(step, response, retryAfterMs);
  }

  protected async refresh(step: string): Promise<void> {
    this.credentials = await this.renew(this.credentials, () => this.exchange(step));
  }

  /** One refresh-token grant at the token endpoint: the new credentials, not yet stored. */
  private async exchange(step: string): Promise<SalesforceCredentials> {
    const c = this.credentials;
    const form: Record<string, string> = { grant_type: 'refresh_token', refresh_token: c.refreshToken ?? '', client_id: c.clientId ?? '' };
    if (c.clientSecret) form.client_secret = c.clientSecret;
    const answer = await this.sendRaw('token refresh', { method: 'POST', url: `${this.options.loginUrl}/services/oauth2/token`, form, idempotent: false });
    if (!answer.ok) {
      const error = this.errorFor('token refresh', answer.response, answer.retryAfterMs);
      // invalid_grant: the refresh token was revoked, expired or rotated away: the customer reconnects.
      throw error.kind === 'rejected'
        ? new CrmError('auth', `${error.message} while refreshing for ${step}`, { httpStatus: answer.response.status, payload: error.payload })
        : error;
    }
    const body = asRecord(answer.response.json());
    const instanceUrl = typeof body.instance_url === 'string' ? body.instance_url : c.instanceUrl;
    if (typeof body.access_token !== 'string' || !salesforceCredentials.shape.instanceUrl.safeParse(instanceUrl).success) {
      throw new CrmError('unavailable', 'Salesforce token refresh answered without an access token or a valid instance_url');
    }
    const next: SalesforceCredentials = {
      ...c,
      accessToken: body.access_token,
      instanceUrl: instanceUrl.replace(/\/+$/, ''),
      // With refresh-token rotation the answer carries a new one and the old one is void.
      ...(typeof body.refresh_token === 'string' ? { refreshToken: body.refresh_token } : {}),
    };
    return next;
  }

  protected vendorMessage(body: unknown): string | undefined {
    if (Array.isArray(body)) {
      const parts = body.map(asRecord).map((e) => [e.errorCode, e.message].filter((x) => typeof x === 'string').join(': '));
      return parts.filter((p) => p !== '').join('; ') || undefined;
    }
    const record = asRecord(body);
    if (typeof record.error === 'string') return [record.error, record.error_description].filter((x) => typeof x === 'string').join(': ');
    return undefined;
  }
}

function errorCodes(body: unknown): string[] {
  return Array.isArray(body) ? body.map(asRecord).map((e) => (typeof e.errorCode === 'string' ? e.errorCode : '')) : [];
}
