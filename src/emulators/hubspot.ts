import { randomBytes, randomUUID } from 'node:crypto';
import type http from 'node:http';
import { authorizeErrorPage, consentStep, derived, isRedirectUri, redirectWith, sendHtml, type AuthorizeAnswer, type Consent } from './consent.js';
import { LoopbackEmulator, NthCall, type InterceptPhase } from './loopback.js';
import { readBody } from './faults.js';
import { INVALID_JSON, parseJson } from './json-body.js';

/**
 * A HubSpot API emulator: a real HTTP server on 127.0.0.1 speaking the subset of HubSpot's APIs that
 * src/connectors/crm/hubspot/ uses, at the date-based version 2026-03 (`/crm/objects/2026-03/...`,
 * `/oauth/2026-03/token`) and, as HubSpot still does, at the numeric paths (`/crm/v3/...`,
 * `/crm/v4/...`) and v1 OAuth until its end on 2027-02-16. It validates what it receives (bearer token,
 * property names and values, association type ids) and answers HubSpot's error format when it is
 * wrong. Stores are in memory and public for tests to inspect; faults can be injected.
 */

export interface HsObject {
  id: string;
  properties: Record<string, string>;
  createdAt: string;
  updatedAt: string;
  archived: false;
}

export interface HsAssociation {
  fromType: string;
  fromId: string;
  toType: string;
  toId: string;
  category: string;
  typeId: number;
}

/** A static (MANUAL) list, as the block list sync reads one. */
export interface HsList {
  listId: string;
  name: string;
  objectType: 'contacts' | 'companies';
  /** Its members in the order they were added, each record once. */
  members: Array<{ recordId: string; membershipTimestamp: string }>;
  memberIds: Set<string>;
}

export interface HsOwner {
  id: string;
  email: string;
  firstName: string;
  lastName: string;
  userId: number;
}

export interface LoggedRequest {
  method: string;
  path: string;
  status: number;
  at: number;
  /** The bearer token it carried (empty without one). */
  token: string;
}

/** The HubSpot account (portal) the emulator stands for: what its account details and token metadata say. */
export interface HsPortal {
  portalId: number;
  /** The token metadata's `hub_domain`. */
  hubDomain: string;
  /** The account details' `uiDomain`. */
  uiDomain: string;
  accountType: 'STANDARD' | 'SANDBOX' | 'DEVELOPER_TEST' | 'APP_DEVELOPER';
  timeZone: string;
  companyCurrency: string;
  /** The user who consents on the authorize page (the token metadata's `user` and `user_id`). */
  user: string;
  userId: number;
  appId: number;
}

export interface HubspotEmulatorOptions {
  accessToken?: string;
  refreshToken?: string;
  clientId?: string;
  clientSecret?: string;
  /** Each refresh returns a new refresh token and voids the old one. HubSpot does not by default. */
  rotateRefreshTokens?: boolean;
  owners?: HsOwner[];
  /** HubSpot's rolling ten-second limit per access token (e.g. 100 or 190); unset: no limit. */
  requestsPer10s?: number;
  /** The emulator's date, which decides whether v1 OAuth still answers (epoch ms; default: now). */
  now?: () => number;
  /** The portal the authorize page connects (account details, token metadata). */
  portal?: Partial<HsPortal>;
}

/**
 * The scopes an app may ask for on the authorize page (HubSpot's scope reference: those of the CRM objects,
 * owners and lists, and `oauth`); any other is refused as HubSpot refuses an unknown scope.
 */
const KNOWN_SCOPES = new Set([
  'oauth',
  'crm.objects.contacts.read',
  'crm.objects.contacts.write',
  'crm.objects.companies.read',
  'crm.objects.companies.write',
  'crm.objects.deals.read',
  'crm.objects.deals.write',
  'crm.objects.owners.read',
  'crm.lists.read',
  'crm.lists.write',
  'sales-email-read',
]);

/** An authorization code the authorize page issued: for the redirect_uri and scopes asked, exchanged once. */
interface AuthorizationCode {
  redirectUri: string;
  scopes: string[];
  used: boolean;
}

/** The date-based API versions the emulator serves (HubSpot's numeric paths map onto the first). */
export const HUBSPOT_VERSIONS = ['2026-03'] as const;

/** The day HubSpot switches v1 OAuth off (`POST /oauth/v1/token` and the other `/oauth/v1/` endpoints). */
export const V1_OAUTH_END = Date.parse('2027-02-16T00:00:00Z');

/** HubSpot's search API limit, per account: five requests a second. */
const SEARCHES_PER_SECOND = 5;

export type ObjectType = 'contacts' | 'companies' | 'emails' | 'notes' | 'tasks';

const ENUMS: Record<string, readonly string[]> = {
  hs_email_direction: ['EMAIL', 'INCOMING_EMAIL', 'FORWARDED_EMAIL'],
  hs_email_status: ['BOUNCED', 'FAILED', 'SCHEDULED', 'SENDING', 'SENT'],
  hs_task_status: ['NOT_STARTED', 'COMPLETED', 'IN_PROGRESS', 'WAITING', 'DEFERRED'],
  hs_task_priority: ['NONE', 'LOW', 'MEDIUM', 'HIGH'],
  hs_task_type: ['EMAIL', 'CALL', 'TODO'],
};

const PROPERTIES: Record<ObjectType, readonly string[]> = {
  contacts: [
    'email',
    'firstname',
    'lastname',
    'company',
    'website',
    'jobtitle',
    'phone',
    'lifecyclestage',
    'hs_linkedin_url',
    'twitterhandle',
    'hubspot_owner_id',
  ],
  companies: ['domain', 'name', 'website', 'industry', 'hubspot_owner_id'],
  emails: [
    'hs_timestamp',
    'hs_email_direction',
    'hs_email_status',
    'hs_email_subject',
    'hs_email_text',
    'hs_email_html',
    'hs_email_headers',
    'hubspot_owner_id',
  ],
  notes: ['hs_timestamp', 'hs_note_body', 'hubspot_owner_id'],
  tasks: ['hs_timestamp', 'hs_task_subject', 'hs_task_body', 'hs_task_status', 'hs_task_priority', 'hs_task_type', 'hubspot_owner_id'],
};

const REQUIRED_ON_CREATE: Record<ObjectType, readonly string[]> = {
  contacts: [],
  companies: [],
  emails: ['hs_timestamp'],
  notes: ['hs_timestamp'],
  tasks: ['hs_timestamp'],
};

/** HUBSPOT_DEFINED association type ids, from → to. */
const ASSOCIATION_TYPES: Record<string, readonly number[]> = {
  'emails→contacts': [198],
  'notes→contacts': [202],
  'tasks→contacts': [204],
  'contacts→companies': [1, 279],
  'companies→contacts': [2, 280],
};

