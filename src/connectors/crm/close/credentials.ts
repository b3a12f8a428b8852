import { z } from 'zod';
import { oauthApp, secret } from '../schema-fields.js';

/**
 * A Close connection's decrypted credentials: the one schema the fixture, the admin CLI and the
 * connector check. Either an API key (sent as the HTTP Basic user name, the password empty) or an OAuth
 * app's access token (a bearer, living `expires_in` seconds, `expiresAt`), with the refresh token, client
 * id and client secret that renew it (Close rotates the refresh token on every refresh).
 */
export const closeCredentials = z
  .object({
    apiKey: secret.optional(),
    accessToken: secret.optional(),
    ...oauthApp,
    expiresAt: z.iso.datetime({ offset: true, error: 'must be an ISO 8601 date-time' }).optional(),
  })
  .refine((c) => (c.apiKey === undefined) !== (c.accessToken === undefined), {
    error: 'is required: an apiKey, or an OAuth accessToken (not both)',
    path: ['apiKey'],
  });
export type CloseCredentials = z.infer<typeof closeCredentials>;
