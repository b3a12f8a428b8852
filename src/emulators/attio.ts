import { randomUUID } from 'node:crypto';
import type http from 'node:http';
import { authorizeErrorPage, consentStep, derived, isRedirectUri, redirectWith, sendHtml, type AuthorizeAnswer, type Consent } from './consent.js';
import { LoopbackEmulator, NthCall, type CallMatch, type InterceptPhase } from './loopback.js';
import { readBody } from './faults.js';
import { INVALID_JSON, parseJson } from './json-body.js';

/**
 * An Attio emulator (docs/vendors/attio.md): one HTTP server on 127.0.0.1 standing for `api.attio.com`
 * (`/v2/...`) and `app.attio.com` (the OAuth consent page, token and introspection endpoints), speaking
 * what src/connectors/crm/attio/ calls, field for field as Attio's reference shows:
 * - bearer tokens (a workspace API key or an OAuth access token; 401 otherwise);
 * - people and companies: asserts by a unique attribute (`PUT .../records?matching_attribute=`, the matching
 *   multiselect appended, other multiselects overwritten), creates, `PATCH` (multiselects prepended),
 *   queries with `filter` (`$eq`, `$contains`, `$in` on `record_id`), `limit`/`offset`;
 * - notes (`created_at` settable, not in the future) and tasks (all six fields required), listed by parent;
 * - workspace members, lists and their entries;
 * - 100 reads and 25 writes a second, a 429 whose `Retry-After` is an HTTP date and whose body is
 *   `rate_limit_exceeded`; injected faults and delays (src/emulators/faults.ts); a request log.
 */

type Json = Record<string, unknown>;

export interface AttioMember {
  id: string;
  email_address: string;
  first_name: string;
  last_name: string;
  access_level: 'admin' | 'member' | 'suspended';
}

export interface AttioEmulatorOptions {
  /** Tokens accepted as bearers (workspace API keys and OAuth access tokens alike). */
  tokens?: string[];
  clientId?: string;
  clientSecret?: string;
  members?: AttioMember[];
  /** Reads and writes a second (Attio: 100 and 25); unset: no limit. */
  limits?: { reads: number; writes: number };
  workspace?: { id: string; name: string; slug: string };
}

/** A record as Attio answers it: its ids, when it was made, and its values (each attribute a list of values). */
export interface AttioRecord {
  id: { workspace_id: string; object_id: string; record_id: string };
  created_at: string;
  web_url: string;
  values: Record<string, Json[]>;
}

export interface AttioNote {
  id: { workspace_id: string; note_id: string };
  parent_object: string;
  parent_record_id: string;
  title: string;
  content_plaintext: string;
  content_markdown: string;
  created_at: string;
}

export interface AttioTask {
  id: { workspace_id: string; task_id: string };
  content_plaintext: string;
  deadline_at: string | null;
  is_completed: boolean;
  linked_records: Array<{ target_object_id: string; target_record_id: string }>;
  assignees: Array<{ referenced_actor_type: string; referenced_actor_id: string }>;
  created_at: string;
}

export interface LoggedAttioRequest {
  method: string;
  path: string;
  status: number;
  body?: unknown;
  at: number;
}

const OBJECTS = ['people', 'companies'] as const;
type AttioObject = (typeof OBJECTS)[number];
/** Unique attributes a record may be asserted by. */
const UNIQUE: Record<AttioObject, string> = { people: 'email_addresses', companies: 'domains' };
const MULTISELECT = new Set(['email_addresses', 'domains', 'phone_numbers']);
const TASK_CONTENT_MAX = 2_000;
const WINDOW_MS = 1_000;

export class AttioEmulator extends LoopbackEmulator {
  readonly records: Record<AttioObject, Map<string, AttioRecord>> = { people: new Map(), companies: new Map() };
  readonly notes = new Map<string, AttioNote>();
  readonly tasks = new Map<string, AttioTask>();
  /** Lists and their entries (the parent records' ids). */
  readonly lists = new Map<string, { id: string; api_slug: string; name: string; parent_object: AttioObject; entries: string[] }>();
  readonly members: AttioMember[];
  readonly tokens: Set<string>;
  readonly requests: LoggedAttioRequest[] = [];
  readonly consents: Consent[] = [];
  readonly clientId: string;
  readonly clientSecret: string;
  readonly workspace: { id: string; name: string; slug: string };
  limits: { reads: number; writes: number } | undefined;
  private readonly codes = new Map<string, { redirectUri: string; used: boolean }>();
  private readonly windows = new Map<string, number[]>();
  private readonly interception = new NthCall();