export class HubspotEmulator extends LoopbackEmulator {
  readonly contacts = new Map<string, HsObject>();
  readonly companies = new Map<string, HsObject>();
  /** Lists by id, for tests to inspect (create them with addList). */
  readonly lists = new Map<string, HsList>();
  readonly emails = new Map<string, HsObject>();
  readonly notes = new Map<string, HsObject>();
  readonly tasks = new Map<string, HsObject>();
  readonly associations: HsAssociation[] = [];
  /** The associations by the object they start from (`type/id`): searches by association stay linear in the objects. */
  private readonly associationsFrom = new Map<string, HsAssociation[]>();
  readonly owners: HsOwner[];
  readonly tokenRefreshes: Array<{ at: number; rotated: boolean }> = [];
  readonly requests: LoggedRequest[] = [];
  readonly clientId: string;
  readonly clientSecret: string;
  accessTokens = new Set<string>();
  expiredTokens = new Set<string>();
  refreshTokens = new Set<string>();
  rotateRefreshTokens: boolean;
  /** The portal the authorize page connects. */
  readonly portal: HsPortal;
  /** Each consent given or refused on the authorize page, in order. */
  readonly consents: Consent[] = [];
  /** The authorization codes issued, by code. */
  private readonly codes = new Map<string, AuthorizationCode>();
  /** The scopes of the access tokens issued for a code (the others have every scope). */
  private readonly tokenScopes = new Map<string, string[]>();
  /** Refuses (400 VALIDATION_ERROR) the creates it returns true for, alone or in a batch (tests of partial batch answers). */
  refuseCreate: ((type: ObjectType, properties: Record<string, string>) => boolean) | undefined;
  /** The rolling ten-second limit per access token; undefined: none. */
  requestsPer10s: number | undefined;
  /** The emulator's date (epoch ms): past {@link V1_OAUTH_END}, v1 OAuth is gone. */
  now: () => number;
  /** Per token, when its requests in the last ten seconds were made (429s included, as HubSpot counts them). */
  private readonly windows = new Map<string, number[]>();
  /** Per token, when its searches in the last second were made. */
  private readonly searchWindows = new Map<string, number[]>();
  private readonly interception = new NthCall();

  private nextId = 1000;
  private nextListId = 0;
  /**
   * Contacts by email and companies by domain, kept by this class's writes and rebuilt when a test put
   * records in a map directly (benches upsert thousands and lists hold 100,000: a scan per lookup would dominate).
   */
  private readonly indexes = {
    contacts: { property: 'email', ids: new Map<string, string>(), size: 0 },
    companies: { property: 'domain', ids: new Map<string, string>(), size: 0 },
  };

  constructor(options: HubspotEmulatorOptions = {}) {
    super();
    this.accessTokens.add(options.accessToken ?? 'hs-access-initial');
    this.refreshTokens.add(options.refreshToken ?? 'hs-refresh-initial');
    this.clientId = options.clientId ?? 'hs-client-id';
    this.clientSecret = options.clientSecret ?? 'hs-client-secret';
    this.rotateRefreshTokens = options.rotateRefreshTokens ?? false;
    this.requestsPer10s = options.requestsPer10s;
    this.now = options.now ?? Date.now;
    this.owners = options.owners ?? [{ id: '501', email: 'rep@seller.test', firstName: 'Rita', lastName: 'Rep', userId: 9001 }];
    this.portal = {
      portalId: 62515,
      hubDomain: 'seller.test',
      uiDomain: 'app.hubspot.com',
      accountType: 'STANDARD',
      timeZone: 'US/Eastern',
      companyCurrency: 'USD',
      user: 'admin@seller.test',
      userId: 9001,
      appId: 424242,
      ...options.portal,
    };
  }

  /**
   * Calls `action` (a crash test kills its worker there) at the `n`th API call from now, in `phase`:
   * `before` it is carried out (nothing is, nor answered), `unanswered` (carried out, never answered: the
   * caller's answer is lost), or `answered` (right after the answer went out, before the caller records it).
   */
  interceptNth(n: number, phase: InterceptPhase, action: () => void): void {
    this.interception.arm(n, phase, action);
  }

  /** Every current access token now answers 401 EXPIRED_AUTHENTICATION until a refresh issues a new one. */
  expireAccessTokens(): void {
    for (const token of this.accessTokens) this.expiredTokens.add(token);
    this.accessTokens.clear();
  }

  /** Engagements (emails, notes or tasks) associated with a contact. */
  engagementsOf(contactId: string, type: 'emails' | 'notes' | 'tasks'): HsObject[] {
    return this.associations
      .filter((a) => a.fromType === type && a.toType === 'contacts' && a.toId === contactId)
      .map((a) => this.store(type).get(a.fromId))
      .filter((o): o is HsObject => o !== undefined);
  }

  /**
   * Creates a MANUAL list of contacts (by `email`) or companies (by `domain`) holding a record for each
   * value, reusing a record that already has that exact value; values are stored as given (messy ones
   * included: the service normalises), an empty one makes a record without the property. Returns the listId
   * (`listId` when given: the sandbox names the demo's lists).
   */
  addList(options: { name: string; objectType: 'contacts' | 'companies'; values: string[]; listId?: string }): string {
    const listId = options.listId ?? String((this.nextListId += 1));
    this.lists.set(listId, { listId, name: options.name, objectType: options.objectType, members: [], memberIds: new Set() });
    this.addToList(listId, options.values);
    return listId;
  }

  /** Adds members to a list later, as a customer does between two sync rounds (same rules as addList). */
  addToList(listId: string, values: string[]): void {
    const list = this.lists.get(listId);
    if (!list) throw new Error(`no HubSpot list ${listId}`);
    const property = this.indexes[list.objectType].property;
    const membershipTimestamp = new Date().toISOString();
    for (const value of values) {
      const record =
        (value === '' ? undefined : this.recordBy(list.objectType, value)) ?? this.insert(list.objectType, value === '' ? {} : { [property]: value });
      if (list.memberIds.has(record.id)) continue;
      list.memberIds.add(record.id);
      list.members.push({ recordId: record.id, membershipTimestamp });
    }
  }

  // -------------------------------------------------------------------------------------------

  private associate(association: HsAssociation): void {
    this.associations.push(association);
    const key = `${association.fromType}/${association.fromId}`;
    const from = this.associationsFrom.get(key);
    if (from) from.push(association);
    else this.associationsFrom.set(key, [association]);
  }

  private store(type: ObjectType): Map<string, HsObject> {
    return { contacts: this.contacts, companies: this.companies, emails: this.emails, notes: this.notes, tasks: this.tasks }[type];
  }

