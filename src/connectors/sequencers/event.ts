/**
 * The normalised inbound event every sequencer parser produces, and the small tolerant readers the
 * parsers share. The mapping of each platform's events is documented in `docs/event-types.md`.
 */
import { z } from 'zod';
import { normalizeProfileUrl } from '../../domain/profile-url.js';
import { excerpt } from '../../domain/excerpt.js';

export interface InboundEvent {
  platform: 'smartlead' | 'instantly' | 'heyreach' | 'lemlist';
  /** Canonical type from src/domain/event-types.ts; an unmapped platform event becomes `UNKNOWN` and `rawEventType` keeps it. */
  eventType: string;
  rawEventType: string;
  contact: {
    email: string | null;
    profileUrl: string | null;
    firstName: string | null;
    lastName: string | null;
    company: string | null;
    companyDomain: string | null;
  };
  /** email ?? profileUrl: what the sync row's to_email stores. */
  identity: string;
  campaign: { id: string | null; name: string | null };
  message: { subject: string | null; text: string | null; direction: 'outbound' | 'inbound' | null };
  leadCategory: { id: string | null; name: string } | null;
  /** The sequencer's own ids (lead, message, campaign step, event ...), strings, only those present. */
  sequencerIds: Record<string, string>;
  occurredAt: Date | null;
}
export type ParseResult = { ok: true; event: InboundEvent } | { ok: false; reason: string };
export type SequencerParser = (body: unknown) => ParseResult;

export type Platform = InboundEvent['platform'];

/** The canonical type of an event a platform sends that has no meaning in our table. */
export const UNKNOWN_EVENT_TYPE = 'UNKNOWN';

// ---------------------------------------------------------------------------------------------------
// Tolerant field readers. Each accepts any JSON value and yields undefined for what it cannot use, so a
// wrong type in an optional field is ignored instead of failing the whole payload. Objects strip
// unknown keys (accepted, not copied: a `__proto__` key never reaches our objects).

/** A non-empty string, trimmed. */
export const text = z
  .unknown()
  .transform((v) => (typeof v === 'string' && v.trim() !== '' ? v.trim() : undefined))
  .optional();

/** An id: a non-empty string or a finite number, as a string. */
export const id = z
  .unknown()
  .transform((v) => {
    if (typeof v === 'string') return v.trim() !== '' ? v.trim() : undefined;
    if (typeof v === 'number' && Number.isFinite(v)) return String(v);
    return undefined;
  })
  .optional();

/** A boolean, or undefined. */
export const flag = z
  .unknown()
  .transform((v) => (typeof v === 'boolean' ? v : undefined))
  .optional();

/** A nested object read with `shape`; anything else (a string, an array, null) is absent. */
export function nested<S extends z.ZodRawShape>(shape: S) {
  return z.object(shape).optional().catch(undefined);
}

/** An array of objects read with `shape`; elements of another kind are dropped, a non-array is empty. */
export function list<S extends z.ZodRawShape>(shape: S) {
  return z
    .array(z.object(shape).nullable().catch(null))
    .optional()
    .catch(undefined)
    .transform((items) => (items ?? []).filter((item): item is NonNullable<typeof item> => item !== null));
}

/** Whether a value is a plain JSON object (not null, not an array). */
export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** What a body that is not a JSON object is, in words. */
export function describeNonObject(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  return `a ${typeof value}`;
}

// ---------------------------------------------------------------------------------------------------
// Values.