  constructor(options: AttioEmulatorOptions = {}) {
    super();
    this.tokens = new Set(options.tokens ?? ['attio-token']);
    this.clientId = options.clientId ?? 'attio-client-id';
    this.clientSecret = options.clientSecret ?? 'attio-client-secret';
    this.limits = options.limits;
    this.workspace = options.workspace ?? { id: '11111111-1111-4111-8111-111111111111', name: 'Seller Inc', slug: 'seller-inc' };
    this.members = options.members ?? [
      {
        id: 'a0000000-0000-4000-8000-000000000001',
        email_address: 'integration@seller.test',
        first_name: 'Integration',
        last_name: 'User',
        access_level: 'admin',
      },
      { id: 'a0000000-0000-4000-8000-000000000002', email_address: 'rep@seller.test', first_name: 'Rita', last_name: 'Rep', access_level: 'member' },
      { id: 'a0000000-0000-4000-8000-000000000003', email_address: 'gone@seller.test', first_name: 'Gone', last_name: 'Rep', access_level: 'suspended' },
    ];
  }

  /**
   * Runs `action` at the `n`th API call from now: `before` it is carried out, carried out but `unanswered`,
   * or `answered`. With `match`, only the calls of that method and path count (the creates of notes, say).
   */
  interceptNth(n: number, phase: InterceptPhase, action: () => void, match?: CallMatch): void {
    this.interception.arm(n, phase, action, match);
  }

  /** A list of `parent` records, with its entries. */
  addList(list: { name: string; slug: string; parent: AttioObject; recordIds: string[] }): string {
    const id = randomUUID();
    this.lists.set(id, { id, api_slug: list.slug, name: list.name, parent_object: list.parent, entries: [...list.recordIds] });
    return id;
  }

  /** A record with these values (each a plain value or a list), as the test needs it. */
  seed(object: AttioObject, values: Record<string, unknown>): AttioRecord {
    return this.newRecord(object, this.normalised(values));
  }

  /** People whose email addresses hold `email` (any case). */
  peopleByEmail(email: string): AttioRecord[] {
    return [...this.records.people.values()].filter((r) =>
      (r.values.email_addresses ?? []).some((e) => String(e.email_address).toLowerCase() === email.toLowerCase()),
    );
  }

  notesOf(recordId: string): AttioNote[] {
    return [...this.notes.values()].filter((n) => n.parent_record_id === recordId);
  }

  tasksOf(recordId: string): AttioTask[] {
    return [...this.tasks.values()].filter((t) => t.linked_records.some((l) => l.target_record_id === recordId));
  }

  apiRequests(): LoggedAttioRequest[] {
    return this.requests.filter((r) => r.path.startsWith('/v2/'));
  }

