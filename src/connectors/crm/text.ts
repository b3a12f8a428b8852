/** Text the connectors write into CRM fields. */

import { normalizeProfileUrl, type Profile } from '../../domain/profile-url.js';
import { CrmError } from './errors.js';
import type { CrmEvent } from './types.js';

/** A canonical event type as words for people: `EMAIL_SENT` → `Email sent`. */
export function eventLabel(eventType: string): string {
  const words = eventType.toLowerCase().replace(/_/g, ' ').trim();
  return words.charAt(0).toUpperCase() + words.slice(1);
}

/** `text` cut to at most `max` characters, an ellipsis marking a cut (CRM fields have length limits). */
export function truncate(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, max - 1)}…`;
}

/** What happened, for a CRM's plain-text body: the event and its platform, the campaign, profile and subject, then its text. */
export function eventDescription(event: CrmEvent): string {
  const lines = [`${eventLabel(event.eventType)} (${event.platform})`];
  if (event.campaignName) lines.push(`Campaign: ${event.campaignName}`);
  if (event.profileUrl) lines.push(`Profile: ${event.profileUrl}`);
  if (event.subject) lines.push(`Subject: ${event.subject}`);
  if (event.text) lines.push('', event.text);
  return lines.join('\n');
}

/** The profile a social-only event names, or the refusal `crm` records when it names none it can find again. */
export function socialProfileOf(event: CrmEvent, crm: string): Profile {
  const parsed = normalizeProfileUrl(event.profileUrl ?? event.identity);
  if (!parsed.ok) throw new CrmError('rejected', `${crm} contact failed: the event has no email and ${parsed.reason}`);
  return parsed.profile;
}
