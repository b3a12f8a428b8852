/**
 * Smartlead webhooks: flat bodies with an upper-case `event_type`. `from_email` is the customer's own
 * sending mailbox, never the contact; the lead is `sl_lead_email` / `to_email` (`lead_email` and `to` on
 * older category updates, `lead.email` in the oldest format with a nested `lead{}`).
 */
import { z } from 'zod';
import {
  UNKNOWN_EVENT_TYPE,
  directionOf,
  failure,
  firstTime,
  guarded,
  htmlToText,
  id,
  identify,
  inboxLink,
  ids,
  lookup,
  nested,
  normalizeEmail,
  personName,
  text,
  websiteDomain,
  type SequencerParser,
} from '../event.js';

/** Smartlead event (upper-cased) → canonical type. The second group are older names still sent. */
export const SMARTLEAD_EVENTS: Readonly<Record<string, string>> = {
  EMAIL_SENT: 'EMAIL_SENT',
  FIRST_EMAIL_SENT: 'EMAIL_SENT',
  EMAIL_OPEN: 'EMAIL_OPEN',
  EMAIL_LINK_CLICK: 'EMAIL_LINK_CLICK',
  EMAIL_REPLY: 'EMAIL_REPLY',
  EMAIL_BOUNCE: 'EMAIL_BOUNCE',
  LEAD_UNSUBSCRIBED: 'LEAD_UNSUBSCRIBED',
  LEAD_CATEGORY_UPDATED: 'LEAD_CATEGORY_UPDATED',
  // Deprecated names (older docs and integrations).
  EMAIL_OPENED: 'EMAIL_OPEN',
  EMAIL_CLICKED: 'EMAIL_LINK_CLICK',
  EMAIL_REPLIED: 'EMAIL_REPLY',
  EMAIL_BOUNCED: 'EMAIL_BOUNCE',
};

/** Where its webhooks link the lead's conversation in the master inbox (`app_url` on older ones). */
export const SMARTLEAD_INBOX_LINK = ['ui_master_inbox_link', 'app_url'] as const;

const messagePart = nested({ message_id: text, text: text, html: text, time: text, subject: text });
const lead = nested({
  id: id,
  email: text,
  first_name: text,
  last_name: text,
  company_name: text,
  website: text,
  company_url: text,
  linkedin_profile: text,
});

const Payload = z.object({
  event_type: text,
  event: text, // oldest format
  // Contact
  sl_lead_email: text,
  to_email: text,
  lead_email: text, // deprecated (category updates)
  to: text, // deprecated (category updates)
  to_name: text,
  lead_name: text, // deprecated
  lead_data: lead,
  lead: lead, // oldest format
  leadCorrespondence: nested({ targetLeadEmail: text }),
  // Campaign and ids
  campaign_id: id,
  campaign_name: text,
  sl_email_lead_id: id,
  sl_email_lead_map_id: id,
  lead_id: id,
  stats_id: id,
  stats_thread_id: id,
  message_id: text, // deprecated on replies (use reply_message.message_id); the sent message's id on sends
  sequence_number: id,
  webhook_id: id,
  email_account_id: id,
  client_id: id,
  from_email: text,
  from: text, // deprecated (category updates)
  // Message
  subject: text,
  custom_subject: text,
  custom_email_message: text,
  sent_message: messagePart,
  reply_message: messagePart,
  sent_message_body: text, // deprecated
  reply_body: text, // deprecated
  preview_text: text, // deprecated
  reply: nested({ subject: text, body: text }), // oldest format
  // Category
  lead_category: nested({ new_id: id, new_name: text }),
  category: text, // deprecated
  lead_category_id: id, // deprecated
  // Times
  event_timestamp: text,
  created_at: text,
  timestamp: text,
  time_sent: text,
  time_opened: text,
  time_clicked: text,
  time_replied: text, // deprecated
  time_bounced: text,
  time_unsubscribed: text,
});

/** Parses one Smartlead webhook body. */
export const parseSmartlead: SequencerParser = guarded('smartlead', (body) => {
  const p = Payload.parse(body);
  const rawEventType = p.event_type ?? p.event;
  if (rawEventType === undefined) return failure('smartlead', null, 'no event type: event_type (or the older event) is missing or not a string');
  const eventType = lookup(SMARTLEAD_EVENTS, rawEventType.toUpperCase()) ?? UNKNOWN_EVENT_TYPE;

  const who = identify(
    [
      ['sl_lead_email', p.sl_lead_email],
      ['to_email', p.to_email],
      ['lead_email', p.lead_email],
      ['to', p.to],
      ['lead_data.email', p.lead_data?.email],
      ['lead.email', p.lead?.email],
      ['leadCorrespondence.targetLeadEmail', p.leadCorrespondence?.targetLeadEmail],
    ],
    [
      ['lead_data.linkedin_profile', p.lead_data?.linkedin_profile],
      ['lead.linkedin_profile', p.lead?.linkedin_profile],
    ],
  );
  if (!who.ok) return failure('smartlead', rawEventType, who.reason);

  const person = p.lead_data ?? p.lead;
  const name = personName(person?.first_name, person?.last_name, p.to_name ?? p.lead_name);
  const direction = directionOf(eventType);
  const categoryName = p.lead_category?.new_name ?? p.category;
  const mailbox = normalizeEmail(p.from_email ?? p.from) ?? undefined;

  return {
    ok: true,
    event: {
      platform: 'smartlead',
      eventType,
      rawEventType,
      contact: {
        email: who.email,
        profileUrl: who.profileUrl,
        ...name,
        company: person?.company_name ?? null,
        companyDomain: websiteDomain(person?.company_url) ?? websiteDomain(person?.website),
      },
      identity: (who.email ?? who.profileUrl)!,
      campaign: { id: p.campaign_id ?? null, name: p.campaign_name ?? null },
      message: {
        subject: p.custom_subject ?? p.subject ?? p.reply?.subject ?? null,
        text:
          direction === 'inbound'
            ? (p.reply_message?.text ?? htmlToText(p.reply_message?.html) ?? htmlToText(p.reply_body) ?? p.preview_text ?? htmlToText(p.reply?.body))
            : direction === 'outbound'
              ? (p.sent_message?.text ?? htmlToText(p.custom_email_message) ?? htmlToText(p.sent_message?.html) ?? htmlToText(p.sent_message_body))
              : null,
        direction,
      },
      leadCategory: categoryName ? { id: p.lead_category?.new_id ?? p.lead_category_id ?? null, name: categoryName } : null,
      inboxUrl: inboxLink(body, SMARTLEAD_INBOX_LINK),
      sequencerIds: ids({
        leadId: p.sl_email_lead_id ?? p.lead_id ?? p.lead?.id,
        leadMapId: p.sl_email_lead_map_id,
        statsId: p.stats_id,
        threadId: p.stats_thread_id,
        messageId: p.reply_message?.message_id ?? p.message_id ?? (direction === 'outbound' ? p.sent_message?.message_id : undefined),
        inReplyToMessageId: direction === 'inbound' ? p.sent_message?.message_id : undefined,
        step: p.sequence_number,
        emailAccountId: p.email_account_id,
        mailbox,
        clientId: p.client_id,
        webhookId: p.webhook_id,
      }),
      occurredAt: firstTime(
        p.reply_message?.time,
        p.time_replied,
        p.time_sent,
        p.time_opened,
        p.time_clicked,
        p.time_bounced,
        p.time_unsubscribed,
        p.event_timestamp,
        p.created_at,
        p.timestamp,
      ),
    },
  };
});
