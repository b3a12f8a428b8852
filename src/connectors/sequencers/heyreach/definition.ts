import { z } from 'zod';
import { apiKey } from '../credentials.js';
import type { SequencerDefinition } from '../definition.js';
import { heyreachHistory } from './history.js';
import { HEYREACH_INBOX_LINK, parseHeyReach } from './parser.js';

/** HeyReach in the registry (src/connectors/sequencers/registry.ts): webhooks, and their history for the backfill; no block list pushed. */
export const HEYREACH: SequencerDefinition & { platform: 'heyreach' } = {
  platform: 'heyreach',
  name: 'HeyReach',
  parse: parseHeyReach,
  inboxLink: HEYREACH_INBOX_LINK,
  credentials: z.object({ apiKey }),
  history: heyreachHistory,
};
