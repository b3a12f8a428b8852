/**
 * EmailBison webhooks: `{event: {type, name, instance_url, workspace_id, workspace_name}, data: {...}}`,
 * the event's objects under `data` (`lead`, `campaign`, `scheduled_email`, `reply`, `campaign_event`,
 * `sender_email`). `data.sender_email` is the customer's own mailbox, never the contact. Field names and
 * events: docs/vendors/emailbison.md.
 */
import { z } from 'zod';
import {
  UNKNOWN_EVENT_TYPE,
  directionOf,
  failure,
  firstTime,
  flag,
  guarded,
  htmlToText,
  id,
  identify,
  ids,
  list,
  lookup,
  nested,
  normalizeEmail,
  personName,
  text,
  webUrl,
  type SequencerParser,
} from '../event.js';

/** EmailBison event (upper-cased) → canonical type; replies are auto replies when `reply.automated_reply`. */
export const EMAILBISON_EVENTS: Readonly<Record<string, string>> = {
  EMAIL_SENT: 'EMAIL_SENT',
  // A person's email from the master inbox or the API (a reply or a new email): a send like a campaign's.
  MANUAL_EMAIL_SENT: 'EMAIL_SENT',
  EMAIL_OPENED: 'EMAIL_OPEN',
  LEAD_REPLIED: 'EMAIL_REPLY',
  // Mail to the customer's mailbox tied to no campaign email: still the sender writing to the rep.
  UNTRACKED_REPLY_RECEIVED: 'EMAIL_REPLY',
  LEAD_INTERESTED: 'LEAD_CATEGORY_UPDATED',
  EMAIL_BOUNCED: 'EMAIL_BOUNCE',
  LEAD_UNSUBSCRIBED: 'LEAD_UNSUBSCRIBED',
  // Fires beside the first EMAIL_SENT: mapped to a send it would count the first email twice.
  LEAD_FIRST_CONTACTED: UNKNOWN_EVENT_TYPE,
  // Workspace, mailbox and tag events name no lead's touch: kept as UNKNOWN (refused for want of an identity, or counted as unknown).
  TAG_ATTACHED: UNKNOWN_EVENT_TYPE,
  TAG_REMOVED: UNKNOWN_EVENT_TYPE,
  EMAIL_ACCOUNT_ADDED: UNKNOWN_EVENT_TYPE,
  EMAIL_ACCOUNT_REMOVED: UNKNOWN_EVENT_TYPE,
  EMAIL_ACCOUNT_DISCONNECTED: UNKNOWN_EVENT_TYPE,
  EMAIL_ACCOUNT_RECONNECTED: UNKNOWN_EVENT_TYPE,
  WARMUP_DISABLED_RECEIVING_BOUNCES: UNKNOWN_EVENT_TYPE,
  WARMUP_DISABLED_CAUSING_BOUNCES: UNKNOWN_EVENT_TYPE,
};

/** The only category EmailBison announces: a reply marked interested. */
const INTERESTED = { id: null, name: 'Interested' } as const;

/** Its webhooks carry no link field: the parser builds the reply's master inbox page ({@link replyPage}). */
export const EMAILBISON_INBOX_LINK = [] as const;

const lead = nested({ id: id, email: text, first_name: text, last_name: text, company: text });
const reply = nested({
  id: id,
  uuid: text,
  email_subject: text,
  subject: text,
  automated_reply: flag,
  text_body: text,
  html_body: text,
  date_received: text,
  from_name: text,
  from_email_address: text,
  primary_to_email_address: text,
  to: list({ address: text }),
  raw_message_id: text,
});
const scheduledEmail = nested({
  id: id,
  sequence_step_order: id,
  sequence_step_variant: id,
  email_subject: text,
  email_body: text,
  sent_at: text,
  raw_message_id: text,
});

const Payload = z.object({
  event: nested({ type: text, instance_url: text, workspace_id: id }),
  data: nested({
    lead,
    campaign: nested({ id: id, name: text }),
    scheduled_email: scheduledEmail,
    reply,
    campaign_event: nested({ id: id, created_at: text }),
    sender_email: nested({ id: id, email: text }),
  }),
});

