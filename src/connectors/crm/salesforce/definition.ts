import { z } from 'zod';
import type { CrmDefinition } from '../definition.js';
import { boundedCount } from '../schema-fields.js';
import { salesforceLimits } from './errors.js';
import { salesforceCredentials } from './credentials.js';
import { salesforceConnector } from './index.js';
import { salesforceListSource } from './lists.js';
import { DEFAULT_SALESFORCE_API_VERSION } from './session.js';
import { salesforceOAuth } from './oauth.js';

/** The opt-out checkbox Contact and Lead have as standard (Account has none: a list names its own). */
const OPT_OUT_FIELD = 'HasOptedOutOfEmail';

/** Salesforce in the registry (src/connectors/crm/registry.ts). */
export const SALESFORCE: CrmDefinition & { kind: 'SALESFORCE' } = {
  kind: 'SALESFORCE',
  name: 'Salesforce',
  credentials: salesforceCredentials,
  // A production Salesforce org runs at most 25 long-running API requests at once and refuses the rest.
  rateLimit: { schema: z.object({ maxConcurrency: boundedCount(25) }).strict(), keys: ['maxConcurrency'] },
  crmSource: {
    schema: salesforceListSource,
    keys: ['object', 'field?'],
    complete: (source) =>
      (source.object === 'Contact' || source.object === 'Lead') && source.field === undefined ? { ...source, field: OPT_OUT_FIELD } : source,
    problems(source, blockType) {
      if (source.object !== 'Account') return [];
      return [
        ...(source.field === undefined ? [{ key: 'field', message: 'is required for Account (it has no standard opt-out checkbox)' }] : []),
        ...(blockType === 'ADDRESS' ? [{ key: 'object', message: 'an ADDRESS list reads Email, which Account does not have (use Contact or Lead)' }] : []),
      ];
    },
  },
  // API calls go to the connection's instanceUrl; the login host refreshes its token.
  endpoint: {
    env: 'SALESFORCE_LOGIN_URL',
    default: 'https://login.salesforce.com',
    description: "Salesforce OAuth host (API calls go to the connection's instance URL)",
  },
  budget: { kind: 'concurrency', overrideKey: 'maxConcurrency', env: 'SALESFORCE_MAX_CONCURRENCY', default: 10, max: 1_000 },
  limits: salesforceLimits,
  oauth: salesforceOAuth,
  connect: (credentials, config, deps) =>
    salesforceConnector(
      salesforceCredentials.parse(credentials),
      { loginUrl: config.urls.SALESFORCE.replace(/\/+$/, ''), apiVersion: config.salesforceApiVersion ?? DEFAULT_SALESFORCE_API_VERSION },
      deps,
    ),
};
