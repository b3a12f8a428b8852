import { describe, expect, it } from 'vitest';
import { buildOutreach, parseOutreachQuery, type OutreachGroup, type OutreachQuery } from '../../src/domain/outreach.js';

const NOW = new Date('2026-11-22T12:00:00Z');
const at = (daysAgo: number) => new Date(NOW.getTime() - daysAgo * 86_400_000);
const group = (eventType: string, platform: string, count: number, firstDaysAgo: number, lastDaysAgo: number): OutreachGroup => ({
  eventType,
  platform,
  count,
  firstAt: at(firstDaysAgo),
  lastAt: at(lastDaysAgo),
});
const QUERY: OutreachQuery = { email: 'jane@acme.io', profileUrls: [], identities: ['jane@acme.io'] };

describe('parseOutreachQuery', () => {
  it('lowercases the email and canonicalises, de-duplicates and expands profile URLs', () => {
    const parsed = parseOutreachQuery('  Jane.Doe@ACME.io ', [
      'linkedin.com/in/Jane-Doe/?trk=x, https://www.linkedin.com/in/jane-doe',
      'twitter.com/JaneD/status/1',
    ]);
    expect(parsed).toMatchObject({
      ok: true,
      query: { email: 'jane.doe@acme.io', profileUrls: ['https://www.linkedin.com/in/jane-doe', 'https://x.com/janed'] },
    });
    if (!parsed.ok) return;
    expect(parsed.query.identities).toContain('jane.doe@acme.io');
    expect(parsed.query.identities).toContain('http://linkedin.com/in/jane-doe/');
    expect(parsed.query.identities).toContain('https://twitter.com/janed');
    expect(new Set(parsed.query.identities).size).toBe(parsed.query.identities.length);
  });

  it.each([
    [null, [], 'Pass at least one identity: email or profileUrl'],
    ['', [''], 'Pass at least one identity: email or profileUrl'],
    ['acme.com', [], 'email "acme.com" is a bare domain: pass a person\'s address (company rollups are not supported)'],
    ['@acme.com', [], 'email "@acme.com" is a bare domain: pass a person\'s address (company rollups are not supported)'],
    ['jane@', [], 'email "jane@" is not a valid email address'],
    ['jane doe@acme.com', [], 'email "jane doe@acme.com" is not a valid email address'],
    [null, ['https://acme.com'], 'profileUrl "https://acme.com" is a bare domain: pass a person\'s profile URL (company rollups are not supported)'],
    [null, ['linkedin.com/company/acme'], 'profileUrl "linkedin.com/company/acme" is not a person\'s profile: the path must start with /in/ or /pub/'],
  ])('refuses email %j with profileUrl %j', (email, urls, problem) => {
    expect(parseOutreachQuery(email, urls)).toEqual({ ok: false, problems: [problem] });
  });

  it('refuses more than 5 profile URLs, counting comma-separated ones, and reports every problem', () => {
    const six = ['x.com/a,x.com/b,x.com/c', 'x.com/d', 'x.com/e,x.com/f'];
    expect(parseOutreachQuery(null, six)).toEqual({ ok: false, problems: ['profileUrl takes at most 5 values; 6 were given'] });
    const bad = parseOutreachQuery('nope', ['x.com/home']);
    expect(bad.ok === false && bad.problems).toHaveLength(2);
  });
});

