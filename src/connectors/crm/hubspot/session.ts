import { OutboundError, retryAfterMs, type HttpResponse } from '../../http/client.js';
import { CrmError } from '../errors.js';
import { asRecord } from '../records.js';
import { CrmSession, type ConnectorDeps } from '../session.js';
import type { HubspotCredentials } from './credentials.js';
import { describeErrors } from './errors.js';
import { hubspotPaths } from './paths.js';

/** Refresh this long before the access token's expiry. */
const EXPIRY_MARGIN_MS = 60_000;

/** One authorised JSON call: method, path below the API's base, query, body, and whether sending it twice is harmless. */
export interface HubspotRequest {
  method: string;
  path: string;
  query?: Record<string, string>;
  json?: unknown;
  idempotent: boolean;
}

/** What a call several syncs share made of HubSpot's answer: its body (a 2xx), or whether HubSpot may have carried it out. */
export type TriedCall = { ok: true; status: number; body: unknown } | { ok: false; written: 'no' | 'maybe' };

/** One run's conversation with HubSpot: bearer auth, OAuth refresh, HubSpot's error format. */
export class HubspotSession extends CrmSession {
  constructor(
    private credentials: HubspotCredentials,
    private readonly baseUrl: string,
    deps: ConnectorDeps,
    private readonly renew: (used: HubspotCredentials, exchange: () => Promise<HubspotCredentials>) => Promise<HubspotCredentials>,
  ) {
    super(deps, 'HubSpot');
  }

  async json(step: string, request: HubspotRequest): Promise<unknown> {
    const url = new URL(`${this.baseUrl}${request.path}`);
    for (const [key, value] of Object.entries(request.query ?? {})) url.searchParams.set(key, value);
    const response = await this.send(step, () => ({ method: request.method, url, json: request.json, idempotent: request.idempotent }));
    return response.json();
  }

  /** How long a shared call waits for more syncs (ConnectorDeps.shareGatherMs). */
  gatherMs(): number {
    return this.deps.shareGatherMs ?? 0;
  }

  /** Sessions with one key act for one HubSpot account with the same token, so they may share a call. */
  groupKey(): string {
    return `${this.baseUrl}\n${this.credentials.accessToken}`;
  }

  /** What this connection's runs remember between syncs (companies by domain, contacts, owners): the connection and its portal at this API, or else its token. */
  memoryKey(): string {
    return this.deps.memoryKey === undefined ? this.groupKey() : `${this.deps.memoryKey}\n${this.baseUrl}`;
  }

  /**
   * One POST, no retry and no refresh, for a call several syncs share: its answer if it is a 2xx; else
   * whether the CRM may have written it (`maybe`: no answer, or a 5xx) or certainly did not (`no`: a 4xx,
   * or refused before sending). A 429 is the account's answer to everyone sharing the call: thrown as
   * `rate_limited` with its `Retry-After` (each caller asking again at once would be the storm it stops).
   */
  async tryPost(step: string, path: string, json: unknown): Promise<TriedCall> {
    let response: HttpResponse;
    try {
      response = await this.deps.http.request({
        method: 'POST',
        url: `${this.baseUrl}${path}`,
        json,
        headers: { authorization: `Bearer ${this.credentials.accessToken}` },
        timeoutMs: this.deps.timeoutMs,
      });
    } catch (error) {
      if (error instanceof CrmError) throw error;
      return { ok: false, written: error instanceof OutboundError && !error.maybeSent ? 'no' : 'maybe' };
    }
    if (response.status === 429) throw this.errorFor(step, response, retryAfterMs(response.headers['retry-after']));
    if (response.status >= 200 && response.status < 300) return { ok: true, status: response.status, body: response.json() };
    return { ok: false, written: response.status >= 500 ? 'maybe' : 'no' };
  }

  /** OAuth tokens live 30 minutes and HubSpot says a 401 is no reliable refresh signal: refresh ahead. */
  async refreshIfExpiring(): Promise<void> {
    const expiresAt = this.credentials.expiresAt ? Date.parse(this.credentials.expiresAt) : NaN;
    if (Number.isFinite(expiresAt) && expiresAt - this.deps.now() < EXPIRY_MARGIN_MS && this.canRefresh()) await this.refresh('token refresh');
  }

  protected accessToken(): string {
    return this.credentials.accessToken;
  }

  protected secrets(): string[] {
    const c = this.credentials;
    return [c.accessToken, c.refreshToken, c.clientSecret].filter((s): s is string => typeof s === 'string');
  }

  protected canRefresh(): boolean {
    return Boolean(this.credentials.refreshToken && this.credentials.clientId && this.credentials.clientSecret);
  }

  protected isExpired(response: HttpResponse): boolean {
    return response.status === 401;
  }

  protected async refresh(step: string): Promise<void> {
    this.credentials = await this.renew(this.credentials, () => this.exchange(step));
  }

  /** One refresh-token grant at the token endpoint: the new credentials, not yet stored. */
  private async exchange(step: string): Promise<HubspotCredentials> {
    const c = this.credentials;
    const answer = await this.sendRaw('token refresh', {
      method: 'POST',
      url: `${this.baseUrl}${hubspotPaths.token}`,
      form: { grant_type: 'refresh_token', client_id: c.clientId ?? '', client_secret: c.clientSecret ?? '', refresh_token: c.refreshToken ?? '' },
      idempotent: false,
    });
    if (!answer.ok) throw this.refreshRefused(step, answer.response, answer.retryAfterMs);
    const body = asRecord(answer.response.json());
    if (typeof body.access_token !== 'string') throw new CrmError('unavailable', 'HubSpot token refresh answered without an access token');
    const next: HubspotCredentials = {
      ...c,
      accessToken: body.access_token,
      ...(typeof body.refresh_token === 'string' ? { refreshToken: body.refresh_token } : {}),
      ...(typeof body.expires_in === 'number' ? { expiresAt: new Date(this.deps.now() + body.expires_in * 1000).toISOString() } : {}),
    };
    return next;
  }

  protected vendorMessage(body: unknown): string | undefined {
    return describeErrors(body);
  }
}
