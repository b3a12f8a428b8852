import type { Profile } from '../../../domain/profile-url.js';
import { eventDescription, eventLabel, socialProfileOf, truncate } from '../text.js';
import type { CrmEvent } from '../types.js';

/** What Close is sent for one event, built from the event alone (pure). */

const NAME_MAX = 255;
const SUBJECT_MAX = 255;
const BODY_MAX = 100_000;

/** The event types logged as Close email activities: a send (`sent`) and what came back (`inbox`); everything else is a note. */
const EMAIL_ACTIVITY_TYPES = new Set(['EMAIL_SENT', 'EMAIL_REPLY', 'EMAIL_AUTO_REPLY']);

export function isEmailActivity(event: CrmEvent): boolean {
  return EMAIL_ACTIVITY_TYPES.has(event.eventType) && event.email !== null;
}

/** A new contact: its name, email and (for social events) its profile URL. */
export function contactFields(event: CrmEvent): Record<string, unknown> {
  const name =
    [event.firstName?.trim(), event.lastName?.trim()].filter(Boolean).join(' ') || event.email?.trim().toLowerCase() || socialProfile(event).canonical;
  return {
    name: truncate(name, NAME_MAX),
    ...(event.email ? { emails: [{ type: 'office', email: event.email.trim().toLowerCase() }] } : {}),
    ...(event.profileUrl || !event.email ? { urls: [{ type: 'url', url: socialProfile(event).canonical }] } : {}),
  };
}

/** A new lead for a company: named after it, its website the domain. */
export function leadFields(event: CrmEvent, domain: string): Record<string, unknown> {
  return { name: truncate(event.company?.trim() || domain, NAME_MAX), url: `https://${domain}` };
}

/**
 * The email as a logged activity, never one Close would send: `sent` for ours, `inbox` for what came
 * back (whose sender, required, is the prospect). Backdated to the event's time.
 */
export function emailActivity(event: CrmEvent, ids: { leadId: string; contactId: string; userId: string | null }): Record<string, unknown> {
  const prospect = event.email!.trim().toLowerCase();
  const name = [event.firstName?.trim(), event.lastName?.trim()].filter(Boolean).join(' ');
  const rep = event.senderEmail?.trim().toLowerCase() || null;
  const inbound = event.eventType !== 'EMAIL_SENT';
  return {
    lead_id: ids.leadId,
    contact_id: ids.contactId,
    ...(ids.userId ? { user_id: ids.userId } : {}),
    status: inbound ? 'inbox' : 'sent',
    ...(inbound ? { sender: address(name, prospect), to: rep ? [rep] : [] } : { ...(rep ? { sender: rep } : {}), to: [prospect] }),
    subject: truncate(event.subject ?? `${eventLabel(event.eventType)} (${event.platform})`, SUBJECT_MAX),
    body_text: truncate(event.text ?? '', BODY_MAX),
    activity_at: event.occurredAt.toISOString(),
  };
}

/** Any other event as a note: what happened, where, and its text. Backdated to the event's time. */
export function noteActivity(event: CrmEvent, ids: { leadId: string; contactId: string; userId: string | null }): Record<string, unknown> {
  return {
    lead_id: ids.leadId,
    contact_id: ids.contactId,
    ...(ids.userId ? { user_id: ids.userId } : {}),
    title: noteTitle(event),
    note: truncate(eventDescription(event), BODY_MAX),
    activity_at: event.occurredAt.toISOString(),
  };
}

function noteTitle(event: CrmEvent): string {
  return truncate(`[${event.platform}] ${eventLabel(event.eventType)}${event.subject ? `: ${event.subject}` : ''}`, SUBJECT_MAX);
}

/** The follow-up task: a lead task, due the day after the event, for the sender's user when known. */
export function followUpTask(
  event: CrmEvent,
  ids: { leadId: string; contactId: string; userId: string | null },
): Record<string, unknown> & { text: string; date: string } {
  return {
    _type: 'lead',
    lead_id: ids.leadId,
    contact_id: ids.contactId,
    ...(ids.userId ? { assigned_to: ids.userId } : {}),
    text: truncate(`Follow up: ${eventLabel(event.eventType)}${event.subject ? ` - ${event.subject}` : ''} (${event.platform})`, SUBJECT_MAX),
    date: new Date(event.occurredAt.getTime() + 24 * 3600_000).toISOString().slice(0, 10),
  };
}

export function socialProfile(event: CrmEvent): Profile {
  return socialProfileOf(event, 'Close');
}

/** `"Name" <email>`, the form Close's `sender` takes; the email alone without a name. */
function address(name: string, email: string): string {
  return name ? `"${name.replace(/["\\]/g, '')}" <${email}>` : email;
}
