/**
 * Which events a reply relay copies to its sales rep, and whether the lead's category lets it: pure
 * rules, decided when the relay runs (the category may change between the reply and the email).
 */
import { eventTraits } from './event-types.js';

/** A lead category as the relay's allowlist and the sequencers name it. */
export interface LeadCategory {
  id: string | null;
  name: string;
}

export type AllowlistDecision = { proceed: true } | { proceed: false; reason: string };

/** The prospect's own replies: by email or professional-network message; not auto-replies, opens or sends. */
export function isRelayedReply(eventType: string): boolean {
  const traits = eventTraits(eventType);
  return traits.reply && (traits.channel === 'email' || traits.channel === 'social');
}

/**
 * An empty allowlist relays every reply; otherwise the lead's current category must match an entry by
 * id, or by name ignoring case and surrounding spaces.
 */
export function allowlistDecision(allowlist: readonly LeadCategory[], current: LeadCategory | null): AllowlistDecision {
  if (allowlist.length === 0) return { proceed: true };
  if (current === null) return { proceed: false, reason: `the lead has no category, and the allowlist names ${listed(allowlist)}` };
  const name = fold(current.name);
  const matches = allowlist.some((entry) => (current.id !== null && entry.id === current.id) || fold(entry.name) === name);
  return matches ? { proceed: true } : { proceed: false, reason: `lead category ${current.name} is not in the allowlist` };
}

/**
 * The lead's current category: the newest signal stored for the lead on this connection, or the reply's
 * own when no stored signal is newer than the reply (the reply's sync may not have stored it yet).
 */
export function currentCategory(
  stored: { category: LeadCategory; at: Date } | null,
  ofReply: { category: LeadCategory | null; at: Date },
): LeadCategory | null {
  if (ofReply.category && (!stored || stored.at.getTime() <= ofReply.at.getTime())) return ofReply.category;
  return stored?.category ?? null;
}

const fold = (name: string) => name.trim().toLocaleLowerCase('en');

function listed(allowlist: readonly LeadCategory[]): string {
  const names = allowlist.slice(0, 5).map((entry) => entry.name);
  return allowlist.length > 5 ? `${names.join(', ')} and ${allowlist.length - 5} more` : names.join(', ');
}
