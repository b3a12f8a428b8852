import type { z } from 'zod';
import { OutboundError, requestWithRetry, type HttpClient, type HttpRequest, type HttpResponse, type RetryBudget, type RetryPolicy } from '../http/client.js';

/**
 * The one interface the sync job calls to write an event into a customer's CRM. Each CRM kind
 * implements {@link CrmConnector}; `crmConnector()` in ./index.ts picks one.
 */

/** One received event, as the sync job hands it to a connector. */
export interface CrmEvent {
  /** Canonical type (`EMAIL_SENT`, `MESSAGE_SENT`, ...; see src/domain/event-types.ts). */
  eventType: string;
  /** Sequencer platform, lowercase. */
  platform: string;
  /** The email, or for social-only events the profile URL: what the sync row stores as `toEmail`. */
  identity: string;
  email: string | null;
  profileUrl: string | null;
  firstName: string | null;
  lastName: string | null;
  company: string | null;
  companyDomain: string | null;
  subject: string | null;
  text: string | null;
  direction: 'outbound' | 'inbound' | null;
  campaignName: string | null;
  /** The sending mailbox or sequencer user, when the payload names it: the owner `assignContactOwner` looks up. */
  senderEmail: string | null;
  /** Processing time; stable across retries of one sync, so activities carry one timestamp. */
  occurredAt: Date;
  requestId: string;
}

/** A source's CRM flags (prisma Source). */
export interface SourceOptions {
  createOrUpdateCompany: boolean;
  createOrUpdateTask: boolean;
  assignContactOwner: boolean;
  /** Salesforce: the object created when no Contact or Lead matches (`Lead` or `Contact`); default Lead. */
  crmObjectType: string | null;
}

/** What each step already created, persisted in syncs.crm_state after every step so a retry resumes, never duplicates. */
export type CrmState = Record<string, unknown>;

export interface CrmRun {
  event: CrmEvent;
  options: SourceOptions;
  /** The sync's crm_state: `{}` on a first attempt. */
  state: CrmState;
  /**
   * Persists the state; called after every step that created something, and before a create is sent.
   * `last`: no step follows, so the job may store it together with the outcome, which comes next.
   */
  saveState(state: CrmState, options?: { last?: boolean }): Promise<void>;
  /**
   * Replaces expired OAuth credentials, once for all runs of one connection that find them expired (a
   * refresh-token rotation voids the old refresh token, so a second exchange with it would fail): under
   * the connection's lock, the credentials stored now are returned as they are when their access token is
   * no longer `used`'s (another run refreshed them, or the customer reconnected); otherwise `exchange` gets
   * new ones, persisted before this resolves.
   */
  renewCredentials(used: { accessToken: string }, exchange: () => Promise<unknown>): Promise<unknown>;
}

/** A written event: `warning` when the main write succeeded but a side step failed (result.warnings). */
export type CrmOutcome = { status: 'success' | 'warning'; result: Record<string, unknown> };

/** One side step that failed while the event itself was written. */
export interface CrmWarning {
  step: string;
  message: string;
  httpStatus?: number;
  /** The CRM's error body. */
  payload?: unknown;
}

export type CrmErrorKind = 'auth' | 'rate_limited' | 'unavailable' | 'rejected';

/**
 * Why a write failed. `rate_limited` and `unavailable` are worth rescheduling (after `retryAfterMs`
 * when set); `auth` needs the customer to reconnect; `rejected` will fail the same way again.
 * Messages never carry credentials; `payload` is the CRM's error body for the sync row.
 */
export class CrmError extends Error {
  readonly kind: CrmErrorKind;
  readonly httpStatus?: number;
  readonly retryAfterMs?: number;
  readonly payload?: unknown;

  constructor(kind: CrmErrorKind, message: string, details: { httpStatus?: number; retryAfterMs?: number; payload?: unknown } = {}) {
    super(message);
    this.name = 'CrmError';
    this.kind = kind;
    if (details.httpStatus !== undefined) this.httpStatus = details.httpStatus;
    if (details.retryAfterMs !== undefined) this.retryAfterMs = details.retryAfterMs;
    if (details.payload !== undefined) this.payload = details.payload;
  }

  /** Whether the job layer should try again later. */
  get retryable(): boolean {
    return this.kind === 'rate_limited' || this.kind === 'unavailable';
  }
}

export interface CrmConnector {
  write(run: CrmRun): Promise<CrmOutcome>;
}

// ---------------------------------------------------------------------------------------------
// Shared by the connectors below this folder (the job layer needs only what is above).

