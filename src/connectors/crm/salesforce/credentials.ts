import { z } from 'zod';

export const salesforceCredentials = z.looseObject({
  instanceUrl: z.url({ protocol: /^https?$/ }),
  accessToken: z.string().min(1),
  refreshToken: z.string().min(1).optional(),
  /** The connected app's consumer key and secret, needed to refresh. */
  clientId: z.string().min(1).optional(),
  clientSecret: z.string().min(1).optional(),
});
export type SalesforceCredentials = z.infer<typeof salesforceCredentials>;
