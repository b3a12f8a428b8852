import { z } from 'zod';
import { apiKey } from '../credentials.js';
import type { SequencerDefinition } from '../definition.js';
import { instantlyHistory } from './history.js';
import { instantlyPush } from './blocklist-push.js';
import { INSTANTLY_INBOX_LINK, parseInstantly } from './parser.js';

/** Instantly in the registry (src/connectors/sequencers/registry.ts). */
export const INSTANTLY: SequencerDefinition & { platform: 'instantly' } = {
  platform: 'instantly',
  name: 'Instantly',
  parse: parseInstantly,
  inboxLink: INSTANTLY_INBOX_LINK,
  credentials: z.object({ apiKey }),
  blocklistPush: instantlyPush,
  history: instantlyHistory,
};