// The address check of src/domain/outreach.ts: one @, a local part without spaces, a dotted domain.
const EMAIL = /^[^\s@]{1,64}@(?=.{1,253}$)([a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z]{2,63}$/;
const DOMAIN = /^(?=.{1,253}$)([a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z]{2,63}$/;

/** A lowercased, trimmed email address (also from `Name <address>` and `mailto:` forms), or null. */
export function normalizeEmail(value: string | undefined): string | null {
  if (value === undefined) return null;
  let email = value.trim();
  const angled = /<([^<>\s]+)>$/.exec(email);
  if (angled?.[1]) email = angled[1];
  email = email.replace(/^mailto:/i, '').toLowerCase();
  return EMAIL.test(email) ? email : null;
}

/** The canonical profile URL (src/domain/profile-url.ts), or null when it is not a person's profile. */
function normalizeProfile(value: string | undefined): string | null {
  if (value === undefined) return null;
  const parsed = normalizeProfileUrl(value);
  return parsed.ok ? parsed.profile.canonical : null;
}

/** A company's bare domain (`acme.com` from `https://www.acme.com/about`), or null. */
export function normalizeDomain(value: string | undefined): string | null {
  if (value === undefined) return null;
  const host = value
    .trim()
    .toLowerCase()
    .replace(/^[a-z][a-z0-9+.-]*:\/\//, '')
    .replace(/^@/, '')
    .split(/[/?#:]/, 1)[0]!
    .replace(/^www\./, '')
    .replace(/\.$/, '');
  // A social profile or company page is not the company's own domain.
  if (/(^|\.)(linkedin\.com|x\.com|twitter\.com)$/.test(host)) return null;
  return DOMAIN.test(host) ? host : null;
}

const MAX_TIME = 253_402_300_799_999; // 9999-12-31T23:59:59.999Z

/** An ISO 8601 string or an epoch number (seconds below 10^11, else milliseconds), or null. */
export function parseTime(value: unknown): Date | null {
  let ms: number;
  if (typeof value === 'string' && value.trim() !== '') {
    const trimmed = value.trim();
    ms = /^\d+(\.\d+)?$/.test(trimmed) ? epoch(Number(trimmed)) : Date.parse(trimmed);
  } else if (typeof value === 'number' && Number.isFinite(value)) {
    ms = epoch(value);
  } else {
    return null;
  }
  return Number.isFinite(ms) && ms >= 0 && ms <= MAX_TIME ? new Date(ms) : null;
}

function epoch(n: number): number {
  return n < 1e11 ? Math.round(n * 1000) : Math.round(n);
}

/** The first time among the candidates that parses. */
export function firstTime(...candidates: unknown[]): Date | null {
  for (const candidate of candidates) {
    const time = parseTime(candidate);
    if (time) return time;
  }
  return null;
}

/** "Jane van Doe" → first "Jane", last "van Doe"; a single word is a first name. */
function splitName(full: string | undefined): { firstName: string | null; lastName: string | null } {
  if (full === undefined) return { firstName: null, lastName: null };
  const [first, ...rest] = full.split(/\s+/);
  return { firstName: first || null, lastName: rest.length ? rest.join(' ') : null };
}

/** A contact's name: the explicit first/last fields when either is present, else the split full name. */
export function personName(
  first: string | undefined,
  last: string | undefined,
  full: string | undefined,
): { firstName: string | null; lastName: string | null } {
  if (first !== undefined || last !== undefined) return { firstName: first ?? null, lastName: last ?? null };
  return splitName(full);
}

/**
 * Plain text from an email's HTML: head, style and script blocks dropped, line breaks kept at `<br>`
 * and block ends, tags removed, common entities decoded. Linear in the input (no backtracking regex).
 */
export function htmlToText(html: string | undefined): string | null {
  if (html === undefined) return null;
  const withoutBlocks = dropBlocks(html);
  const plain = withoutBlocks
    .replace(/<br\s*\/?>/gi, '\n')
    .replace(/<\/(p|div|li|tr|h[1-6]|blockquote)\s*>/gi, '\n')
    .replace(/<[^>]*>/g, '')
    .replace(/&(#x[0-9a-f]{1,6}|#[0-9]{1,7}|[a-z]{2,6});/gi, decodeEntity);
  const lines = plain
    .replace(/\r\n?/g, '\n')
    .split('\n')
    .map((line) => line.replace(/[ \t\u00a0]+/g, ' ').trim());
  const joined = lines
    .join('\n')
    .replace(/\n{3,}/g, '\n\n')
    .trim();
  return joined === '' ? null : joined;
}

function dropBlocks(html: string): string {
  const open = /<(head|style|script)\b/gi;
  let out = '';
  let from = 0;
  for (let match = open.exec(html); match; match = open.exec(html)) {
    out += html.slice(from, match.index);
    const close = new RegExp(`</${match[1]}\\s*>`, 'gi');
    close.lastIndex = open.lastIndex;
    const end = close.exec(html);
    if (!end) return out; // An unclosed block runs to the end.
    from = close.lastIndex;
    open.lastIndex = from;
  }
  return out + html.slice(from);
}

const ENTITIES: Record<string, string> = { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'", nbsp: ' ' };

function decodeEntity(entity: string, body: string): string {
  if (body[0] === '#') {
    const code = body[1] === 'x' || body[1] === 'X' ? parseInt(body.slice(2), 16) : parseInt(body.slice(1), 10);
    return code > 0 && code <= 0x10ffff && (code < 0xd800 || code > 0xdfff) ? String.fromCodePoint(code) : entity;
  }
  return ENTITIES[body.toLowerCase()] ?? entity;
}

// ---------------------------------------------------------------------------------------------------
// Building the event.

/** Sends are outbound messages, replies inbound ones; other events carry no message of their own. */
const DIRECTION: Record<string, 'outbound' | 'inbound'> = {
  EMAIL_SENT: 'outbound',
  MESSAGE_SENT: 'outbound',
  INMAIL_SENT: 'outbound',
  CONNECTION_REQUEST_SENT: 'outbound',
  EMAIL_REPLY: 'inbound',
  EMAIL_AUTO_REPLY: 'inbound',
  MESSAGE_REPLY_RECEIVED: 'inbound',
  INMAIL_REPLY_RECEIVED: 'inbound',
};

/** The message direction a canonical event type implies. */
export function directionOf(eventType: string): 'outbound' | 'inbound' | null {
  return Object.hasOwn(DIRECTION, eventType) ? DIRECTION[eventType]! : null;
}

/** A candidate identity field: the name used in reasons and the value read from the payload. */
export type Candidate = readonly [field: string, value: string | undefined];

export type Identity = { ok: true; email: string | null; profileUrl: string | null } | { ok: false; reason: string };

/**
 * The contact's identity: the first valid email among `emails`, and the first person's profile among
 * `profiles`. Neither is a failure whose reason names every field looked at.
 */
export function identify(emails: readonly Candidate[], profiles: readonly Candidate[]): Identity {
  const email = emails.map(([, v]) => normalizeEmail(v)).find((v) => v !== null) ?? null;
  const profileUrl = profiles.map(([, v]) => normalizeProfile(v)).find((v) => v !== null) ?? null;
  if (email !== null || profileUrl !== null) return { ok: true, email, profileUrl };
  const rejected = [...emails, ...profiles].find(([, v]) => v !== undefined);
  const names = (list: readonly Candidate[]) => list.map(([field]) => field).join(', ');
  return {
    ok: false,
    reason:
      `no contact identity: no valid email in ${names(emails)}` +
      (profiles.length ? ` and no profile URL in ${names(profiles)}` : '') +
      (rejected ? ` (${rejected[0]} "${excerpt(rejected[1]!, 60)}" is neither)` : ''),
  };
}

/** `table[key]` for the table's own keys only (an event named `constructor` is not a built-in). */
export function lookup(table: Readonly<Record<string, string>>, key: string): string | undefined {
  return Object.hasOwn(table, key) ? table[key] : undefined;
}

/** Only the ids that are present. */
export function ids(entries: Record<string, string | undefined>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [key, value] of Object.entries(entries)) if (value !== undefined) out[key] = value;
  return out;
}

/** `reason` prefixed with where it came from, e.g. `smartlead EMAIL_OPEN: ...`. */
export function failure(platform: Platform, rawEventType: string | null, reason: string): { ok: false; reason: string } {
  return { ok: false, reason: `${platform}${rawEventType ? ` ${excerpt(rawEventType, 40)}` : ''}: ${reason}` };
}

/**
 * Wraps a parser so that it never throws: a body that is not a JSON object is refused up front, and an
 * unexpected exception becomes a refusal too (the payload is kept with an error, never lost).
 */
export function guarded(platform: Platform, parse: (body: Record<string, unknown>) => ParseResult): SequencerParser {
  return (body) => {
    if (!isRecord(body)) return failure(platform, null, `body must be a JSON object, got ${describeNonObject(body)}`);
    try {
      return parse(body);
    } catch (error) {
      return failure(platform, null, `payload could not be read (${excerpt(error instanceof Error ? error.message : String(error), 60)})`);
    }
  };
}