describe('buildOutreach', () => {
  it('answers the empty shape when nothing matches (rule 11)', () => {
    expect(buildOutreach(QUERY, [], null, NOW)).toEqual({
      email: 'jane@acme.io',
      query: { email: 'jane@acme.io', profileUrls: [] },
      found: false,
      summary: {
        everContacted: false,
        everEmailed: false,
        everOpened: false,
        everCalled: false,
        everSocialTouched: false,
        totalEvents: 0,
        firstTouchAt: null,
        lastTouchAt: null,
        daysSinceLastTouch: null,
        lastEventType: null,
        lastPlatform: null,
      },
      eventTypes: [],
      platforms: [],
      outcomes: { replied: false, lastReplyAt: null, bounced: false, unsubscribed: false, lastCategoryName: null, lastCategoryAt: null },
      doNotContact: { value: false, reasons: [] },
      blocklists: { evaluated: false, matched: false, matches: [] },
    });
  });

  it('rolls groups up by event type and platform, and takes the last touch across them', () => {
    const out = buildOutreach(
      QUERY,
      [
        group('EMAIL_SENT', 'smartlead', 3, 10, 4.5),
        group('EMAIL_OPEN', 'smartlead', 2, 9, 3.9),
        group('MESSAGE_SENT', 'heyreach', 1, 8, 8),
        group('EMAIL_SENT', 'instantly', 1, 20, 20),
        group('LEAD_CATEGORY_UPDATED', 'smartlead', 1, 1, 1),
      ],
      null,
      NOW,
    );
    expect(out.found).toBe(true);
    expect(out.summary).toEqual({
      everContacted: true,
      everEmailed: true,
      everOpened: true,
      everCalled: false,
      everSocialTouched: true,
      totalEvents: 8,
      firstTouchAt: at(20),
      lastTouchAt: at(3.9),
      daysSinceLastTouch: 3,
      lastEventType: 'EMAIL_OPEN',
      lastPlatform: 'smartlead',
    });
    expect(out.eventTypes).toEqual([
      { eventType: 'EMAIL_OPEN', count: 2, firstAt: at(9), lastAt: at(3.9) },
      { eventType: 'EMAIL_SENT', count: 4, firstAt: at(20), lastAt: at(4.5) },
      { eventType: 'LEAD_CATEGORY_UPDATED', count: 1, firstAt: at(1), lastAt: at(1) },
      { eventType: 'MESSAGE_SENT', count: 1, firstAt: at(8), lastAt: at(8) },
    ]);
    expect(out.platforms).toEqual([
      { platform: 'heyreach', count: 1, lastAt: at(8), lastEventType: 'MESSAGE_SENT' },
      { platform: 'instantly', count: 1, lastAt: at(20), lastEventType: 'EMAIL_SENT' },
      { platform: 'smartlead', count: 6, lastAt: at(1), lastEventType: 'LEAD_CATEGORY_UPDATED' },
    ]);
  });

  it.each([
    ['EMAIL_OPEN', false],
    ['EMAIL_LINK_CLICK', false],
    ['PROFILE_VIEWED', false],
    ['POST_LIKED', false],
    ['CONNECTION_REQUEST_ACCEPTED', false],
    ['EMAIL_SENT', true],
    ['EMAIL_REPLY', true],
    ['CALL_COMPLETED', true],
    ['MESSAGE_SENT', true],
    ['INMAIL_SENT', true],
    ['CONNECTION_REQUEST_SENT', true],
    ['SOMETHING_NEW', false],
  ])('%s alone: everContacted %s (rule 5)', (eventType, contacted) => {
    expect(buildOutreach(QUERY, [group(eventType, 'smartlead', 1, 1, 1)], null, NOW).summary.everContacted).toBe(contacted);
  });

  it('a category signal alone: found, with no touch (rules 6 and 7)', () => {
    const out = buildOutreach(QUERY, [], { name: 'Interested', at: at(2) }, NOW);
    expect(out.found).toBe(true);
    expect(out.summary).toMatchObject({ lastTouchAt: null, daysSinceLastTouch: null, lastEventType: null, totalEvents: 0 });
    expect(out.outcomes).toMatchObject({ lastCategoryName: 'Interested', lastCategoryAt: at(2) });
  });

  it('reports replies, bounces and unsubscribes, and only the last two as do-not-contact (rule 8)', () => {
    const out = buildOutreach(
      QUERY,
      [
        group('EMAIL_REPLY', 'smartlead', 1, 6, 6),
        group('MESSAGE_REPLY_RECEIVED', 'heyreach', 1, 2, 2),
        group('EMAIL_BOUNCE', 'instantly', 1, 5, 5),
        group('LEAD_UNSUBSCRIBED', 'lemlist', 1, 4, 4),
      ],
      null,
      NOW,
    );
    expect(out.outcomes).toMatchObject({ replied: true, lastReplyAt: at(2), bounced: true, unsubscribed: true });
    expect(out.doNotContact).toEqual({ value: true, reasons: ['bounced', 'unsubscribed'] });
  });

  it('floors daysSinceLastTouch', () => {
    expect(buildOutreach(QUERY, [group('EMAIL_SENT', 's', 1, 1.99, 1.99)], null, NOW).summary.daysSinceLastTouch).toBe(1);
    expect(buildOutreach(QUERY, [group('EMAIL_SENT', 's', 1, 0.5, 0.5)], null, NOW).summary.daysSinceLastTouch).toBe(0);
  });
});
