import type { z } from 'zod';
import type { EndpointVariable } from '../../config.js';
import type { HttpRequest } from '../http/client.js';
import type { SequencerParser } from './event.js';
import type { SequencerHistory } from './history.js';
import type { SequencerPlatform } from './platforms.js';

/**
 * What the service knows of one sequencer, in one place: its folder's `definition.ts` exports it, and the
 * registry (./registry.ts) holds one per {@link SequencerPlatform}. The ingress parse, the relay email,
 * the block-list push and the fixture format read it from there. The folder also holds the parser's
 * samples (`samples/*.json`, read through ./samples.ts).
 */
export type SequencerDefinition = SequencerBasics & SequencerAccount;

interface SequencerBasics {
  platform: SequencerPlatform;
  /** Its name in messages and relay emails: `Smartlead`. */
  name: string;
  /** Its webhook parser (`<platform>/parser.ts`): any JSON value to an event or a reason, never a throw. */
  parse: SequencerParser;
  /**
   * The payload fields that link the lead's conversation in the sequencer's inbox, the first web URL among
   * them winning (the event's `inboxUrl`: a relay email's `Open in <name>` line and `{{inbox.url}}`);
   * empty when its webhooks link none.
   */
  inboxLink: readonly string[];
}

/** The API account the service calls the sequencer with, and what it calls: a block-list push needs an account. */
type SequencerAccount =
  | {
      /**
       * A block list's or a source's `sequencer` (fixture, admin): the one schema its values are checked
       * with, strict on input. Stored encrypted; the push and the backfill read its `apiKey` (and `baseUrl`).
       */
      credentials: z.ZodObject & z.ZodType<SequencerCredentials>;
      /** How a block list is pushed to it; absent when the service does not push there. */
      blocklistPush?: BlocklistPush;
      /** How the backfill reads its messages (./history.ts); absent when its API lists none. */
      history?: SequencerHistory;
    }
  | { credentials?: undefined; blocklistPush?: undefined; history?: undefined };

/** What every sequencer's credentials hold: its API key and, for a sequencer with client accounts, the client. */
export type SequencerCredentials = { apiKey: string; clientId?: string; baseUrl?: string };

/**
 * What differs per sequencer when a block list is pushed: where, how many values a call, and the call.
 * The rest (answers, timeouts, keys kept out of messages, splitting refused calls) is shared:
 * ./blocklist-push.ts and src/jobs/blocklists__push.ts.
 */
export interface BlocklistPush {
  /**
   * Its API's base URL: the environment variable that sets it and its default (src/config.ts reads it into
   * BlocklistConfig.pushUrls; the variable has a row in src/sandbox/system-table.ts, its sandbox default).
   * Absent for a sequencer whose every customer has an instance of its own: the account's `baseUrl`.
   */
  endpoint?: EndpointVariable;
  /** Values per call (at most what the API takes). */
  batch: number;
  /** Its call that adds `values` to the account's block list, authenticated with the account's key (no timeout: the caller sets it). */
  request: (account: ApiAccount, values: readonly string[]) => HttpRequest;
  /** Whether a refusal says the value is already on the list (a success for a push); absent: none does. */
  alreadyHeld?: (status: number, text: string) => boolean;
}

/** A sequencer account the service calls: a block list's (pushed to) or a source's (its backfill). */
export interface ApiAccount {
  /** The API's base URL, without a trailing slash. */
  baseUrl: string;
  apiKey: string;
  /** The client (a Smartlead agency's), or null. */
  clientId: string | null;
}
