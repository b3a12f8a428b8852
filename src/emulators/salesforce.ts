import { createHash, randomBytes } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { authorizeErrorPage, consentStep, derived, isRedirectUri, redirectWith, sendHtml, type AuthorizeAnswer, type Consent } from './consent.js';
import { FaultPlan, readBody, type Fault } from './faults.js';

/**
 * A Salesforce emulator: real HTTP servers on 127.0.0.1 for the login host (OAuth token endpoint) and
 * the org's instance (REST `/services/data/vXX.X`: SOQL query, sObject create and update), speaking
 * the subset src/connectors/crm/salesforce.ts uses; a query matching more than `queryBatchSize` records
 * pages by `nextRecordsUrl`. It validates the bearer session, field names, required fields, picklists,
 * lengths, references and SOQL syntax (an unescaped quote is a MALFORMED_QUERY), answering Salesforce's
 * `[{message, errorCode, fields}]` format. Both listeners serve the same handler and store; the request
 * log says which one a request reached.
 */

export type SfRecord = Record<string, unknown> & { Id: string; CreatedDate: string };

export interface LoggedRequest {
  method: string;
  path: string;
  query?: string;
  status: number;
  via: 'login' | 'instance';
  at: number;
}

export interface SalesforceEmulatorOptions {
  accessToken?: string;
  refreshToken?: string;
  clientId?: string;
  clientSecret?: string;
  /** Each refresh returns a new refresh token and voids the old one. */
  rotateRefreshTokens?: boolean;
  users?: Array<{ Id: string; Email: string; IsActive: boolean; Name?: string }>;
  /** The org's cap on concurrent API requests (production: 25 long-running ones); unset: none. */
  maxConcurrency?: number;
  /** Records per query answer before `nextRecordsUrl` paging (Salesforce's default 2,000); small values make paging testable. */
  queryBatchSize?: number;
  /** The org the authorize page connects, and its user (the identity URL's answer). */
  org?: Partial<SfOrg>;
}

/** The org the emulator stands for, as its identity URL describes it. */
export interface SfOrg {
  organizationId: string;
  /** The user who consents on the authorize page (the identity URL's user). */
  userId: string;
  username: string;
  displayName: string;
  email: string;
  /** The org's My Domain (`urls.custom_domain`), if it has one. */
  customDomain: string | null;
}

/** The scopes an app may ask for on the authorize page. */
const KNOWN_SCOPES = new Set(['api', 'refresh_token', 'offline_access', 'id', 'full', 'web', 'openid', 'profile', 'email']);

/** An authorization code the authorize page issued, with its PKCE challenge. */
interface AuthorizationCode {
  redirectUri: string;
  scopes: string[];
  challenge: { value: string; method: 'S256' | 'plain' } | null;
  used: boolean;
}

type SObject = 'Contact' | 'Lead' | 'Account' | 'Task' | 'User';

/** A field: `checkbox` ones take JSON booleans and default to false, as Salesforce checkboxes do. */
const FIELDS: Record<SObject, Record<string, { max?: number; createable: boolean; checkbox?: boolean }>> = {
  Contact: {
    Id: { createable: false },
    CreatedDate: { createable: false },
    OwnerId: { createable: true },
    FirstName: { max: 40, createable: true },
    LastName: { max: 80, createable: true },
    Email: { max: 80, createable: true },
    Title: { max: 128, createable: true },
    Phone: { max: 40, createable: true },
    Description: { max: 32_000, createable: true },
    AccountId: { createable: true },
    HasOptedOutOfEmail: { createable: true, checkbox: true },
  },
  Lead: {
    Id: { createable: false },
    CreatedDate: { createable: false },
    OwnerId: { createable: true },
    FirstName: { max: 40, createable: true },
    LastName: { max: 80, createable: true },
    Email: { max: 80, createable: true },
    Company: { max: 255, createable: true },
    Website: { max: 255, createable: true },
    Title: { max: 128, createable: true },
    Phone: { max: 40, createable: true },
    LeadSource: { max: 255, createable: true },
    Description: { max: 32_000, createable: true },
    IsConverted: { createable: false, checkbox: true },
    HasOptedOutOfEmail: { createable: true, checkbox: true },
  },
  Account: {
    Id: { createable: false },
    CreatedDate: { createable: false },
    OwnerId: { createable: true },
    Name: { max: 255, createable: true },
    Website: { max: 255, createable: true },
    // A custom checkbox, as orgs add to mark accounts never to contact (an Account block list source).
    Do_Not_Contact__c: { createable: true, checkbox: true },
  },
  Task: {
    Id: { createable: false },
    CreatedDate: { createable: false },
    OwnerId: { createable: true },
    WhoId: { createable: true },
    WhatId: { createable: true },
    Subject: { max: 255, createable: true },
    ActivityDate: { createable: true },
    Status: { createable: true },
    Priority: { createable: true },
    Description: { max: 32_000, createable: true },
    TaskSubtype: { createable: true },
  },
  User: {
    Id: { createable: false },
    CreatedDate: { createable: false },
    Email: { createable: false },
    IsActive: { createable: false },
    Name: { createable: false },
  },
};

const REQUIRED: Record<SObject, string[]> = { Contact: ['LastName'], Lead: ['LastName', 'Company'], Account: ['Name'], Task: [], User: [] };
const PICKLISTS: Record<string, string[]> = {
  'Task.Status': ['Not Started', 'In Progress', 'Completed', 'Waiting on someone else', 'Deferred'],
  'Task.Priority': ['High', 'Normal', 'Low'],
  'Task.TaskSubtype': ['Task', 'Email', 'ListEmail', 'Cadence', 'Call', 'LinkedIn'],
};
const PREFIX: Record<SObject, string> = { Contact: '003', Lead: '00Q', Account: '001', Task: '00T', User: '005' };
const API_USER = '005000000000001AAA';
/** How long a query locator stays usable without use (Salesforce's 15 minutes). */
const CURSOR_IDLE_MS = 15 * 60_000;

