/**
 * Social profile identities for prior-outreach lookups (spec: GET /contacts/outreach, rule 2). Pure.
 *
 * A professional-network profile is `linkedin.com/in/<slug>` or `linkedin.com/pub/<slug>/<a>/<b>/<c>`; a
 * microblog profile is `twitter.com/<handle>` or `x.com/<handle>`. Inputs come in every shape people
 * paste: with or without scheme, `www`, mobile and country hosts, trailing slashes, queries and hashes,
 * overlay paths (`/in/jane/overlay/contact-info/`) and status URLs (`x.com/jane/status/123`). Each
 * normalises to one canonical URL; {@link profileUrlVariants} expands it to the stored forms to match.
 */

import { excerpt } from './excerpt.js';

type ProfileKind = 'professional' | 'microblog';

export interface Profile {
  kind: ProfileKind;
  /** `https://www.linkedin.com/in/<slug>`, `https://www.linkedin.com/pub/<...>` or `https://x.com/<handle>`, lowercased. */
  canonical: string;
}

export type ProfileParse = { ok: true; profile: Profile } | { ok: false; reason: string };

/** Parses one pasted profile URL; the reason says what is wrong in words a client can act on. */
export function normalizeProfileUrl(input: string): ProfileParse {
  const raw = input.trim();
  if (raw === '') return { ok: false, reason: 'profileUrl must not be empty' };
  let url: URL;
  try {
    url = new URL(/^[a-z][a-z0-9+.-]*:\/\//i.test(raw) ? raw : `https://${raw}`);
  } catch {
    return { ok: false, reason: `profileUrl "${excerpt(raw, 100)}" is not a URL` };
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return { ok: false, reason: `profileUrl "${excerpt(raw, 100)}" must be an http(s) URL` };
  const host = url.hostname.toLowerCase();
  const segments = url.pathname
    .split('/')
    .filter((s) => s !== '')
    .map((s) => safeDecode(s).toLowerCase());

  if (isProfessionalHost(host)) return professional(raw, segments);
  if (isMicroblogHost(host)) return microblog(raw, segments);
  if (segments.length === 0) {
    return { ok: false, reason: `profileUrl "${excerpt(raw, 100)}" is a bare domain: pass a person's profile URL (company rollups are not supported)` };
  }
  return { ok: false, reason: `profileUrl "${excerpt(raw, 100)}" is not a linkedin.com/in/, linkedin.com/pub/ or x.com/twitter.com profile` };
}

/**
 * The stored forms a canonical profile may take, all lowercase: http and https, with and without
 * `www`, with and without a trailing slash, and for microblogs both hostnames.
 */
export function profileUrlVariants(profile: Profile): string[] {
  const decoded = profile.canonical.replace(/^https:\/\/[^/]+/, '');
  // A slug with non-ASCII letters is also stored as the platforms hand it out: percent-encoded.
  const encoded = decoded
    .split('/')
    .map((part) => encodeURIComponent(part).toLowerCase())
    .join('/');
  return [...new Set([decoded, encoded])].flatMap((path) => variantsOfPath(profile.kind, path));
}

function variantsOfPath(kind: ProfileKind, path: string): string[] {
  const hosts = kind === 'professional' ? ['linkedin.com', 'www.linkedin.com'] : ['x.com', 'www.x.com', 'twitter.com', 'www.twitter.com'];
  const variants: string[] = [];
  for (const scheme of ['https://', 'http://']) {
    for (const host of hosts) {
      variants.push(`${scheme}${host}${path}`, `${scheme}${host}${path}/`);
    }
  }
  // Some sequencers store the profile without a scheme.
  for (const host of hosts) variants.push(`${host}${path}`, `${host}${path}/`);
  return variants;
}

function professional(raw: string, segments: string[]): ProfileParse {
  const [section, slug, ...rest] = segments;
  if (section === 'in' && slug) {
    return { ok: true, profile: { kind: 'professional', canonical: `https://www.linkedin.com/in/${slug}` } };
  }
  if (section === 'pub' && slug) {
    // Old public profiles: /pub/<name>/<a>/<b>/<c>; anything after those (overlays) is dropped.
    const ids = rest.slice(0, 3).filter((part) => /^[0-9a-z]+$/.test(part));
    return { ok: true, profile: { kind: 'professional', canonical: `https://www.linkedin.com/pub/${[slug, ...ids].join('/')}` } };
  }
  if (segments.length === 0)
    return { ok: false, reason: `profileUrl "${excerpt(raw, 100)}" is a bare domain: pass a person's profile URL (company rollups are not supported)` };
  return { ok: false, reason: `profileUrl "${excerpt(raw, 100)}" is not a person's profile: the path must start with /in/ or /pub/` };
}

// Handles are 1-15 letters, digits or underscores; these first segments are site pages, not people.
const RESERVED_MICROBLOG_PATHS = new Set([
  'home',
  'explore',
  'search',
  'notifications',
  'messages',
  'settings',
  'i',
  'intent',
  'share',
  'hashtag',
  'login',
  'signup',
  'tos',
  'privacy',
]);

function microblog(raw: string, segments: string[]): ProfileParse {
  const handle = (segments[0] ?? '').replace(/^@/, '');
  if (!/^[a-z0-9_]{1,15}$/.test(handle) || RESERVED_MICROBLOG_PATHS.has(handle)) {
    return { ok: false, reason: `profileUrl "${excerpt(raw, 100)}" is not a microblog profile: expected x.com/<handle> or twitter.com/<handle>` };
  }
  // x.com/<handle>/status/<id> and any other sub-page (likes, media, with_replies) belong to the handle.
  return { ok: true, profile: { kind: 'microblog', canonical: `https://x.com/${handle}` } };
}

/** linkedin.com, www., mobile (m.) and country (uk., de., ...) hosts. */
function isProfessionalHost(host: string): boolean {
  return host === 'linkedin.com' || /^(www|m|mobile|[a-z]{2})\.linkedin\.com$/.test(host);
}

/** twitter.com and x.com, with www. or mobile. */
function isMicroblogHost(host: string): boolean {
  return /^((www|mobile|m)\.)?(twitter|x)\.com$/.test(host);
}

function safeDecode(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    return segment;
  }
}
