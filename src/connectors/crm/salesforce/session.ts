import type { HttpResponse } from '../../http/client.js';
import { CrmError } from '../errors.js';
import { asRecord } from '../records.js';
import { CrmSession, type ConnectorDeps } from '../session.js';
import { salesforceCredentials, type SalesforceCredentials } from './credentials.js';
import { describeErrors, kindOverride } from './errors.js';

export interface SalesforceOptions {
  loginUrl: string;
  /** REST API version, `vXX.X`. */
  apiVersion: string;
}

export const DEFAULT_SALESFORCE_API_VERSION = 'v62.0';

/** One record's answer in an sObject Collections create: its id, or why not. */
export type CollectionResult = { id: string } | { error: CrmError };

/** One run's conversation with Salesforce: bearer auth on the instance, OAuth refresh at the login host, Salesforce's error format. */
export class SalesforceSession extends CrmSession {
  constructor(
    private credentials: SalesforceCredentials,
    private readonly options: SalesforceOptions,
    deps: ConnectorDeps,
    private readonly renew: (used: SalesforceCredentials, exchange: () => Promise<SalesforceCredentials>) => Promise<SalesforceCredentials>,
  ) {
    super(deps, 'Salesforce');
  }

  /** How long a shared call waits for more syncs (ConnectorDeps.shareGatherMs). */
  gatherMs(): number {
    return this.deps.shareGatherMs ?? 0;
  }

  /** Sessions with one key act for one org with the same token, so they may share a call. */
  groupKey(): string {
    return `${this.credentials.instanceUrl}\n${this.credentials.accessToken}`;
  }

  /** What this connection's runs remember between syncs (people by email, users): the connection and its org's instance, or else its token. */
  memoryKey(): string {
    return this.deps.memoryKey === undefined ? this.groupKey() : `${this.deps.memoryKey}\n${this.credentials.instanceUrl}`;
  }

  private url(path: string): URL {
    return new URL(`${this.credentials.instanceUrl.replace(/\/+$/, '')}/services/data/${this.options.apiVersion}${path}`);
  }

  async queryFirstId(step: string, soql: string): Promise<string | undefined> {
    for await (const records of this.queryAll(step, soql)) {
      const first = asRecord(records[0]);
      return typeof first.Id === 'string' ? first.Id : undefined;
    }
    return undefined;
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

  /**
   * Creates up to 200 records in one call (sObject Collections, `allOrNone: false`: each record is
   * created or refused on its own); Salesforce answers in the records' order.
   */
  async createMany(step: string, records: Array<{ sobject: string; fields: Record<string, string> }>): Promise<CollectionResult[]> {
    const json = { allOrNone: false, records: records.map((r) => ({ attributes: { type: r.sobject }, ...r.fields })) };
    const answer = (await this.send(step, () => ({ method: 'POST', url: this.url('/composite/sobjects'), json, idempotent: false }))).json();
    const results = Array.isArray(answer) ? answer.map(asRecord) : [];
    return records.map((_, i) => {
      const result = results[i];
      if (result?.success === true && typeof result.id === 'string') return { id: result.id };
      if (result === undefined)
        return { error: new CrmError('unavailable', `Salesforce ${step} answered without this record: the next attempt looks for it first`) };
      const errors = Array.isArray(result.errors) ? result.errors : [];
      const message = this.vendorMessage(errors.map(asRecord).map((e) => ({ errorCode: e.statusCode, message: e.message }))) ?? 'refused';
      return { error: new CrmError('rejected', this.scrub(`Salesforce ${step} failed: ${message}`), { payload: this.scrub(errors) }) };
    });
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
    const kind = kindOverride(response.status, response.json());
    return kind === undefined ? super.errorFor(step, response, retryAfterMs) : this.error(kind, step, response, retryAfterMs);
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
    if (!answer.ok) throw this.refreshRefused(step, answer.response, answer.retryAfterMs);
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
    return describeErrors(body);
  }
}

/** A SOQL string literal: backslash and quote escaped, and the other escapes SOQL defines. */
export function soqlString(value: string): string {
  const escaped = value.replace(/\\/g, '\\\\').replace(/'/g, "\\'").replace(/\n/g, '\\n').replace(/\r/g, '\\r').replace(/\t/g, '\\t');
  return `'${escaped}'`;
}