  protected async handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://attio.emulator');
    const text = await readBody(req);
    const method = req.method ?? 'GET';
    const logged: LoggedAttioRequest = { method, path: url.pathname, status: 0, at: Date.now() };
    this.requests.push(logged);
    const answer = (status: number, json: unknown, headers: Record<string, string> = {}) => {
      logged.status = status;
      if (res.destroyed) return;
      res.writeHead(status, { 'content-type': 'application/json', ...headers });
      res.end(JSON.stringify(json));
    };
    try {
      await this.plan.wait(url.pathname);
      if (url.pathname === '/authorize' && (method === 'GET' || method === 'POST')) {
        const page = this.authorize(method, url, text, req.headers['content-type']);
        logged.status = page.status;
        return sendHtml(res, page.status, page.html, page.location ? { location: page.location } : {});
      }
      if (url.pathname === '/oauth/token' && method === 'POST') {
        const token = this.token(new URLSearchParams(text));
        return answer(token.status, token.json);
      }
      const token = /^Bearer (.+)$/.exec(req.headers.authorization ?? '')?.[1];
      if (url.pathname === '/oauth/introspect' && method === 'POST') {
        return answer(200, token && this.tokens.has(token) ? this.introspection() : { active: false });
      }
      if (!url.pathname.startsWith('/v2/')) return answer(404, error(404, 'invalid_request_error', 'not_found', 'Not found'));
      const fault = this.plan.take(url.pathname, token);
      if (fault) {
        const retryAfter: Record<string, string> =
          fault.retryAfter === undefined
            ? {}
            : { 'retry-after': typeof fault.retryAfter === 'number' ? new Date(Date.now() + fault.retryAfter * 1000).toUTCString() : fault.retryAfter };
        return answer(fault.status, fault.body ?? faultBody(fault.status), retryAfter);
      }
      if (!token || !this.tokens.has(token)) return answer(401, error(401, 'auth_error', 'unauthorized', 'Invalid or revoked access token'));
      const limited = this.rateLimit(method);
      if (limited) return answer(429, faultBody(429), { 'retry-after': limited });
      const json = text === '' ? {} : parseJson(text);
      if (json === INVALID_JSON) return answer(400, error(400, 'invalid_request_error', 'validation_type', 'Body is not valid JSON'));
      logged.body = json;
      const intercepted = this.interception.take(method, url.pathname);
      if (intercepted?.phase === 'before') return intercepted.action();
      const result = this.route(method, url, asJson(json));
      if (intercepted?.phase === 'unanswered') return intercepted.action();
      answer(result.status, result.json);
      intercepted?.action();
    } catch (e) {
      answer(500, error(500, 'internal_error', 'internal_error', (e as Error).message));
    }
  }

  /** Attio's limits, per workspace: reads and writes a second; past them a 429 whose Retry-After is the next second, as an HTTP date. */
  private rateLimit(method: string): string | undefined {
    if (!this.limits) return undefined;
    const kind = method === 'GET' || method === 'HEAD' ? 'reads' : 'writes';
    const now = Date.now();
    const key = `${this.workspace.id}\n${kind}`;
    const recent = (this.windows.get(key) ?? []).filter((at) => at > now - WINDOW_MS);
    if (recent.length >= this.limits[kind]) return new Date(recent[0]! + WINDOW_MS + 999).toUTCString();
    recent.push(now);
    this.windows.set(key, recent);
    return undefined;
  }

  private route(method: string, url: URL, body: Json): { status: number; json: unknown } {
    const path = url.pathname;
    const records = /^\/v2\/objects\/([a-z_]+)\/records(?:\/(query|[0-9a-f-]{36}))?$/.exec(path);
    if (records) {
      const object = records[1] as AttioObject;
      if (!OBJECTS.includes(object)) return notFound(`Object ${records[1]} not found`);
      const tail = records[2];
      if (method === 'PUT' && tail === undefined) return this.assert(object, url.searchParams.get('matching_attribute'), body);
      if (method === 'POST' && tail === undefined) return this.create(object, body);
      if (method === 'POST' && tail === 'query') return this.query(object, body);
      if (method === 'PATCH' && tail && tail !== 'query') return this.patch(object, tail, body);
      if (method === 'GET' && tail && tail !== 'query') {
        const record = this.records[object].get(tail);
        return record ? ok(record) : notFound('Record not found');
      }
    }
    if (method === 'POST' && path === '/v2/notes') return this.createNote(body);
    if (method === 'GET' && path === '/v2/notes') {
      const q = url.searchParams;
      const limit = Math.min(50, Number(q.get('limit') ?? 10) || 10);
      const offset = Number(q.get('offset') ?? 0) || 0;
      const rows = [...this.notes.values()].filter(
        (n) =>
          (!q.get('parent_object') || n.parent_object === q.get('parent_object')) &&
          (!q.get('parent_record_id') || n.parent_record_id === q.get('parent_record_id')),
      );
      return ok(rows.slice(offset, offset + limit));
    }
    if (method === 'POST' && path === '/v2/tasks') return this.createTask(body);
    if (method === 'GET' && path === '/v2/tasks') {
      const q = url.searchParams;
      const limit = Number(q.get('limit') ?? 500) || 500;
      const offset = Number(q.get('offset') ?? 0) || 0;
      const linked = q.get('linked_record_id');
      const rows = [...this.tasks.values()].filter((t) => !linked || t.linked_records.some((l) => l.target_record_id === linked));
      return ok(rows.slice(offset, offset + limit));
    }
    if (method === 'GET' && path === '/v2/workspace_members') {
      return ok(
        this.members.map(({ id, ...m }) => ({
          ...m,
          id: { workspace_id: this.workspace.id, workspace_member_id: id },
          avatar_url: null,
          created_at: '2024-01-01T00:00:00.000Z',
        })),
      );
    }
    if (method === 'GET' && path === '/v2/lists') return ok([...this.lists.values()].map((l) => this.listView(l)));
    const entries = /^\/v2\/lists\/([^/]+)\/entries\/query$/.exec(path);
    if (method === 'POST' && entries) {
      const list = [...this.lists.values()].find((l) => l.id === entries[1] || l.api_slug === entries[1]);
      if (!list) return notFound(`List ${entries[1]} not found`);
      const limit = Number(body.limit ?? 500);
      const offset = Number(body.offset ?? 0);
      if (!Number.isInteger(limit) || limit < 1 || limit > 500) return invalid('filter_error', 'limit must be between 1 and 500');
      const data = list.entries.slice(offset, offset + limit).map((recordId, i) => ({
        id: { workspace_id: this.workspace.id, list_id: list.id, entry_id: derived('entry', list.id, offset + i) },
        parent_record_id: recordId,
        parent_object: list.parent_object,
        created_at: '2024-01-01T00:00:00.000Z',
        entry_values: {},
      }));
      return ok(data);
    }
    return notFound(`Not found: ${method} ${path}`);
  }

  /** `PUT ...?matching_attribute=`: the record holding that unique value is updated, else one is created. */
  private assert(object: AttioObject, matching: string | null, body: Json): { status: number; json: unknown } {
    if (matching !== UNIQUE[object]) return invalid('value_not_found', `matching_attribute must be a unique attribute of ${object} (${UNIQUE[object]})`);
    const values = this.checkedValues(object, asJson(asJson(body.data).values));
    if ('error' in values) return values.error;
    const wanted = (values.values[matching] ?? []).map((v) => uniqueValue(matching, v));
    if (wanted.length === 0) return invalid('value_not_found', `${matching} is required to assert a record`);
    const found = [...this.records[object].values()].find((r) => (r.values[matching] ?? []).some((v) => wanted.includes(uniqueValue(matching, v))));
    if (!found) return ok(this.newRecord(object, values.values));
    for (const [slug, list] of Object.entries(values.values)) {
      if (slug === matching) {
        const have = new Set((found.values[slug] ?? []).map((v) => uniqueValue(slug, v)));
        found.values[slug] = [...(found.values[slug] ?? []), ...list.filter((v) => !have.has(uniqueValue(slug, v)))];
      } else found.values[slug] = list;
    }
    return ok(found);
  }

  private create(object: AttioObject, body: Json): { status: number; json: unknown } {
    const values = this.checkedValues(object, asJson(asJson(body.data).values));
    if ('error' in values) return values.error;
    const unique = UNIQUE[object];
    const taken = (values.values[unique] ?? []).map((v) => uniqueValue(unique, v));
    if (taken.length && [...this.records[object].values()].some((r) => (r.values[unique] ?? []).some((v) => taken.includes(uniqueValue(unique, v)))))
      return { status: 400, json: error(400, 'invalid_request_error', 'uniqueness_conflict', `A record with this ${unique} already exists`) };
    return ok(this.newRecord(object, values.values));
  }

  /** `PATCH`: the values sent replace the record's, multiselects prepended to what it has. */
  private patch(object: AttioObject, recordId: string, body: Json): { status: number; json: unknown } {
    const record = this.records[object].get(recordId);
    if (!record) return notFound('Record not found');
    const values = this.checkedValues(object, asJson(asJson(body.data).values));
    if ('error' in values) return values.error;
    for (const [slug, list] of Object.entries(values.values)) record.values[slug] = MULTISELECT.has(slug) ? [...list, ...(record.values[slug] ?? [])] : list;
    return ok(record);
  }

  /** `POST .../records/query`: `filter` on an attribute (`$eq` shorthand or verbose, `$contains`) or `record_id` `$in`; `limit`, `offset`. */
  private query(object: AttioObject, body: Json): { status: number; json: unknown } {
    const limit = body.limit === undefined ? 500 : Number(body.limit);
    const offset = body.offset === undefined ? 0 : Number(body.offset);
    if (!Number.isInteger(limit) || limit < 1 || limit > 500) return invalid('filter_error', 'limit must be between 1 and 500');
    const filter = asJson(body.filter);
    let rows = [...this.records[object].values()];
    for (const [slug, condition] of Object.entries(filter)) {
      if (slug === 'record_id') {
        const ids = asJson(condition).$in;
        if (!Array.isArray(ids)) return invalid('filter_error', 'record_id takes {$in: [...]}');
        rows = rows.filter((r) => ids.includes(r.id.record_id));
        continue;
      }
      const test = textCondition(condition);
      if (!test) return invalid('filter_error', `Unsupported filter on ${slug}`);
      rows = rows.filter((r) => (r.values[slug] ?? []).some((v) => test(plainValue(slug, v))));
    }
    return ok(rows.slice(offset, offset + limit));
  }

  private createNote(body: Json): { status: number; json: unknown } {
    const data = asJson(body.data);
    const object = data.parent_object as AttioObject;
    if (!OBJECTS.includes(object)) return invalid('validation_type', 'parent_object must be an object slug');
    if (typeof data.parent_record_id !== 'string' || !this.records[object].has(data.parent_record_id)) return notFound('Parent record not found');
    if (typeof data.title !== 'string' || typeof data.content !== 'string') return invalid('validation_type', 'title and content are required');
    if (data.format !== 'plaintext' && data.format !== 'markdown') return invalid('validation_type', 'format must be plaintext or markdown');
    const createdAt = typeof data.created_at === 'string' ? new Date(data.created_at) : new Date();
    if (Number.isNaN(createdAt.getTime()) || createdAt.getTime() > Date.now() + 1_000 || createdAt.getUTCFullYear() < 1970)
      return invalid('validation_type', 'created_at must be a date between 1970 and now');
    const note: AttioNote = {
      id: { workspace_id: this.workspace.id, note_id: randomUUID() },
      parent_object: object,
      parent_record_id: data.parent_record_id,
      title: data.title,
      content_plaintext: data.content.replace(/[*_#`]/g, ''),
      content_markdown: data.content,
      created_at: createdAt.toISOString(),
    };
    this.notes.set(note.id.note_id, note);
    return ok(note);
  }

  private createTask(body: Json): { status: number; json: unknown } {
    const data = asJson(body.data);
    for (const field of ['content', 'format', 'deadline_at', 'is_completed', 'linked_records', 'assignees'])
      if (!(field in data)) return invalid('validation_type', `${field} is required`);
    if (data.format !== 'plaintext') return invalid('validation_type', 'Tasks can only be created from plaintext');
    if (typeof data.content !== 'string' || data.content.length > TASK_CONTENT_MAX)
      return invalid('validation_type', `content must be at most ${TASK_CONTENT_MAX} characters`);
    const linked: AttioTask['linked_records'] = [];
    for (const link of Array.isArray(data.linked_records) ? data.linked_records.map(asJson) : []) {
      const object = link.target_object as AttioObject;
      if (!OBJECTS.includes(object) || typeof link.target_record_id !== 'string' || !this.records[object].has(link.target_record_id))
        return invalid('value_not_found', 'A linked record was not found');
      linked.push({ target_object_id: object, target_record_id: link.target_record_id });
    }
    const assignees: AttioTask['assignees'] = [];
    for (const assignee of Array.isArray(data.assignees) ? data.assignees.map(asJson) : []) {
      const member = this.members.find((m) => m.email_address === assignee.workspace_member_email_address || m.id === assignee.referenced_actor_id);
      if (!member) return invalid('value_not_found', 'An assignee is not a workspace member');
      assignees.push({ referenced_actor_type: 'workspace-member', referenced_actor_id: member.id });
    }
    const task: AttioTask = {
      id: { workspace_id: this.workspace.id, task_id: randomUUID() },
      content_plaintext: data.content,
      deadline_at: typeof data.deadline_at === 'string' ? new Date(data.deadline_at).toISOString() : null,
      is_completed: data.is_completed === true,
      linked_records: linked,
      assignees,
      created_at: new Date().toISOString(),
    };
    this.tasks.set(task.id.task_id, task);
    return ok(task);
  }

  /** Values as Attio stores them (each attribute a list), or the 400 a bad one gets. */
  private checkedValues(object: AttioObject, raw: Json): { values: Record<string, Json[]> } | { error: { status: number; json: unknown } } {
    const known = object === 'people' ? ['email_addresses', 'name', 'linkedin', 'job_title', 'company', 'phone_numbers'] : ['domains', 'name', 'description'];
    const unknown = Object.keys(raw).filter((slug) => !known.includes(slug));
    if (unknown.length) return { error: invalid('value_not_found', `Cannot find attribute with slug/ID "${unknown[0]}"`) };
    const values = this.normalised(raw);
    for (const email of values.email_addresses ?? []) {
      if (!/^[^@\s]+@[^@\s]+\.[^@\s]+$/.test(String(email.email_address))) return { error: invalid('validation_type', 'Invalid email address') };
    }
    return { values };
  }

  private normalised(raw: Record<string, unknown>): Record<string, Json[]> {
    const values: Record<string, Json[]> = {};
    for (const [slug, value] of Object.entries(raw)) {
      const list: unknown[] = Array.isArray(value) ? (value as unknown[]) : value === null || value === undefined ? [] : [value];
      values[slug] = list.map((v) => {
        if (slug === 'email_addresses') return { email_address: typeof v === 'string' ? v : String(asJson(v).email_address), attribute_type: 'email-address' };
        if (slug === 'domains') return { domain: typeof v === 'string' ? v : String(asJson(v).domain), attribute_type: 'domain' };
        if (slug === 'name' && object(v)) return { ...asJson(v), attribute_type: 'personal-name' };
        if (slug === 'company' && object(v)) return { ...this.reference(asJson(v)), attribute_type: 'record-reference' };
        return { value: v, attribute_type: 'text' };
      });
    }
    return values;
  }

  /** A record reference by id, or by a company's domain (the company matched, else nothing). */
  private reference(ref: Json): Json {
    if (typeof ref.target_record_id === 'string') return { target_object: ref.target_object, target_record_id: ref.target_record_id };
    const domain = Array.isArray(ref.domains) ? String(asJson(ref.domains[0]).domain) : undefined;
    const company = [...this.records.companies.values()].find((c) => (c.values.domains ?? []).some((d) => d.domain === domain));
    return { target_object: 'companies', target_record_id: company?.id.record_id ?? null };
  }

  private newRecord(object: AttioObject, values: Record<string, Json[]>): AttioRecord {
    const recordId = randomUUID();
    const record: AttioRecord = {
      id: { workspace_id: this.workspace.id, object_id: object, record_id: recordId },
      created_at: new Date().toISOString(),
      web_url: `https://app.attio.com/${this.workspace.slug}/${object === 'people' ? 'person' : 'company'}/${recordId}`,
      values,
    };
    this.records[object].set(recordId, record);
    return record;
  }

  private listView(list: { id: string; api_slug: string; name: string; parent_object: AttioObject }): Json {
    return { id: { workspace_id: this.workspace.id, list_id: list.id }, api_slug: list.api_slug, name: list.name, parent_object: [list.parent_object] };
  }

  private introspection(): Json {
    return {
      active: true,
      scope: 'record_permission:read-write note:read-write task:read-write',
      client_id: this.clientId,
      token_type: 'Bearer',
      exp: null,
      workspace_id: this.workspace.id,
      workspace_name: this.workspace.name,
      workspace_slug: this.workspace.slug,
    };
  }

  /** `GET /authorize?client_id=...&response_type=code&redirect_uri=...&state=...`. */
  private authorize(method: string, url: URL, body: string, contentType: string | undefined): AuthorizeAnswer {
    const q = url.searchParams;
    const redirectUri = q.get('redirect_uri');
    if (q.get('client_id') !== this.clientId) return { status: 400, html: authorizeErrorPage('Attio', 'invalid_client', 'Unknown client_id') };
    if (!isRedirectUri(redirectUri)) return { status: 400, html: authorizeErrorPage('Attio', 'invalid_request', 'Invalid redirect_uri') };
    if (q.get('response_type') !== 'code') return { status: 400, html: authorizeErrorPage('Attio', 'unsupported_response_type', 'response_type must be code') };
    const state = q.get('state');
    const step = consentStep(
      { method, body, contentType },
      { vendor: 'Attio', account: this.workspace.name, clientId: this.clientId, redirectUri, scopes: (q.get('scope') ?? '').split(' ').filter(Boolean), state },
      { deniedDescription: 'The user denied access', invalidDecision: 'Choose Allow or Deny' },
      this.consents,
    );
    if (step !== 'allowed') return step;
    const code = derived('attio-code', redirectUri, state ?? '', this.consents.length);
    this.codes.set(code, { redirectUri, used: false });
    return { status: 302, html: '', location: redirectWith(redirectUri, { code, ...(state === null ? {} : { state }) }) };
  }

  /** `POST /oauth/token`: an authorization code for a bearer token (Attio documents no refresh grant). */
  private token(form: URLSearchParams): { status: number; json: unknown } {
    if (form.get('client_id') !== this.clientId || form.get('client_secret') !== this.clientSecret) return { status: 401, json: { error: 'invalid_client' } };
    if (form.get('grant_type') !== 'authorization_code') return { status: 400, json: { error: 'unsupported_grant_type' } };
    const code = this.codes.get(form.get('code') ?? '');
    if (!code || code.used) return { status: 400, json: { error: 'invalid_grant' } };
    code.used = true;
    const token = `attio-access-${derived('attio-token', form.get('code') ?? '')}`;
    this.tokens.add(token);
    return { status: 200, json: { access_token: token, token_type: 'Bearer' } };
  }
}

export async function startAttioEmulator(options: AttioEmulatorOptions = {}): Promise<AttioEmulator> {
  return new AttioEmulator(options).start();
}

/** The value a unique attribute compares by, lowercase. */
function uniqueValue(slug: string, value: Json): string {
  return String(slug === 'domains' ? value.domain : value.email_address).toLowerCase();
}

/** A stored value as text, for filters. */
function plainValue(slug: string, value: Json): string {
  if (slug === 'email_addresses') return String(value.email_address);
  if (slug === 'domains') return String(value.domain);
  return typeof value.value === 'string' ? value.value : '';
}

/** A text filter: a plain value (`$eq`), `{$eq}`, `{$contains}`, or the verbose `{email_address: {$eq}}`. */
function textCondition(condition: unknown): ((value: string) => boolean) | undefined {
  if (typeof condition === 'string') return (v) => v.toLowerCase() === condition.toLowerCase();
  const c = asJson(condition);
  const inner = typeof c.email_address === 'object' ? asJson(c.email_address) : c;
  if (typeof inner.$eq === 'string') return (v) => v.toLowerCase() === String(inner.$eq).toLowerCase();
  if (typeof inner.$contains === 'string') return (v) => v.toLowerCase().includes(String(inner.$contains).toLowerCase());
  return undefined;
}

function ok(data: unknown): { status: number; json: unknown } {
  return { status: 200, json: { data } };
}

function notFound(message: string): { status: number; json: unknown } {
  return { status: 404, json: error(404, 'invalid_request_error', 'not_found', message) };
}

function invalid(code: string, message: string): { status: number; json: unknown } {
  return { status: 400, json: error(400, 'invalid_request_error', code, message) };
}

function error(status: number, type: string, code: string, message: string): Json {
  return { status_code: status, type, code, message };
}

function faultBody(status: number): Json {
  if (status === 429) return error(429, 'rate_limit_error', 'rate_limit_exceeded', 'Rate limit exceeded, please try again later');
  if (status === 401) return error(401, 'auth_error', 'unauthorized', 'Invalid or revoked access token');
  return error(status, status >= 500 ? 'internal_error' : 'invalid_request_error', status >= 500 ? 'internal_error' : 'bad_request', 'Injected fault');
}

function asJson(value: unknown): Json {
  return value !== null && typeof value === 'object' && !Array.isArray(value) ? (value as Json) : {};
}

function object(value: unknown): boolean {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}
