import { eventTraits } from '../../../domain/event-types.js';
import type { Profile } from '../../../domain/profile-url.js';
import { eventDescription, eventLabel, socialProfileOf, truncate } from '../text.js';
import type { CrmEvent } from '../types.js';

const SUBJECT_MAX = 255;
const DESCRIPTION_MAX = 32_000;
const NOT_PROVIDED = '[not provided]';

export type TaskFields = Record<string, string> & { Subject: string };

export function activityTask(event: CrmEvent, whoId: string, ownerId: string | null): TaskFields {
  const channel = eventTraits(event.eventType).channel;
  const fields: TaskFields = {
    WhoId: whoId,
    Subject: truncate(`[${event.platform}] ${eventLabel(event.eventType)}${event.subject ? `: ${event.subject}` : ''}`, SUBJECT_MAX),
    Description: truncate(eventDescription(event), DESCRIPTION_MAX),
    ActivityDate: isoDate(event.occurredAt),
    Status: 'Completed',
    Priority: 'Normal',
    TaskSubtype: channel === 'email' ? 'Email' : channel === 'call' ? 'Call' : 'Task',
  };
  if (ownerId) fields.OwnerId = ownerId;
  return fields;
}

export function followUpTask(event: CrmEvent, whoId: string, ownerId: string | null): TaskFields {
  const fields: TaskFields = {
    WhoId: whoId,
    Subject: truncate(`Follow up: ${eventLabel(event.eventType)}${event.subject ? ` - ${event.subject}` : ''}`, SUBJECT_MAX),
    Description: truncate(eventDescription(event), DESCRIPTION_MAX),
    ActivityDate: isoDate(new Date(event.occurredAt.getTime() + 24 * 3600_000)),
    Status: 'Not Started',
    Priority: 'Normal',
    TaskSubtype: 'Task',
  };
  if (ownerId) fields.OwnerId = ownerId;
  return fields;
}

/** A new person's fields: a Lead needs its Company; a social-only person keeps its profile URL as Website (a Lead's). */
export function personFields(event: CrmEvent, type: 'Contact' | 'Lead', ownerId: string | null): Record<string, string> {
  const fields: Record<string, string> = { LastName: truncate(event.lastName?.trim() || NOT_PROVIDED, 80) };
  if (event.firstName?.trim()) fields.FirstName = truncate(event.firstName.trim(), 40);
  if (event.email) fields.Email = event.email.trim().toLowerCase();
  if (type === 'Lead') {
    fields.Company = truncate(event.company?.trim() || event.companyDomain?.trim() || NOT_PROVIDED, 255);
    if (!event.email) fields.Website = socialProfile(event).canonical;
  }
  // Only records we create change hands: an existing record keeps the owner the org gave it.
  if (ownerId) fields.OwnerId = ownerId;
  return fields;
}

export function socialProfile(event: CrmEvent): Profile {
  return socialProfileOf(event, 'Salesforce');
}

function isoDate(date: Date): string {
  return date.toISOString().slice(0, 10);
}