/** Parses one EmailBison webhook body. */
export const parseEmailBison: SequencerParser = guarded('emailbison', (body) => {
  const p = Payload.parse(body);
  const rawEventType = p.event?.type;
  if (rawEventType === undefined) return failure('emailbison', null, 'no event type: event.type is missing or not a string');
  const upper = rawEventType.toUpperCase();
  const data = p.data ?? {};
  const automated = data.reply?.automated_reply === true;
  const mapped = lookup(EMAILBISON_EVENTS, upper) ?? UNKNOWN_EVENT_TYPE;
  const eventType = mapped === 'EMAIL_REPLY' && automated ? 'EMAIL_AUTO_REPLY' : mapped;
  const direction = directionOf(eventType);
  // A person's email: the message is the `reply` object (ours), its recipient the contact when no lead is named.
  const manual = upper === 'MANUAL_EMAIL_SENT';

  const who = identify(
    [
      ['data.lead.email', data.lead?.email],
      // Untracked replies name no lead: the contact is who wrote; a manual email's is who it went to.
      ...(upper === 'UNTRACKED_REPLY_RECEIVED' ? [['data.reply.from_email_address', data.reply?.from_email_address] as const] : []),
      ...(manual
        ? [
            ['data.reply.primary_to_email_address', data.reply?.primary_to_email_address] as const,
            ['data.reply.to[0].address', data.reply?.to[0]?.address] as const,
          ]
        : []),
    ],
    [],
  );
  if (!who.ok) return failure('emailbison', rawEventType, who.reason);

  const name = personName(
    data.lead?.first_name,
    data.lead?.last_name,
    data.lead ? undefined : upper === 'UNTRACKED_REPLY_RECEIVED' ? data.reply?.from_name : undefined,
  );
  const fromReply = direction === 'inbound' || manual;
  return {
    ok: true,
    event: {
      platform: 'emailbison',
      eventType,
      rawEventType,
      contact: { email: who.email, profileUrl: null, ...name, company: data.lead?.company ?? null, companyDomain: null },
      identity: who.email!,
      campaign: { id: data.campaign?.id ?? null, name: data.campaign?.name ?? null },
      message: {
        subject: direction === null ? null : ((fromReply ? (data.reply?.email_subject ?? data.reply?.subject) : data.scheduled_email?.email_subject) ?? null),
        text:
          direction === null ? null : fromReply ? (data.reply?.text_body ?? htmlToText(data.reply?.html_body)) : htmlToText(data.scheduled_email?.email_body),
        direction,
      },
      leadCategory: upper === 'LEAD_INTERESTED' ? { ...INTERESTED } : null,
      inboxUrl: replyPage(p.event?.instance_url, data.reply?.uuid),
      sequencerIds: ids({
        leadId: data.lead?.id,
        messageId: fromReply ? data.reply?.raw_message_id : direction === 'outbound' ? data.scheduled_email?.raw_message_id : undefined,
        inReplyToMessageId: direction === 'inbound' ? data.scheduled_email?.raw_message_id : undefined,
        replyId: data.reply?.id,
        scheduledEmailId: data.scheduled_email?.id,
        campaignEventId: data.campaign_event?.id,
        step: data.scheduled_email?.sequence_step_order,
        variant: data.scheduled_email?.sequence_step_variant,
        emailAccountId: data.sender_email?.id,
        mailbox: normalizeEmail(data.sender_email?.email) ?? undefined,
        workspaceId: p.event?.workspace_id,
      }),
      // A message's own time; else the campaign event's (an open, an interest mark); a bounce notice's arrival.
      occurredAt: fromReply
        ? firstTime(data.reply?.date_received, data.campaign_event?.created_at)
        : firstTime(direction === 'outbound' ? data.scheduled_email?.sent_at : undefined, data.campaign_event?.created_at, data.reply?.date_received),
    },
  };
});

/**
 * The reply's page in the instance's master inbox (`<instance>/inbox/replies/<reply uuid>`, the form public
 * integrations link; EmailBison documents no deep link), or null without both.
 */
function replyPage(instanceUrl: string | undefined, uuid: string | undefined): string | null {
  const origin = webUrl.parse(instanceUrl);
  if (origin === undefined || uuid === undefined || !/^[0-9a-f-]{8,64}$/i.test(uuid)) return null;
  return `${new URL(origin).origin}/inbox/replies/${uuid}`;
}
