import type { BlocklistPush } from '../definition.js';

/** Values per call: Instantly's bulk create takes 1 to 1,000. */
export const PUSH_BATCH = 1_000;

/**
 * Instantly v2's block list: `POST /api/v2/block-lists-entries/bulk-create` with `{bl_values}` (addresses
 * and domains alike), the key as a bearer token.
 */
export const instantlyPush: BlocklistPush = {
  endpoint: { env: 'INSTANTLY_BASE_URL', default: 'https://api.instantly.ai', description: 'Instantly API' },
  batch: PUSH_BATCH,
  request: ({ baseUrl, apiKey }, values) => ({
    method: 'POST',
    url: `${baseUrl}/api/v2/block-lists-entries/bulk-create`,
    headers: { authorization: `Bearer ${apiKey}` },
    json: { bl_values: values },
  }),
};
