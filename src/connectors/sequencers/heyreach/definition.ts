import type { SequencerDefinition } from '../definition.js';
import { HEYREACH_INBOX_LINK, parseHeyReach } from './parser.js';

/** HeyReach in the registry (src/connectors/sequencers/registry.ts): webhooks only, no block list pushed. */
export const HEYREACH: SequencerDefinition & { platform: 'heyreach' } = {
  platform: 'heyreach',
  name: 'HeyReach',
  parse: parseHeyReach,
  inboxLink: HEYREACH_INBOX_LINK,
};
