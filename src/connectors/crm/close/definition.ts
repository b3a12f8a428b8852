import { z } from 'zod';
import type { CrmDefinition } from '../definition.js';
import { boundedCount } from '../schema-fields.js';
import { closeCredentials } from './credentials.js';
import { closeLimits } from './errors.js';
import { closeConnector } from './index.js';
import { closeListSource } from './lists.js';
import { closeOAuth } from './oauth.js';

/**
 * Close counts per second; ours counts a slot a tenth longer, for the time between taking a slot and the
 * request reaching Close (bench:ingress (d4) met a 429 in about 700 calls at 1,050 ms).
 */
const WINDOW_MS = 1_100;

/** Close in the registry (src/connectors/crm/registry.ts). */
export const CLOSE: CrmDefinition & { kind: 'CLOSE' } = {
  kind: 'CLOSE',
  name: 'Close',
  credentials: closeCredentials,
  rateLimit: { schema: z.object({ requestsPerSecond: boundedCount(1_000) }).strict(), keys: ['requestsPerSecond'] },
  crmSource: { schema: closeListSource, keys: ['smartViewId?'] },
  endpoint: { env: 'CLOSE_BASE_URL', default: 'https://api.close.com', description: 'Close API (`/api/v1`) and its OAuth token endpoint' },
  // Close publishes no numbers: its example is 20 requests per second per key (60 per organisation), and
  // every answer's RateLimit header says how close the key is; 10 a second stays below the example.
  budget: { kind: 'window', windowMs: WINDOW_MS, overrideKey: 'requestsPerSecond', env: 'CLOSE_REQUESTS_PER_SECOND', default: 10, max: 1_000 },
  limits: closeLimits,
  oauth: closeOAuth,
  connect: (credentials, config, deps) => closeConnector(closeCredentials.parse(credentials), config.urls.CLOSE.replace(/\/+$/, ''), deps),
};
