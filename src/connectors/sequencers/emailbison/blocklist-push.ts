import type { BlocklistPush } from '../definition.js';

/**
 * EmailBison's blacklists: `POST /api/blacklisted-emails {email}` and `POST /api/blacklisted-domains
 * {domain}`, one value a call (its `/bulk` form takes a CSV upload that public clients report failing),
 * on the account's own instance, the key as a bearer token. A value already listed answers 422 "has
 * already been taken": held, as a push wants it.
 */
export const emailbisonPush: BlocklistPush = {
  batch: 1,
  request: ({ baseUrl, apiKey }, [value]) => {
    const domain = !value!.includes('@');
    return {
      method: 'POST',
      url: `${baseUrl}/api/${domain ? 'blacklisted-domains' : 'blacklisted-emails'}`,
      headers: { authorization: `Bearer ${apiKey}`, accept: 'application/json' },
      json: domain ? { domain: value } : { email: value },
    };
  },
  alreadyHeld: (status, text) => status === 422 && /already been taken/i.test(text),
};