  protected async handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://emulator');
    const body = await readBody(req);
    await this.plan.wait(url.pathname);
    const answer = (status: number, payload?: unknown, headers: Record<string, string> = {}) => {
      const token = /^Bearer (.+)$/.exec(req.headers.authorization ?? '')?.[1] ?? '';
      this.requests.push({ method: req.method ?? '', path: url.pathname, status, at: Date.now(), token });
      if (res.destroyed) return;
      res.writeHead(status, { 'content-type': 'application/json;charset=utf-8', ...headers });
      res.end(payload === undefined ? '' : JSON.stringify(payload));
    };
    try {
      const fault = this.plan.take(url.pathname, /^Bearer (.+)$/.exec(req.headers.authorization ?? '')?.[1]);
      if (fault)
        return answer(fault.status, fault.body ?? faultBody(fault.status), fault.retryAfter !== undefined ? { 'retry-after': String(fault.retryAfter) } : {});
      if (url.pathname === '/oauth/authorize' && (req.method === 'GET' || req.method === 'POST')) {
        const page = this.authorize(req.method, url, body, req.headers['content-type']);
        this.requests.push({ method: req.method, path: url.pathname, status: page.status, at: Date.now(), token: '' });
        return sendHtml(res, page.status, page.html, page.location ? { location: page.location } : {});
      }
      const oauth = /^\/oauth\/([^/]+)\/token$/.exec(url.pathname)?.[1];
      if (req.method === 'POST' && oauth !== undefined) return this.token(oauth, req, body, answer);
      const introspection = /^\/oauth\/([^/]+)\/token\/introspect$/.exec(url.pathname)?.[1];
      if (req.method === 'POST' && introspection !== undefined) return this.introspect(introspection, req, body, answer);
      const auth = this.authenticate(req);
      if (auth) return answer(401, auth);
      const limit = this.rateLimit(req, url.pathname);
      if (limit.exceeded) return answer(429, faultBody(429), limit.headers);
      const limited = (status: number, payload?: unknown) => answer(status, payload, limit.headers);
      // A body must be JSON; some calls have none (the default association's PUT).
      if (body.length > 0 && req.method !== 'GET' && req.method !== 'DELETE' && !/^application\/json/.test(req.headers['content-type'] ?? '')) {
        return answer(415, error('VALIDATION_ERROR', 'Content-Type must be application/json'));
      }
      const json = body.length > 0 ? parseJson(body) : undefined;
      if (json === INVALID_JSON) return limited(400, error('VALIDATION_ERROR', 'Invalid input JSON: the body is not JSON'));
      const intercepted = this.interception.take(req.method ?? 'GET', url.pathname);
      // The caller is gone before its request arrives: nothing is carried out or answered.
      if (intercepted?.phase === 'before') return intercepted.action();
      const [status, payload] = this.route(req.method ?? 'GET', url, json);
      // Carried out, and the caller gone before the answer: its answer is lost.
      if (intercepted?.phase === 'unanswered') return intercepted.action();
      limited(status, payload);
      intercepted?.action();
    } catch (e) {
      answer(500, error('INTERNAL_ERROR', e instanceof Error ? e.message : 'internal error'));
    }
  }

  /**
   * HubSpot's TEN_SECONDLY_ROLLING policy for the request's token: every answer carries the
   * `X-HubSpot-RateLimit-*` headers; past the limit, a 429 with `Retry-After` (whole seconds until the
   * oldest request of the window leaves it). No limit set: no headers, no 429.
   */
  private rateLimit(req: http.IncomingMessage, path: string): { exceeded: boolean; headers: Record<string, string> } {
    const max = this.requestsPer10s;
    if (max === undefined) return { exceeded: false, headers: {} };
    const token = /^Bearer (.+)$/.exec(req.headers.authorization ?? '')?.[1] ?? '';
    const now = Date.now();
    if (path.endsWith('/search')) {
      // The search API has a limit of its own (five a second per account), outside the ten-second window, and no headers.
      const searches = (this.searchWindows.get(token) ?? []).filter((at) => at > now - 1_000);
      searches.push(now);
      this.searchWindows.set(token, searches);
      return { exceeded: searches.length > SEARCHES_PER_SECOND, headers: searches.length > SEARCHES_PER_SECOND ? { 'retry-after': '1' } : {} };
    }
    const recent = (this.windows.get(token) ?? []).filter((at) => at > now - 10_000);
    recent.push(now);
    this.windows.set(token, recent);
    const exceeded = recent.length > max;
    const headers: Record<string, string> = {
      'x-hubspot-ratelimit-interval-milliseconds': '10000',
      'x-hubspot-ratelimit-max': String(max),
      'x-hubspot-ratelimit-remaining': String(Math.max(0, max - recent.length)),
    };
    if (exceeded) headers['retry-after'] = String(Math.max(1, Math.ceil((recent[recent.length - 1 - max]! + 10_000 - now) / 1000)));
    return { exceeded, headers };
  }

  /**
   * The most requests made in any ten seconds (429s included) that HubSpot's ten-second window counts
   * (searches have a limit of their own), from the request log; with `token`, only its requests.
   */
  busiestTenSeconds(token?: string): number {
    const times = this.requests
      .filter((r) => (token === undefined || r.token === token) && !r.path.endsWith('/search'))
      .map((r) => r.at)
      .sort((a, b) => a - b);
    let best = 0;
    for (let i = 0, j = 0; i < times.length; i += 1) {
      while (times[i]! - times[j]! >= 10_000) j += 1;
      best = Math.max(best, i - j + 1);
    }
    return best;
  }

  private authenticate(req: http.IncomingMessage): unknown {
    const match = /^Bearer (.+)$/.exec(req.headers.authorization ?? '');
    if (!match?.[1]) return error('INVALID_AUTHENTICATION', 'Authentication credentials not found. This API supports OAuth 2.0 authentication.');
    if (this.accessTokens.has(match[1])) return undefined;
    if (this.expiredTokens.has(match[1])) return error('EXPIRED_AUTHENTICATION', 'The OAuth token used to make this call expired 1 minute(s) ago.');
    return error('INVALID_AUTHENTICATION', 'Authentication credentials not found. This API supports OAuth 2.0 authentication.');
  }

  /**
   * The token endpoint's refresh-token grant. At a date version (`/oauth/2026-03/token`) refusals are
   * RFC 6749's `{error, error_description}` with HubSpot's `status` and `message` kept beside them; at v1
   * they are HubSpot's `{status, message}` alone, and from 2027-02-16 v1 answers that it is gone (HubSpot
   * publishes no body for it: a 404 in its error format, which a caller cannot take for a refusal of its token).
   */
  private token(version: string, req: http.IncomingMessage, body: string, answer: (status: number, payload?: unknown) => void): void {
    const v1 = version === 'v1';
    if (v1 && this.now() >= V1_OAUTH_END) {
      return answer(404, error('OBJECT_NOT_FOUND', 'The v1 OAuth API was retired on 2027-02-16: use /oauth/2026-03/token'));
    }
    if (!v1 && !(HUBSPOT_VERSIONS as readonly string[]).includes(version))
      return answer(404, error('OBJECT_NOT_FOUND', `No route for POST /oauth/${version}/token`));
    const refuse = (rfc6749: string, status: string, message: string) =>
      answer(400, { ...(v1 ? {} : { error: rfc6749, error_description: message }), status, message, correlationId: randomUUID() });
    if (!/^application\/x-www-form-urlencoded/.test(req.headers['content-type'] ?? '')) {
      return refuse('invalid_request', 'BAD_REQUEST', 'the token endpoint takes a form-encoded body');
    }
    const form = new URLSearchParams(body);
    const grant = form.get('grant_type');
    if (grant !== 'refresh_token' && grant !== 'authorization_code')
      return refuse('unsupported_grant_type', 'BAD_GRANT_TYPE', 'grant_type must be authorization_code or refresh_token');
    if (form.get('client_id') !== this.clientId) return refuse('invalid_client', 'BAD_CLIENT_ID', 'missing or unknown client id');
    if (form.get('client_secret') !== this.clientSecret) return refuse('invalid_client', 'BAD_CLIENT_SECRET', 'missing or invalid client secret');
    if (grant === 'authorization_code') {
      const code = this.codes.get(form.get('code') ?? '');
      if (!code || code.used) return refuse('invalid_grant', 'BAD_AUTH_CODE', 'missing or unknown auth code');
      if (form.get('redirect_uri') !== code.redirectUri) return refuse('invalid_grant', 'BAD_REDIRECT_URI', 'redirect_uri does not match the one authorized');
      code.used = true;
      // Derived from the code (see consent.ts): the sandbox's replay issues the same tokens.
      const seed = form.get('code') ?? '';
      const accessToken = `hs-access-${derived('access', seed)}`;
      const refreshToken = `hs-refresh-${derived('refresh', seed)}`;
      this.accessTokens.add(accessToken);
      this.refreshTokens.add(refreshToken);
      this.tokenScopes.set(accessToken, code.scopes);
      return answer(200, {
        token_type: 'bearer',
        refresh_token: refreshToken,
        access_token: accessToken,
        expires_in: 1800,
        hub_id: this.portal.portalId,
        scopes: code.scopes,
      });
    }
    const refreshToken = form.get('refresh_token') ?? '';
    if (!this.refreshTokens.has(refreshToken)) return refuse('invalid_grant', 'BAD_REFRESH_TOKEN', 'missing or unknown refresh token');
    const accessToken = `hs-access-${randomBytes(8).toString('hex')}`;
    this.accessTokens.add(accessToken);
    let next = refreshToken;
    if (this.rotateRefreshTokens) {
      this.refreshTokens.delete(refreshToken);
      next = `hs-refresh-${randomBytes(8).toString('hex')}`;
      this.refreshTokens.add(next);
    }
    this.tokenRefreshes.push({ at: Date.now(), rotated: this.rotateRefreshTokens });
    answer(200, { token_type: 'bearer', access_token: accessToken, refresh_token: next, expires_in: 1800 });
  }

  /**
   * The authorize page (`GET /oauth/authorize?client_id&redirect_uri&scope&state`): consent for the
   * emulator's portal, or an error page for an unknown client, a bad redirect_uri or an unknown scope (no
   * redirect then). Posting `decision=allow` back to the same URL redirects to the redirect_uri with a
   * `code` and the `state`; `decision=deny`, with `error=access_denied` and the `state`.
   */
  private authorize(method: string, url: URL, body: string, contentType: string | undefined): AuthorizeAnswer {
    const query = url.searchParams;
    const redirectUri = query.get('redirect_uri');
    const scopes = (query.get('scope') ?? '').split(/[ +]+/).filter((s) => s !== '');
    const refused = (error: string, description: string) => ({ status: 400, html: authorizeErrorPage('HubSpot', error, description) });
    if (query.get('client_id') !== this.clientId) return refused('invalid_client', 'This app (client id) does not exist.');
    if (!isRedirectUri(redirectUri)) return refused('invalid_request', 'redirect_uri must be an absolute http(s) URL.');
    const unknown = scopes.filter((s) => !KNOWN_SCOPES.has(s));
    if (scopes.length === 0 || unknown.length > 0) return refused('invalid_scope', `Unknown or missing scopes: ${unknown.join(' ') || '(none)'}`);
    const state = query.get('state');
    const step = consentStep(
      { method, body, contentType },
      { vendor: 'HubSpot', account: `HubSpot account ${this.portal.portalId} (${this.portal.hubDomain})`, clientId: this.clientId, redirectUri, scopes, state },
      { deniedDescription: 'The user denied access', invalidDecision: 'decision must be allow or deny.' },
      this.consents,
    );
    if (step !== 'allowed') return step;
    const withState: Record<string, string> = state === null ? {} : { state };
    const code = `na1-${derived('code', this.consents.length, redirectUri, state ?? '', scopes.join(' '))}`;
    this.codes.set(code, { redirectUri, scopes, used: false });
    return { status: 302, html: '', location: redirectWith(redirectUri, { code, ...withState }) };
  }

  /**
   * Token metadata (`POST /oauth/2026-03/token/introspect`, form `client_id`, `client_secret`, `token`):
   * for an active access token, its portal, user, app and scopes; `{active: false}` for any other token.
   */
  private introspect(version: string, req: http.IncomingMessage, body: string, answer: (status: number, payload?: unknown) => void): void {
    if (!(HUBSPOT_VERSIONS as readonly string[]).includes(version))
      return answer(404, error('OBJECT_NOT_FOUND', `No route for POST /oauth/${version}/token/introspect`));
    const refuse = (rfc6749: string, message: string) =>
      answer(400, { error: rfc6749, error_description: message, status: 'BAD_REQUEST', message, correlationId: randomUUID() });
    if (!/^application\/x-www-form-urlencoded/.test(req.headers['content-type'] ?? ''))
      return refuse('invalid_request', 'the endpoint takes a form-encoded body');
    const form = new URLSearchParams(body);
    if (form.get('client_id') !== this.clientId || form.get('client_secret') !== this.clientSecret)
      return refuse('invalid_client', 'missing or invalid client credentials');
    const token = form.get('token') ?? '';
    if (!this.accessTokens.has(token)) return answer(200, { active: false });
    const p = this.portal;
    const scopes = this.tokenScopes.get(token) ?? [...KNOWN_SCOPES];
    answer(200, {
      token_use: 'access_token',
      active: true,
      token,
      hub_id: p.portalId,
      user_id: p.userId,
      client_id: this.clientId,
      app_id: p.appId,
      scopes,
      signed_access_token: {
        appId: p.appId,
        expiresAt: Date.now() + 1_800_000,
        hubId: p.portalId,
        hublet: 'na1',
        installingUserId: p.userId,
        isPrivateDistribution: false,
        isServiceAccount: false,
        isUserLevel: false,
        newSignature: derived('signature', token),
        scopeToScopeGroupPks: '',
        scopes: scopes.join(','),
        signature: derived('signature', token),
        trialScopeToScopeGroupPks: '',
        trialScopes: '',
        userId: p.userId,
      },
      expires_in: 1800,
      is_private_distribution: false,
      token_type: 'access',
      user: p.user,
      hub_domain: p.hubDomain,
    });
  }

  private route(method: string, url: URL, json: unknown): [number, unknown] {
    const path = datedPath(url.pathname);
    let m: RegExpExecArray | null;
    if (method === 'POST' && path === '/crm/objects/2026-03/contacts/batch/upsert') return this.upsertContacts(json);
    if (method === 'POST' && (m = /^\/crm\/objects\/2026-03\/(companies|emails|notes|tasks)\/batch\/create$/.exec(path)))
      return this.createMany(m[1] as ObjectType, json);
    if (method === 'POST' && (m = /^\/crm\/objects\/2026-03\/(contacts|companies)\/batch\/read$/.exec(path)))
      return this.readMany(m[1] as 'contacts' | 'companies', json);
    if (method === 'POST' && path === '/crm/associations/2026-03/contacts/companies/batch/associate/default') return this.associateMany(json);
    if (method === 'PUT' && (m = /^\/crm\/objects\/2026-03\/contacts\/([^/]+)\/associations\/default\/companies\/([^/]+)$/.exec(path))) {
      const [status, answer] = this.associateCompany(decodeURIComponent(m[1] as string), decodeURIComponent(m[2] as string), [
        { associationCategory: 'HUBSPOT_DEFINED', associationTypeId: 279 },
      ]);
      return status === 200 ? [200, { status: 'COMPLETE', results: [answer] }] : [status, answer];
    }
    if (method === 'GET' && (m = /^\/crm\/lists\/2026-03\/([^/]+)$/.exec(path))) return this.list(decodeURIComponent(m[1] as string));
    if (method === 'GET' && (m = /^\/crm\/lists\/2026-03\/([^/]+)\/memberships$/.exec(path))) return this.memberships(decodeURIComponent(m[1] as string), url);
    if (method === 'POST' && (m = /^\/crm\/objects\/2026-03\/(contacts|companies|emails|notes|tasks)\/search$/.exec(path)))
      return this.search(m[1] as ObjectType, json);
    if (method === 'POST' && (m = /^\/crm\/objects\/2026-03\/(contacts|companies|emails|notes|tasks)$/.exec(path)))
      return this.create(m[1] as ObjectType, json);
    if (method === 'GET' && (m = /^\/crm\/objects\/2026-03\/(contacts|companies|emails|notes|tasks)\/([^/]+)$/.exec(path))) {
      const object = this.store(m[1] as ObjectType).get(decodeURIComponent(m[2] as string));
      if (!object) return [404, error('OBJECT_NOT_FOUND', 'resource not found')];
      const wanted = (url.searchParams.get('properties') ?? '').split(',').filter((p) => p !== '');
      return [200, view(object, wanted)];
    }
    if (method === 'PATCH' && (m = /^\/crm\/objects\/2026-03\/(contacts|companies)\/([^/]+)$/.exec(path)))
      return this.update(m[1] as ObjectType, decodeURIComponent(m[2] as string), json);
    if (method === 'GET' && path === '/crm/associations/2026-03/contacts/companies/labels') {
      return [
        200,
        {
          results: [
            { category: 'HUBSPOT_DEFINED', typeId: 1, label: 'Primary' },
            { category: 'HUBSPOT_DEFINED', typeId: 279, label: null },
          ],
        },
      ];
    }
    if (method === 'PUT' && (m = /^\/crm\/objects\/2026-03\/contacts\/([^/]+)\/associations\/companies\/([^/]+)$/.exec(path))) {
      return this.associateCompany(decodeURIComponent(m[1] as string), decodeURIComponent(m[2] as string), json);
    }
    if (method === 'GET' && path === '/crm/owners/2026-03') return this.listOwners(url);
    if (method === 'GET' && (path === '/account-info/2026-03/details' || path === '/account-info/v3/details')) return [200, this.accountDetails()];
    return [404, error('OBJECT_NOT_FOUND', `No route for ${method} ${url.pathname}`)];
  }

  /** The portal's account details, as `GET /account-info/2026-03/details` answers them. */
  private accountDetails(): Record<string, unknown> {
    const p = this.portal;
    return {
      portalId: p.portalId,
      accountType: p.accountType,
      timeZone: p.timeZone,
      companyCurrency: p.companyCurrency,
      additionalCurrencies: [],
      utcOffset: '-05:00',
      utcOffsetMilliseconds: -18_000_000,
      uiDomain: p.uiDomain,
      dataHostingLocation: 'na1',
    };
  }

  /**
   * The portal's owners (`email` filters; `limit` 1 to 500, default 100; `after` an opaque cursor, the
   * offset here), with `paging.next.after` while more remain, as HubSpot pages them.
   */
  private listOwners(url: URL): [number, unknown] {
    const email = url.searchParams.get('email')?.toLowerCase();
    const limit = Number(url.searchParams.get('limit') ?? '100');
    if (!Number.isInteger(limit) || limit < 1 || limit > 500) return [400, error('VALIDATION_ERROR', 'limit must be an integer from 1 to 500')];
    const after = url.searchParams.get('after');
    if (after !== null && !/^\d+$/.test(after)) return [400, error('VALIDATION_ERROR', `Invalid after cursor: ${after}`)];
    const offset = after === null ? 0 : Number(after);
    const matching = this.owners.filter((o) => email === undefined || o.email.toLowerCase() === email);
    const page = matching.slice(offset, offset + limit).map((o) => ({ ...o, type: 'PERSON', archived: false }));
    const next = offset + page.length;
    return [200, { results: page, ...(next < matching.length ? { paging: { next: { after: String(next) } } } : {}) }];
  }

  /**
   * Default (unlabeled) contact → company associations in a batch (1 to 2,000 inputs `{from: {id}, to:
   * {id}}`): each made (or found made) or refused on its own, answered 200 with `results` and any
   * `errors`, as HubSpot's v4 batch answers are.
   */
  private associateMany(json: unknown): [number, unknown] {
    const inputs = asRecord(json).inputs;
    if (!Array.isArray(inputs) || inputs.length === 0 || inputs.length > 2000)
      return [400, error('VALIDATION_ERROR', 'inputs must be an array of 1 to 2000 items')];
    const results: unknown[] = [];
    const errors: unknown[] = [];
    for (const raw of inputs) {
      const input = asRecord(raw);
      const [from, to] = [asRecord(input.from).id, asRecord(input.to).id];
      if (typeof from !== 'string' || typeof to !== 'string') return [400, error('VALIDATION_ERROR', 'each input needs from.id and to.id')];
      const [status] = this.associateCompany(from, to, [{ associationCategory: 'HUBSPOT_DEFINED', associationTypeId: 279 }]);
      if (status === 200)
        results.push({ from: { id: from }, to: { id: to }, associationSpec: { associationCategory: 'HUBSPOT_DEFINED', associationTypeId: 279 } });
      else
        errors.push({
          status: 'error',
          category: 'OBJECT_NOT_FOUND',
          message: `contacts ${from} or companies ${to} not found`,
          context: { fromId: [from], toId: [to] },
        });
    }
    const now = new Date().toISOString();
    return [200, { status: 'COMPLETE', results, startedAt: now, completedAt: now, ...(errors.length > 0 ? { numErrors: errors.length, errors } : {}) }];
  }

  /**
   * Batch create (1 to 100 inputs, each `{properties, associations, objectWriteTraceId?}`): every input is
   * created or refused on its own. All created: 201 `{status, results}`; some refused: 207 with `errors`,
   * each naming the refused inputs' `objectWriteTraceId` in its `context`, as HubSpot's batch answers do.
   */
  private createMany(type: ObjectType, json: unknown): [number, unknown] {
    const inputs = asRecord(json).inputs;
    if (!Array.isArray(inputs) || inputs.length === 0 || inputs.length > 100)
      return [400, error('VALIDATION_ERROR', 'inputs must be an array of 1 to 100 items')];
    const results: unknown[] = [];
    const errors: unknown[] = [];
    for (const raw of inputs) {
      const input = asRecord(raw);
      const trace = typeof input.objectWriteTraceId === 'string' ? input.objectWriteTraceId : undefined;
      const [status, answer] = this.create(type, input);
      if (status === 201) results.push({ ...asRecord(answer), ...(trace ? { objectWriteTraceId: trace } : {}) });
      else errors.push({ ...asRecord(answer), status: 'error', context: trace ? { objectWriteTraceId: [trace] } : {} });
    }
    const now = new Date().toISOString();
    const body = { status: 'COMPLETE', results, startedAt: now, completedAt: now, ...(errors.length > 0 ? { numErrors: errors.length, errors } : {}) };
    return [errors.length > 0 ? 207 : 201, body];
  }

  private upsertContacts(json: unknown): [number, unknown] {
    const inputs = asRecord(json).inputs;
    if (!Array.isArray(inputs) || inputs.length === 0 || inputs.length > 100)
      return [400, error('VALIDATION_ERROR', 'inputs must be an array of 1 to 100 items')];
    const results: unknown[] = [];
    for (const raw of inputs) {
      const input = asRecord(raw);
      if (input.idProperty !== 'email') return [400, error('VALIDATION_ERROR', `idProperty ${String(input.idProperty)} is not a unique property of contacts`)];
      if (typeof input.id !== 'string' || !isEmail(input.id))
        return [400, error('VALIDATION_ERROR', `Email address ${String(input.id)} is invalid`, 'INVALID_EMAIL')];
      const problem = this.checkProperties('contacts', input.properties, false);
      if (problem) return [400, problem];
      const email = input.id.toLowerCase();
      const properties = stringify(asRecord(input.properties));
      let contact = this.contactByEmail(email);
      const created = contact === undefined;
      if (!contact) contact = this.insert('contacts', { ...properties, email });
      else Object.assign(contact.properties, properties, { email }, { lastmodifieddate: new Date().toISOString() });
      results.push({ ...view(contact, Object.keys(properties)), new: created });
    }
    const now = new Date().toISOString();
    return [200, { status: 'COMPLETE', results, startedAt: now, completedAt: now }];
  }

  private contactByEmail(email: string): HsObject | undefined {
    return this.recordBy('contacts', email);
  }

  /** The contact with this email or the company with this domain (exact value), from {@link indexes}. */
  private recordBy(type: 'contacts' | 'companies', value: string): HsObject | undefined {
    const index = this.indexes[type];
    const store = this.store(type);
    if (index.size !== store.size) {
      index.ids.clear();
      for (const record of store.values()) {
        const key = record.properties[index.property];
        if (key) index.ids.set(key, record.id);
      }
      index.size = store.size;
    }
    const id = index.ids.get(value);
    const record = id === undefined ? undefined : store.get(id);
    return record?.properties[index.property] === value ? record : undefined;
  }

  /** A list's definition as HubSpot's Lists API gives it. */
  private list(listId: string): [number, unknown] {
    const list = this.lists.get(listId);
    if (!list) return [404, error('OBJECT_NOT_FOUND', `List ${listId} does not exist`)];
    const objectTypeId = list.objectType === 'contacts' ? '0-1' : '0-2';
    return [200, { list: { listId: list.listId, name: list.name, objectTypeId, processingType: 'MANUAL', size: list.members.length } }];
  }

  /**
   * A page of a list's members in the order they were added (`limit` 1 to 250, default 100); `after` is
   * an opaque cursor (the offset), and the last page has no `paging`, as HubSpot's does.
   */
  private memberships(listId: string, url: URL): [number, unknown] {
    const list = this.lists.get(listId);
    if (!list) return [404, error('OBJECT_NOT_FOUND', `List ${listId} does not exist`)];
    const limit = Number(url.searchParams.get('limit') ?? '100');
    if (!Number.isInteger(limit) || limit < 1 || limit > 250) return [400, error('VALIDATION_ERROR', 'limit must be an integer from 1 to 250')];
    const after = url.searchParams.get('after');
    if (after !== null && !/^\d+$/.test(after)) return [400, error('VALIDATION_ERROR', `Invalid after cursor: ${after}`)];
    const offset = after === null ? 0 : Number(after);
    const results = list.members.slice(offset, offset + limit);
    const next = offset + results.length;
    return [200, { results, ...(next < list.members.length ? { paging: { next: { after: String(next) } } } : {}) }];
  }

  /**
   * Batch read by id (1 to 100 inputs): the records found, with the requested properties; ids not found
   * are left out and named in one OBJECT_NOT_FOUND error, answered 207 as HubSpot's batch answers are.
   */
  private readMany(type: 'contacts' | 'companies', json: unknown): [number, unknown] {
    const body = asRecord(json);
    const inputs = body.inputs;
    if (!Array.isArray(inputs) || inputs.length === 0 || inputs.length > 100)
      return [400, error('VALIDATION_ERROR', 'inputs must be an array of 1 to 100 items')];
    if (body.properties !== undefined && (!Array.isArray(body.properties) || body.properties.some((p) => typeof p !== 'string')))
      return [400, error('VALIDATION_ERROR', 'properties must be an array of property names')];
    const wanted = (body.properties ?? []) as string[];
    // A unique property names the records instead of their ids: a contact's email (a company's domain is not unique).
    const idProperty = body.idProperty ?? 'hs_object_id';
    if (idProperty !== 'hs_object_id' && !(type === 'contacts' && idProperty === 'email'))
      return [400, error('VALIDATION_ERROR', `${JSON.stringify(idProperty)} is not a unique property of ${type}`)];
    const results: unknown[] = [];
    const missing: string[] = [];
    const seen = new Set<string>();
    for (const raw of inputs) {
      const id = asRecord(raw).id;
      if (typeof id !== 'string' && typeof id !== 'number') return [400, error('VALIDATION_ERROR', 'each input needs an id')];
      const key = String(id);
      if (seen.has(key)) continue;
      seen.add(key);
      const object = idProperty === 'email' ? this.contactByEmail(key.toLowerCase()) : this.store(type).get(key);
      if (object) results.push(view(object, wanted));
      else missing.push(key);
    }
    const now = new Date().toISOString();
    const errors = [
      {
        status: 'error',
        category: 'OBJECT_NOT_FOUND',
        message: `Could not get some ${type === 'contacts' ? 'CONTACT' : 'COMPANY'} objects, they may be deleted or not exist. Check that ids are valid.`,
        context: { ids: missing },
      },
    ];
    const answer = { status: 'COMPLETE', results, startedAt: now, completedAt: now, ...(missing.length > 0 ? { numErrors: 1, errors } : {}) };
    return [missing.length > 0 ? 207 : 200, answer];
  }

  private create(type: ObjectType, json: unknown): [number, unknown] {
    const body = asRecord(json);
    const problem = this.checkProperties(type, body.properties, true);
    if (problem) return [400, problem];
    const properties = stringify(asRecord(body.properties));
    if (this.refuseCreate?.(type, properties)) return [400, error('VALIDATION_ERROR', `Property values were not valid for this ${type} object`)];
    if (type === 'contacts' && properties.email) {
      const existing = this.contactByEmail(properties.email.toLowerCase());
      if (existing) return [409, error('CONFLICT', `Contact already exists. Existing ID: ${existing.id}`)];
    }
    const associations = body.associations ?? [];
    if (!Array.isArray(associations)) return [400, error('VALIDATION_ERROR', 'associations must be an array')];
    const pending: HsAssociation[] = [];
    for (const raw of associations) {
      const a = asRecord(raw);
      const toId = asRecord(a.to).id;
      const types = a.types;
      if (typeof toId !== 'string' || !Array.isArray(types) || types.length === 0)
        return [400, error('VALIDATION_ERROR', 'each association needs to.id and types')];
      for (const t of types.map(asRecord)) {
        const typeId = t.associationTypeId;
        // Inline associations here go to contacts only (engagements', and a company's).
        const allowed = ASSOCIATION_TYPES[`${type}→contacts`] ?? [];
        if (t.associationCategory !== 'HUBSPOT_DEFINED' || typeof typeId !== 'number' || !allowed.includes(typeId)) {
          return [
            400,
            error(
              'VALIDATION_ERROR',
              `association type id ${String(typeId)} (${String(t.associationCategory)}) does not exist between ${type} and contacts`,
              'INVALID_ASSOCIATION_TYPE',
            ),
          ];
        }
        if (!this.contacts.has(toId)) return [400, error('VALIDATION_ERROR', `contacts ${toId} does not exist`, 'INVALID_OBJECT_ID')];
        pending.push({ fromType: type, fromId: '', toType: 'contacts', toId, category: 'HUBSPOT_DEFINED', typeId });
      }
    }
    const object = this.insert(type, properties);
    for (const a of pending) this.associate({ ...a, fromId: object.id });
    return [201, view(object, Object.keys(properties))];
  }

  private update(type: ObjectType, id: string, json: unknown): [number, unknown] {
    const object = this.store(type).get(id);
    if (!object) return [404, error('OBJECT_NOT_FOUND', 'resource not found')];
    const properties = asRecord(json).properties;
    const problem = this.checkProperties(type, properties, false);
    if (problem) return [400, problem];
    Object.assign(object.properties, stringify(asRecord(properties)));
    object.updatedAt = new Date().toISOString();
    if (type === 'contacts' || type === 'companies') {
      const key = object.properties[this.indexes[type].property];
      if (key) this.indexes[type].ids.set(key, object.id);
    }
    return [200, view(object, Object.keys(asRecord(properties)))];
  }

  private search(type: ObjectType, json: unknown): [number, unknown] {
    if (JSON.stringify(json).length > 3_000) return [400, error('VALIDATION_ERROR', 'The request body exceeds the limit of 3000 characters')];
    const body = asRecord(json);
    const groups = body.filterGroups ?? [];
    if (!Array.isArray(groups) || groups.length > 5) return [400, error('VALIDATION_ERROR', 'filterGroups must be an array of at most 5 groups')];
    const tests: Array<Array<(o: HsObject) => boolean>> = [];
    for (const g of groups.map(asRecord)) {
      const filters = g.filters;
      if (!Array.isArray(filters) || filters.length === 0 || filters.length > 6)
        return [400, error('VALIDATION_ERROR', 'each filter group needs 1 to 6 filters')];
      const group: Array<(o: HsObject) => boolean> = [];
      for (const f of filters.map(asRecord)) {
        const { propertyName, operator, value, values } = f;
        if (operator === 'IN') {
          // HubSpot: the values of IN on a string property must be lowercase; they match exactly.
          if (typeof propertyName !== 'string' || !PROPERTIES[type].includes(propertyName) || !Array.isArray(values) || values.length === 0)
            return [400, error('VALIDATION_ERROR', 'an IN filter needs a known propertyName and values')];
          const wanted = new Set(values.map((v) => String(v)));
          group.push((o) => wanted.has((o.properties[propertyName] ?? '').toLowerCase()));
          continue;
        }
        if (operator !== 'EQ') return [400, error('VALIDATION_ERROR', `operator ${String(operator)} is not supported by this emulator`)];
        if (typeof propertyName !== 'string' || value === undefined || value === null)
          return [400, error('VALIDATION_ERROR', 'a filter needs propertyName and value')];
        const wanted = typeof value === 'string' ? value : JSON.stringify(value);
        const association = /^associations\.(contact|company)$/.exec(propertyName);
        if (association) {
          const toType = association[1] === 'contact' ? 'contacts' : 'companies';
          group.push((o) => (this.associationsFrom.get(`${type}/${o.id}`) ?? []).some((a) => a.toType === toType && a.toId === wanted));
        } else if (PROPERTIES[type].includes(propertyName) || propertyName === 'hs_object_id') {
          // HubSpot compares string properties case-insensitively.
          group.push((o) => (propertyName === 'hs_object_id' ? o.id : (o.properties[propertyName] ?? '')).toLowerCase() === wanted.toLowerCase());
        } else {
          return [400, error('VALIDATION_ERROR', `There was a problem with the request. Property "${propertyName}" does not exist`)];
        }
      }
      tests.push(group);
    }
    const limit = typeof body.limit === 'number' ? body.limit : 10;
    if (!Number.isInteger(limit) || limit < 1 || limit > 200) return [400, error('VALIDATION_ERROR', 'limit must be an integer from 1 to 200')];
    const after = body.after === undefined ? 0 : Number(body.after);
    if (!Number.isInteger(after) || after < 0) return [400, error('VALIDATION_ERROR', 'after must be an integer')];
    const wanted = Array.isArray(body.properties) ? body.properties.filter((p): p is string => typeof p === 'string') : [];
    // Records in creation order (ids ascending), the order of the sort our connector asks for.
    const matches = [...this.store(type).values()].filter((o) => tests.length === 0 || tests.some((group) => group.every((t) => t(o))));
    const page = matches.slice(after, after + limit);
    const next = after + page.length;
    return [
      200,
      { total: matches.length, results: page.map((o) => view(o, wanted)), ...(next < matches.length ? { paging: { next: { after: String(next) } } } : {}) },
    ];
  }

  private associateCompany(contactId: string, companyId: string, json: unknown): [number, unknown] {
    if (!this.contacts.has(contactId)) return [404, error('OBJECT_NOT_FOUND', `contacts ${contactId} not found`)];
    if (!this.companies.has(companyId)) return [404, error('OBJECT_NOT_FOUND', `companies ${companyId} not found`)];
    if (!Array.isArray(json) || json.length === 0) return [400, error('VALIDATION_ERROR', 'the body must be an array of association types')];
    for (const t of json.map(asRecord)) {
      const typeId = t.associationTypeId;
      if (t.associationCategory !== 'HUBSPOT_DEFINED' || typeof typeId !== 'number' || !(ASSOCIATION_TYPES['contacts→companies'] ?? []).includes(typeId)) {
        return [
          400,
          error('VALIDATION_ERROR', `association type id ${String(typeId)} does not exist between contacts and companies`, 'INVALID_ASSOCIATION_TYPE'),
        ];
      }
      const exists = (this.associationsFrom.get(`contacts/${contactId}`) ?? []).some((a) => a.toId === companyId && a.typeId === typeId);
      if (!exists) this.associate({ fromType: 'contacts', fromId: contactId, toType: 'companies', toId: companyId, category: 'HUBSPOT_DEFINED', typeId });
    }
    return [200, { fromObjectTypeId: '0-1', fromObjectId: Number(contactId), toObjectTypeId: '0-2', toObjectId: Number(companyId), labels: [] }];
  }

  private checkProperties(type: ObjectType, raw: unknown, creating: boolean): unknown {
    if (raw === null || typeof raw !== 'object' || Array.isArray(raw)) return error('VALIDATION_ERROR', 'properties must be an object');
    const properties = raw as Record<string, unknown>;
    const problems: Array<{ isValid: false; message: string; error: string; name: string }> = [];
    for (const [name, value] of Object.entries(properties)) {
      if (!PROPERTIES[type].includes(name)) {
        problems.push({ isValid: false, message: `Property "${name}" does not exist`, error: 'PROPERTY_DOESNT_EXIST', name });
        continue;
      }
      if (typeof value !== 'string' && typeof value !== 'number' && typeof value !== 'boolean') {
        problems.push({ isValid: false, message: `${String(value)} is not a valid value for ${name}`, error: 'INVALID_VALUE', name });
        continue;
      }
      const text = String(value);
      const allowed = ENUMS[name];
      if (allowed && !allowed.includes(text))
        problems.push({ isValid: false, message: `${text} was not one of the allowed options: ${allowed.join(', ')}`, error: 'INVALID_OPTION', name });
      if (name === 'email' && !isEmail(text)) problems.push({ isValid: false, message: `Email address ${text} is invalid`, error: 'INVALID_EMAIL', name });
      if (name === 'hs_timestamp' && !/^\d{10,13}$/.test(text) && Number.isNaN(Date.parse(text)))
        problems.push({ isValid: false, message: `${text} is not a valid timestamp`, error: 'INVALID_DATE', name });
      if (name === 'hs_note_body' && text.length > 65_536)
        problems.push({ isValid: false, message: 'hs_note_body is longer than 65536 characters', error: 'INVALID_LENGTH', name });
      if (name === 'hubspot_owner_id' && !this.owners.some((o) => o.id === text))
        problems.push({ isValid: false, message: `${text} is not a valid owner id`, error: 'INVALID_OWNER_ID', name });
    }
    if (creating) {
      for (const name of REQUIRED_ON_CREATE[type])
        if (properties[name] === undefined) problems.push({ isValid: false, message: `${name} is required`, error: 'REQUIRED_FIELD', name });
    }
    if (problems.length === 0) return undefined;
    return {
      ...error('VALIDATION_ERROR', `Property values were not valid: ${JSON.stringify(problems)}`),
      errors: problems.map((p) => ({ message: p.message, code: p.error, context: { propertyName: [p.name] } })),
    };
  }

  private insert(type: ObjectType, properties: Record<string, string>): HsObject {
    const now = new Date().toISOString();
    const id = String((this.nextId += 1));
    const object: HsObject = { id, properties: { ...properties, hs_object_id: id, createdate: now }, createdAt: now, updatedAt: now, archived: false };
    this.store(type).set(id, object);
    if (type === 'contacts' || type === 'companies') {
      const index = this.indexes[type];
      const key = properties[index.property];
      if (key) index.ids.set(key, id);
      if (index.size === this.store(type).size - 1) index.size = this.store(type).size;
    }
    return object;
  }
}

