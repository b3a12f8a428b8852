import { z } from 'zod';
import { apiKey } from '../credentials.js';
import type { SequencerDefinition } from '../definition.js';
import { emailbisonPush } from './blocklist-push.js';
import { emailbisonHistory } from './history.js';
import { EMAILBISON_INBOX_LINK, parseEmailBison } from './parser.js';

/** EmailBison in the registry (src/connectors/sequencers/registry.ts). */
export const EMAILBISON: SequencerDefinition & { platform: 'emailbison' } = {
  platform: 'emailbison',
  name: 'EmailBison',
  parse: parseEmailBison,
  inboxLink: EMAILBISON_INBOX_LINK,
  // Every customer runs an instance on a host of its own (white-labelled): its URL belongs to the account.
  credentials: z.object({ apiKey, baseUrl: instanceUrl() }),
  blocklistPush: emailbisonPush,
  history: emailbisonHistory,
};

/** An instance's base URL: http(s), no credentials, query or fragment; kept without a trailing slash. */
function instanceUrl() {
  return z
    .string({ error: 'is required (the EmailBison instance URL, https://...)' })
    .max(2_048, { error: 'must be at most 2048 characters' })
    .refine(
      (value) => {
        if (!URL.canParse(value)) return false;
        const url = new URL(value);
        return (url.protocol === 'https:' || url.protocol === 'http:') && !url.username && !url.password && !url.search && !url.hash;
      },
      { error: 'must be the instance URL (https://send.example.com), without credentials, query or fragment' },
    )
    .transform((value) => value.replace(/\/+$/, ''));
}
