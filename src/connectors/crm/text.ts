/** Text the connectors write into CRM fields. */

/** A canonical event type as words for people: `EMAIL_SENT` → `Email sent`. */
export function eventLabel(eventType: string): string {
  const words = eventType.toLowerCase().replace(/_/g, ' ').trim();
  return words.charAt(0).toUpperCase() + words.slice(1);
}

/** `text` cut to at most `max` characters, an ellipsis marking a cut (CRM fields have length limits). */
export function truncate(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, max - 1)}…`;
}