/** The rest of a query's answer, served by `GET /query/<locator>-<offset>`; records are projected when served. */
interface Cursor {
  type: SObject;
  select: string[];
  rows: SfRecord[];
  usedAt: number;
}

export class SalesforceEmulator {
  loginUrl = '';
  instanceUrl = '';
  /** What the token endpoint answers as `instance_url`; defaults to {@link instanceUrl}. */
  refreshInstanceUrl: string | undefined;
  /** The login host the token endpoint's identity URLs (`id`) name; defaults to {@link loginUrl}. */
  identityLoginUrl: string | undefined;
  /** The org the authorize page connects. */
  readonly org: SfOrg;
  /** Each consent given or refused on the authorize page, in order. */
  readonly consents: Consent[] = [];
  private readonly codes = new Map<string, AuthorizationCode>();
  readonly contacts = new Map<string, SfRecord>();
  readonly leads = new Map<string, SfRecord>();
  readonly accounts = new Map<string, SfRecord>();
  readonly tasks = new Map<string, SfRecord>();
  readonly users = new Map<string, SfRecord>();
  readonly tokenRefreshes: Array<{ at: number; rotated: boolean; via: 'login' | 'instance' }> = [];
  readonly requests: LoggedRequest[] = [];
  readonly clientId: string;
  readonly clientSecret: string;
  accessTokens = new Set<string>();
  refreshTokens = new Set<string>();
  rotateRefreshTokens: boolean;
  /** The cap on concurrent API requests; past it, 403 REQUEST_LIMIT_EXCEEDED. Undefined: none. */
  maxConcurrency: number | undefined;
  /** The most API requests that were in progress at once. */
  peakConcurrency = 0;
  /** Records per query answer; more matches page by `nextRecordsUrl`. */
  queryBatchSize: number;
  private inFlight = 0;
  private readonly cursors = new Map<string, Cursor>();

  private readonly login: http.Server;
  private readonly instance: http.Server;
  private readonly plan = new FaultPlan();
  private counter = 1;

  constructor(options: SalesforceEmulatorOptions = {}) {
    this.accessTokens.add(options.accessToken ?? 'sf-access-initial');
    this.refreshTokens.add(options.refreshToken ?? 'sf-refresh-initial');
    this.clientId = options.clientId ?? 'sf-consumer-key';
    this.clientSecret = options.clientSecret ?? 'sf-consumer-secret';
    this.rotateRefreshTokens = options.rotateRefreshTokens ?? false;
    this.maxConcurrency = options.maxConcurrency;
    this.queryBatchSize = options.queryBatchSize ?? 2000;
    const users = options.users ?? [
      { Id: API_USER, Email: 'integration@seller.test', IsActive: true, Name: 'Integration User' },
      { Id: '005000000000002AAA', Email: 'rep@seller.test', IsActive: true, Name: 'Rita Rep' },
      { Id: '005000000000003AAA', Email: 'gone@seller.test', IsActive: false, Name: 'Gone Rep' },
    ];
    for (const u of users) this.users.set(u.Id, { ...u, CreatedDate: new Date().toISOString() });
    this.org = {
      organizationId: '00D000000000001AAA',
      userId: API_USER,
      username: 'integration@seller.test',
      displayName: 'Integration User',
      email: 'integration@seller.test',
      customDomain: null,
      ...options.org,
    };
    this.login = http.createServer((req, res) => void this.handle('login', req, res));
    this.instance = http.createServer((req, res) => void this.handle('instance', req, res));
  }

  async start(): Promise<this> {
    const listen = (server: http.Server) =>
      new Promise<string>((resolve) => server.listen(0, '127.0.0.1', () => resolve(`http://127.0.0.1:${(server.address() as AddressInfo).port}`)));
    this.loginUrl = await listen(this.login);
    this.instanceUrl = await listen(this.instance);
    return this;
  }

