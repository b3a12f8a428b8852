/**
 * The sequencers whose webhooks the service reads: a closed list. Adding one adds its folder
 * (src/connectors/sequencers/<platform>/) and its registry entry (./registry.ts), which the compiler then
 * asks for, and a case to every `switch` over the platform (each ends in `unreachable()`,
 * src/domain/unreachable.ts). A source may name any other platform: its events are stored and refused
 * with "no parser".
 */
export const SEQUENCER_PLATFORMS = ['smartlead', 'instantly', 'heyreach', 'lemlist', 'emailbison'] as const;
export type SequencerPlatform = (typeof SEQUENCER_PLATFORMS)[number];

/** The platform a source or block list names (stored lowercase, matched exactly), or undefined for one the service has no parser for. */
export function sequencerPlatformOf(platform: string): SequencerPlatform | undefined {
  return (SEQUENCER_PLATFORMS as readonly string[]).includes(platform) ? (platform as SequencerPlatform) : undefined;
}
