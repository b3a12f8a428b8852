import type { Profile } from '../../../domain/profile-url.js';
import { eventLabel, socialProfileOf, truncate } from '../text.js';
import type { CrmEvent } from '../types.js';

/** What Attio is sent for one event, built from the event alone (pure). */

const TITLE_MAX = 255;
/** Attio refuses larger notes with a 413 whose limit it does not state: we keep notes well below. */
const NOTE_MAX = 50_000;
const TASK_MAX = 2_000;

/** A person's name as Attio's personal-name attribute takes it, or undefined when the event names nobody. */
export function personName(event: CrmEvent): Record<string, string> | undefined {
  const first = event.firstName?.trim() ?? '';
  const last = event.lastName?.trim() ?? '';
  if (!first && !last) return undefined;
  return { first_name: first, last_name: last, full_name: [first, last].filter(Boolean).join(' ') };
}

/**
 * The event as a note on the person: markdown, titled `[platform] Email sent: subject`, backdated to the
 * event (Attio refuses a time in the future: a clock ahead of Attio's is brought back to now).
 */
export function note(event: CrmEvent, recordId: string, now: number): { title: string; created_at: string; [key: string]: unknown } {
  const lines = [`**${eventLabel(event.eventType)}** (${event.platform})`];
  if (event.campaignName) lines.push(`**Campaign:** ${markdownText(event.campaignName)}`);
  if (event.senderEmail) lines.push(`**${event.direction === 'inbound' ? 'To' : 'From'}:** ${markdownText(event.senderEmail)}`);
  if (event.profileUrl) lines.push(`**Profile:** ${event.profileUrl}`);
  if (event.subject) lines.push(`**Subject:** ${markdownText(event.subject)}`);
  if (event.text) lines.push('', markdownText(event.text));
  return {
    parent_object: 'people',
    parent_record_id: recordId,
    title: truncate(`[${event.platform}] ${eventLabel(event.eventType)}${event.subject ? `: ${event.subject}` : ''}`, TITLE_MAX),
    format: 'markdown',
    content: truncate(lines.join('\n\n'), NOTE_MAX),
    created_at: new Date(Math.min(event.occurredAt.getTime(), now)).toISOString(),
  };
}

/** The follow-up task: plaintext (Attio's only format for tasks), due the day after the event, on the person. */
export function followUpTask(event: CrmEvent, recordId: string, assignee: string | null): { content: string; deadline_at: string; [key: string]: unknown } {
  return {
    content: truncate(`Follow up: ${eventLabel(event.eventType)}${event.subject ? ` - ${event.subject}` : ''} (${event.platform})`, TASK_MAX),
    format: 'plaintext',
    deadline_at: new Date(event.occurredAt.getTime() + 24 * 3600_000).toISOString(),
    is_completed: false,
    linked_records: [{ target_object: 'people', target_record_id: recordId }],
    assignees: assignee ? [{ workspace_member_email_address: assignee }] : [],
  };
}

export function socialProfile(event: CrmEvent): Profile {
  return socialProfileOf(event, 'Attio');
}

/** Text from a sequencer, its markdown characters escaped: a reply quoting `*` or `#` stays what it said. */
function markdownText(text: string): string {
  return text.replace(/([\\`*_[\]#>~])/g, '\\$1');
}
