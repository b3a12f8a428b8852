import type { EndpointVariable } from '../../config.js';
import { OutboundError, type HttpClient, type HttpResponse } from '../http/client.js';
import { asRecord } from './records.js';

/**
 * How a customer connects a CRM by OAuth (issue 30): a CRM definition's `oauth`, read by src/connect/.
 * The service's app (its client id and secret, from the environment) sends the customer's browser to the
 * CRM's consent page with the CRM's scopes, then exchanges the code the CRM hands back for the
 * connection's credentials and learns which CRM account they reach.
 */
export interface CrmOAuth {
  /** The environment variables of the service's app at the CRM; `secretRequired`: no connection without the secret. */
  app: { clientIdEnv: string; clientSecretEnv: string; secretRequired: boolean };
  /**
   * Where the customer's browser consents: `path` below the base URL `endpoint` names (its own variable,
   * HubSpot's app host) or, without one, below the CRM's `endpoint` (Salesforce's login host).
   * `params`: what the authorize URL carries besides client_id, redirect_uri, scope and state.
   */
  authorize: { endpoint?: EndpointVariable; path: string; params?: Readonly<Record<string, string>> };
  /** What the connector needs, space-separated in the authorize URL. */
  scopes: readonly string[];
  /** PKCE (RFC 7636, S256): a challenge in the authorize URL, its verifier with the code. */
  pkce: boolean;
  /**
   * Exchanges the authorization code for the connection's credentials (the definition's `credentials`
   * schema) and reads the CRM account they reach.
   * @throws OAuthFailure, whose message is safe to show the customer (no token, code or secret).
   */
  complete(grant: OAuthGrant, deps: OAuthDeps): Promise<ConnectedAccount>;
}

/** What the callback received and knows, for the exchange. */
interface OAuthGrant {
  code: string;
  redirectUri: string;
  /** With PKCE. */
  codeVerifier?: string;
  app: OAuthApp;
  /** The CRM's API base URL (its definition's `endpoint`, configured), without a trailing slash. */
  apiUrl: string;
  /** Where the customer consented: the authorize endpoint's base URL (its own variable, else the API's), without a trailing slash. */
  appUrl: string;
}

/** The service's app at a CRM (HUBSPOT_CLIENT_ID, ...). */
export interface OAuthApp {
  clientId: string;
  clientSecret?: string;
}

export interface OAuthDeps {
  http: HttpClient;
  now: () => number;
  timeoutMs: number;
}

/** A connected CRM account. */
export interface ConnectedAccount {
  /** The credentials to seal and store: the definition's `credentials` schema accepts them. */
  credentials: Record<string, unknown>;
  /** When the access token expires, if the CRM says. */
  tokenExpiresAt: Date | null;
  organizationId: string;
  organizationDomain: string | null;
  /** How the page names it to the customer: `HubSpot account 62515 (acme.com)`. */
  label: string;
}

/** An exchange that did not connect: the message says what the CRM answered, never a secret. */
export class OAuthFailure extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'OAuthFailure';
  }
}

/**
 * One call of an exchange: its answer when 2xx and JSON, else an OAuthFailure naming `step`, the
 * status and the RFC 6749 `error` code (a short token, safe to show; `error_description` may echo
 * what was sent, so it is left out).
 */
export async function oauthCall(
  deps: OAuthDeps,
  crm: string,
  step: string,
  request: { method: 'GET' | 'POST'; url: string; form?: Record<string, string>; bearer?: string },
): Promise<Record<string, unknown>> {
  let response: HttpResponse;
  try {
    response = await deps.http.request({
      method: request.method,
      url: request.url,
      ...(request.form ? { form: request.form } : {}),
      headers: { accept: 'application/json', ...(request.bearer ? { authorization: `Bearer ${request.bearer}` } : {}) },
      timeoutMs: deps.timeoutMs,
    });
  } catch (error) {
    const why = error instanceof OutboundError && error.code === 'timeout' ? 'did not answer in time' : 'could not be reached';
    throw new OAuthFailure(`${crm} ${why} (${step})`);
  }
  const body = response.json();
  if (response.status < 200 || response.status >= 300) {
    const code = errorCode(body);
    throw new OAuthFailure(`${crm} refused the ${step} (HTTP ${response.status}${code ? `, ${code}` : ''})`);
  }
  if (body === null || typeof body !== 'object' || Array.isArray(body)) throw new OAuthFailure(`${crm} answered the ${step} without a JSON object`);
  return asRecord(body);
}

/** A string field of an answer, or an OAuthFailure naming it. */
export function requiredString(body: Record<string, unknown>, field: string, crm: string, step: string): string {
  const value = body[field];
  if (typeof value === 'string' && value !== '') return value;
  if (typeof value === 'number' && Number.isSafeInteger(value)) return String(value);
  throw new OAuthFailure(`${crm} answered the ${step} without ${field}`);
}

/** RFC 6749's `error` (or Salesforce's array form's `errorCode`), when it is a plain code. */
function errorCode(body: unknown): string | undefined {
  const record = asRecord(Array.isArray(body) ? body[0] : body);
  const code = record.error ?? record.errorCode ?? record.category;
  return typeof code === 'string' && /^[A-Za-z0-9_.-]{1,64}$/.test(code) ? code : undefined;
}
