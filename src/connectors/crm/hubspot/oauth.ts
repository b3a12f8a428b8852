import { OAuthFailure, oauthCall, requiredString, type CrmOAuth } from '../oauth.js';
import type { HubspotCredentials } from './credentials.js';
import { hubspotPaths } from './paths.js';

/**
 * The scopes the connector's calls need (HubSpot's scope reference): contacts read and write (contact
 * upserts and searches, and the emails, notes and tasks it logs on them: engagements take the contacts
 * scopes), companies read and write, owners read (assigning a contact owner), lists read (block list
 * sources), and `oauth`, which every app has and which the account details need. Email bodies are never
 * read back, so `sales-email-read` is not asked for.
 */
export const HUBSPOT_SCOPES = [
  'oauth',
  'crm.objects.contacts.read',
  'crm.objects.contacts.write',
  'crm.objects.companies.read',
  'crm.objects.companies.write',
  'crm.objects.owners.read',
  'crm.lists.read',
] as const;

const CRM = 'HubSpot';

/**
 * HubSpot's OAuth for a public app: consent at `<HUBSPOT_APP_URL>/oauth/authorize`, the code exchanged at
 * `POST /oauth/2026-03/token` (grant_type=authorization_code), then the portal read from the account
 * details (`GET /account-info/2026-03/details`: `portalId`) and the token's metadata
 * (`POST /oauth/2026-03/token/introspect`: `hub_domain`).
 */
export const hubspotOAuth: CrmOAuth = {
  app: { clientIdEnv: 'HUBSPOT_CLIENT_ID', clientSecretEnv: 'HUBSPOT_CLIENT_SECRET', secretRequired: true },
  authorize: {
    endpoint: { env: 'HUBSPOT_APP_URL', default: 'https://app.hubspot.com', description: 'HubSpot app, where customers consent (`/oauth/authorize`)' },
    path: '/oauth/authorize',
  },
  scopes: HUBSPOT_SCOPES,
  pkce: false,
  async complete(grant, deps) {
    const { clientId, clientSecret } = grant.app;
    if (!clientSecret) throw new OAuthFailure('HubSpot cannot be connected here: the service has no HubSpot client secret');
    const token = await oauthCall(deps, CRM, 'code exchange', {
      method: 'POST',
      url: `${grant.apiUrl}${hubspotPaths.token}`,
      form: { grant_type: 'authorization_code', client_id: clientId, client_secret: clientSecret, redirect_uri: grant.redirectUri, code: grant.code },
    });
    const accessToken = requiredString(token, 'access_token', CRM, 'code exchange');
    const refreshToken = requiredString(token, 'refresh_token', CRM, 'code exchange');
    const expiresAt = typeof token.expires_in === 'number' ? new Date(deps.now() + token.expires_in * 1000) : null;

    const details = await oauthCall(deps, CRM, 'account details request', {
      method: 'GET',
      url: `${grant.apiUrl}${hubspotPaths.accountDetails}`,
      bearer: accessToken,
    });
    const portalId = requiredString(details, 'portalId', CRM, 'account details request');
    const metadata = await oauthCall(deps, CRM, 'token introspection', {
      method: 'POST',
      url: `${grant.apiUrl}${hubspotPaths.introspect}`,
      form: { client_id: clientId, client_secret: clientSecret, token: accessToken, token_type_hint: 'access_token' },
    });
    // The portal the token reaches is the one the details describe; anything else is not this consent.
    const hubId = typeof metadata.hub_id === 'number' || typeof metadata.hub_id === 'string' ? String(metadata.hub_id) : undefined;
    if (metadata.active !== true || (hubId !== undefined && hubId !== portalId)) {
      throw new OAuthFailure('HubSpot described another portal than the one the new token reaches');
    }
    const domain = typeof metadata.hub_domain === 'string' && metadata.hub_domain !== '' ? metadata.hub_domain : null;
    const credentials: HubspotCredentials = {
      accessToken,
      refreshToken,
      clientId,
      clientSecret,
      ...(expiresAt ? { expiresAt: expiresAt.toISOString() } : {}),
    };
    return {
      credentials,
      tokenExpiresAt: expiresAt,
      organizationId: portalId,
      organizationDomain: domain,
      label: `HubSpot account ${portalId}${domain ? ` (${domain})` : ''}`,
    };
  },
};
