import type http from 'node:http';
import { authorizeErrorPage, consentStep, derived, isRedirectUri, redirectWith, sendHtml, type AuthorizeAnswer, type Consent } from './consent.js';
import { LoopbackEmulator, NthCall, type CallMatch, type InterceptPhase } from './loopback.js';
import { readBody } from './faults.js';
import { INVALID_JSON, parseJson } from './json-body.js';

/**
 * A Close emulator (docs/vendors/close.md): one HTTP server on 127.0.0.1 standing for both
 * `api.close.com` (`/api/v1/...`, the OAuth token endpoint) and `app.close.com` (the OAuth consent page),
 * speaking what src/connectors/crm/close/ calls, field for field as Close's reference shows:
 * - auth: an API key as HTTP Basic user name, or an OAuth access token as a bearer (401 otherwise);
 * - leads and their contacts (`POST /lead/` with nested contacts, `POST /contact/`), the Advanced
 *   Filtering search (`POST /data/search/`: `and`/`or`, `object_type`, `has_related` over
 *   `contact_email`, `contact_url` and `contact`, text `field_condition`s, `saved_search`; cursor paging);
 * - email activities (`status` `sent` and `inbox` log, while `outbox` and `scheduled` are mail Close
 *   sends: recorded in {@link CloseEmulator.mailSent}), notes, tasks, users, unsubscribed emails;
 * - limits per API key and endpoint group (an organisation three times that), with the `RateLimit`
 *   header on every answer and a 429 whose `retry-after` is the window's reset in whole seconds;
 * - injected faults and delays (src/emulators/faults.ts), and a request log.
 */

export interface CloseUser {
  id: string;
  email: string;
  first_name: string;
  last_name: string;
}

export interface CloseEmulatorOptions {
  apiKeys?: string[];
  accessToken?: string;
  refreshToken?: string;
  clientId?: string;
  clientSecret?: string;
  /** Each refresh returns a new refresh token and voids the old one, as Close's does (default true). */
  rotateRefreshTokens?: boolean;
  users?: CloseUser[];
  /** Requests per second per key and endpoint group (the organisation: three times that); unset: none. */
  requestsPerSecond?: number;
  organization?: { id: string; name: string };
}

type Json = Record<string, unknown>;

export interface CloseLead extends Json {
  id: string;
  name: string;
  url: string | null;
  date_created: string;
}

export interface CloseContact extends Json {
  id: string;
  lead_id: string;
  name: string;
  emails: Array<{ email: string; type: string; is_unsubscribed: boolean }>;
  urls: Array<{ url: string; type: string }>;
  date_created: string;
}

export interface CloseActivity extends Json {
  id: string;
  _type: 'Email' | 'Note';
  lead_id: string;
  contact_id: string | null;
  activity_at: string;
  date_created: string;
}

export interface CloseTask extends Json {
  id: string;
  _type: 'lead';
  lead_id: string;
  text: string;
  date: string;
}

export interface LoggedCloseRequest {
  method: string;
  path: string;
  status: number;
  /** The search's JSON body, for `POST /data/search/`. */
  search?: unknown;
  at: number;
}

/** Statuses an email activity may be created with; `outbox` and `scheduled` make Close send the email. */
const EMAIL_STATUSES = new Set(['inbox', 'draft', 'scheduled', 'outbox', 'sent', 'error']);
const SENDING_STATUSES = new Set(['outbox', 'scheduled']);
/** Advanced Filtering's largest page (Close's own limit is not published; ours, stated). */
const SEARCH_MAX_LIMIT = 200;
const LIST_MAX_LIMIT = 100;
const WINDOW_MS = 1_000;

