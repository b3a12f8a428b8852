import type { SequencerDefinition } from '../definition.js';
import { LEMLIST_INBOX_LINK, parseLemlist } from './parser.js';

/** lemlist in the registry (src/connectors/sequencers/registry.ts): webhooks only, no block list pushed. */
export const LEMLIST: SequencerDefinition & { platform: 'lemlist' } = {
  platform: 'lemlist',
  name: 'lemlist',
  parse: parseLemlist,
  inboxLink: LEMLIST_INBOX_LINK,
};
