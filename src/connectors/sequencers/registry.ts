import type { BlocklistPush, SequencerDefinition } from './definition.js';
import type { SequencerHistory } from './history.js';
import { EMAILBISON } from './emailbison/definition.js';
import { HEYREACH } from './heyreach/definition.js';
import { INSTANTLY } from './instantly/definition.js';
import { LEMLIST } from './lemlist/definition.js';
import { SEQUENCER_PLATFORMS, sequencerPlatformOf, type SequencerPlatform } from './platforms.js';
import { SMARTLEAD } from './smartlead/definition.js';

/**
 * Every sequencer whose webhooks the service reads, by platform: a sequencer is its folder
 * (src/connectors/sequencers/<platform>/) and its line here. A platform added to SEQUENCER_PLATFORMS
 * without its line does not compile.
 */
export const SEQUENCERS: { readonly [P in SequencerPlatform]: SequencerDefinition & { platform: P } } = {
  smartlead: SMARTLEAD,
  instantly: INSTANTLY,
  heyreach: HEYREACH,
  lemlist: LEMLIST,
  emailbison: EMAILBISON,
};

/** The definition of the sequencer a source or block list names, or undefined for one the service has no parser for. */
export function sequencerDefinition(platform: string): SequencerDefinition | undefined {
  const known = sequencerPlatformOf(platform);
  return known === undefined ? undefined : SEQUENCERS[known];
}

/** A platform's name in messages (`Smartlead`); a platform without a definition as written. */
export function sequencerName(platform: string): string {
  return sequencerDefinition(platform)?.name ?? platform;
}

/** A sequencer block lists are pushed to. */
export type PushSequencer = Extract<SequencerDefinition, { credentials: unknown }> & { blocklistPush: BlocklistPush };

/** The sequencers block lists are pushed to (those whose definition has a `blocklistPush`), in SEQUENCER_PLATFORMS order. */
export const PUSH_SEQUENCERS: readonly PushSequencer[] = SEQUENCER_PLATFORMS.map((platform) => SEQUENCERS[platform]).filter(
  (definition): definition is PushSequencer => definition.blocklistPush !== undefined,
);

/** A sequencer the backfill reads. */
export type HistorySequencer = Extract<SequencerDefinition, { credentials: unknown }> & { history: SequencerHistory };

/** The sequencers the backfill reads (those whose definition has a `history`), in SEQUENCER_PLATFORMS order. */
export const HISTORY_SEQUENCERS: readonly HistorySequencer[] = SEQUENCER_PLATFORMS.map((platform) => SEQUENCERS[platform]).filter(
  (definition): definition is HistorySequencer => definition.history !== undefined,
);
