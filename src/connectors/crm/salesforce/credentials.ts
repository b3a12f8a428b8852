import { z } from 'zod';
import { oauthApp, secret } from '../schema-fields.js';

/**
 * A Salesforce connection's decrypted credentials: the one schema the fixture, the admin CLI and the
 * connector check (the fixture and the CLI refuse unknown keys; the connector ignores them). API calls go to `instanceUrl`; the connected app's consumer key and secret
 * (`clientId`, `clientSecret`) are needed to refresh.
 */
export const salesforceCredentials = z.object({
  instanceUrl: z.url({ protocol: /^https?$/, error: 'must be the org instance URL' }),
  accessToken: secret,
  ...oauthApp,
});
export type SalesforceCredentials = z.infer<typeof salesforceCredentials>;
