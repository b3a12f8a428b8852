import { z } from 'zod';

/** Decrypted connection credentials. `clientId`/`clientSecret` are needed to refresh OAuth tokens. */
export const hubspotCredentials = z.looseObject({
  accessToken: z.string().min(1),
  refreshToken: z.string().min(1).optional(),
  clientId: z.string().min(1).optional(),
  clientSecret: z.string().min(1).optional(),
  /** ISO time the access token expires (OAuth tokens live 30 minutes; private-app tokens never expire). */
  expiresAt: z.string().optional(),
});
export type HubspotCredentials = z.infer<typeof hubspotCredentials>;