/** What a connector needs besides credentials; `crmConnector()` fills it from the config. */
export interface ConnectorDeps {
  http: HttpClient;
  retry: RetryPolicy;
  /** Total time one write may spend waiting between retries before it hands the wait to the job layer. */
  retryBudgetMs: number;
  /** Per-request deadline. */
  timeoutMs: number;
  now(): number;
}

export interface SendOptions extends HttpRequest {
  /** Whether sending twice is harmless (reads, searches, upserts, PUT/PATCH of fixed values). */
  idempotent: boolean;
}

/**
 * One write's conversation with a CRM: bearer auth, retries of 429/5xx within the write's budget,
 * one OAuth refresh on an expired session, and errors mapped to {@link CrmError} with every
 * credential scrubbed from messages and payloads.
 */
export abstract class CrmSession {
  private readonly budget: RetryBudget;
  private refreshed = false;

  protected constructor(
    protected readonly deps: ConnectorDeps,
    protected readonly crmName: string,
  ) {
    this.budget = { remainingMs: deps.retryBudgetMs };
  }

  protected abstract accessToken(): string;
  /** Every secret value the connector holds, to scrub from anything it throws. */
  protected abstract secrets(): string[];
  protected abstract canRefresh(): boolean;
  /** Whether an answer says the access token expired (HubSpot 401, Salesforce 401 INVALID_SESSION_ID). */
  protected abstract isExpired(response: HttpResponse): boolean;
  /** Gets new tokens through CrmRun.renewCredentials, then uses them. */
  protected abstract refresh(step: string): Promise<void>;
  /** The CRM's own message in an error body, for our error message. */
  protected abstract vendorMessage(body: unknown): string | undefined;

  /**
   * Sends an authorised request; returns a 2xx answer or throws a CrmError. `build` is called again
   * after a refresh, since the refresh may move the API (Salesforce's instance_url).
   */
  async send(step: string, build: () => SendOptions): Promise<HttpResponse> {
    for (;;) {
      const options = build();
      const response = await this.sendRaw(step, {
        ...options,
        headers: { ...options.headers, authorization: `Bearer ${this.accessToken()}` },
      });
      if (response.ok) return response.response;
      if (this.isExpired(response.response) && !this.refreshed) {
        this.refreshed = true;
        if (!this.canRefresh())
          throw this.error('auth', step, response.response, undefined, 'the access token expired and the connection has no refresh token: reconnect');
        await this.refresh(step);
        continue;
      }
      throw this.errorFor(step, response.response, response.retryAfterMs);
    }
  }

  /** Sends without auth handling (token endpoints); retries as {@link send}. */
  protected async sendRaw(step: string, options: SendOptions): Promise<{ ok: boolean; response: HttpResponse; retryAfterMs?: number }> {
    const { idempotent, ...request } = options;
    try {
      const result = await requestWithRetry(
        this.deps.http,
        { timeoutMs: this.deps.timeoutMs, ...request },
        { policy: this.deps.retry, budget: this.budget, idempotent },
      );
      const ok = result.response.status >= 200 && result.response.status < 300;
      return result.retryAfterMs === undefined ? { ok, response: result.response } : { ok, response: result.response, retryAfterMs: result.retryAfterMs };
    } catch (error) {
      if (error instanceof OutboundError) {
        // A blocked address is configuration, not an outage: retrying will not help.
        const kind = error.code === 'blocked' || error.code === 'invalid_url' ? 'rejected' : 'unavailable';
        throw new CrmError(kind, this.scrub(`${this.crmName} ${step}: ${error.message}`));
      }
      throw error;
    }
  }

  /** Maps a non-2xx answer: 401/403 auth, 429 rate_limited, 5xx unavailable, other 4xx rejected. */
  protected errorFor(step: string, response: HttpResponse, retryAfterMs: number | undefined): CrmError {
    const status = response.status;
    const kind: CrmErrorKind = status === 401 || status === 403 ? 'auth' : status === 429 ? 'rate_limited' : status >= 500 ? 'unavailable' : 'rejected';
    return this.error(kind, step, response, retryAfterMs);
  }

  protected error(kind: CrmErrorKind, step: string, response: HttpResponse, retryAfterMs: number | undefined, note?: string): CrmError {
    const payload = response.json() ?? (response.body.byteLength > 0 ? truncate(response.text(), 2000) : undefined);
    const vendor = this.vendorMessage(payload);
    const message = `${this.crmName} ${step} failed: HTTP ${response.status}${vendor ? ` ${truncate(vendor, 300)}` : ''}${note ? ` (${note})` : ''}`;
    return new CrmError(kind, this.scrub(message), {
      httpStatus: response.status,
      ...(retryAfterMs !== undefined ? { retryAfterMs } : {}),
      ...(payload !== undefined ? { payload: this.scrub(payload) } : {}),
    });
  }