export class CloseEmulator extends LoopbackEmulator {
  readonly leads = new Map<string, CloseLead>();
  readonly contacts = new Map<string, CloseContact>();
  readonly activities = new Map<string, CloseActivity>();
  readonly tasks = new Map<string, CloseTask>();
  readonly users: CloseUser[];
  /** Unsubscribed addresses (lowercase), with when. */
  readonly unsubscribed = new Map<string, string>();
  /** Smart views: a saved search standing for a set of contacts. */
  readonly smartViews = new Map<string, { id: string; name: string; contactIds: Set<string> }>();
  /** Email activities created with a status that makes Close send the email: a connector must leave this empty. */
  readonly mailSent: CloseActivity[] = [];
  readonly requests: LoggedCloseRequest[] = [];
  readonly consents: Consent[] = [];
  readonly tokenRefreshes: Array<{ at: number; rotated: boolean }> = [];
  readonly apiKeys: Set<string>;
  readonly accessTokens = new Set<string>();
  readonly refreshTokens = new Set<string>();
  readonly clientId: string;
  readonly clientSecret: string;
  readonly organization: { id: string; name: string };
  rotateRefreshTokens: boolean;
  requestsPerSecond: number | undefined;
  private readonly codes = new Map<string, { redirectUri: string; used: boolean }>();
  private readonly interception = new NthCall();
  /** Per key (or organisation) and endpoint group, the times of its requests in the current second. */
  private readonly windows = new Map<string, number[]>();
  private counter = 1;

  constructor(options: CloseEmulatorOptions = {}) {
    super();
    this.apiKeys = new Set(options.apiKeys ?? ['close-api-key']);
    this.accessTokens.add(options.accessToken ?? 'close-access-initial');
    this.refreshTokens.add(options.refreshToken ?? 'close-refresh-initial');
    this.clientId = options.clientId ?? 'close-client-id';
    this.clientSecret = options.clientSecret ?? 'close-client-secret';
    this.rotateRefreshTokens = options.rotateRefreshTokens ?? true;
    this.requestsPerSecond = options.requestsPerSecond;
    this.organization = options.organization ?? { id: 'orga_emulated0000000000000001', name: 'Seller Inc' };
    this.users = options.users ?? [
      { id: 'user_integration00000000000001', email: 'integration@seller.test', first_name: 'Integration', last_name: 'User' },
      { id: 'user_rep000000000000000000002', email: 'rep@seller.test', first_name: 'Rita', last_name: 'Rep' },
    ];
  }

  /**
   * Runs `action` at the `n`th API call from now (a crash test's kill): `before` it is carried out,
   * carried out but `unanswered` (its answer never sent), or `answered`. With `match`, only the calls of
   * that method and path count (the creates of activities, say).
   */
  interceptNth(n: number, phase: InterceptPhase, action: () => void, match?: CallMatch): void {
    this.interception.arm(n, phase, action, match);
  }

  /** The contacts whose emails include `email` (any case). */
  contactsByEmail(email: string): CloseContact[] {
    const wanted = email.toLowerCase();
    return [...this.contacts.values()].filter((c) => c.emails.some((e) => e.email.toLowerCase() === wanted));
  }

  /** A lead's activities (email and note), oldest first. */
  activitiesOf(leadId: string): CloseActivity[] {
    return [...this.activities.values()].filter((a) => a.lead_id === leadId);
  }

  tasksOf(leadId: string): CloseTask[] {
    return [...this.tasks.values()].filter((t) => t.lead_id === leadId);
  }

  /** Requests that reached the API (not the token endpoint or the consent page). */
  apiRequests(): LoggedCloseRequest[] {
    return this.requests.filter((r) => r.path.startsWith('/api/v1/'));
  }

  private id(prefix: string): string {
    return `${prefix}_${String(this.counter++).padStart(22, '0')}emu`;
  }

