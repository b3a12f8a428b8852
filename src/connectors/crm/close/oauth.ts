import { OAuthFailure, oauthCall, requiredString, type CrmOAuth } from '../oauth.js';
import type { CloseCredentials } from './credentials.js';

const CRM = 'Close';

/**
 * Close's OAuth 2.0 (authorization code): consent at `<CLOSE_APP_URL>/oauth2/authorize/` (the user picks
 * the organisation there; every app is granted `all.full_access offline_access`, so no scope is asked for),
 * the code exchanged at `POST <CLOSE_BASE_URL>/oauth2/token/`, whose answer names the organisation
 * (`organization_id`); its name is read from `GET /api/v1/me/`.
 */
export const closeOAuth: CrmOAuth = {
  app: { clientIdEnv: 'CLOSE_CLIENT_ID', clientSecretEnv: 'CLOSE_CLIENT_SECRET', secretRequired: true },
  authorize: {
    endpoint: { env: 'CLOSE_APP_URL', default: 'https://app.close.com', description: 'Close app, where customers consent (`/oauth2/authorize/`)' },
    path: '/oauth2/authorize/',
    params: { response_type: 'code' },
  },
  scopes: [],
  pkce: false,
  async complete(grant, deps) {
    const { clientId, clientSecret } = grant.app;
    if (!clientSecret) throw new OAuthFailure('Close cannot be connected here: the service has no Close client secret');
    const token = await oauthCall(deps, CRM, 'code exchange', {
      method: 'POST',
      url: `${grant.apiUrl}/oauth2/token/`,
      form: { grant_type: 'authorization_code', client_id: clientId, client_secret: clientSecret, code: grant.code, redirect_uri: grant.redirectUri },
    });
    const accessToken = requiredString(token, 'access_token', CRM, 'code exchange');
    const refreshToken = requiredString(token, 'refresh_token', CRM, 'code exchange');
    const organizationId = requiredString(token, 'organization_id', CRM, 'code exchange');
    const expiresAt = typeof token.expires_in === 'number' ? new Date(deps.now() + token.expires_in * 1000) : null;
    const me = await oauthCall(deps, CRM, 'user request', { method: 'GET', url: `${grant.apiUrl}/api/v1/me/`, bearer: accessToken });
    const organizations = Array.isArray(me.organizations) ? (me.organizations as Array<Record<string, unknown>>) : [];
    const name = organizations.find((o) => o.id === organizationId)?.name;
    if (organizations.length > 0 && name === undefined) throw new OAuthFailure('Close answered for another organization than the token names');
    const credentials: CloseCredentials = {
      accessToken,
      refreshToken,
      clientId,
      clientSecret,
      ...(expiresAt ? { expiresAt: expiresAt.toISOString() } : {}),
    };
    return {
      credentials,
      tokenExpiresAt: expiresAt,
      organizationId,
      organizationDomain: null,
      label: `Close organization ${typeof name === 'string' ? `${name} (${organizationId})` : organizationId}`,
    };
  },
};
