import { describe, expect, it } from 'vitest';
import { normalizeProfileUrl, profileUrlVariants } from '../../src/domain/profile-url.js';

const JANE = 'https://www.linkedin.com/in/jane-doe';
const JACK = 'https://x.com/jack_dev';

describe('normalizeProfileUrl', () => {
  it.each([
    // Professional network: scheme, www, case, trailing slash, query, hash
    ['https://www.linkedin.com/in/jane-doe', JANE],
    ['http://www.linkedin.com/in/jane-doe', JANE],
    ['https://linkedin.com/in/jane-doe', JANE],
    ['linkedin.com/in/jane-doe', JANE],
    ['www.linkedin.com/in/jane-doe/', JANE],
    ['HTTPS://WWW.LINKEDIN.COM/IN/Jane-Doe', JANE],
    ['https://www.linkedin.com/in/jane-doe/?originalSubdomain=uk', JANE],
    ['https://www.linkedin.com/in/jane-doe#experience', JANE],
    ['https://www.linkedin.com/in/jane-doe?trk=public_profile&utm_source=x#top', JANE],
    ['  https://www.linkedin.com/in/jane-doe  ', JANE],
    ['https://www.linkedin.com/in/jane-doe//', JANE],
    // Overlay, detail and mobile/country hosts
    ['https://www.linkedin.com/in/jane-doe/overlay/contact-info/', JANE],
    ['https://www.linkedin.com/in/jane-doe/details/experience/', JANE],
    ['https://www.linkedin.com/in/jane-doe/recent-activity/all/', JANE],
    ['https://m.linkedin.com/in/jane-doe', JANE],
    ['https://mobile.linkedin.com/in/jane-doe', JANE],
    ['https://uk.linkedin.com/in/jane-doe', JANE],
    ['https://de.linkedin.com/in/jane-doe/', JANE],
    ['http://fr.linkedin.com/in/jane-doe?locale=fr_FR', JANE],
    ['https://www.linkedin.com/in/jane%2Ddoe', JANE],
    // Old public profiles
    ['https://www.linkedin.com/pub/jane-doe/12/345/678', 'https://www.linkedin.com/pub/jane-doe/12/345/678'],
    ['linkedin.com/pub/jane-doe/12/345/678/', 'https://www.linkedin.com/pub/jane-doe/12/345/678'],
    ['https://uk.linkedin.com/pub/jane-doe/12/345/678?trk=x', 'https://www.linkedin.com/pub/jane-doe/12/345/678'],
    // Microblog: both hostnames, www, mobile, case, @, status and sub-pages
    ['https://x.com/jack_dev', JACK],
    ['https://twitter.com/jack_dev', JACK],
    ['http://twitter.com/jack_dev', JACK],
    ['twitter.com/jack_dev', JACK],
    ['x.com/jack_dev/', JACK],
    ['https://www.twitter.com/jack_dev', JACK],
    ['https://www.x.com/Jack_Dev', JACK],
    ['https://mobile.twitter.com/jack_dev', JACK],
    ['https://m.twitter.com/jack_dev', JACK],
    ['https://twitter.com/jack_dev?lang=en', JACK],
    ['https://x.com/jack_dev#tweets', JACK],
    ['https://twitter.com/jack_dev/status/1234567890123456789', JACK],
    ['https://x.com/jack_dev/status/1234567890123456789?s=20', JACK],
    ['https://x.com/jack_dev/status/1234567890123456789/photo/1', JACK],
    ['https://x.com/jack_dev/with_replies', JACK],
    ['https://x.com/@jack_dev', JACK],
    ['HTTPS://TWITTER.COM/JACK_DEV/', JACK],
  ])('%s → %s', (input, canonical) => {
    expect(normalizeProfileUrl(input)).toEqual({ ok: true, profile: { kind: canonical.includes('linkedin') ? 'professional' : 'microblog', canonical } });
  });

  it.each([
    ['', /must not be empty/],
    ['acme.com', /bare domain/],
    ['https://acme.com/', /bare domain/],
    ['linkedin.com', /bare domain/],
    ['https://www.linkedin.com/company/acme', /must start with \/in\/ or \/pub\//],
    ['https://www.linkedin.com/in/', /must start with \/in\/ or \/pub\//],
    ['https://www.linkedin.com/feed/', /must start with \/in\/ or \/pub\//],
    ['https://x.com/home', /not a microblog profile/],
    ['https://x.com/', /not a microblog profile/],
    ['https://twitter.com/search?q=jack', /not a microblog profile/],
    ['https://x.com/this_handle_is_far_too_long', /not a microblog profile/],
    ['ftp://linkedin.com/in/jane', /http\(s\) URL/],
    ['https://facebook.com/jane', /not a linkedin.com\/in\//],
    ['https://evil-linkedin.com/in/jane', /not a linkedin.com\/in\//],
    ['http://[not a url', /not a URL/],
  ])('rejects %j', (input, reason) => {
    const parsed = normalizeProfileUrl(input);
    expect(parsed.ok).toBe(false);
    expect(parsed.ok ? '' : parsed.reason).toMatch(reason);
  });

  it('quotes at most 100 characters of a refused input, without control characters', () => {
    const parsed = normalizeProfileUrl(`https://facebook.com/${'a'.repeat(5_000)}\u0007`);
    const reason = parsed.ok ? '' : parsed.reason;
    expect(reason).toMatch(/^profileUrl "https:\/\/facebook\.com\/a+\.\.\." is not a linkedin\.com\/in\//);
    expect(reason.length).toBeLessThan(200);
  });
});

describe('profileUrlVariants', () => {
  it('expands a professional profile over scheme, www and trailing slash', () => {
    const parsed = normalizeProfileUrl('uk.linkedin.com/in/jane-doe/overlay/contact-info');
    if (!parsed.ok) throw new Error(parsed.reason);
    const variants = profileUrlVariants(parsed.profile);
    expect(variants).toContain('https://www.linkedin.com/in/jane-doe');
    expect(variants).toContain('http://linkedin.com/in/jane-doe/');
    expect(variants).toContain('linkedin.com/in/jane-doe');
    expect(variants.every((v) => v === v.toLowerCase())).toBe(true);
    expect(new Set(variants).size).toBe(variants.length);
  });

  it('expands a microblog profile over both hostnames', () => {
    const parsed = normalizeProfileUrl('https://x.com/jack_dev/status/1');
    if (!parsed.ok) throw new Error(parsed.reason);
    const variants = profileUrlVariants(parsed.profile);
    for (const expected of ['https://twitter.com/jack_dev', 'https://x.com/jack_dev/', 'http://www.twitter.com/jack_dev', 'twitter.com/jack_dev']) {
      expect(variants).toContain(expected);
    }
    expect(variants.some((v) => v.includes('linkedin'))).toBe(false);
  });
});
