import { z } from 'zod';
import type { CrmDefinition } from '../definition.js';
import { boundedCount } from '../schema-fields.js';
import { hubspotLimits } from './errors.js';
import { hubspotCredentials } from './credentials.js';
import { hubspotConnector } from './index.js';
import { hubspotListSource } from './lists.js';
import { hubspotOAuth } from './oauth.js';

/**
 * HubSpot's rolling window is 10 s; ours counts a slot a quarter second longer, for the time between
 * taking a slot and the request reaching HubSpot (else the last request of a full window can land in
 * HubSpot's next-to-last millisecond and meet a 429).
 */
const WINDOW_MS = 10_250;

/** HubSpot in the registry (src/connectors/crm/registry.ts). */
export const HUBSPOT: CrmDefinition & { kind: 'HUBSPOT' } = {
  kind: 'HUBSPOT',
  name: 'HubSpot',
  credentials: hubspotCredentials,
  // HubSpot's highest published burst limit (the API Limit Increase pack) is 250 requests per 10 s.
  rateLimit: { schema: z.object({ requestsPer10s: boundedCount(250) }).strict(), keys: ['requestsPer10s'] },
  crmSource: { schema: hubspotListSource, keys: ['listId'] },
  endpoint: { env: 'HUBSPOT_BASE_URL', default: 'https://api.hubapi.com', description: 'HubSpot API' },
  // OAuth apps get 100 requests per 10 s per portal (private apps of Professional and Enterprise portals 190).
  budget: { kind: 'window', windowMs: WINDOW_MS, overrideKey: 'requestsPer10s', env: 'HUBSPOT_REQUESTS_PER_10S', default: 100, max: 10_000 },
  limits: hubspotLimits,
  oauth: hubspotOAuth,
  connect: (credentials, config, deps) => hubspotConnector(hubspotCredentials.parse(credentials), config.urls.HUBSPOT.replace(/\/+$/, ''), deps),
};
