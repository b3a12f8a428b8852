import { OAuthFailure, oauthCall, requiredString, type CrmOAuth } from '../oauth.js';
import { salesforceCredentials, type SalesforceCredentials } from './credentials.js';

const CRM = 'Salesforce';

/**
 * Salesforce's OAuth 2.0 web server flow with PKCE: consent at `<SALESFORCE_LOGIN_URL>/services/oauth2/authorize`
 * (scopes `api`, which includes the identity URL, and `refresh_token`), the code and its verifier
 * exchanged at `/services/oauth2/token`, then the org read from the identity URL the answer names (`id`):
 * `organization_id`, and the domain of its My Domain (`urls.custom_domain`) or else of `instance_url`.
 */
export const salesforceOAuth: CrmOAuth = {
  app: { clientIdEnv: 'SALESFORCE_CLIENT_ID', clientSecretEnv: 'SALESFORCE_CLIENT_SECRET', secretRequired: false },
  authorize: { path: '/services/oauth2/authorize', params: { response_type: 'code' } },
  scopes: ['api', 'refresh_token'],
  pkce: true,
  async complete(grant, deps) {
    const { clientId, clientSecret } = grant.app;
    const form: Record<string, string> = { grant_type: 'authorization_code', code: grant.code, client_id: clientId, redirect_uri: grant.redirectUri };
    if (clientSecret) form.client_secret = clientSecret;
    if (grant.codeVerifier) form.code_verifier = grant.codeVerifier;
    const token = await oauthCall(deps, CRM, 'code exchange', { method: 'POST', url: `${grant.apiUrl}/services/oauth2/token`, form });
    const accessToken = requiredString(token, 'access_token', CRM, 'code exchange');
    const refreshToken = requiredString(token, 'refresh_token', CRM, 'code exchange');
    const instanceUrl = requiredString(token, 'instance_url', CRM, 'code exchange').replace(/\/+$/, '');
    if (!salesforceCredentials.shape.instanceUrl.safeParse(instanceUrl).success)
      throw new OAuthFailure('Salesforce answered the code exchange with an invalid instance_url');
    const identityUrl = identity(requiredString(token, 'id', CRM, 'code exchange'), grant.apiUrl);
    const namedOrg = /\/id\/([^/]+)\/[^/]+$/.exec(identityUrl.pathname)?.[1];

    const who = await oauthCall(deps, CRM, 'identity request', { method: 'GET', url: identityUrl.href, bearer: accessToken });
    const organizationId = requiredString(who, 'organization_id', CRM, 'identity request');
    if (namedOrg !== organizationId) throw new OAuthFailure('Salesforce described another org than its identity URL names');
    const urls = who.urls !== null && typeof who.urls === 'object' ? (who.urls as Record<string, unknown>) : {};
    const domain = hostOf(urls.custom_domain) ?? hostOf(instanceUrl);
    const credentials: SalesforceCredentials = { instanceUrl, accessToken, refreshToken, clientId, ...(clientSecret ? { clientSecret } : {}) };
    return {
      credentials,
      // Salesforce sessions end by the org's timeout, not a stated expiry: a 401 is refreshed.
      tokenExpiresAt: null,
      organizationId,
      organizationDomain: domain,
      label: `Salesforce org ${organizationId}${domain ? ` (${domain})` : ''}`,
    };
  },
};

/**
 * The identity URL the token answer names: `.../id/<org id>/<user id>`, over https, or on the login
 * host itself (a sandbox or emulator over http, below its own path). The access token is sent there, so
 * nothing else is accepted.
 */
function identity(id: string, loginUrl: string): URL {
  const url = URL.canParse(id) ? new URL(id) : undefined;
  const onLoginHost = url !== undefined && url.origin === new URL(loginUrl).origin;
  if (!url || !/\/id\/00D[A-Za-z0-9]{12,15}\/005[A-Za-z0-9]{12,15}$/.test(url.pathname) || (url.protocol !== 'https:' && !onLoginHost)) {
    throw new OAuthFailure('Salesforce answered the code exchange with an invalid identity URL (id)');
  }
  return url;
}

function hostOf(value: unknown): string | null {
  return typeof value === 'string' && URL.canParse(value) ? new URL(value).hostname : null;
}
