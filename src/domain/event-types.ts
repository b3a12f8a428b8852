/**
 * Canonical inbound event types (spec style: `EMAIL_SENT`, `MESSAGE_SENT`, ...) and what each means
 * for a contact's outreach history. The sequencer parsers map every platform's events onto these.
 */

export interface EventTraits {
  /** email, social (professional network or microblog), call, lead (status changes), or other (unknown types). */
  channel: 'email' | 'social' | 'call' | 'lead' | 'other';
  /** We reached out, or they answered: a send, a reply, a call, an outbound social message (outreach rule 5). */
  contact: boolean;
  /** The email was opened or a link in it clicked. */
  opened: boolean;
  /** The contact replied. */
  reply: boolean;
  /** Hard do-not-contact signals (outreach rule 8). */
  bounce: boolean;
  unsubscribe: boolean;
  /** A touch has a time on the contact's timeline; a category change is a label, not a touch (rule 7). */
  touch: boolean;
}

const base: EventTraits = { channel: 'other', contact: false, opened: false, reply: false, bounce: false, unsubscribe: false, touch: true };
const traits = (t: Partial<EventTraits>): EventTraits => ({ ...base, ...t });

export const EVENT_TYPES = {
  EMAIL_SENT: traits({ channel: 'email', contact: true }),
  EMAIL_OPEN: traits({ channel: 'email', opened: true }),
  EMAIL_LINK_CLICK: traits({ channel: 'email', opened: true }),
  EMAIL_REPLY: traits({ channel: 'email', contact: true, reply: true }),
  // An automatic answer (out of office, ...): an inbound email on the timeline, but not the contact replying.
  EMAIL_AUTO_REPLY: traits({ channel: 'email' }),
  EMAIL_BOUNCE: traits({ channel: 'email', bounce: true }),
  LEAD_UNSUBSCRIBED: traits({ channel: 'lead', unsubscribe: true }),
  LEAD_CATEGORY_UPDATED: traits({ channel: 'lead', touch: false }),
  // The lead reached the end of a campaign's sequence: a status, not a touch.
  CAMPAIGN_COMPLETED: traits({ channel: 'lead', touch: false }),
  MESSAGE_SENT: traits({ channel: 'social', contact: true }),
  MESSAGE_REPLY_RECEIVED: traits({ channel: 'social', contact: true, reply: true }),
  INMAIL_SENT: traits({ channel: 'social', contact: true }),
  INMAIL_REPLY_RECEIVED: traits({ channel: 'social', contact: true, reply: true }),
  // A connection request is an outbound approach (often with a note), unlike a view or a like.
  CONNECTION_REQUEST_SENT: traits({ channel: 'social', contact: true }),
  CONNECTION_REQUEST_ACCEPTED: traits({ channel: 'social' }),
  FOLLOW_SENT: traits({ channel: 'social' }),
  PROFILE_VIEWED: traits({ channel: 'social' }),
  POST_LIKED: traits({ channel: 'social' }),
  CALL_COMPLETED: traits({ channel: 'call', contact: true }),
  // A platform event no parser maps (a failed send, a lead-state group): kept and counted, never a touch.
  UNKNOWN: traits({ touch: false }),
} as const satisfies Record<string, EventTraits>;

type EventType = keyof typeof EVENT_TYPES;

/**
 * What an event type means. A type this table does not know (a newer sequencer event) is a touch with
 * no other meaning: it counts, but never flips a summary flag on a guess.
 */
export function eventTraits(eventType: string): EventTraits {
  return Object.hasOwn(EVENT_TYPES, eventType) ? EVENT_TYPES[eventType as EventType] : base;
}
