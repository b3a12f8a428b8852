import type { Config } from '../config.js';
import { CRM_KINDS, type CrmKind } from '../connectors/crm/kinds.js';
import type { OAuthApp } from '../connectors/crm/oauth.js';
import { CRMS } from '../connectors/crm/registry.js';
import { signConnectState } from '../domain/connect-state.js';
import { deriveKey } from '../domain/secrets.js';

/**
 * What connect links need (issue 30): where the service is, the key that signs their state, and each
 * CRM's app (absent: that CRM cannot be connected here), consent page and API.
 */
export interface ConnectSettings {
  /** `<BASE_URL>`: links and redirect URIs are below it. */
  baseUrl: string;
  /** CONNECT_STATE_KEY, or a key derived from the encryption key. */
  stateKey: Buffer;
  apps: Partial<Record<CrmKind, OAuthApp>>;
  /** Each CRM's consent page: its own host's (HUBSPOT_APP_URL) or its API's (SALESFORCE_LOGIN_URL), and the definition's path. */
  authorizeUrls: Record<CrmKind, string>;
  /** Each CRM's API (its code exchange), without a trailing slash. */
  apiUrls: Record<CrmKind, string>;
  /** Each CRM's consent host (Attio exchanges codes there), without a trailing slash. */
  appUrls: Record<CrmKind, string>;
}

/** A connect link: what staff hand the customer. */
export interface ConnectLink {
  url: string;
  expiresAt: Date;
  /** Whether the service has the CRM's app: without it, the link's page says the CRM cannot be connected here. */
  available: boolean;
}

export function connectSettings(config: Config, encryptionKey: Buffer): ConnectSettings {
  const byKind = <T>(value: (kind: CrmKind) => T) => Object.fromEntries(CRM_KINDS.map((kind) => [kind, value(kind)])) as Record<CrmKind, T>;
  return {
    baseUrl: config.baseUrl,
    stateKey: config.connectStateKey ?? deriveKey(encryptionKey, 'connect-state'),
    apps: config.crmApps,
    authorizeUrls: byKind((kind) => `${config.crmAuthorizeUrls[kind] ?? config.crmUrls[kind]}${CRMS[kind].oauth.authorize.path}`),
    apiUrls: byKind((kind) => config.crmUrls[kind].replace(/\/+$/, '')),
    appUrls: byKind((kind) => (config.crmAuthorizeUrls[kind] ?? config.crmUrls[kind]).replace(/\/+$/, '')),
  };
}

/** The path segment of a CRM kind in connect URLs: `hubspot`. */
function kindSegment(kind: CrmKind): string {
  return kind.toLowerCase();
}

/** A new connect link for a connection whose CRM is `kind`: `<BASE_URL>/connect/<kind>/start?state=...`, valid 15 minutes. */
export function connectLink(settings: ConnectSettings, connectionId: number, kind: CrmKind, now = Date.now()): ConnectLink {
  const { state, expiresAt } = signConnectState(settings.stateKey, connectionId, kind, now);
  const url = new URL(`${settings.baseUrl}/connect/${kindSegment(kind)}/start`);
  url.searchParams.set('state', state);
  return { url: url.href, expiresAt, available: appOf(settings, kind) !== undefined };
}

/** Where the CRM sends the customer back: registered as the app's redirect URL. */
export function callbackUrl(settings: ConnectSettings, kind: CrmKind): string {
  return `${settings.baseUrl}/connect/${kindSegment(kind)}/callback`;
}

/** The service's app at the CRM, if it has a usable one (its secret too where the CRM's exchange needs it). */
export function appOf(settings: ConnectSettings, kind: CrmKind): OAuthApp | undefined {
  const app = settings.apps[kind];
  if (!app || (CRMS[kind].oauth.app.secretRequired && !app.clientSecret)) return undefined;
  return app;
}
