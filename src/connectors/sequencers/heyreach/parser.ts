/**
 * HeyReach webhooks (professional-network automation; unsigned). `event_type` is lower case in the body.
 * Leads often have no email: the identity is then the canonical `lead.profile_url`.
 */
import { z } from 'zod';
import {
  UNKNOWN_EVENT_TYPE,
  directionOf,
  failure,
  firstTime,
  flag,
  guarded,
  id,
  identify,
  inboxLink,
  ids,
  list,
  lookup,
  nested,
  parseTime,
  personName,
  text,
  websiteDomain,
  type SequencerParser,
} from '../event.js';

/** HeyReach event (lower-cased) → canonical type. */
export const HEYREACH_EVENTS: Readonly<Record<string, string>> = {
  connection_request_sent: 'CONNECTION_REQUEST_SENT',
  connection_request_accepted: 'CONNECTION_REQUEST_ACCEPTED',
  message_sent: 'MESSAGE_SENT',
  // The first reply only, and every reply (messages and InMails alike): the same canonical event.
  message_reply_received: 'MESSAGE_REPLY_RECEIVED',
  every_message_reply_received: 'MESSAGE_REPLY_RECEIVED',
  inmail_sent: 'INMAIL_SENT',
  inmail_reply_received: 'INMAIL_REPLY_RECEIVED',
  follow_sent: 'FOLLOW_SENT',
  liked_post: 'POST_LIKED',
  viewed_profile: 'PROFILE_VIEWED',
  campaign_completed: 'CAMPAIGN_COMPLETED',
  // A tag is HeyReach's lead label: reply-relay allowlists match it like a category.
  lead_tag_updated: 'LEAD_CATEGORY_UPDATED',
};

/** Its webhooks link no inbox page. */
export const HEYREACH_INBOX_LINK = [] as const;

/** With `is_inmail: true`, a message event is its InMail counterpart. */
const INMAIL: Readonly<Record<string, string>> = { MESSAGE_SENT: 'INMAIL_SENT', MESSAGE_REPLY_RECEIVED: 'INMAIL_REPLY_RECEIVED' };

const tagShape = { id: id, name: text, tag: text };

const Payload = z.object({
  event_type: text,
  timestamp: text,
  is_inmail: flag,
  conversation_id: id,
  message: text,
  campaign: nested({ id: id, name: text }),
  sender: nested({ id: id, email_address: text }),
  lead: nested({
    id: id,
    profile_url: text,
    linkedin_url: text,
    email_address: text,
    email: text,
    enriched_email: text,
    first_name: text,
    last_name: text,
    full_name: text,
    company_name: text,
    company_url: text,
    company_website: text,
    tags: z.array(z.unknown()).optional().catch(undefined),
  }),
  recent_messages: list({ creation_time: text, message: text, is_reply: flag }),
  // Tag updates: the tag may come alone or as a list (strings or {id, name}).
  tag: text,
  tag_name: text,
  tags: z.array(z.unknown()).optional().catch(undefined),
  new_tag: nested(tagShape),
});

/** Parses one HeyReach webhook body. */
export const parseHeyReach: SequencerParser = guarded('heyreach', (body) => {
  const p = Payload.parse(body);
  const rawEventType = p.event_type;
  if (rawEventType === undefined) return failure('heyreach', null, 'no event type: event_type is missing or not a string');
  const mapped = lookup(HEYREACH_EVENTS, rawEventType.toLowerCase()) ?? UNKNOWN_EVENT_TYPE;
  const eventType = p.is_inmail === true ? (lookup(INMAIL, mapped) ?? mapped) : mapped;

  const lead = p.lead;
  const who = identify(
    [
      ['lead.email_address', lead?.email_address],
      ['lead.email', lead?.email],
      ['lead.enriched_email', lead?.enriched_email],
    ],
    [
      ['lead.profile_url', lead?.profile_url],
      ['lead.linkedin_url', lead?.linkedin_url],
    ],
  );
  if (!who.ok) return failure('heyreach', rawEventType, who.reason);

  const direction = directionOf(eventType);
  const latest = latestMessage(p.recent_messages, direction);
  const tag = eventType === 'LEAD_CATEGORY_UPDATED' ? currentTag(p) : null;
  return {
    ok: true,
    event: {
      platform: 'heyreach',
      eventType,
      rawEventType,
      contact: {
        email: who.email,
        profileUrl: who.profileUrl,
        ...personName(lead?.first_name, lead?.last_name, lead?.full_name),
        company: lead?.company_name ?? null,
        companyDomain: websiteDomain(lead?.company_website) ?? websiteDomain(lead?.company_url),
      },
      identity: (who.email ?? who.profileUrl)!,
      campaign: { id: p.campaign?.id ?? null, name: p.campaign?.name ?? null },
      message: { subject: null, text: direction ? (latest?.message ?? p.message ?? null) : null, direction },
      leadCategory: tag,
      inboxUrl: inboxLink(body, HEYREACH_INBOX_LINK),
      sequencerIds: ids({
        leadId: lead?.id,
        conversationId: p.conversation_id,
        senderId: p.sender?.id,
      }),
      // The message's own time first: the backfill keys a LinkedIn message (no id) by it, and `timestamp` may be the delivery's.
      occurredAt: firstTime(latest?.creation_time, p.timestamp),
    },
  };
});

type RecentMessage = { creation_time?: string; message?: string; is_reply?: boolean };

/** The newest message of the event's direction (a reply for replies, ours for sends); array order breaks ties. */
function latestMessage(messages: RecentMessage[], direction: 'outbound' | 'inbound' | null): RecentMessage | null {
  if (direction === null) return null;
  let best: RecentMessage | null = null;
  let bestAt = -Infinity;
  for (const m of messages) {
    if (m.message === undefined || (m.is_reply ?? false) !== (direction === 'inbound')) continue;
    const at = parseTime(m.creation_time)?.getTime() ?? -Infinity;
    if (best === null || at > bestAt) {
      best = m;
      bestAt = at;
    }
  }
  return best;
}

/** The tag a tag update names: a single tag field, else the last of the listed tags (the newest added). */
function currentTag(p: z.infer<typeof Payload>): { id: string | null; name: string } | null {
  const single = p.new_tag?.name ?? p.new_tag?.tag;
  if (single) return { id: p.new_tag?.id ?? null, name: single };
  const named = p.tag ?? p.tag_name;
  if (named) return { id: null, name: named };
  const tags = (p.tags ?? p.lead?.tags ?? []).map(readTag).filter((t) => t !== null);
  return tags.at(-1) ?? null;
}

const Tag = z.object(tagShape);

function readTag(value: unknown): { id: string | null; name: string } | null {
  if (typeof value === 'string') return value.trim() ? { id: null, name: value.trim() } : null;
  const parsed = Tag.safeParse(value);
  const name = parsed.success ? (parsed.data.name ?? parsed.data.tag) : undefined;
  return parsed.success && name ? { id: parsed.data.id ?? null, name } : null;
}
