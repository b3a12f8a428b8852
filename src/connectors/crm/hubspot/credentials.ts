import { z } from 'zod';
import { oauthApp, secret } from '../schema-fields.js';

/**
 * A HubSpot connection's decrypted credentials: the one schema the fixture, the admin CLI and the
 * connector check (the fixture and the CLI refuse unknown keys; the connector ignores them, so that a
 * stored field it does not know never stops a pipeline). `clientId`/`clientSecret` are needed to refresh OAuth tokens; `expiresAt` is when the
 * access token expires (OAuth tokens live 30 minutes; private-app tokens never expire).
 */
export const hubspotCredentials = z.object({
  accessToken: secret,
  ...oauthApp,
  expiresAt: z.iso.datetime({ offset: true, error: 'must be an ISO 8601 date-time' }).optional(),
});
export type HubspotCredentials = z.infer<typeof hubspotCredentials>;
