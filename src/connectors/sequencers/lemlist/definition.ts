import { z } from 'zod';
import { apiKey } from '../credentials.js';
import type { SequencerDefinition } from '../definition.js';
import { lemlistHistory } from './history.js';
import { LEMLIST_INBOX_LINK, parseLemlist } from './parser.js';

/** lemlist in the registry (src/connectors/sequencers/registry.ts): webhooks, and their history for the backfill; no block list pushed. */
export const LEMLIST: SequencerDefinition & { platform: 'lemlist' } = {
  platform: 'lemlist',
  name: 'lemlist',
  parse: parseLemlist,
  inboxLink: LEMLIST_INBOX_LINK,
  credentials: z.object({ apiKey }),
  history: lemlistHistory,
};
