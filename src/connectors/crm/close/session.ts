import type { HttpResponse } from '../../http/client.js';
import { CrmError } from '../errors.js';
import { asRecord } from '../records.js';
import { CrmSession, type ConnectorDeps } from '../session.js';
import { closeCredentials, type CloseCredentials } from './credentials.js';
import { describeErrors } from './errors.js';

/** Refresh this long before the access token's expiry (Close's tokens live an hour). */
const EXPIRY_MARGIN_MS = 60_000;

/** One authorised JSON call below `/api/v1`: method, path, query, body, and whether sending it twice is harmless. */
export interface CloseRequest {
  method: string;
  path: string;
  query?: Record<string, string>;
  json?: unknown;
  idempotent: boolean;
}

/**
 * One run's conversation with Close (docs/vendors/close.md): an API key as HTTP Basic (the key as user
 * name, the password empty) or an OAuth access token as a bearer, refreshed at `/oauth2/token/` ahead of
 * its expiry and on a 401; Close's error format.
 */
export class CloseSession extends CrmSession {
  constructor(
    private credentials: CloseCredentials,
    private readonly baseUrl: string,
    deps: ConnectorDeps,
    private readonly renew: (used: CloseCredentials & { accessToken: string }, exchange: () => Promise<CloseCredentials>) => Promise<CloseCredentials>,
  ) {
    super(deps, 'Close');
  }

  async json(step: string, request: CloseRequest): Promise<Record<string, unknown>> {
    await this.refreshIfExpiring();
    const url = new URL(`${this.baseUrl}/api/v1${request.path}`);
    for (const [key, value] of Object.entries(request.query ?? {})) url.searchParams.set(key, value);
    const response = await this.send(step, () => ({ method: request.method, url, json: request.json, idempotent: request.idempotent }));
    return asRecord(response.json());
  }

  /** How long a shared call waits for more syncs (ConnectorDeps.shareGatherMs). */
  gatherMs(): number {
    return this.deps.shareGatherMs ?? 0;
  }

  /** Sessions with one key (or token) act for one organisation with the same rights, so they may share a call. */
  groupKey(): string {
    return `${this.baseUrl}\n${this.credentials.apiKey ?? this.credentials.accessToken ?? ''}`;
  }

  /** What this connection's runs remember between syncs: the connection at this API, or else its key. */
  memoryKey(): string {
    return this.deps.memoryKey === undefined ? this.groupKey() : `${this.deps.memoryKey}\n${this.baseUrl}`;
  }

  /** OAuth tokens live `expires_in` (an hour): refreshed ahead when the expiry is known. */
  private async refreshIfExpiring(): Promise<void> {
    const expiresAt = this.credentials.expiresAt ? Date.parse(this.credentials.expiresAt) : NaN;
    if (Number.isFinite(expiresAt) && expiresAt - this.deps.now() < EXPIRY_MARGIN_MS && this.canRefresh()) await this.refresh('token refresh');
  }

  protected override authorization(): string {
    const key = this.credentials.apiKey;
    return key === undefined ? `Bearer ${this.accessToken()}` : `Basic ${basic(key)}`;
  }

  protected accessToken(): string {
    return this.credentials.accessToken ?? '';
  }

  protected secrets(): string[] {
    const c = this.credentials;
    return [c.apiKey, c.apiKey === undefined ? undefined : basic(c.apiKey), c.accessToken, c.refreshToken, c.clientSecret].filter(
      (s): s is string => typeof s === 'string',
    );
  }

  protected canRefresh(): boolean {
    const c = this.credentials;
    return Boolean(c.accessToken && c.refreshToken && c.clientId && c.clientSecret);
  }

  /** An API key does not expire: its 401 is a revoked key. */
  protected isExpired(response: HttpResponse): boolean {
    return response.status === 401 && this.credentials.apiKey === undefined;
  }

  protected async refresh(step: string): Promise<void> {
    const used = this.credentials;
    if (used.accessToken === undefined) return;
    this.credentials = await this.renew({ ...used, accessToken: used.accessToken }, () => this.exchange(step));
  }

  /** One refresh-token grant: the new credentials (Close rotates the refresh token), not yet stored. */
  private async exchange(step: string): Promise<CloseCredentials> {
    const c = this.credentials;
    const answer = await this.sendRaw('token refresh', {
      method: 'POST',
      url: `${this.baseUrl}/oauth2/token/`,
      form: { grant_type: 'refresh_token', refresh_token: c.refreshToken ?? '', client_id: c.clientId ?? '', client_secret: c.clientSecret ?? '' },
      idempotent: false,
    });
    if (!answer.ok) throw this.refreshRefused(step, answer.response, answer.retryAfterMs);
    const body = asRecord(answer.response.json());
    if (typeof body.access_token !== 'string') throw new CrmError('unavailable', 'Close token refresh answered without an access token');
    const next = closeCredentials.safeParse({
      ...c,
      accessToken: body.access_token,
      ...(typeof body.refresh_token === 'string' ? { refreshToken: body.refresh_token } : {}),
      ...(typeof body.expires_in === 'number' ? { expiresAt: new Date(this.deps.now() + body.expires_in * 1000).toISOString() } : {}),
    });
    if (!next.success) throw new CrmError('unavailable', 'Close token refresh answered credentials that cannot be used');
    return next.data;
  }

  protected vendorMessage(body: unknown): string | undefined {
    return describeErrors(body);
  }
}

function basic(apiKey: string): string {
  return Buffer.from(`${apiKey}:`).toString('base64');
}
