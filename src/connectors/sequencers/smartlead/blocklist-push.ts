import type { BlocklistPush } from '../definition.js';

/**
 * Smartlead's block list: `POST /api/v1/leads/add-domain-block-list` (addresses and domains alike), the key
 * in the `api_key` query parameter, a client's list with its `client_id` (a number when it is digits).
 * Smartlead documents no maximum for the call, so its list read's page maximum (1,000) bounds it too.
 */
export const smartleadPush: BlocklistPush = {
  endpoint: { env: 'SMARTLEAD_BASE_URL', default: 'https://server.smartlead.ai', description: 'Smartlead API' },
  batch: 1_000,
  request({ baseUrl, apiKey, clientId }, values) {
    const url = new URL(`${baseUrl}/api/v1/leads/add-domain-block-list`);
    url.searchParams.set('api_key', apiKey);
    const client = clientId !== null && /^\d+$/.test(clientId) ? Number(clientId) : clientId;
    return { method: 'POST', url, json: { domain_block_list: values, ...(client !== null ? { client_id: client } : {}) } };
  },
};
