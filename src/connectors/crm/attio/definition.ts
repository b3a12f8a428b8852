import { z } from 'zod';
import type { CrmDefinition } from '../definition.js';
import { boundedCount } from '../schema-fields.js';
import { attioCredentials } from './credentials.js';
import { attioLimits } from './errors.js';
import { attioConnector } from './index.js';
import { attioListSource } from './lists.js';
import { attioOAuth } from './oauth.js';

/** Attio counts per second; ours counts a slot a tenth longer, for the time a request takes to reach Attio. */
const WINDOW_MS = 1_100;

/** Attio in the registry (src/connectors/crm/registry.ts). */
export const ATTIO: CrmDefinition & { kind: 'ATTIO' } = {
  kind: 'ATTIO',
  name: 'Attio',
  credentials: attioCredentials,
  rateLimit: { schema: z.object({ requestsPerSecond: boundedCount(100) }).strict(), keys: ['requestsPerSecond'] },
  crmSource: { schema: attioListSource, keys: ['listId'] },
  endpoint: { env: 'ATTIO_BASE_URL', default: 'https://api.attio.com', description: 'Attio API (`/v2`)' },
  // Attio allows 100 reads and 25 writes a second; one budget for both stays at the writes' 25.
  budget: { kind: 'window', windowMs: WINDOW_MS, overrideKey: 'requestsPerSecond', env: 'ATTIO_REQUESTS_PER_SECOND', default: 25, max: 100 },
  limits: attioLimits,
  oauth: attioOAuth,
  connect: (credentials, config, deps) => attioConnector(attioCredentials.parse(credentials), config.urls.ATTIO.replace(/\/+$/, ''), deps),
};
