import type { HttpResponse } from '../../http/client.js';
import { asRecord } from '../records.js';
import { CrmSession, type ConnectorDeps } from '../session.js';
import type { AttioCredentials } from './credentials.js';
import { describeErrors } from './errors.js';

/** One authorised JSON call below `/v2`: method, path, query, body, and whether sending it twice is harmless. */
export interface AttioRequest {
  method: string;
  path: string;
  query?: Record<string, string>;
  json?: unknown;
  idempotent: boolean;
}

/** One run's conversation with Attio (docs/vendors/attio.md): a bearer token and Attio's error format; no refresh. */
export class AttioSession extends CrmSession {
  constructor(
    private readonly credentials: AttioCredentials,
    private readonly baseUrl: string,
    deps: ConnectorDeps,
  ) {
    super(deps, 'Attio');
  }

  /** The answer's `data`. */
  async data(step: string, request: AttioRequest): Promise<unknown> {
    const url = new URL(`${this.baseUrl}/v2${request.path}`);
    for (const [key, value] of Object.entries(request.query ?? {})) url.searchParams.set(key, value);
    const response = await this.send(step, () => ({ method: request.method, url, json: request.json, idempotent: request.idempotent }));
    return asRecord(response.json()).data;
  }

  /** What this connection's runs remember between syncs: the connection at this API, or else its token. */
  memoryKey(): string {
    return this.deps.memoryKey === undefined ? `${this.baseUrl}\n${this.credentials.accessToken}` : `${this.deps.memoryKey}\n${this.baseUrl}`;
  }

  protected accessToken(): string {
    return this.credentials.accessToken;
  }

  protected secrets(): string[] {
    return [this.credentials.accessToken];
  }

  /** Attio documents no refresh grant: a 401 means reconnecting. */
  protected canRefresh(): boolean {
    return false;
  }

  protected isExpired(response: HttpResponse): boolean {
    return response.status === 401;
  }

  protected refresh(): Promise<void> {
    return Promise.resolve();
  }

  protected vendorMessage(body: unknown): string | undefined {
    return describeErrors(body);
  }
}