  async close(): Promise<void> {
    for (const server of [this.login, this.instance]) {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  }

  failNext(n: number, fault: Fault): void {
    this.plan.failNext(n, fault);
  }

  /** Delays every answer (or those whose path matches) by `ms`; 0 turns it off. The request is still
   * carried out after the delay, as a server that answers too late does. */
  slow(ms: number, path?: string | RegExp): void {
    this.plan.slow(ms, path);
  }

  /** Every session is now invalid (401 INVALID_SESSION_ID) until a refresh issues a new one. */
  expireAccessTokens(): void {
    this.accessTokens.clear();
  }

  tasksOf(whoId: string): SfRecord[] {
    return [...this.tasks.values()].filter((t) => t.WhoId === whoId);
  }

  /** Adds a record directly (test setup), as if the org already had it. */
  seed(type: 'Contact' | 'Lead' | 'Account', fields: Record<string, unknown>): SfRecord {
    return this.insert(type, { OwnerId: API_USER, ...fields });
  }

  /** Seeds many records in one call (block list sources of 100,000 rows), unvalidated as {@link seed}. */
  addRecords(type: 'Contact' | 'Lead' | 'Account', rows: Array<Record<string, unknown>>): SfRecord[] {
    return rows.map((fields) => this.seed(type, fields));
  }

  // -------------------------------------------------------------------------------------------

  private table(type: SObject): Map<string, SfRecord> {
    return { Contact: this.contacts, Lead: this.leads, Account: this.accounts, Task: this.tasks, User: this.users }[type];
  }

  private async handle(via: 'login' | 'instance', req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://emulator');
    // Counted from arrival to answer, as the org counts a request in progress.
    const counted = url.pathname.startsWith('/services/data/');
    if (counted) this.peakConcurrency = Math.max(this.peakConcurrency, ++this.inFlight);
    const body = await readBody(req);
    const over = counted && this.maxConcurrency !== undefined && this.inFlight > this.maxConcurrency;
    if (!over) await this.plan.wait(url.pathname);
    const answer = (status: number, payload?: unknown, headers: Record<string, string> = {}) => {
      if (counted) this.inFlight -= 1;
      this.requests.push({
        method: req.method ?? '',
        path: url.pathname,
        ...(url.searchParams.has('q') ? { query: url.searchParams.get('q') ?? '' } : {}),
        status,
        via,
        at: Date.now(),
      });
      if (res.destroyed) return;
      res.writeHead(status, payload === undefined ? headers : { 'content-type': 'application/json;charset=UTF-8', ...headers });
      res.end(payload === undefined ? '' : JSON.stringify(payload));
    };
    try {
      if (over) return answer(403, [{ errorCode: 'REQUEST_LIMIT_EXCEEDED', message: 'ConcurrentPerOrgLongTxn Limit exceeded.' }]);
      const fault = this.plan.take(url.pathname);
      if (fault)
        return answer(fault.status, fault.body ?? faultBody(fault.status), fault.retryAfter !== undefined ? { 'retry-after': String(fault.retryAfter) } : {});
      if (url.pathname === '/services/oauth2/authorize' && (req.method === 'GET' || req.method === 'POST')) {
        const page = this.authorize(req.method, url, body, req.headers['content-type']);
        this.requests.push({ method: req.method, path: url.pathname, status: page.status, via, at: Date.now() });
        return sendHtml(res, page.status, page.html, page.location ? { location: page.location } : {});
      }
      if (req.method === 'POST' && url.pathname === '/services/oauth2/token') return this.token(via, req, body, answer);
      const identity = /^\/id\/([^/]+)\/([^/]+)$/.exec(url.pathname);
      if (req.method === 'GET' && identity) return this.identity(identity[1] as string, identity[2] as string, req, answer);
      const api = /^\/services\/data\/(v\d{2,3}\.\d)(\/.*)$/.exec(url.pathname);
      if (!api) return answer(404, [{ errorCode: 'NOT_FOUND', message: 'The requested resource does not exist' }]);
      const token = /^Bearer (.+)$/.exec(req.headers.authorization ?? '')?.[1];
      if (!token || !this.accessTokens.has(token)) return answer(401, [{ message: 'Session expired or invalid', errorCode: 'INVALID_SESSION_ID' }]);
      const [status, payload] = this.route(req, api[1] as string, api[2] as string, url, body);
      answer(status, payload);
    } catch (e) {
      answer(500, [{ errorCode: 'UNKNOWN_EXCEPTION', message: e instanceof Error ? e.message : 'An unexpected error occurred.' }]);
    }
  }

  private token(via: 'login' | 'instance', req: http.IncomingMessage, body: string, answer: (status: number, payload?: unknown) => void): void {
    if (!/^application\/x-www-form-urlencoded/.test(req.headers['content-type'] ?? ''))
      return answer(400, { error: 'invalid_request', error_description: 'must use application/x-www-form-urlencoded' });
    const form = new URLSearchParams(body);
    const grant = form.get('grant_type');
    if (grant !== 'refresh_token' && grant !== 'authorization_code')
      return answer(400, { error: 'unsupported_grant_type', error_description: 'grant type not supported' });
    if (form.get('client_id') !== this.clientId) return answer(400, { error: 'invalid_client_id', error_description: 'client identifier invalid' });
    if (form.has('client_secret') && form.get('client_secret') !== this.clientSecret)
      return answer(400, { error: 'invalid_client', error_description: 'invalid client credentials' });
    if (grant === 'authorization_code') return this.exchangeCode(form, answer);
    const refreshToken = form.get('refresh_token') ?? '';
    if (!this.refreshTokens.has(refreshToken)) return answer(400, { error: 'invalid_grant', error_description: 'expired access/refresh token' });
    const accessToken = `00D000000000001!${randomBytes(12).toString('hex')}`;
    this.accessTokens.add(accessToken);
    const issuedAt = String(Date.now());
    const out: Record<string, string> = {
      access_token: accessToken,
      instance_url: this.refreshInstanceUrl ?? this.instanceUrl,
      id: `${this.identityLoginUrl ?? this.loginUrl}/id/${this.org.organizationId}/${this.org.userId}`,
      token_type: 'Bearer',
      issued_at: issuedAt,
      signature: randomBytes(16).toString('base64'),
      scope: 'api refresh_token',
    };
    if (this.rotateRefreshTokens) {
      this.refreshTokens.delete(refreshToken);
      out.refresh_token = `5Aep861-${randomBytes(12).toString('hex')}`;
      this.refreshTokens.add(out.refresh_token);
    }
    this.tokenRefreshes.push({ at: Date.now(), rotated: this.rotateRefreshTokens, via });
    answer(200, out);
  }

  /**
   * The authorize page of the web server flow (`GET /services/oauth2/authorize?response_type=code&client_id
   * &redirect_uri&scope&state[&code_challenge&code_challenge_method]`): consent for the emulator's org, or
   * an error page (unknown client, bad redirect_uri, response_type or scope; no redirect then). Posting
   * `decision=allow` back redirects to the redirect_uri with a `code` and the `state`; `decision=deny`, with
   * `error=access_denied` as Salesforce does.
   */
  private authorize(method: string, url: URL, body: string, contentType: string | undefined): AuthorizeAnswer {
    const query = url.searchParams;
    const redirectUri = query.get('redirect_uri');
    const scopes = (query.get('scope') ?? '').split(/[ +]+/).filter((s) => s !== '');
    const refused = (error: string, description: string) => ({ status: 400, html: authorizeErrorPage('Salesforce', error, description) });
    if (query.get('client_id') !== this.clientId) return refused('invalid_client_id', 'client identifier invalid');
    if (query.get('response_type') !== 'code') return refused('unsupported_response_type', 'response type not supported');
    if (!isRedirectUri(redirectUri)) return refused('redirect_uri_mismatch', 'redirect_uri must match a configured callback URL');
    const unknown = scopes.filter((s) => !KNOWN_SCOPES.has(s));
    if (unknown.length > 0) return refused('invalid_scope', `the requested scope is not allowed: ${unknown.join(' ')}`);
    const challengeValue = query.get('code_challenge');
    const challengeMethod = query.get('code_challenge_method') ?? 'plain';
    if (challengeValue !== null && challengeMethod !== 'S256' && challengeMethod !== 'plain')
      return refused('invalid_request', 'unsupported code_challenge_method');
    const state = query.get('state');
    const step = consentStep(
      { method, body, contentType },
      {
        vendor: 'Salesforce',
        account: `Salesforce org ${this.org.organizationId} as ${this.org.username}`,
        clientId: this.clientId,
        redirectUri,
        scopes,
        state,
      },
      { deniedDescription: 'end-user denied authorization', invalidDecision: 'decision must be allow or deny' },
      this.consents,
    );
    if (step !== 'allowed') return step;
    const withState: Record<string, string> = state === null ? {} : { state };
    const code = `aPrx${derived('code', this.consents.length, redirectUri, state ?? '', challengeValue ?? '')}`;
    const challenge = challengeValue === null ? null : { value: challengeValue, method: challengeMethod as 'S256' | 'plain' };
    this.codes.set(code, { redirectUri, scopes, challenge, used: false });
    return { status: 302, html: '', location: redirectWith(redirectUri, { code, ...withState }) };
  }

  /** The authorization-code grant: the code once, for its redirect_uri, with the verifier of its PKCE challenge. */
  private exchangeCode(form: URLSearchParams, answer: (status: number, payload?: unknown) => void): void {
    const seed = form.get('code') ?? '';
    const code = this.codes.get(seed);
    if (!code || code.used) return answer(400, { error: 'invalid_grant', error_description: 'authentication failure' });
    if (form.get('redirect_uri') !== code.redirectUri)
      return answer(400, { error: 'redirect_uri_mismatch', error_description: 'redirect_uri must match configuration' });
    if (code.challenge) {
      const verifier = form.get('code_verifier') ?? '';
      const computed = code.challenge.method === 'S256' ? createHash('sha256').update(verifier, 'ascii').digest('base64url') : verifier;
      if (verifier === '' || computed !== code.challenge.value) return answer(400, { error: 'invalid_grant', error_description: 'invalid code verifier' });
    }
    code.used = true;
    // Derived from the code (see consent.ts): the sandbox's replay issues the same tokens.
    const accessToken = `${this.org.organizationId.slice(0, 15)}!${derived('access', seed)}`;
    const refreshToken = `5Aep861${derived('refresh', seed)}`;
    this.accessTokens.add(accessToken);
    this.refreshTokens.add(refreshToken);
    answer(200, {
      access_token: accessToken,
      refresh_token: refreshToken,
      signature: derived('signature', seed),
      scope: code.scopes.join(' '),
      instance_url: this.refreshInstanceUrl ?? this.instanceUrl,
      id: `${this.identityLoginUrl ?? this.loginUrl}/id/${this.org.organizationId}/${this.org.userId}`,
      token_type: 'Bearer',
      issued_at: String(Date.now()),
    });
  }

  /** The identity URL (`GET /id/<org id>/<user id>` with the user's access token): who the user is, in which org, and its API URLs. */
  private identity(orgId: string, userId: string, req: http.IncomingMessage, answer: (status: number, payload?: unknown) => void): void {
    const token = /^Bearer (.+)$/.exec(req.headers.authorization ?? '')?.[1];
    if (!token || !this.accessTokens.has(token)) return answer(403, [{ message: 'Bad_OAuth_Token', errorCode: 'Bad_OAuth_Token' }]);
    const o = this.org;
    if (orgId !== o.organizationId || userId !== o.userId) return answer(404, [{ errorCode: 'NOT_FOUND', message: 'The requested resource does not exist' }]);
    const instance = this.refreshInstanceUrl ?? this.instanceUrl;
    const api = (path: string) => `${instance}/services/${path}`;
    const [first, ...rest] = o.displayName.split(' ');
    answer(200, {
      id: `${this.identityLoginUrl ?? this.loginUrl}/id/${orgId}/${userId}`,
      asserted_user: true,
      user_id: userId,
      organization_id: orgId,
      username: o.username,
      nick_name: o.username.split('@')[0],
      display_name: o.displayName,
      email: o.email,
      email_verified: true,
      first_name: first ?? null,
      last_name: rest.join(' ') || null,
      timezone: 'America/Los_Angeles',
      photos: { picture: `${instance}/profilephoto/005/F`, thumbnail: `${instance}/profilephoto/005/T` },
      addr_street: null,
      addr_city: null,
      addr_state: null,
      addr_country: 'US',
      addr_zip: null,
      mobile_phone: null,
      mobile_phone_verified: false,
      is_lightning_login_user: false,
      status: { created_date: null, body: null },
      urls: {
        enterprise: api('Soap/c/{version}/00D000000000001'),
        metadata: api('Soap/m/{version}/00D000000000001'),
        partner: api('Soap/u/{version}/00D000000000001'),
        rest: api('data/v{version}/'),
        sobjects: api('data/v{version}/sobjects/'),
        search: api('data/v{version}/search/'),
        query: api('data/v{version}/query/'),
        recent: api('data/v{version}/recent/'),
        tooling_soap: api('Soap/T/{version}/00D000000000001'),
        tooling_rest: api('data/v{version}/tooling/'),
        profile: `${instance}/${userId}`,
        feeds: api('data/v{version}/chatter/feeds'),
        groups: api('data/v{version}/chatter/groups'),
        users: api('data/v{version}/chatter/users'),
        feed_items: api('data/v{version}/chatter/feed-items'),
        feed_elements: api('data/v{version}/chatter/feed-elements'),
        ...(o.customDomain ? { custom_domain: o.customDomain } : {}),
      },
      active: true,
      user_type: 'STANDARD',
      language: 'en_US',
      locale: 'en_US',
      utcOffset: -28_800_000,
      last_modified_date: new Date().toISOString().replace('Z', '+0000'),
      is_app_installed: true,
    });
  }

  private route(req: http.IncomingMessage, version: string, path: string, url: URL, body: string): [number, unknown] {
    const method = req.method ?? 'GET';
    if (method === 'GET' && path === '/query') return this.query(version, url.searchParams.get('q'));
    let m: RegExpExecArray | null;
    if (method === 'GET' && (m = /^\/query\/([^/-]+)-(\d+)$/.exec(path))) return this.queryMore(version, m[1] as string, Number(m[2]));
    if (method === 'POST' && path === '/composite/sobjects') return this.createCollection(version, req, body);
    if ((m = /^\/sobjects\/(\w+)(?:\/([^/]+))?$/.exec(path))) {
      const type = m[1] as string;
      if (!isSObject(type) || type === 'User')
        return [404, [{ errorCode: 'NOT_FOUND', message: `The requested resource does not exist: sObject type '${type}' is not supported` }]];
      const id = m[2] === undefined ? undefined : decodeURIComponent(m[2]);
      if (method === 'GET' && id !== undefined) {
        const record = this.table(type).get(id);
        return record
          ? [200, { attributes: attributes(type, id), ...record }]
          : [404, [{ errorCode: 'NOT_FOUND', message: 'The requested resource does not exist' }]];
      }
      if ((method === 'POST' && id === undefined) || (method === 'PATCH' && id !== undefined)) {
        if (!/^application\/json/.test(req.headers['content-type'] ?? ''))
          return [415, [{ errorCode: 'UNSUPPORTED_MEDIA_TYPE', message: 'Content-Type must be application/json' }]];
        let fields: unknown;
        try {
          fields = JSON.parse(body);
        } catch {
          return [400, [{ errorCode: 'JSON_PARSER_ERROR', message: 'Unexpected character in the JSON body' }]];
        }
        if (fields === null || typeof fields !== 'object' || Array.isArray(fields))
          return [400, [{ errorCode: 'JSON_PARSER_ERROR', message: 'Expected a JSON object' }]];
        return id === undefined ? this.create(type, fields as Record<string, unknown>) : this.update(type, id, fields as Record<string, unknown>);
      }
    }
    return [404, [{ errorCode: 'NOT_FOUND', message: 'The requested resource does not exist' }]];
  }

  /**
   * sObject Collections create (API 42.0+): up to 200 records `{attributes: {type}, ...fields}`, each
   * created or refused on its own (`allOrNone: false`) or all rolled back when one fails; answered 200
   * with one `{id, success, errors}` per record, in the records' order.
   */
  private createCollection(version: string, req: http.IncomingMessage, body: string): [number, unknown] {
    if (Number(version.slice(1)) < 42) return [404, [{ errorCode: 'NOT_FOUND', message: 'The requested resource does not exist' }]];
    if (!/^application\/json/.test(req.headers['content-type'] ?? ''))
      return [415, [{ errorCode: 'UNSUPPORTED_MEDIA_TYPE', message: 'Content-Type must be application/json' }]];
    let json: unknown;
    try {
      json = JSON.parse(body);
    } catch {
      return [400, [{ errorCode: 'JSON_PARSER_ERROR', message: 'Unexpected character in the JSON body' }]];
    }
    const request = json !== null && typeof json === 'object' && !Array.isArray(json) ? (json as Record<string, unknown>) : {};
    const records = request.records;
    if (!Array.isArray(records) || records.length === 0 || records.length > 200)
      return [400, [{ errorCode: 'INVALID_BATCH_SIZE', message: 'The number of records in a collection must be between 1 and 200' }]];
    const results: Array<Record<string, unknown>> = [];
    const created: Array<{ type: SObject; id: string }> = [];
    for (const raw of records) {
      const record = raw !== null && typeof raw === 'object' && !Array.isArray(raw) ? { ...(raw as Record<string, unknown>) } : {};
      const type = (record.attributes as { type?: unknown } | undefined)?.type;
      delete record.attributes;
      if (typeof type !== 'string' || !isSObject(type) || type === 'User') {
        results.push({ success: false, errors: [{ statusCode: 'INVALID_TYPE', message: `sObject type '${String(type)}' is not supported`, fields: [] }] });
        continue;
      }
      const [status, answer] = this.create(type, record);
      if (status === 201) {
        const id = (answer as { id: string }).id;
        created.push({ type, id });
        results.push({ id, success: true, errors: [] });
      } else {
        const problem = (answer as Array<{ errorCode: string; message: string; fields?: string[] }>)[0]!;
        results.push({ success: false, errors: [{ statusCode: problem.errorCode, message: problem.message, fields: problem.fields ?? [] }] });
      }
    }
    if (request.allOrNone === true && results.some((r) => r.success !== true)) {
      for (const c of created) this.table(c.type).delete(c.id);
      return [
        200,
        results.map((r) =>
          r.success === true
            ? {
                success: false,
                errors: [
                  {
                    statusCode: 'ALL_OR_NONE_OPERATION_ROLLED_BACK',
                    message: 'Record rolled back because not all records were valid and the request was using AllOrNone header',
                    fields: [],
                  },
                ],
              }
            : r,
        ),
      ];
    }
    return [200, results];
  }

  private create(type: Exclude<SObject, 'User'>, fields: Record<string, unknown>): [number, unknown] {
    const problem = this.validate(type, fields, true);
    if (problem) return [400, [problem]];
    const record = this.insert(type, { OwnerId: API_USER, ...fields });
    return [201, { id: record.Id, success: true, errors: [] }];
  }

  private update(type: Exclude<SObject, 'User'>, id: string, fields: Record<string, unknown>): [number, unknown] {
    const record = this.table(type).get(id);
    if (!record) return [404, [{ errorCode: 'NOT_FOUND', message: 'The requested resource does not exist' }]];
    const problem = this.validate(type, fields, false);
    if (problem) return [400, [problem]];
    Object.assign(record, fields);
    return [204, undefined];
  }

  private validate(type: SObject, fields: Record<string, unknown>, creating: boolean): Record<string, unknown> | undefined {
    for (const [name, value] of Object.entries(fields)) {
      const spec = FIELDS[type][name];
      if (!spec) return { message: `No such column '${name}' on sobject of type ${type}`, errorCode: 'INVALID_FIELD', fields: [] };
      if (!spec.createable)
        return {
          message: `Unable to create/update fields: ${name}. Please check the security settings of this field and verify that it is read/write for your profile or permission set.`,
          errorCode: 'INVALID_FIELD_FOR_INSERT_UPDATE',
          fields: [name],
        };
      if (spec.checkbox) {
        if (typeof value !== 'boolean')
          return { message: `${name}: value not of required type: ${JSON.stringify(value)}`, errorCode: 'INVALID_TYPE_ON_FIELD_IN_RECORD', fields: [name] };
        continue;
      }
      if (value !== null && typeof value !== 'string')
        return { message: `${name}: value not of required type: ${JSON.stringify(value)}`, errorCode: 'INVALID_TYPE_ON_FIELD_IN_RECORD', fields: [name] };
      const text = value ?? '';
      if (spec.max !== undefined && text.length > spec.max)
        return { message: `${name}: data value too large: ${text.slice(0, 20)}... (max length=${spec.max})`, errorCode: 'STRING_TOO_LONG', fields: [name] };
      const picklist = PICKLISTS[`${type}.${name}`];
      if (picklist && !picklist.includes(text))
        return { message: `${name}: bad value for restricted picklist field: ${text}`, errorCode: 'INVALID_OR_NULL_FOR_RESTRICTED_PICKLIST', fields: [name] };
      if (name === 'Email' && text !== '' && !/^[^\s@]+@[^\s@]+\.[^\s@]+$/.test(text))
        return { message: `Email: invalid email address: ${text}`, errorCode: 'INVALID_EMAIL_ADDRESS', fields: ['Email'] };
      if (name === 'ActivityDate' && !/^\d{4}-\d{2}-\d{2}$/.test(text))
        return { message: `ActivityDate: value not of required type: ${text}`, errorCode: 'INVALID_TYPE_ON_FIELD_IN_RECORD', fields: ['ActivityDate'] };
      if (name === 'WhoId' && !(this.contacts.has(text) || this.leads.has(text)))
        return { message: 'Contact/Lead ID: id value of incorrect type: ' + text, errorCode: 'FIELD_INTEGRITY_EXCEPTION', fields: ['WhoId'] };
      if (name === 'OwnerId' && this.users.get(text)?.IsActive !== true)
        return { message: 'Owner ID: owner cannot be inactive', errorCode: 'INVALID_CROSS_REFERENCE_KEY', fields: ['OwnerId'] };
    }
    if (creating) {
      const missing = REQUIRED[type].filter((name) => typeof fields[name] !== 'string' || fields[name].trim() === '');
      if (missing.length > 0) return { message: `Required fields are missing: [${missing.join(', ')}]`, errorCode: 'REQUIRED_FIELD_MISSING', fields: missing };
    }
    return undefined;
  }

  private insert(type: SObject, fields: Record<string, unknown>): SfRecord {
    const id = `${PREFIX[type]}${String((this.counter += 1)).padStart(12, '0')}AAA`;
    const checkboxes: Record<string, boolean> = {};
    for (const [name, spec] of Object.entries(FIELDS[type])) if (spec.checkbox) checkboxes[name] = false;
    const record: SfRecord = { ...checkboxes, ...fields, Id: id, CreatedDate: new Date().toISOString() };
    this.table(type).set(id, record);
    return record;
  }

  private query(version: string, soql: string | null): [number, unknown] {
    if (!soql) return [400, [{ errorCode: 'MALFORMED_QUERY', message: 'q: a query is required' }]];
    let parsed: ParsedQuery;
    try {
      parsed = parseSoql(soql);
    } catch (e) {
      return [400, [{ errorCode: 'MALFORMED_QUERY', message: e instanceof Error ? e.message : 'malformed query' }]];
    }
    if (!isSObject(parsed.from)) return [400, [{ errorCode: 'INVALID_TYPE', message: `sObject type '${parsed.from}' is not supported.` }]];
    const type = parsed.from;
    const known = (field: string) => FIELDS[type][field] !== undefined;
    for (const field of [...parsed.select, ...parsed.where.map((c) => c.field), ...(parsed.orderBy ? [parsed.orderBy.field] : [])]) {
      if (!known(field)) return [400, [{ errorCode: 'INVALID_FIELD', message: `No such column '${field}' on entity '${type}'.` }]];
    }
    let rows = [...this.table(type).values()].filter((r) => parsed.where.every((c) => matches(r[c.field], c)));
    if (parsed.orderBy) {
      const { field, descending } = parsed.orderBy;
      rows = rows.sort((a, b) => sortKey(a[field]).localeCompare(sortKey(b[field])) * (descending ? -1 : 1));
    }
    if (parsed.limit !== undefined) rows = rows.slice(0, parsed.limit);
    return this.batch(version, '', { type, select: parsed.select, rows, usedAt: Date.now() }, 0);
  }

  /** The batch of an open query at `offset` (from its `nextRecordsUrl`); an unknown or expired locator is INVALID_QUERY_LOCATOR. */
  private queryMore(version: string, locator: string, offset: number): [number, unknown] {
    const cursor = this.cursors.get(locator);
    if (!cursor || Date.now() - cursor.usedAt > CURSOR_IDLE_MS || offset <= 0 || offset >= cursor.rows.length) {
      return [400, [{ errorCode: 'INVALID_QUERY_LOCATOR', message: 'invalid query locator' }]];
    }
    cursor.usedAt = Date.now();
    return this.batch(version, locator, cursor, offset);
  }

  /**
   * One answer of a query: `queryBatchSize` records from `offset`, with `nextRecordsUrl` while more
   * remain. The first batch of a longer answer opens a locator (kept until idle 15 minutes, so a retried
   * page is served again); it holds the matched records, not copies.
   */
  private batch(version: string, locator: string, cursor: Cursor, offset: number): [number, unknown] {
    const end = offset + Math.max(1, this.queryBatchSize);
    const records = cursor.rows
      .slice(offset, end)
      .map((r) => ({ attributes: attributes(cursor.type, r.Id), ...Object.fromEntries(cursor.select.map((f) => [f, r[f] ?? null])) }));
    if (end >= cursor.rows.length) return [200, { totalSize: cursor.rows.length, done: true, records }];
    if (locator === '') {
      for (const [key, open] of this.cursors) if (Date.now() - open.usedAt > CURSOR_IDLE_MS) this.cursors.delete(key);
      locator = `01g${String((this.counter += 1)).padStart(12, '0')}AAA`;
      this.cursors.set(locator, cursor);
    }
    return [200, { totalSize: cursor.rows.length, done: false, nextRecordsUrl: `/services/data/${version}/query/${locator}-${end}`, records }];
  }
}

export async function startSalesforceEmulator(options: SalesforceEmulatorOptions = {}): Promise<SalesforceEmulator> {
  return new SalesforceEmulator(options).start();
}

// ---------------------------------------------------------------------------------------------
// A small SOQL subset: SELECT f, ... FROM T [WHERE c AND c ...] [ORDER BY f [ASC|DESC]] [LIMIT n],
// where c is `field op value` (op: = != < <= > >= IN) and value a quoted string, true/false/null,
// a number, a datetime literal, or a parenthesised list of strings.

type Literal = string | number | boolean | null | { datetime: number };
interface Condition {
  field: string;
  op: '=' | '!=' | '<' | '<=' | '>' | '>=' | 'IN';
  value: Literal | Literal[];
}
interface ParsedQuery {
  select: string[];
  from: string;
  where: Condition[];
  orderBy?: { field: string; descending: boolean };
  limit?: number;
}

type Token = { kind: 'word'; text: string } | { kind: 'string'; text: string } | { kind: 'symbol'; text: string };

function tokenize(soql: string): Token[] {
  const tokens: Token[] = [];
  let i = 0;
  while (i < soql.length) {
    const ch = soql[i] as string;
    if (/\s/.test(ch)) {
      i += 1;
    } else if (ch === "'") {
      let text = '';
      i += 1;
      for (;;) {
        if (i >= soql.length) throw new Error('unexpected end of query: unterminated string literal');
        const c = soql[i] as string;
        if (c === '\\') {
          const next = soql[i + 1];
          const escapes: Record<string, string> = { n: '\n', r: '\r', t: '\t', b: '\b', f: '\f', '"': '"', "'": "'", '\\': '\\' };
          if (next === undefined || escapes[next] === undefined) throw new Error(`Invalid string literal: bad escape \\${next ?? ''}`);
          text += escapes[next];
          i += 2;
        } else if (c === "'") {
          i += 1;
          break;
        } else {
          text += c;
          i += 1;
        }
      }
      tokens.push({ kind: 'string', text });
    } else if ('(),'.includes(ch)) {
      tokens.push({ kind: 'symbol', text: ch });
      i += 1;
    } else if ('=<>!'.includes(ch)) {
      const two = soql.slice(i, i + 2);
      const op = ['<=', '>=', '!='].includes(two) ? two : ch;
      tokens.push({ kind: 'symbol', text: op });
      i += op.length;
    } else {
      const m = /^[A-Za-z0-9_.:+-]+/.exec(soql.slice(i));
      if (!m) throw new Error(`unexpected token at ${i}: ${ch}`);
      tokens.push({ kind: 'word', text: m[0] });
      i += m[0].length;
    }
  }
  return tokens;
}

function parseSoql(soql: string): ParsedQuery {
  const tokens = tokenize(soql);
  let i = 0;
  const peek = () => tokens[i];
  const word = (expected?: string): string => {
    const t = tokens[i];
    if (!t || t.kind !== 'word' || (expected !== undefined && t.text.toUpperCase() !== expected)) {
      throw new Error(`unexpected token: ${t ? t.text : 'end of query'}${expected ? ` (expecting ${expected})` : ''}`);
    }
    i += 1;
    return t.text;
  };
  const isWord = (text: string) => peek()?.kind === 'word' && peek()?.text.toUpperCase() === text;
  const symbol = (text: string) => {
    const t = tokens[i];
    if (!t || t.kind !== 'symbol' || t.text !== text) throw new Error(`unexpected token: ${t ? t.text : 'end of query'} (expecting '${text}')`);
    i += 1;
  };
  const literal = (): Literal => {
    const t = tokens[i];
    if (!t) throw new Error('unexpected end of query: expecting a value');
    i += 1;
    if (t.kind === 'string') return t.text;
    if (t.kind !== 'word') throw new Error(`unexpected token: ${t.text}`);
    const lower = t.text.toLowerCase();
    if (lower === 'true' || lower === 'false') return lower === 'true';
    if (lower === 'null') return null;
    if (/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/.test(t.text)) return { datetime: Date.parse(t.text) };
    if (/^-?\d+(\.\d+)?$/.test(t.text)) return Number(t.text);
    throw new Error(`unexpected token: ${t.text} (a string value must be quoted)`);
  };

  word('SELECT');
  const select = [word()];
  while (peek()?.kind === 'symbol' && peek()?.text === ',') {
    symbol(',');
    select.push(word());
  }
  word('FROM');
  const from = word();
  const where: Condition[] = [];
  if (isWord('WHERE')) {
    word('WHERE');
    for (;;) {
      const field = word();
      let op: Condition['op'];
      let value: Literal | Literal[];
      if (isWord('IN')) {
        word('IN');
        op = 'IN';
        symbol('(');
        const list = [literal()];
        while (peek()?.kind === 'symbol' && peek()?.text === ',') {
          symbol(',');
          list.push(literal());
        }
        symbol(')');
        value = list;
      } else {
        const t = tokens[i];
        if (!t || t.kind !== 'symbol' || !['=', '!=', '<', '<=', '>', '>='].includes(t.text))
          throw new Error(`unexpected token: ${t ? t.text : 'end of query'} (expecting an operator)`);
        i += 1;
        op = t.text as Condition['op'];
        value = literal();
      }
      where.push({ field, op, value });
      if (!isWord('AND')) break;
      word('AND');
    }
  }
  let orderBy: ParsedQuery['orderBy'];
  if (isWord('ORDER')) {
    word('ORDER');
    word('BY');
    const field = word();
    let descending = false;
    if (isWord('ASC')) word('ASC');
    else if (isWord('DESC')) {
      word('DESC');
      descending = true;
    }
    orderBy = { field, descending };
  }
  let limit: number | undefined;
  if (isWord('LIMIT')) {
    word('LIMIT');
    limit = Number(word());
    if (!Number.isInteger(limit) || limit < 0) throw new Error('LIMIT must be a non-negative integer');
  }
  if (i !== tokens.length) throw new Error(`unexpected token: ${tokens[i]?.text ?? ''}`);
  return { select, from, where, ...(orderBy ? { orderBy } : {}), ...(limit !== undefined ? { limit } : {}) };
}

function matches(actual: unknown, condition: Condition): boolean {
  const equal = (value: Literal): boolean => {
    if (value === null) return actual === null || actual === undefined;
    if (typeof value === 'string') return typeof actual === 'string' && actual.toLowerCase() === value.toLowerCase();
    if (typeof value === 'object') return typeof actual === 'string' && Date.parse(actual) === value.datetime;
    return actual === value;
  };
  const compare = (value: Literal): number => {
    const a = typeof actual === 'string' && typeof value === 'object' && value !== null ? Date.parse(actual) : (actual as number);
    const b = typeof value === 'object' && value !== null ? value.datetime : (value as number);
    return a < b ? -1 : a > b ? 1 : 0;
  };
  const { op, value } = condition;
  if (op === 'IN') return Array.isArray(value) && value.some(equal);
  if (Array.isArray(value)) return false;
  if (op === '=') return equal(value);
  if (op === '!=') return !equal(value);
  const c = compare(value);
  return op === '<' ? c < 0 : op === '<=' ? c <= 0 : op === '>' ? c > 0 : c >= 0;
}

function isSObject(type: string): type is SObject {
  return type === 'Contact' || type === 'Lead' || type === 'Account' || type === 'Task' || type === 'User';
}

function attributes(type: string, id: string): { type: string; url: string } {
  return { type, url: `/services/data/v62.0/sobjects/${type}/${id}` };
}

function faultBody(status: number): unknown {
  if (status === 401) return [{ message: 'Session expired or invalid', errorCode: 'INVALID_SESSION_ID' }];
  if (status === 403) return [{ message: 'TotalRequests Limit exceeded.', errorCode: 'REQUEST_LIMIT_EXCEEDED' }];
  if (status === 429) return [{ message: 'Too many requests, retry later.', errorCode: 'REQUEST_LIMIT_EXCEEDED' }];
  if (status === 503) return [{ message: 'Server unavailable', errorCode: 'SERVER_UNAVAILABLE' }];
  if (status >= 500)
    return [
      { message: 'An unexpected error occurred. Please include this ErrorId if you contact support: 1234567-890 (-1234567)', errorCode: 'UNKNOWN_EXCEPTION' },
    ];
  return [{ message: 'injected failure', errorCode: 'INVALID_FIELD', fields: [] }];
}

/** A field's value as ORDER BY compares it: text as it is, anything else as its JSON. */
function sortKey(value: unknown): string {
  if (value === undefined || value === null) return '';
  return typeof value === 'string' ? value : JSON.stringify(value);
}
