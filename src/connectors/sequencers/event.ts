/**
 * The normalised inbound event every sequencer parser produces, and the small tolerant readers the
 * parsers share. The mapping of each platform's events is documented in `docs/event-types.md`.
 */
import { compile } from 'html-to-text';
import { z } from 'zod';
import { normalizeProfileUrl } from '../../domain/profile-url.js';
import { excerpt } from '../../domain/excerpt.js';
import { registrableDomain } from '../../domain/registrable-domain.js';
import { normalizeEmail } from '../../domain/email-address.js';
import type { SequencerPlatform } from './platforms.js';

export interface InboundEvent {
  platform: SequencerPlatform;
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
  /** The sequencer's page for this lead's conversation (an https or http URL), when the payload links one. */
  inboxUrl: string | null;
  /** The sequencer's own ids (lead, message, campaign step, event ...), strings, only those present. */
  sequencerIds: Record<string, string>;
  occurredAt: Date | null;
}
export type ParseResult = { ok: true; event: InboundEvent } | { ok: false; reason: string };
export type SequencerParser = (body: unknown) => ParseResult;

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

/** An absolute http(s) URL, or undefined (a `javascript:` link or a relative path is not a link we print). */
export const webUrl = z
  .unknown()
  .transform((v) => {
    if (typeof v !== 'string' || !URL.canParse(v.trim())) return undefined;
    const url = new URL(v.trim());
    return url.protocol === 'https:' || url.protocol === 'http:' ? url.href : undefined;
  })
  .optional();

/**
 * The lead's page in the sequencer's inbox: the first of the body's `fields` (its definition's
 * `inboxLink`) that holds a web URL ({@link webUrl}), or null.
 */
export function inboxLink(body: Record<string, unknown>, fields: readonly string[]): string | null {
  for (const field of fields) {
    const url = Object.hasOwn(body, field) ? webUrl.parse(body[field]) : undefined;
    if (url !== undefined) return url;
  }
  return null;
}

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

// The address rule lives in src/domain/email-address.ts (block lists and the outreach lookup use it too).
export { normalizeEmail };

/** The canonical profile URL (src/domain/profile-url.ts), or null when it is not a person's profile. */
function normalizeProfile(value: string | undefined): string | null {
  if (value === undefined) return null;
  const parsed = normalizeProfileUrl(value);
  return parsed.ok ? parsed.profile.canonical : null;
}

/**
 * A company's domain from a website, company URL or domain field: its registrable domain
 * (src/domain/registrable-domain.ts; `acme.com` from `https://www.acme.com/about`), or null.
 */
export function websiteDomain(value: string | undefined): string | null {
  const domain = registrableDomain(value);
  // A social profile or company page is not the company's own domain.
  return domain !== null && !SOCIAL_NETWORKS.has(domain) ? domain : null;
}

const SOCIAL_NETWORKS: ReadonlySet<string> = new Set(['linkedin.com', 'x.com', 'twitter.com']);

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
 * Plain text from an email's HTML, as a person reads it: head, style and script dropped; entities
 * decoded; a line per block and `<br>`; links as their text, images left out, lists with bullets,
 * tables row by row; source line breaks are spaces, as in a browser; no blank line runs; trimmed.
 *
 * @returns The text, or null when the HTML shows none.
 */
export function htmlToText(html: string | undefined): string | null {
  if (html === undefined) return null;
  // A message's text fits in far less (CRMs keep 32-64K characters); the cap bounds the parser, whose
  // time grows faster than the input for deeply nested markup (1 MB of nested tags: seconds).
  const plain = toText(html.length > MAX_HTML_LENGTH ? html.slice(0, MAX_HTML_LENGTH) : html);
  // The converter keeps &nbsp; as U+00A0: a CRM's text search expects plain spaces.
  const lines = plain.split('\n').map((line) => line.replace(/\u00a0/g, ' ').trim());
  const joined = lines
    .join('\n')
    .replace(/\n{3,}/g, '\n\n')
    .trim();
  return joined === '' ? null : joined;
}

/** Gmail clips a message at 102 KB; a little more keeps what a person would see of any real email. */
const MAX_HTML_LENGTH = 128 * 1024;

// Compiled once: the worker converts every HTML body it receives.
const toText = compile({
  wordwrap: false,
  // Layout tables nest deep in email templates, never this deep; beyond it the converter would exhaust the stack.
  limits: { maxDepth: 256 },
  selectors: [
    { selector: 'head', format: 'skip' },
    { selector: 'a', options: { ignoreHref: true } },
    { selector: 'img', format: 'skip' },
    // One line per paragraph, as email clients write a spacer paragraph (or `<br>`) where they want a blank line.
    { selector: 'p', options: { leadingLineBreaks: 1, trailingLineBreaks: 1 } },
    ...(['h1', 'h2', 'h3', 'h4', 'h5', 'h6'] as const).map((selector) => ({ selector, options: { uppercase: false } })),
    { selector: 'table', format: 'dataTable', options: { uppercaseHeaderCells: false, maxColumnWidth: Number.MAX_SAFE_INTEGER } },
  ],
});

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
export function failure(platform: SequencerPlatform, rawEventType: string | null, reason: string): { ok: false; reason: string } {
  return { ok: false, reason: `${platform}${rawEventType ? ` ${excerpt(rawEventType, 40)}` : ''}: ${reason}` };
}

/**
 * Wraps a parser so that it never throws: a body that is not a JSON object is refused up front, and an
 * unexpected exception becomes a refusal too (the payload is kept with an error, never lost).
 */
export function guarded(platform: SequencerPlatform, parse: (body: Record<string, unknown>) => ParseResult): SequencerParser {
  return (body) => {
    if (!isRecord(body)) return failure(platform, null, `body must be a JSON object, got ${describeNonObject(body)}`);
    try {
      return parse(body);
    } catch (error) {
      return failure(platform, null, `payload could not be read (${excerpt(error instanceof Error ? error.message : String(error), 60)})`);
    }
  };
}