  protected async handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://close.emulator');
    const body = await readBody(req);
    const method = req.method ?? 'GET';
    const logged: LoggedCloseRequest = { method, path: url.pathname, status: 0, at: Date.now() };
    this.requests.push(logged);
    const answer = (status: number, json: unknown, headers: Record<string, string> = {}) => {
      logged.status = status;
      if (res.destroyed) return;
      res.writeHead(status, { 'content-type': 'application/json', ...headers });
      res.end(json === undefined ? '' : JSON.stringify(json));
    };
    try {
      await this.plan.wait(url.pathname);
      if (url.pathname === '/oauth2/authorize/' && (method === 'GET' || method === 'POST')) {
        const page = this.authorize(method, url, body, req.headers['content-type']);
        logged.status = page.status;
        return sendHtml(res, page.status, page.html, page.location ? { location: page.location } : {});
      }
      if (url.pathname === '/oauth2/token/' && method === 'POST') {
        const token = this.token(new URLSearchParams(body));
        return answer(token.status, token.json);
      }
      if (!url.pathname.startsWith('/api/v1/')) return answer(404, { error: 'Not found' });
      const caller = this.caller(req.headers.authorization);
      const fault = this.plan.take(url.pathname, caller);
      if (fault)
        return answer(
          fault.status,
          fault.body ?? { error: faultMessage(fault.status) },
          fault.retryAfter !== undefined ? { 'retry-after': String(fault.retryAfter) } : {},
        );
      if (caller === undefined) return answer(401, { error: 'Unauthorized: the API key or access token is missing or invalid' });
      const limit = this.rateLimit(caller, method, url.pathname);
      if (limit.exceeded) return answer(429, undefined, limit.headers);
      const json = body === '' ? {} : parseJson(body);
      if (json === INVALID_JSON) return answer(400, { errors: ['Invalid JSON'], 'field-errors': {} }, limit.headers);
      if (method === 'POST' && url.pathname === '/api/v1/data/search/') logged.search = json;
      const intercepted = this.interception.take(method, url.pathname);
      // The caller is gone before its request arrives: nothing is carried out or answered.
      if (intercepted?.phase === 'before') return intercepted.action();
      const result = this.route(method, url, asJson(json));
      // Carried out, and the caller gone before the answer: its answer is lost.
      if (intercepted?.phase === 'unanswered') return intercepted.action();
      answer(result.status, result.json, limit.headers);
      intercepted?.action();
    } catch (error) {
      return answer(500, { error: (error as Error).message });
    }
  }

  /** The API key or access token of a request, when it is one Close knows. */
  private caller(authorization: string | undefined): string | undefined {
    if (!authorization) return undefined;
    const [scheme, value] = authorization.split(' ', 2);
    if (scheme?.toLowerCase() === 'bearer' && value && this.accessTokens.has(value)) return value;
    if (scheme?.toLowerCase() === 'basic' && value) {
      const decoded = Buffer.from(value, 'base64').toString('utf8');
      const key = decoded.endsWith(':') ? decoded.slice(0, -1) : undefined;
      if (key && this.apiKeys.has(key)) return key;
    }
    return undefined;
  }

  /**
   * Close limits per key and endpoint group, and per organisation at three times that: both counted
   * over the current second; the header names the limit closest to being reached.
   */
  private rateLimit(caller: string, method: string, path: string): { exceeded: boolean; headers: Record<string, string> } {
    const perKey = this.requestsPerSecond;
    if (perKey === undefined) return { exceeded: false, headers: {} };
    const group = path === '/api/v1/data/search/' ? 'search' : method === 'GET' ? 'read' : 'write';
    const now = Date.now();
    const counted = [
      { key: `key\n${caller}\n${group}`, limit: perKey },
      { key: `org\n${group}`, limit: perKey * 3 },
    ].map(({ key, limit }) => {
      const recent = (this.windows.get(key) ?? []).filter((at) => at > now - WINDOW_MS);
      const exceeded = recent.length >= limit;
      if (!exceeded) recent.push(now);
      this.windows.set(key, recent);
      const reset = recent.length ? (recent[0]! + WINDOW_MS - now) / 1000 : WINDOW_MS / 1000;
      return { limit, remaining: Math.max(0, limit - recent.length), reset, exceeded };
    });
    const closest = counted.reduce((a, b) => (b.remaining / b.limit < a.remaining / a.limit ? b : a));
    const headers: Record<string, string> = { ratelimit: `limit=${closest.limit}, remaining=${closest.remaining}, reset=${closest.reset.toFixed(3)}` };
    const exceeded = counted.some((c) => c.exceeded);
    if (exceeded) headers['retry-after'] = String(Math.max(1, Math.ceil(Math.max(...counted.filter((c) => c.exceeded).map((c) => c.reset)))));
    return { exceeded, headers };
  }

  private route(method: string, url: URL, body: Json): { status: number; json: unknown } {
    const path = url.pathname;
    const q = url.searchParams;
    if (method === 'GET' && path === '/api/v1/me/') {
      const me = this.users[0];
      return ok({ ...me, organizations: [{ id: this.organization.id, name: this.organization.name }] });
    }
    if (method === 'GET' && path === '/api/v1/user/') return ok(page(this.users, q));
    if (method === 'POST' && path === '/api/v1/data/search/') return this.search(body);
    if (method === 'POST' && path === '/api/v1/lead/') return this.createLead(body);
    if (method === 'POST' && path === '/api/v1/contact/') return this.createContact(body);
    const contactId = /^\/api\/v1\/contact\/([^/]+)\/$/.exec(path)?.[1];
    if (method === 'GET' && contactId) {
      const contact = this.contacts.get(contactId);
      return contact ? ok(contact) : { status: 404, json: { error: 'Empty query: Contact matching query does not exist.' } };
    }
    if (method === 'POST' && path === '/api/v1/activity/email/') return this.createEmail(body);
    if (method === 'POST' && path === '/api/v1/activity/note/') return this.createNote(body);
    if (method === 'GET' && (path === '/api/v1/activity/email/' || path === '/api/v1/activity/note/')) {
      const type = path.includes('email') ? 'Email' : 'Note';
      return ok(
        page(
          this.filtered(
            [...this.activities.values()].filter((a) => a._type === type),
            q,
          ),
          q,
        ),
      );
    }
    if (method === 'POST' && path === '/api/v1/task/') return this.createTask(body);
    if (method === 'GET' && path === '/api/v1/task/') return ok(page(this.filtered([...this.tasks.values()], q), q));
    if (method === 'GET' && path === '/api/v1/unsubscribe/email/') {
      const rows = [...this.unsubscribed].map(([email, date_created]) => ({ email, date_created }));
      return ok(page(rows, q));
    }
    if (method === 'POST' && path === '/api/v1/unsubscribe/email/') {
      if (typeof body.email !== 'string' || !body.email.includes('@')) return invalid({ email: 'Enter a valid email address.' });
      this.unsubscribed.set(body.email.toLowerCase(), new Date().toISOString());
      return { status: 201, json: { email: body.email.toLowerCase() } };
    }
    return { status: 404, json: { error: `Not found: ${method} ${path}` } };
  }

  /** The list filters Close documents for activities and tasks: `lead_id`, `contact_id`, `date_created__gte`. */
  private filtered<T extends Json>(rows: T[], q: URLSearchParams): T[] {
    const lead = q.get('lead_id');
    const contact = q.get('contact_id');
    const since = q.get('date_created__gte');
    return rows.filter(
      (r) =>
        (lead === null || r.lead_id === lead) &&
        (contact === null || r.contact_id === contact) &&
        (since === null || String(r.date_created) >= new Date(since).toISOString()),
    );
  }

  private createLead(body: Json): { status: number; json: unknown } {
    if (body.name !== undefined && typeof body.name !== 'string') return invalid({ name: 'Not a valid string.' });
    const contacts = Array.isArray(body.contacts) ? body.contacts.map(asJson) : [];
    const problems = contacts.map((c) => contactProblems(c));
    if (problems.some((p) => p !== undefined)) {
      const errors = Object.fromEntries(problems.flatMap((p, i) => (p ? [[String(i), { errors: [], 'field-errors': p }]] : [])));
      return invalid({ contacts: { errors } });
    }
    const lead = this.newLead(
      typeof body.name === 'string' ? body.name : (contacts[0]?.name as string | undefined),
      typeof body.url === 'string' ? body.url : null,
    );
    const made = contacts.map((c) => this.newContact(lead.id, c));
    return ok({ ...lead, contacts: made });
  }

  private createContact(body: Json): { status: number; json: unknown } {
    const problems = contactProblems(body);
    if (problems) return invalid(problems);
    let leadId = typeof body.lead_id === 'string' ? body.lead_id : undefined;
    if (leadId !== undefined && !this.leads.has(leadId)) return invalid({ lead_id: 'Object does not exist.' });
    // "If you do not provide a lead_id then a new lead will be created, named after the contact."
    leadId ??= this.newLead(typeof body.name === 'string' ? body.name : undefined, null).id;
    return ok(this.newContact(leadId, body));
  }

  private newLead(name: string | undefined, url: string | null): CloseLead {
    const lead: CloseLead = {
      id: this.id('lead'),
      name: name ?? '',
      display_name: name ?? '',
      url,
      status_label: 'Potential',
      organization_id: this.organization.id,
      date_created: new Date().toISOString(),
    };
    this.leads.set(lead.id, lead);
    return lead;
  }

  private newContact(leadId: string, body: Json): CloseContact {
    const contact: CloseContact = {
      id: this.id('cont'),
      lead_id: leadId,
      name: typeof body.name === 'string' ? body.name : '',
      display_name: typeof body.name === 'string' ? body.name : '',
      title: typeof body.title === 'string' ? body.title : '',
      emails: list(body.emails).map((e) => ({ email: String(e.email), type: typeof e.type === 'string' ? e.type : 'office', is_unsubscribed: false })),
      urls: list(body.urls).map((u) => ({ url: String(u.url), type: typeof u.type === 'string' ? u.type : 'url' })),
      phones: [],
      organization_id: this.organization.id,
      date_created: new Date().toISOString(),
    };
    this.contacts.set(contact.id, contact);
    return contact;
  }

  private createEmail(body: Json): { status: number; json: unknown } {
    const problems: Json = {};
    if (typeof body.lead_id !== 'string' || !this.leads.has(body.lead_id)) problems.lead_id = 'Object does not exist.';
    if (typeof body.status !== 'string' || !EMAIL_STATUSES.has(body.status)) problems.status = `"${String(body.status)}" is not a valid choice.`;
    if (body.status !== 'sent' && body.status !== 'draft' && typeof body.sender !== 'string') problems.sender = 'This field is required.';
    if (body.contact_id !== undefined && (typeof body.contact_id !== 'string' || !this.contacts.has(body.contact_id)))
      problems.contact_id = 'Object does not exist.';
    if (body.user_id !== undefined && !this.users.some((u) => u.id === body.user_id)) problems.user_id = 'Object does not exist.';
    for (const field of ['to', 'cc', 'bcc']) if (body[field] !== undefined && !Array.isArray(body[field])) problems[field] = 'Expected a list of items.';
    if (Object.keys(problems).length) return invalid(problems);
    const activity = this.newActivity('Email', body, {
      status: body.status,
      direction: body.status === 'inbox' ? 'incoming' : 'outgoing',
      sender: body.sender ?? `"${this.users[0]!.first_name} ${this.users[0]!.last_name}" <${this.users[0]!.email}>`,
      to: body.to ?? [],
      subject: body.subject ?? '',
      body_text: body.body_text ?? '',
      body_html: body.body_html ?? '',
    });
    if (SENDING_STATUSES.has(String(body.status))) this.mailSent.push(activity);
    return ok(activity);
  }

  private createNote(body: Json): { status: number; json: unknown } {
    if (typeof body.lead_id !== 'string' || !this.leads.has(body.lead_id)) return invalid({ lead_id: 'Object does not exist.' });
    if (body.contact_id !== undefined && (typeof body.contact_id !== 'string' || !this.contacts.has(body.contact_id)))
      return invalid({ contact_id: 'Object does not exist.' });
    return ok(this.newActivity('Note', body, { note: body.note ?? '', title: body.title ?? '' }));
  }

  private newActivity(type: 'Email' | 'Note', body: Json, fields: Json): CloseActivity {
    const now = new Date().toISOString();
    const activity: CloseActivity = {
      id: this.id('acti'),
      _type: type,
      lead_id: body.lead_id as string,
      contact_id: typeof body.contact_id === 'string' ? body.contact_id : null,
      user_id: typeof body.user_id === 'string' ? body.user_id : this.users[0]!.id,
      activity_at: typeof body.activity_at === 'string' ? new Date(body.activity_at).toISOString() : now,
      date_created: typeof body.date_created === 'string' ? new Date(body.date_created).toISOString() : now,
      organization_id: this.organization.id,
      ...fields,
    };
    this.activities.set(activity.id, activity);
    return activity;
  }

  private createTask(body: Json): { status: number; json: unknown } {
    const problems: Json = {};
    if (body._type !== 'lead' && body._type !== 'outgoing_call') problems._type = 'Only tasks of type lead and outgoing_call can be created.';
    if (typeof body.lead_id !== 'string' || !this.leads.has(body.lead_id)) problems.lead_id = 'Object does not exist.';
    if (typeof body.text !== 'string' || body.text === '') problems.text = 'This field is required.';
    if (body.assigned_to !== undefined && !this.users.some((u) => u.id === body.assigned_to)) problems.assigned_to = 'Object does not exist.';
    if (body.date !== undefined && (typeof body.date !== 'string' || Number.isNaN(Date.parse(body.date)))) problems.date = 'Date has wrong format.';
    if (Object.keys(problems).length) return invalid(problems);
    const task: CloseTask = {
      id: this.id('task'),
      _type: 'lead',
      lead_id: body.lead_id as string,
      contact_id: typeof body.contact_id === 'string' ? body.contact_id : null,
      assigned_to: typeof body.assigned_to === 'string' ? body.assigned_to : this.users[0]!.id,
      text: body.text as string,
      date: typeof body.date === 'string' ? body.date : new Date().toISOString().slice(0, 10),
      is_complete: false,
      date_created: new Date().toISOString(),
    };
    this.tasks.set(task.id, task);
    return ok(task);
  }

  /** `POST /data/search/`: the objects the query matches, oldest first, `_limit` at a time with a cursor. */
  private search(body: Json): { status: number; json: unknown } {
    const limit = body._limit === undefined ? 100 : Number(body._limit);
    if (!Number.isInteger(limit) || limit < 1 || limit > SEARCH_MAX_LIMIT)
      return { status: 400, json: { error: `_limit must be between 1 and ${SEARCH_MAX_LIMIT}` } };
    const offset = typeof body.cursor === 'string' && /^c\d+$/.test(body.cursor) ? Number(body.cursor.slice(1)) : 0;
    let matches: Json[];
    try {
      const query = asJson(body.query);
      matches = [...this.leads.values(), ...this.contacts.values()].filter((o) => this.matches(query, o));
    } catch (error) {
      return { status: 400, json: { error: (error as Error).message } };
    }
    const fields = asJson(body._fields);
    const data = matches.slice(offset, offset + limit).map((o) => {
      const type = objectType(o);
      const wanted = Array.isArray(fields[type]) ? (fields[type] as string[]) : [];
      return { __object_type: type, id: o.id, ...Object.fromEntries(wanted.filter((f) => f in o).map((f) => [f, o[f]])) };
    });
    return ok({ data, cursor: offset + limit < matches.length ? `c${offset + limit}` : null });
  }

  private matches(query: Json, object: Json): boolean {
    switch (query.type) {
      case 'and':
        return list(query.queries).every((q) => this.matches(q, object));
      case 'or':
        return list(query.queries).some((q) => this.matches(q, object));
      case 'object_type':
        if (query.object_type !== 'lead' && query.object_type !== 'contact') throw new Error(`Unknown object_type: ${String(query.object_type)}`);
        return objectType(object) === query.object_type;
      case 'saved_search': {
        const view = this.smartViews.get(String(query.saved_search_id));
        if (!view) throw new Error(`Smart View ${String(query.saved_search_id)} does not exist`);
        return objectType(object) === 'contact' && view.contactIds.has(String(object.id));
      }
      case 'field_condition':
        return this.fieldCondition(query, object);
      case 'has_related':
        return this.related(query, object).some((r) => this.matches(asJson(query.related_query), r));
      default:
        throw new Error(`Unknown query type: ${String(query.type)}`);
    }
  }

  /** The related rows `has_related` looks at: a contact's emails or URLs, a lead's contacts. */
  private related(query: Json, object: Json): Json[] {
    if (query.this_object_type !== objectType(object)) return [];
    const type = query.related_object_type;
    if (type === 'contact_email' && objectType(object) === 'contact')
      return (object as CloseContact).emails.map((e) => ({ __object_type: 'contact_email', ...e }));
    if (type === 'contact_url' && objectType(object) === 'contact') return (object as CloseContact).urls.map((u) => ({ __object_type: 'contact_url', ...u }));
    if (type === 'contact' && objectType(object) === 'lead') return [...this.contacts.values()].filter((c) => c.lead_id === object.id);
    if (type === 'contact_email' || type === 'contact_url' || type === 'contact') return [];
    throw new Error(`Unknown related_object_type: ${String(type)}`);
  }

  /** A `regular_field` text condition: `phrase` matches the words of the value in order, `exact_value` the whole value (case-insensitive both). */
  private fieldCondition(query: Json, object: Json): boolean {
    const field = asJson(query.field);
    const condition = asJson(query.condition);
    if (field.type !== 'regular_field') throw new Error(`Unsupported field type: ${String(field.type)}`);
    if (condition.type !== 'text' || typeof condition.value !== 'string') throw new Error('Unsupported condition: a text condition with a value');
    if (field.object_type !== objectType(object)) return false;
    const value = object[String(field.field_name)];
    if (typeof value !== 'string') return false;
    const wanted = condition.value.toLowerCase();
    if (condition.mode === 'exact_value') return value.toLowerCase() === wanted;
    if (condition.mode !== 'phrase' && condition.mode !== 'full_words') throw new Error(`Unsupported text mode: ${String(condition.mode)}`);
    const escaped = wanted.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
    return new RegExp(`(^|[^a-z0-9])${escaped}($|[^a-z0-9])`).test(value.toLowerCase());
  }

  /** The consent page of `GET /oauth2/authorize/?client_id=...&response_type=code&redirect_uri=...&state=...`. */
  private authorize(method: string, url: URL, body: string, contentType: string | undefined): AuthorizeAnswer {
    const q = url.searchParams;
    const redirectUri = q.get('redirect_uri');
    if (q.get('client_id') !== this.clientId) return { status: 400, html: authorizeErrorPage('Close', 'invalid_client', 'Unknown client_id') };
    if (!isRedirectUri(redirectUri)) return { status: 400, html: authorizeErrorPage('Close', 'invalid_request', 'Invalid redirect_uri') };
    if (q.get('response_type') !== 'code') return { status: 400, html: authorizeErrorPage('Close', 'unsupported_response_type', 'response_type must be code') };
    const state = q.get('state');
    const step = consentStep(
      { method, body, contentType },
      { vendor: 'Close', account: this.organization.name, clientId: this.clientId, redirectUri, scopes: ['all.full_access', 'offline_access'], state },
      { deniedDescription: 'The user denied access', invalidDecision: 'Choose Allow or Deny' },
      this.consents,
    );
    if (step !== 'allowed') return step;
    const code = derived('close-code', redirectUri, state ?? '', this.consents.length);
    this.codes.set(code, { redirectUri, used: false });
    return { status: 302, html: '', location: redirectWith(redirectUri, { code, ...(state === null ? {} : { state }) }) };
  }

  /** `POST /oauth2/token/`: an authorization code or a refresh token for tokens; refresh tokens rotate. */
  private token(form: URLSearchParams): { status: number; json: unknown } {
    if (form.get('client_id') !== this.clientId || form.get('client_secret') !== this.clientSecret) return { status: 401, json: { error: 'invalid_client' } };
    const grant = form.get('grant_type');
    if (grant === 'authorization_code') {
      const code = this.codes.get(form.get('code') ?? '');
      if (!code || code.used) return { status: 400, json: { error: 'invalid_grant', error_description: 'Invalid or used authorization code' } };
      code.used = true;
      return { status: 200, json: this.issue(derived('close-token', form.get('code') ?? '')) };
    }
    if (grant === 'refresh_token') {
      const refresh = form.get('refresh_token') ?? '';
      if (!this.refreshTokens.has(refresh)) return { status: 400, json: { error: 'invalid_grant', error_description: 'Invalid refresh token' } };
      if (this.rotateRefreshTokens) this.refreshTokens.delete(refresh);
      this.tokenRefreshes.push({ at: Date.now(), rotated: this.rotateRefreshTokens });
      const issued = this.issue(derived('close-refresh', refresh, this.tokenRefreshes.length));
      return { status: 200, json: this.rotateRefreshTokens ? issued : { ...issued, refresh_token: refresh } };
    }
    return { status: 400, json: { error: 'unsupported_grant_type' } };
  }

  private issue(seed: string): Json {
    const accessToken = `close-access-${seed}`;
    const refreshToken = `close-refresh-${seed}`;
    this.accessTokens.add(accessToken);
    this.refreshTokens.add(refreshToken);
    return {
      token_type: 'Bearer',
      access_token: accessToken,
      expires_in: 3600,
      refresh_token: refreshToken,
      scope: 'all.full_access offline_access',
      organization_id: this.organization.id,
      user_id: this.users[0]!.id,
    };
  }
}

