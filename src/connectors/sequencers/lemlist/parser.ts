/**
 * lemlist webhooks: the body is an activity object, its `type` the activity (`emailsSent`,
 * `linkedinInviteDone`, ...), with `leadId`, `campaignId`, `createdAt` and often the lead's fields.
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

/** lemlist activity type (lower-cased) → canonical type. */
export const LEMLIST_EVENTS: Readonly<Record<string, string>> = {
  emailssent: 'EMAIL_SENT',
  emailsopened: 'EMAIL_OPEN',
  emailsclicked: 'EMAIL_LINK_CLICK',
  emailsreplied: 'EMAIL_REPLY',
  emailsbounced: 'EMAIL_BOUNCE',
  emailsunsubscribed: 'LEAD_UNSUBSCRIBED',
  linkedinsent: 'MESSAGE_SENT',
  linkedinreplied: 'MESSAGE_REPLY_RECEIVED',
  linkedininvitedone: 'CONNECTION_REQUEST_SENT',
  linkedininviteaccepted: 'CONNECTION_REQUEST_ACCEPTED',
  linkedinvisitdone: 'PROFILE_VIEWED',
  linkedinfollowdone: 'FOLLOW_SENT',
  // A call that took place and ended (aircallDone only marks the call task done and would count twice).
  aircallended: 'CALL_COMPLETED',
};

/** lemlist interest marks, on any channel (lower-cased) → the category name stored for them. */
export const LEMLIST_CATEGORIES: Readonly<Record<string, string>> = {
  interested: 'Interested',
  emailsinterested: 'Interested',
  linkedininterested: 'Interested',
  aircallinterested: 'Interested',
  apiinterested: 'Interested',
  manualinterested: 'Interested',
  notinterested: 'Not Interested',
  emailsnotinterested: 'Not Interested',
  linkedinnotinterested: 'Not Interested',
  aircallnotinterested: 'Not Interested',
  apinotinterested: 'Not Interested',
  manualnotinterested: 'Not Interested',
};

/** Its webhooks link no inbox page. */
export const LEMLIST_INBOX_LINK = [] as const;

const Payload = z.object({
  _id: id,
  type: text,
  createdAt: text,
  leadId: id,
  campaignId: id,
  campaignName: text,
  sequenceId: id,
  stepId: id,
  sequenceStep: id,
  emailId: id,
  teamId: id,
  sendUserId: id,
  sendUserEmail: text,
  leadEmail: text,
  email: text,
  leadLinkedinUrl: text,
  linkedinUrl: text,
  leadFirstName: text,
  leadLastName: text,
  firstName: text,
  lastName: text,
  leadCompanyName: text,
  companyName: text,
  leadCompanyDomain: text,
  companyDomain: text,
  subject: text,
  emailSubject: text,
  text: text,
  html: text,
  messagePreview: text,
});

/** Parses one lemlist webhook body. */
export const parseLemlist: SequencerParser = guarded('lemlist', (body) => {
  const p = Payload.parse(body);
  const rawEventType = p.type;
  if (rawEventType === undefined) return failure('lemlist', null, 'no event type: type is missing or not a string');
  const key = rawEventType.toLowerCase();
  const categoryName = lookup(LEMLIST_CATEGORIES, key);
  const eventType = categoryName ? 'LEAD_CATEGORY_UPDATED' : (lookup(LEMLIST_EVENTS, key) ?? UNKNOWN_EVENT_TYPE);

  const who = identify(
    [
      ['leadEmail', p.leadEmail],
      ['email', p.email],
    ],
    [
      ['leadLinkedinUrl', p.leadLinkedinUrl],
      ['linkedinUrl', p.linkedinUrl],
    ],
  );
  if (!who.ok) return failure('lemlist', rawEventType, who.reason);

  const direction = directionOf(eventType);
  return {
    ok: true,
    event: {
      platform: 'lemlist',
      eventType,
      rawEventType,
      contact: {
        email: who.email,
        profileUrl: who.profileUrl,
        ...personName(p.leadFirstName ?? p.firstName, p.leadLastName ?? p.lastName, undefined),
        company: p.leadCompanyName ?? p.companyName ?? null,
        companyDomain: websiteDomain(p.leadCompanyDomain ?? p.companyDomain),
      },
      identity: (who.email ?? who.profileUrl)!,
      campaign: { id: p.campaignId ?? null, name: p.campaignName ?? null },
      message: {
        subject: p.subject ?? p.emailSubject ?? null,
        text: direction ? (p.text ?? htmlToText(p.html) ?? p.messagePreview ?? null) : null,
        direction,
      },
      leadCategory: categoryName ? { id: null, name: categoryName } : null,
      inboxUrl: inboxLink(body, LEMLIST_INBOX_LINK),
      sequencerIds: ids({
        activityId: p._id,
        leadId: p.leadId,
        sequenceId: p.sequenceId,
        stepId: p.stepId,
        step: p.sequenceStep,
        emailId: p.emailId,
        sendUserId: p.sendUserId,
        mailbox: normalizeEmail(p.sendUserEmail) ?? undefined,
        teamId: p.teamId,
      }),
      occurredAt: firstTime(p.createdAt),
    },
  };
});