export async function startHubspotEmulator(options: HubspotEmulatorOptions = {}): Promise<HubspotEmulator> {
  return new HubspotEmulator(options).start();
}

// ---------------------------------------------------------------------------------------------

/**
 * A numeric path at its date-version twin, which HubSpot serves alike until the numeric ones lose
 * support: `/crm/v3/objects/...` and `/crm/v4/objects/...` → `/crm/objects/2026-03/...`,
 * `/crm/v4/associations/...` → `/crm/associations/2026-03/...`, `/crm/v3/lists|owners...` → `/crm/lists|owners/2026-03...`.
 */
function datedPath(path: string): string {
  const [version] = HUBSPOT_VERSIONS;
  const numeric = /^\/crm\/v[34]\/(objects|associations|lists|owners)(\/.*)?$/.exec(path);
  return numeric ? `/crm/${numeric[1]}/${version}${numeric[2] ?? ''}` : path;
}

function error(category: string, message: string, subCategory?: string): Record<string, unknown> {
  return { status: 'error', message, correlationId: randomUUID(), category, ...(subCategory ? { subCategory } : {}) };
}

function faultBody(status: number): unknown {
  if (status === 401) return error('EXPIRED_AUTHENTICATION', 'The OAuth token used to make this call expired 1 minute(s) ago.');
  if (status === 403) return error('MISSING_SCOPES', 'This app has not been granted all required scopes to make this call.');
  if (status === 429)
    return {
      status: 'error',
      message: 'You have reached your ten_secondly_rolling limit.',
      errorType: 'RATE_LIMIT',
      correlationId: randomUUID(),
      policyName: 'TEN_SECONDLY_ROLLING',
    };
  if (status >= 500) return error('INTERNAL_ERROR', 'internal error');
  return error('VALIDATION_ERROR', 'injected failure');
}

function view(object: HsObject, wanted: string[]): Record<string, unknown> {
  const properties: Record<string, string | null> = { hs_object_id: object.id, createdate: object.createdAt, lastmodifieddate: object.updatedAt };
  for (const name of wanted) properties[name] = object.properties[name] ?? null;
  return { id: object.id, properties, createdAt: object.createdAt, updatedAt: object.updatedAt, archived: false };
}

function stringify(properties: Record<string, unknown>): Record<string, string> {
  return Object.fromEntries(Object.entries(properties).map(([k, v]) => [k, k === 'email' ? String(v).toLowerCase() : String(v)]));
}

function isEmail(value: string): boolean {
  return /^[^\s@]+@[^\s@]+\.[^\s@]+$/.test(value);
}

function asRecord(value: unknown): Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>) : {};
}
