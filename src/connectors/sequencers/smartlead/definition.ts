import { z } from 'zod';
import { numericId } from '../../crm/schema-fields.js';
import { apiKey } from '../credentials.js';
import type { SequencerDefinition } from '../definition.js';
import { smartleadHistory } from './history.js';
import { smartleadPush } from './blocklist-push.js';
import { SMARTLEAD_INBOX_LINK, parseSmartlead } from './parser.js';

/** Smartlead in the registry (src/connectors/sequencers/registry.ts). */
export const SMARTLEAD: SequencerDefinition & { platform: 'smartlead' } = {
  platform: 'smartlead',
  name: 'Smartlead',
  parse: parseSmartlead,
  inboxLink: SMARTLEAD_INBOX_LINK,
  // An agency's block list may be a client's: its id, kept on the block list (client_id).
  credentials: z.object({ apiKey, clientId: numericId('must be a Smartlead client id (digits)').optional() }),
  blocklistPush: smartleadPush,
  history: smartleadHistory,
};
