/**
 * Instantly webhooks: flat bodies with a lower-case `event_type`; the lead's own fields are merged in at
 * the top level. Lead statuses (`lead_interested`, ...) and customer-defined labels (sent as-is in
 * `event_type`) are lead category updates.
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
  normalizeEmail,
  personName,
  text,
  websiteDomain,
  type SequencerParser,
} from '../event.js';

/** Instantly event → canonical type. */
export const INSTANTLY_EVENTS: Readonly<Record<string, string>> = {
  email_sent: 'EMAIL_SENT',
  email_opened: 'EMAIL_OPEN',
  link_clicked: 'EMAIL_LINK_CLICK',
  email_link_clicked: 'EMAIL_LINK_CLICK', // the name the webhook API subscribes with
  reply_received: 'EMAIL_REPLY',
  // An out-of-office or other automatic answer is not the contact replying (no reply flag, no relay).
  auto_reply_received: 'EMAIL_AUTO_REPLY',
  email_bounced: 'EMAIL_BOUNCE',
  lead_unsubscribed: 'LEAD_UNSUBSCRIBED',
  campaign_completed: 'CAMPAIGN_COMPLETED',
  // Workspace events with no lead: kept as UNKNOWN (they are refused for want of an identity).
  account_error: UNKNOWN_EVENT_TYPE,
  supersearch_enrichment_completed: UNKNOWN_EVENT_TYPE,
};

/** Instantly's built-in lead statuses → the category name stored for them. */
export const INSTANTLY_STATUSES: Readonly<Record<string, string>> = {
  lead_interested: 'Interested',
  lead_not_interested: 'Not Interested',
  lead_neutral: 'Neutral',
  lead_meeting_booked: 'Meeting Booked',
  lead_meeting_completed: 'Meeting Completed',
  lead_closed: 'Closed',
  lead_out_of_office: 'Out of Office',
  lead_wrong_person: 'Wrong Person',
  lead_no_show: 'No Show',
};

/** Where its webhooks link the lead's conversation in the Unibox. */
export const INSTANTLY_INBOX_LINK = ['unibox_url'] as const;

// Lead data is merged from the customer's lead list, so its field names vary with how it was imported.
const Payload = z.object({
  event_type: text,
  timestamp: text,
  workspace: id,
  campaign_id: id,
  campaign_name: text,
  lead_email: text,
  email: text,
  linkedin_url: text,
  linkedinUrl: text,
  linkedIn: text,
  linkedin: text,
  LinkedIn: text,
  firstName: text,
  first_name: text,
  lastName: text,
  last_name: text,
  name: text,
  companyName: text,
  company_name: text,
  companyDomain: text,
  company_domain: text,
  website: text,
  email_account: text,
  step: id,
  variant: id,
  email_id: id,
  email_subject: text,
  email_text: text,
  email_html: text,
  reply_subject: text,
  reply_text: text,
  reply_html: text,
  reply_text_snippet: text,
});

/** Parses one Instantly webhook body. */
export const parseInstantly: SequencerParser = guarded('instantly', (body) => {
  const p = Payload.parse(body);
  const rawEventType = p.event_type;
  if (rawEventType === undefined) return failure('instantly', null, 'no event type: event_type is missing or not a string');
  const key = rawEventType.toLowerCase();
  const status = lookup(INSTANTLY_STATUSES, key);
  const known = lookup(INSTANTLY_EVENTS, key);
  // Anything not documented is a customer-defined label: Instantly sends its name as the event type.
  const categoryName = status ?? (known === undefined ? rawEventType : undefined);
  const eventType = categoryName !== undefined ? 'LEAD_CATEGORY_UPDATED' : known!;

  const who = identify(
    [
      ['lead_email', p.lead_email],
      ['email', p.email],
    ],
    [
      ['linkedin_url', p.linkedin_url],
      ['linkedinUrl', p.linkedinUrl],
      ['linkedIn', p.linkedIn ?? p.linkedin ?? p.LinkedIn],
    ],
  );
  if (!who.ok) return failure('instantly', rawEventType, who.reason);

  const direction = directionOf(eventType);
  const inbound = direction === 'inbound';
  return {
    ok: true,
    event: {
      platform: 'instantly',
      eventType,
      rawEventType,
      contact: {
        email: who.email,
        profileUrl: who.profileUrl,
        ...personName(p.firstName ?? p.first_name, p.lastName ?? p.last_name, p.name),
        company: p.companyName ?? p.company_name ?? null,
        companyDomain: websiteDomain(p.companyDomain ?? p.company_domain) ?? websiteDomain(p.website),
      },
      identity: (who.email ?? who.profileUrl)!,
      campaign: { id: p.campaign_id ?? null, name: p.campaign_name ?? null },
      message: {
        subject: (inbound ? p.reply_subject : p.email_subject) ?? null,
        text: inbound
          ? (p.reply_text ?? htmlToText(p.reply_html) ?? p.reply_text_snippet ?? null)
          : direction === 'outbound'
            ? (p.email_text ?? htmlToText(p.email_html))
            : null,
        direction,
      },
      leadCategory: categoryName !== undefined ? { id: null, name: categoryName } : null,
      inboxUrl: inboxLink(body, INSTANTLY_INBOX_LINK),
      sequencerIds: ids({
        emailId: p.email_id,
        step: p.step,
        variant: p.variant,
        mailbox: normalizeEmail(p.email_account) ?? undefined,
        workspaceId: p.workspace,
      }),
      occurredAt: firstTime(p.timestamp),
    },
  };
});
