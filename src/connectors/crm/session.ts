import type { z } from 'zod';
import { OutboundError, requestWithRetry, type HttpClient, type HttpRequest, type HttpResponse, type RetryBudget, type RetryPolicy } from '../http/client.js';
import { CrmError, type CrmErrorKind } from './errors.js';
import { truncate } from './text.js';
import type { CrmRun } from './types.js';

/** What a connector needs besides credentials; `crmConnector()` fills it from the config. */
export interface ConnectorDeps {
  http: HttpClient;
  retry: RetryPolicy;
  /** Total time one write may spend waiting between retries before it hands the wait to the job layer. */
  retryBudgetMs: number;
  /** Per-request deadline. */
  timeoutMs: number;
  now(): number;
  /**
   * How long a call several syncs share waits for more of them before it goes: worth it when the
   * connection's request budget, not our speed, is the limit (a gated connection); 0 otherwise.
   */
  shareGatherMs?: number;
  /**
   * Names the connection (and its CRM account) whose runs may remember what they learnt of its CRM (a
   * domain's company, an email's contact); the session adds the API's address. Default: the token.
   */
  memoryKey?: string;
}

interface SendOptions extends HttpRequest {
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
  /** The `Authorization` header of a call: the access token as a bearer (Close's API keys go as Basic). */
  protected authorization(): string {
    return `Bearer ${this.accessToken()}`;
  }
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
        headers: { ...options.headers, authorization: this.authorization() },
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

  /**
   * The token endpoint's refusal of a refresh: a refused grant (RFC 6749 `invalid_grant`: the refresh
   * token was revoked, expired or rotated away) needs the customer to reconnect, whatever the status
   * says; a 429 or 5xx is later, as anywhere.
   */
  protected refreshRefused(step: string, response: HttpResponse, retryAfterMs: number | undefined): CrmError {
    const error = this.errorFor('token refresh', response, retryAfterMs);
    if (error.kind !== 'rejected') return error;
    return new CrmError('auth', `${error.message} while refreshing for ${step}`, { httpStatus: response.status, payload: error.payload });
  }

  /** Replaces every credential value in strings of `value` (deeply) with `[redacted]`: for what a CRM answered, before it is stored or thrown. */
  scrub<T>(value: T): T {
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
  run: Pick<CrmRun, 'renewCredentials'>,
  schema: z.ZodType<C>,
  crmName: string,
  used: C,
  exchange: () => Promise<C>,
): Promise<C> {
  const stored = schema.safeParse(await run.renewCredentials(used, exchange));
  if (!stored.success) throw new CrmError('auth', `The stored ${crmName} credentials cannot be read: reconnect the CRM`);
  return stored.data;
}