export async function startCloseEmulator(options: CloseEmulatorOptions = {}): Promise<CloseEmulator> {
  return new CloseEmulator(options).start();
}

function ok(json: unknown): { status: number; json: unknown } {
  return { status: 200, json };
}

/** Close's 400: `{errors, field-errors}`. */
function invalid(fieldErrors: Json): { status: number; json: unknown } {
  return { status: 400, json: { errors: [], 'field-errors': fieldErrors } };
}

/** An offset page (`_skip`, `_limit`): `{data, has_more}`. */
function page<T>(rows: T[], q: URLSearchParams): { data: T[]; has_more: boolean } {
  const skip = Math.max(0, Number(q.get('_skip') ?? 0) || 0);
  const limit = Math.min(LIST_MAX_LIMIT, Math.max(1, Number(q.get('_limit') ?? LIST_MAX_LIMIT) || LIST_MAX_LIMIT));
  return { data: rows.slice(skip, skip + limit), has_more: skip + limit < rows.length };
}

function contactProblems(body: Json): Json | undefined {
  const problems: Json = {};
  if (body.emails !== undefined && (!Array.isArray(body.emails) || list(body.emails).some((e) => typeof e.email !== 'string' || !e.email.includes('@'))))
    problems.emails = 'Enter a valid email address.';
  if (body.urls !== undefined && (!Array.isArray(body.urls) || list(body.urls).some((u) => typeof u.url !== 'string' || !URL.canParse(u.url))))
    problems.urls = 'Enter a valid URL.';
  return Object.keys(problems).length ? problems : undefined;
}

/** A lead, a contact, or a related row (`contact_email`, `contact_url`), which carries its type. */
function objectType(object: Json): string {
  if (typeof object.__object_type === 'string') return object.__object_type;
  return String(object.id).startsWith('lead_') ? 'lead' : 'contact';
}

function asJson(value: unknown): Json {
  return value !== null && typeof value === 'object' && !Array.isArray(value) ? (value as Json) : {};
}

function list(value: unknown): Json[] {
  return Array.isArray(value) ? value.map(asJson) : [];
}

function faultMessage(status: number): string {
  if (status === 401) return 'Unauthorized';
  if (status === 429) return 'Too many requests';
  return status >= 500 ? 'Internal server error' : 'Bad request';
}
