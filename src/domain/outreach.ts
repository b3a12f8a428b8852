/**
 * Prior outreach to a contact (spec: GET /api/v1/contacts/outreach). Pure: which identities a query
 * names, and the response built from the aggregated log rows.
 */
import { EMAIL_ADDRESS } from './email-address.js';
import { eventTraits } from './event-types.js';
import { excerpt } from './excerpt.js';
import { normalizeProfileUrl, profileUrlVariants } from './profile-url.js';

const MAX_PROFILE_URLS = 5;

export interface OutreachQuery {
  /** Lowercased, or null when only profile URLs were given. */
  email: string | null;
  /** Canonical profile URLs, in the order given, without repeats. */
  profileUrls: string[];
  /** Every stored form to match (the email and each profile's variants), lowercase. */
  identities: string[];
}

export type OutreachQueryParse = { ok: true; query: OutreachQuery } | { ok: false; problems: string[] };

/**
 * Validates the identities of a lookup. `profileUrls` are the raw values: each may itself be a
 * comma-separated list. Every problem is reported at once.
 */
export function parseOutreachQuery(rawEmail: string | null | undefined, rawProfileUrls: readonly string[] = []): OutreachQueryParse {
  const problems: string[] = [];
  // Empty values (an empty form field, a trailing comma) name nothing and are skipped, as an empty email is.
  const values = rawProfileUrls
    .flatMap((value) => value.split(','))
    .map((value) => value.trim())
    .filter((value) => value !== '');
  const emailGiven = rawEmail != null && rawEmail.trim() !== '';
  if (!emailGiven && values.length === 0) return { ok: false, problems: ['Pass at least one identity: email or profileUrl'] };

  let email: string | null = null;
  if (emailGiven) {
    const checked = checkEmail(rawEmail);
    if (typeof checked === 'string') email = checked;
    else problems.push(checked.problem);
  }
  if (values.length > MAX_PROFILE_URLS) problems.push(`profileUrl takes at most ${MAX_PROFILE_URLS} values; ${values.length} were given`);
  const profiles = new Map<string, string[]>();
  for (const value of values.slice(0, MAX_PROFILE_URLS + 1)) {
    const parsed = normalizeProfileUrl(value);
    if (!parsed.ok) problems.push(parsed.reason);
    else if (!profiles.has(parsed.profile.canonical)) profiles.set(parsed.profile.canonical, profileUrlVariants(parsed.profile));
  }
  if (problems.length > 0) return { ok: false, problems };
  const identities = [...new Set([...(email ? [email] : []), ...[...profiles.values()].flat()])];
  return { ok: true, query: { email, profileUrls: [...profiles.keys()], identities } };
}

