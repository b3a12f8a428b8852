import { eventTraits } from '../../../domain/event-types.js';
import { escapeHtml } from '../../../domain/html.js';
import { eventLabel, truncate } from '../text.js';
import type { CrmEvent } from '../types.js';

const NOTE_MAX = 65_536;

/** Sent emails and replies are email engagements; everything else (opens, social, calls, labels) a note. */
export function isEmailEngagement(event: CrmEvent): boolean {
  return eventTraits(event.eventType).channel === 'email' && eventTraits(event.eventType).contact;
}

export function activityProperties(type: 'emails' | 'notes', event: CrmEvent, timestamp: string): Record<string, string> {
  if (type === 'emails') {
    const inbound = event.direction === 'inbound' || (event.direction === null && eventTraits(event.eventType).reply);
    const props: Record<string, string> = {
      hs_timestamp: timestamp,
      hs_email_direction: inbound ? 'INCOMING_EMAIL' : 'EMAIL',
      hs_email_status: 'SENT',
      hs_email_subject: truncate(event.subject ?? eventLabel(event.eventType), 255),
    };
    if (event.text) props.hs_email_text = truncate(event.text, NOTE_MAX);
    return props;
  }
  return { hs_timestamp: timestamp, hs_note_body: truncate(noteBody(event), NOTE_MAX) };
}

export function taskProperties(event: CrmEvent, timestamp: string, ownerId: string | null): Record<string, string> {
  const channel = eventTraits(event.eventType).channel;
  const props: Record<string, string> = {
    hs_timestamp: timestamp,
    hs_task_subject: truncate(`Follow up: ${eventLabel(event.eventType)}${event.subject ? ` - ${event.subject}` : ''}`, 255),
    hs_task_body: truncate(noteBody(event), NOTE_MAX),
    hs_task_status: 'NOT_STARTED',
    hs_task_priority: 'MEDIUM',
    hs_task_type: channel === 'email' ? 'EMAIL' : channel === 'call' ? 'CALL' : 'TODO',
  };
  if (ownerId) props.hubspot_owner_id = ownerId;
  return props;
}

function noteBody(event: CrmEvent): string {
  const lines = [`${eventLabel(event.eventType)} (${event.platform})`];
  if (event.campaignName) lines.push(`Campaign: ${event.campaignName}`);
  if (event.profileUrl) lines.push(`Profile: ${event.profileUrl}`);
  if (event.subject) lines.push(`Subject: ${event.subject}`);
  if (event.text) lines.push('', event.text);
  // hs_note_body is rich text.
  return lines.map(escapeHtml).join('<br>');
}
