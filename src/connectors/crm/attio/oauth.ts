import { OAuthFailure, oauthCall, requiredString, type CrmOAuth } from '../oauth.js';
import type { AttioCredentials } from './credentials.js';

const CRM = 'Attio';

/**
 * The scopes the connector's calls need (Attio's endpoint reference): records read and write with their
 * objects' configuration, notes, tasks with the members they are assigned to, and lists with their entries
 * (block list sources).
 */
const ATTIO_SCOPES = [
  'record_permission:read-write',
  'object_configuration:read',
  'note:read-write',
  'task:read-write',
  'user_management:read',
  'list_configuration:read',
  'list_entry:read',
] as const;

/**
 * Attio's OAuth 2.0 (authorization code): consent at `<ATTIO_APP_URL>/authorize`, the code exchanged at
 * `POST <ATTIO_APP_URL>/oauth/token` (answering a bearer token: Attio documents no refresh token or expiry),
 * then the workspace read from `POST /oauth/introspect` (`workspace_id`, `workspace_name`).
 */
export const attioOAuth: CrmOAuth = {
  app: { clientIdEnv: 'ATTIO_CLIENT_ID', clientSecretEnv: 'ATTIO_CLIENT_SECRET', secretRequired: true },
  authorize: {
    endpoint: {
      env: 'ATTIO_APP_URL',
      default: 'https://app.attio.com',
      description: 'Attio app, where customers consent (`/authorize`) and OAuth codes are exchanged',
    },
    path: '/authorize',
    params: { response_type: 'code' },
  },
  scopes: ATTIO_SCOPES,
  pkce: false,
  async complete(grant, deps) {
    const { clientId, clientSecret } = grant.app;
    if (!clientSecret) throw new OAuthFailure('Attio cannot be connected here: the service has no Attio client secret');
    const appUrl = grant.appUrl;
    const token = await oauthCall(deps, CRM, 'code exchange', {
      method: 'POST',
      url: `${appUrl}/oauth/token`,
      form: { grant_type: 'authorization_code', client_id: clientId, client_secret: clientSecret, code: grant.code, redirect_uri: grant.redirectUri },
    });
    const accessToken = requiredString(token, 'access_token', CRM, 'code exchange');
    const about = await oauthCall(deps, CRM, 'token introspection', { method: 'POST', url: `${appUrl}/oauth/introspect`, bearer: accessToken });
    if (about.active !== true) throw new OAuthFailure('Attio says the new token is not active');
    const workspaceId = requiredString(about, 'workspace_id', CRM, 'token introspection');
    const name = typeof about.workspace_name === 'string' ? about.workspace_name : undefined;
    const credentials: AttioCredentials = { accessToken };
    return {
      credentials,
      tokenExpiresAt: typeof about.exp === 'number' ? new Date(about.exp * 1000) : null,
      organizationId: workspaceId,
      organizationDomain: null,
      label: `Attio workspace ${name ? `${name} (${workspaceId})` : workspaceId}`,
    };
  },
};