const DOMAIN = /^@?([a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z]{2,63}$/;

function checkEmail(raw: string): string | { problem: string } {
  const email = raw.trim().toLowerCase();
  if (DOMAIN.test(email)) {
    return { problem: `email "${excerpt(email, 100)}" is a bare domain: pass a person's address (company rollups are not supported)` };
  }
  if (!EMAIL_ADDRESS.test(email)) return { problem: `email "${excerpt(email, 100)}" is not a valid email address` };
  return email;
}

/** One (event type, platform) group of matching log rows, counted once per inbound payload. */
export interface OutreachGroup {
  eventType: string;
  platform: string;
  count: number;
  firstAt: Date;
  lastAt: Date;
}

export interface CategorySignal {
  name: string;
  at: Date;
}

export interface OutreachResponse {
  email: string | null;
  query: { email: string | null; profileUrls: string[] };
  found: boolean;
  summary: {
    everContacted: boolean;
    everEmailed: boolean;
    everOpened: boolean;
    everCalled: boolean;
    everSocialTouched: boolean;
    totalEvents: number;
    firstTouchAt: Date | null;
    lastTouchAt: Date | null;
    daysSinceLastTouch: number | null;
    lastEventType: string | null;
    lastPlatform: string | null;
  };
  eventTypes: { eventType: string; count: number; firstAt: Date; lastAt: Date }[];
  platforms: { platform: string; count: number; lastAt: Date; lastEventType: string }[];
  outcomes: {
    replied: boolean;
    lastReplyAt: Date | null;
    bounced: boolean;
    unsubscribed: boolean;
    lastCategoryName: string | null;
    lastCategoryAt: Date | null;
  };
  doNotContact: { value: boolean; reasons: ('bounced' | 'unsubscribed')[] };
  blocklists: { evaluated: false; matched: false; matches: never[] };
}

const DAY_MS = 86_400_000;

/** The response for `query` from its groups and latest lead category signal, as of `now`. */
export function buildOutreach(query: OutreachQuery, groups: readonly OutreachGroup[], signal: CategorySignal | null, now: Date): OutreachResponse {
  const withTraits = groups.map((g) => ({ ...g, traits: eventTraits(g.eventType) }));
  const any = (test: (t: (typeof withTraits)[number]) => boolean) => withTraits.some(test);
  const touches = withTraits.filter((g) => g.traits.touch);
  const last = latest(touches);
  const replies = withTraits.filter((g) => g.traits.reply);
  const bounced = any((g) => g.traits.bounce);
  const unsubscribed = any((g) => g.traits.unsubscribe);

  return {
    email: query.email,
    query: { email: query.email, profileUrls: query.profileUrls },
    found: groups.length > 0 || signal !== null,
    summary: {
      everContacted: any((g) => g.traits.contact),
      everEmailed: any((g) => g.traits.channel === 'email' && g.traits.contact),
      everOpened: any((g) => g.traits.opened),
      everCalled: any((g) => g.traits.channel === 'call'),
      everSocialTouched: any((g) => g.traits.channel === 'social'),
      totalEvents: sum(groups),
      firstTouchAt: touches.length ? new Date(Math.min(...touches.map((g) => g.firstAt.getTime()))) : null,
      lastTouchAt: last?.lastAt ?? null,
      daysSinceLastTouch: last ? Math.max(0, Math.floor((now.getTime() - last.lastAt.getTime()) / DAY_MS)) : null,
      lastEventType: last?.eventType ?? null,
      lastPlatform: last?.platform ?? null,
    },
    eventTypes: rollUp(groups, (g) => g.eventType).map(([eventType, of]) => ({
      eventType,
      count: sum(of),
      firstAt: new Date(Math.min(...of.map((g) => g.firstAt.getTime()))),
      lastAt: latest(of)!.lastAt,
    })),
    platforms: rollUp(groups, (g) => g.platform).map(([platform, of]) => {
      const newest = latest(of)!;
      return { platform, count: sum(of), lastAt: newest.lastAt, lastEventType: newest.eventType };
    }),
    outcomes: {
      replied: replies.length > 0,
      lastReplyAt: latest(replies)?.lastAt ?? null,
      bounced,
      unsubscribed,
      lastCategoryName: signal?.name ?? null,
      lastCategoryAt: signal?.at ?? null,
    },
    doNotContact: {
      value: bounced || unsubscribed,
      reasons: [...(bounced ? (['bounced'] as const) : []), ...(unsubscribed ? (['unsubscribed'] as const) : [])],
    },
    // Reserved (rule 9): not evaluated, which is no evidence of absence from a block list.
    blocklists: { evaluated: false, matched: false, matches: [] },
  };
}

function sum(groups: readonly OutreachGroup[]): number {
  return groups.reduce((total, g) => total + g.count, 0);
}

/** The group with the newest event; ties go to the alphabetically first event type, then platform, so answers are stable. */
function latest<G extends OutreachGroup>(groups: readonly G[]): G | undefined {
  let best: G | undefined;
  for (const g of groups) {
    const order = best ? g.lastAt.getTime() - best.lastAt.getTime() || compare(best.eventType, g.eventType) || compare(best.platform, g.platform) : 1;
    if (order > 0) best = g;
  }
  return best;
}

function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/** Groups by a key, sorted by key. */
function rollUp(groups: readonly OutreachGroup[], key: (g: OutreachGroup) => string): [string, OutreachGroup[]][] {
  const map = new Map<string, OutreachGroup[]>();
  for (const g of groups) map.set(key(g), [...(map.get(key(g)) ?? []), g]);
  return [...map.entries()].sort(([a], [b]) => compare(a, b));
}