  /** Replaces every credential value in strings of `value` (deeply) with `[redacted]`. */
  protected scrub<T>(value: T): T {
    const secrets = this.secrets().filter((s) => s.length >= 4);
    const walk = (v: unknown): unknown => {
      if (typeof v === 'string') return secrets.reduce((out, secret) => out.split(secret).join('[redacted]'), v);
      if (Array.isArray(v)) return v.map(walk);
      if (v !== null && typeof v === 'object') return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, walk(x)]));
      return v;
    };
    return walk(value) as T;
  }
}

/**
 * Renews through the job layer ({@link CrmRun.renewCredentials}), and checks what it hands back: the
 * credentials another run stored must pass the connector's schema like the ones it started with.
 */
export async function renewCredentials<C extends { accessToken: string }>(
  run: CrmRun,
  schema: z.ZodType<C>,
  crmName: string,
  used: C,
  exchange: () => Promise<C>,
): Promise<C> {
  const stored = schema.safeParse(await run.renewCredentials(used, exchange));
  if (!stored.success) throw new CrmError('auth', `The stored ${crmName} credentials cannot be read: reconnect the CRM`);
  return stored.data;
}

/** The run's state, saved after each step so that a retry skips what was written. */
export class StateBook<S extends CrmState> {
  readonly state: S;

  constructor(private readonly run: CrmRun) {
    this.state = structuredClone(run.state) as S;
  }

  /** Merges `patch` (undefined values delete keys) and persists the whole state. */
  async save(patch: { [K in keyof S]?: S[K] | undefined }, options: { last?: boolean } = {}): Promise<void> {
    this.note(patch);
    await this.run.saveState(structuredClone(this.state), options);
  }

  /**
   * Merges `patch` without persisting it: for what a step that is safe to repeat found (an upsert), which
   * the next save carries. Lost with a crash, it costs a repeated upsert, never a duplicate.
   */
  note(patch: { [K in keyof S]?: S[K] | undefined }): void {
    for (const [key, value] of Object.entries(patch)) {
      if (value === undefined) delete (this.state as Record<string, unknown>)[key];
      else (this.state as Record<string, unknown>)[key] = value;
    }
  }
}

/**
 * Runs a side step (company, association, owner, follow-up task): a rejection becomes a warning and
 * the write goes on; auth, rate-limit and outage errors still stop the write, to be retried.
 */
export async function sideStep(warnings: CrmWarning[], step: string, action: () => Promise<void>): Promise<void> {
  try {
    await action();
  } catch (error) {
    if (!(error instanceof CrmError) || error.kind !== 'rejected') throw error;
    warnings.push({
      step,
      message: error.message,
      ...(error.httpStatus !== undefined ? { httpStatus: error.httpStatus } : {}),
      ...(error.payload !== undefined ? { payload: error.payload } : {}),
    });
  }
}

/** `EMAIL_SENT` → `Email sent`. */
export function eventLabel(eventType: string): string {
  const words = eventType.toLowerCase().replace(/_/g, ' ').trim();
  return words.charAt(0).toUpperCase() + words.slice(1);
}

export function truncate(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, max - 1)}…`;
}

/** Providers whose domain says nothing about a person's company. */
const FREEMAIL = new Set([
  'gmail.com',
  'googlemail.com',
  'yahoo.com',
  'hotmail.com',
  'outlook.com',
  'live.com',
  'msn.com',
  'icloud.com',
  'me.com',
  'mac.com',
  'aol.com',
  'proton.me',
  'protonmail.com',
  'gmx.com',
  'gmx.de',
  'gmx.net',
  'web.de',
  'yandex.com',
  'yandex.ru',
  'mail.ru',
  'qq.com',
  '163.com',
  'zoho.com',
]);

/** The event's company domain, or its email's domain unless that is a free mail provider. */
export function companyDomainOf(event: CrmEvent): string | null {
  const explicit = event.companyDomain
    ?.trim()
    .toLowerCase()
    .replace(/^https?:\/\//, '')
    .replace(/^www\./, '')
    .replace(/\/.*$/, '');
  if (explicit) return explicit;
  const domain = event.email?.split('@')[1]?.trim().toLowerCase();
  return domain && !FREEMAIL.has(domain) ? domain : null;
}
