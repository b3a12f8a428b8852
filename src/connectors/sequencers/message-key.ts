import type { InboundEvent } from './event.js';

/**
 * What identifies the sequencer event an inbound event is, so that the event fetched by the backfill and
 * the same event received as a webhook are one (src/jobs/backfills__run.ts, the drain's duplicates): the
 * sequencer's id of the event itself where it has one (lemlist's activity id, any event); for a message,
 * its direction and the sequencer's message id (its `messageId`, else its `emailId`), or, where the
 * payload carries none (LinkedIn messages), its type, conversation (else contact) and time to the second. Null for any other
 * event (an open, a category update) and for a message with neither an id nor a time.
 */
export function messageKeyOf(event: InboundEvent): string | null {
  const activity = event.sequencerIds.activityId;
  if (activity !== undefined) return `activity:${activity}`;
  const direction = event.message.direction;
  if (direction === null) return null;
  const id = event.sequencerIds.messageId ?? event.sequencerIds.emailId;
  if (id !== undefined) return `${direction}:${id}`;
  if (event.occurredAt === null) return null;
  // The conversation where there is one: a webhook may name the lead by email where the history names its profile.
  const where = event.sequencerIds.conversationId ?? event.identity;
  return `${direction}:${event.eventType}:${where}:${event.occurredAt.toISOString().slice(0, 19)}`;
}

/** The lead an event names, as a backfilled source remembers it: its campaign, the sequencer's lead id, its contact. */
export function leadOf(event: InboundEvent): { key: string; campaignId: string | null; leadId: string | null; contact: string } {
  const campaignId = event.campaign.id;
  const leadId = event.sequencerIds.leadId ?? null;
  return { key: `${campaignId ?? ''}:${leadId ?? event.identity}`, campaignId, leadId, contact: event.identity };
}
