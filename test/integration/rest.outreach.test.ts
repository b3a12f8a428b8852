import { beforeAll, describe, expect, it } from 'vitest';
import { openApiDocument } from '../../src/rest/openapi.js';
import { apiFetch, type ApiResponse } from '../support/openapi.js';
import { seedTestAccounts, type TestKeys } from '../support/accounts.js';
import { apiGet } from '../support/rest.js';
import { useTestServer } from '../support/server.js';

/**
 * GET /api/v1/contacts/outreach (spec: the 13 numbered rules and the Contact outreach response) through
 * real HTTP, on the test accounts plus log rows each test inserts for its own contacts: syncs and
 * destination deliveries (both carry the inbound payload's request id) and lead category signals.
 */

const ctx = useTestServer();

const DAY = 86_400_000;
const HOUR = 3_600_000;
/** A moment `ms` before now, at the database's millisecond precision. */
const ago = (ms: number) => new Date(Date.now() - ms);
const iso = (at: Date) => at.toISOString();

let keys: TestKeys;
let acme: number, globex: number;
let SF: number, GX: number, PIPEDRIVE: number;
let S_SMARTLEAD: number, S_HEYREACH: number, S_INSTANTLY: number, S_LEMLIST: number, S_PIPEDRIVE: number;
let D_MIRROR: number, D_SLACK: number, D_SF: number, D_GX: number;

interface SourceRow {
  accountId: number;
  connectionId: number;
  platform: string;
  ingressCode: string;
}
const sources = new Map<number, SourceRow>();

beforeAll(async () => {
  const ids = await seedTestAccounts(ctx.db.prisma);
  keys = ids.keys;
  acme = ids.accounts.acme!;
  globex = ids.accounts.globex!;
  SF = ids.connections['acme-salesforce']!;
  GX = ids.connections['globex-hubspot']!;
  PIPEDRIVE = ids.connections['acme-old-pipedrive']!;
  S_SMARTLEAD = ids.sources['acme-smartlead']!;
  S_HEYREACH = ids.sources['acme-heyreach']!;
  S_INSTANTLY = ids.sources['acme-instantly']!;
  S_LEMLIST = ids.sources['globex-lemlist']!;
  D_MIRROR = ids.destinations['acme-crm-mirror']!;
  D_SLACK = ids.destinations['acme-replies-slack']!;

  const prisma = ctx.db.prisma;
  D_SF = (await prisma.forwardingDestination.create({ data: { connectionId: SF, url: 'https://hooks.acme.test/salesforce' } })).id;
  D_GX = (await prisma.forwardingDestination.create({ data: { connectionId: GX, url: 'https://hooks.globex.test/all' } })).id;
  // A source on acme's deleted connection: its rows must never count.
  S_PIPEDRIVE = (await prisma.source.create({ data: { connectionId: PIPEDRIVE, platform: 'lemlist', ingressCode: 'outreachOldPipedrive01' } })).id;

  for (const s of await prisma.source.findMany({ include: { connection: true } })) {
    sources.set(s.id, { accountId: s.connection.accountId, connectionId: s.connectionId, platform: s.platform, ingressCode: s.ingressCode });
  }
  expect(sources.get(S_LEMLIST)!.accountId).toBe(globex);
  expect(sources.get(S_SMARTLEAD)!.accountId).toBe(acme);
});

interface LogEvent {
  /** The stored contact address (lowercase, as the writer stores it): an email or a profile URL. */
  to: string;
  type: string;
  at: Date;
  source?: number;
  /** Whether the payload reached a CRM sync (default true). */
  sync?: boolean;
  /** Forwarding destinations the payload was delivered to. */
  deliveries?: number[];
  body?: unknown;
}

/** One inbound payload (a request) and the log rows it produced, all at `at`. */
async function logEvent(e: LogEvent): Promise<{ requestId: bigint; deliveryIds: bigint[] }> {
  const sourceId = e.source ?? S_SMARTLEAD;
  const src = sources.get(sourceId)!;
  const prisma = ctx.db.prisma;
  const request = await prisma.request.create({
    data: {
      accountId: src.accountId,
      sourceId,
      connectionId: src.connectionId,
      path: src.ingressCode,
      body: JSON.stringify(e.body ?? { event_type: e.type, to_email: e.to }),
      createdAt: e.at,
    },
  });
  if (e.sync !== false) {
    await prisma.sync.create({
      data: {
        accountId: src.accountId,
        connectionId: src.connectionId,
        sourceId,
        requestId: request.id,
        platform: src.platform,
        status: 'success',
        eventType: e.type,
        toEmail: e.to,
        createdAt: e.at,
        updatedAt: e.at,
      },
    });
  }
  const deliveryIds: bigint[] = [];
  for (const destinationId of e.deliveries ?? []) {
    const delivery = await prisma.delivery.create({
      data: {
        accountId: src.accountId,
        destinationId,
        destinationUrl: `https://hooks.test/${destinationId}`,
        connectionId: src.connectionId,
        sourceId,
        requestId: request.id,
        eventType: e.type,
        toEmail: e.to,
        status: 'success',
        httpStatus: 200,
        createdAt: e.at,
      },
    });
    deliveryIds.push(delivery.id);
  }
  return { requestId: request.id, deliveryIds };
}

/** A lead category signal received from a source. */
async function signal(contact: string, name: string, at: Date, sourceId: number = S_SMARTLEAD): Promise<void> {
  const src = sources.get(sourceId)!;
  await ctx.db.prisma.leadCategorySignal.create({
    data: { accountId: src.accountId, connectionId: src.connectionId, sourceId, platform: src.platform, contact, categoryName: name, createdAt: at },
  });
}

type Params = Record<string, string | string[]>;

/** GET /contacts/outreach with the given parameters (an array repeats the parameter). */
function outreach(params: Params | string, key: string | null = keys.acmeRead): Promise<ApiResponse> {
  let query: string;
  if (typeof params === 'string') query = params;
  else {
    const search = new URLSearchParams();
    for (const [name, value] of Object.entries(params)) for (const v of [value].flat()) search.append(name, v);
    query = search.toString();
  }
  return apiGet(ctx.server.baseUrl, `/contacts/outreach${query ? `?${query}` : ''}`, key ?? undefined);
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- schema-checked body
async function ok(params: Params | string, key: string = keys.acmeRead): Promise<any> {
  const res = await outreach(params, key);
  expect(res.status, res.text).toBe(200);
  return res.body;
}

/** The spec's 400 `{statusCode, message, error}`; returns the messages. */
function expect400(res: ApiResponse, pattern?: RegExp): string[] {
  expect(res.status, res.text).toBe(400);
  expect(res.body).toEqual({ statusCode: 400, message: expect.anything(), error: 'Bad Request' });
  const messages = [res.body.message].flat() as string[];
  for (const m of messages) expect(m).toEqual(expect.stringMatching(/\S/));
  if (pattern) expect(messages.join(' | ')).toMatch(pattern);
  return messages;
}

/** Rule 11: the whole answer when nothing matches. */
function nothing(email: string | null, profileUrls: string[] = []) {
  return {
    email,
    query: { email, profileUrls },
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
  };
}

const RATE_HEADERS = ['x-ratelimit-limit', 'x-ratelimit-remaining', 'x-ratelimit-reset'];
const rateHeaders = (res: ApiResponse) => Object.fromEntries(RATE_HEADERS.map((h) => [h, res.headers.get(h)]));
const NO_RATE_HEADERS = { 'x-ratelimit-limit': null, 'x-ratelimit-remaining': null, 'x-ratelimit-reset': null };

describe('rule 1: every identity given is OR-unioned into one aggregate', () => {
  it('adds up the rows of the email and of each profile URL, and only theirs', async () => {
    // Setup: one person known under three addresses, and a bystander
    const li = 'https://www.linkedin.com/in/union-person';
    const x = 'https://x.com/unionperson';
    await logEvent({ to: 'union@prospect.test', type: 'EMAIL_SENT', at: ago(3 * DAY) });
    await logEvent({ to: li, type: 'MESSAGE_SENT', at: ago(2 * DAY), source: S_HEYREACH });
    await logEvent({ to: x, type: 'FOLLOW_SENT', at: ago(1 * DAY), source: S_HEYREACH });
    await logEvent({ to: 'bystander@prospect.test', type: 'CALL_COMPLETED', at: ago(HOUR) });

    // Action
    const byEmail = await ok({ email: 'union@prospect.test' });
    const byProfile = await ok({ profileUrl: li });
    const byAll = await ok({ email: 'union@prospect.test', profileUrl: [li, x] });

    // Assertions
    expect(byEmail.summary.totalEvents).toBe(1);
    expect(byProfile.summary.totalEvents).toBe(1);
    expect(byProfile.eventTypes.map((t: { eventType: string }) => t.eventType)).toEqual(['MESSAGE_SENT']);
    expect(byAll.query).toEqual({ email: 'union@prospect.test', profileUrls: [li, x] });
    expect(byAll.found).toBe(true);
    expect(byAll.summary).toMatchObject({ totalEvents: 3, everEmailed: true, everSocialTouched: true, everCalled: false, lastEventType: 'FOLLOW_SENT' });
    expect(byAll.eventTypes.map((t: { eventType: string; count: number }) => [t.eventType, t.count])).toEqual([
      ['EMAIL_SENT', 1],
      ['FOLLOW_SENT', 1],
      ['MESSAGE_SENT', 1],
    ]);
    expect(byAll.platforms.map((p: { platform: string; count: number }) => [p.platform, p.count])).toEqual([
      ['heyreach', 2],
      ['smartlead', 1],
    ]);
  });

  it("unions the test fixture's jane across her email and her professional profile", async () => {
    const res = await ok({ email: 'jane@prospect.test', profileUrl: 'linkedin.com/in/jane-prospect' });

    // EMAIL_SENT and EMAIL_REPLY from smartlead (the reply reached a sync and two deliveries), MESSAGE_SENT from heyreach.
    expect(res.summary.totalEvents).toBe(3);
    expect(res.eventTypes.map((t: { eventType: string; count: number }) => [t.eventType, t.count])).toEqual([
      ['EMAIL_REPLY', 1],
      ['EMAIL_SENT', 1],
      ['MESSAGE_SENT', 1],
    ]);
    expect(res.platforms.map((p: { platform: string; count: number }) => [p.platform, p.count])).toEqual([
      ['heyreach', 1],
      ['smartlead', 2],
    ]);
    expect(res.outcomes.replied).toBe(true);
    expect(res.query.profileUrls).toEqual(['https://www.linkedin.com/in/jane-prospect']);
  });
});

describe('rule 2: case-insensitive matching over every variant of a profile URL', () => {
  it('matches the email whatever its case, and echoes it lowercased', async () => {
    await logEvent({ to: 'mixed.case+tag@prospect.test', type: 'EMAIL_SENT', at: ago(DAY) });

    const res = await ok({ email: 'Mixed.Case+TAG@Prospect.TEST' });

    expect(res.found).toBe(true);
    expect(res.summary.totalEvents).toBe(1);
    expect(res.query.email).toBe('mixed.case+tag@prospect.test');
    expect(res.email).toBe('mixed.case+tag@prospect.test');
  });

  describe('a professional-network profile stored in canonical form', () => {
    const stored = 'https://www.linkedin.com/in/variant-slug';
    beforeAll(async () => {
      await logEvent({ to: stored, type: 'CONNECTION_REQUEST_SENT', at: ago(DAY), source: S_HEYREACH });
    });

    it.each([
      ['the canonical URL', 'https://www.linkedin.com/in/variant-slug'],
      ['http without www', 'http://linkedin.com/in/variant-slug'],
      ['no scheme', 'linkedin.com/in/variant-slug'],
      ['no scheme, www and a trailing slash', 'www.linkedin.com/in/variant-slug/'],
      ['upper case', 'HTTPS://WWW.LinkedIn.com/in/Variant-Slug'],
      ['a query and a hash', 'https://www.linkedin.com/in/variant-slug/?trk=people-guest&originalSubdomain=uk#about'],
      ['the contact-info overlay', 'https://www.linkedin.com/in/variant-slug/overlay/contact-info/'],
      ['the mobile host', 'https://m.linkedin.com/in/variant-slug'],
      ['a country host', 'https://uk.linkedin.com/in/variant-slug'],
    ])('is found from %s', async (_case, profileUrl) => {
      const res = await ok({ profileUrl });

      expect(res.found).toBe(true);
      expect(res.summary.totalEvents).toBe(1);
      expect(res.query).toEqual({ email: null, profileUrls: [stored] });
    });
  });

  describe('a microblog profile stored in canonical form', () => {
    const stored = 'https://x.com/varhandle';
    beforeAll(async () => {
      await logEvent({ to: stored, type: 'POST_LIKED', at: ago(DAY), source: S_HEYREACH });
    });

    it.each([
      ['the canonical URL', 'https://x.com/varhandle'],
      ['the other hostname', 'https://twitter.com/varhandle'],
      ['www, http and a trailing slash', 'http://www.twitter.com/varhandle/'],
      ['no scheme and upper case', 'X.com/VarHandle'],
      ['a status URL', 'x.com/varhandle/status/1234567890123456789'],
      ['a query and a hash', 'https://x.com/varhandle?s=20&t=abc#top'],
      ['the mobile host', 'https://mobile.twitter.com/varhandle'],
    ])('is found from %s', async (_case, profileUrl) => {
      const res = await ok({ profileUrl });

      expect(res.summary.totalEvents).toBe(1);
      expect(res.query.profileUrls).toEqual([stored]);
    });
  });

  it('matches rows stored in any variant form of the profile, and no near miss', async () => {
    // Setup: one payload per stored form, plus profiles that only look alike
    const matching = [
      'https://www.linkedin.com/in/stored-slug',
      'https://linkedin.com/in/stored-slug',
      'http://www.linkedin.com/in/stored-slug/',
      'linkedin.com/in/stored-slug',
      'www.linkedin.com/in/stored-slug/',
      'https://x.com/storedhandle',
      'https://twitter.com/storedhandle/',
      'http://www.x.com/storedhandle',
      'twitter.com/storedhandle',
    ];
    const nearMisses = [
      'https://www.linkedin.com/in/stored-slug-2',
      'https://www.linkedin.com/in/stored',
      'https://x.com/stored-slug',
      'https://x.com/storedhandle2',
      'https://www.linkedin.com/in/storedhandle',
    ];
    for (const [i, to] of [...matching, ...nearMisses].entries()) await logEvent({ to, type: 'PROFILE_VIEWED', at: ago(DAY + i * 60_000), source: S_HEYREACH });

    // Action
    const res = await ok({ profileUrl: ['linkedin.com/in/stored-slug', 'twitter.com/storedhandle'] });
    const linkedInOnly = await ok({ profileUrl: 'https://www.linkedin.com/in/stored-slug' });

    // Assertions
    expect(res.summary.totalEvents).toBe(matching.length);
    expect(res.query.profileUrls).toEqual(['https://www.linkedin.com/in/stored-slug', 'https://x.com/storedhandle']);
    // A professional slug never matches a microblog handle of the same name, nor the reverse.
    expect(linkedInOnly.summary.totalEvents).toBe(5);
  });

  it('matches a non-ASCII slug stored percent-encoded, from either form of the input', async () => {
    await logEvent({ to: 'https://www.linkedin.com/in/j%c3%a9r%c3%b4me-dupont', type: 'MESSAGE_SENT', at: ago(DAY), source: S_HEYREACH });
    for (const profileUrl of ['linkedin.com/in/j%C3%A9r%C3%B4me-dupont', 'https://www.linkedin.com/in/jérôme-dupont/']) {
      const res = await ok({ profileUrl });
      expect(res.summary.totalEvents, profileUrl).toBe(1);
    }
  });

  it('matches an old /pub/ profile across hosts and trailing slashes', async () => {
    await logEvent({ to: 'https://www.linkedin.com/pub/old-style/1a/2b/3c', type: 'MESSAGE_SENT', at: ago(DAY), source: S_HEYREACH });

    const res = await ok({ profileUrl: 'http://uk.linkedin.com/pub/Old-Style/1a/2b/3c/' });

    expect(res.summary.totalEvents).toBe(1);
    expect(res.query.profileUrls).toEqual(['https://www.linkedin.com/pub/old-style/1a/2b/3c']);
  });

  it('takes repeated and comma-separated profileUrl values, up to five, and counts a profile named twice once', async () => {
    // Setup
    const slugs = ['multi-a', 'multi-b', 'multi-c', 'multi-d'];
    for (const slug of slugs) await logEvent({ to: `https://www.linkedin.com/in/${slug}`, type: 'MESSAGE_SENT', at: ago(DAY), source: S_HEYREACH });

    // Action: five values in all, two of them the same profile
    const res = await ok({
      profileUrl: [
        'linkedin.com/in/multi-a, https://www.linkedin.com/in/multi-b',
        'linkedin.com/in/multi-c,linkedin.com/in/multi-d',
        'http://linkedin.com/in/multi-a/',
      ],
    });

    // Assertions
    expect(res.summary.totalEvents).toBe(4);
    expect(res.eventTypes).toEqual([expect.objectContaining({ eventType: 'MESSAGE_SENT', count: 4 })]);
    expect(res.query.profileUrls).toEqual(slugs.map((s) => `https://www.linkedin.com/in/${s}`));
  });
});

describe('rule 3: social-only events stored under the profile URL', () => {
  it('are matched by profileUrl; events stored under the email need the email', async () => {
    // Setup: HubSpot's heyreach stored the profile URL; salesforce's instantly stored the email for a social event
    const profile = 'https://www.linkedin.com/in/rule-three';
    await logEvent({ to: profile, type: 'MESSAGE_SENT', at: ago(2 * DAY), source: S_HEYREACH });
    await logEvent({ to: 'rule.three@prospect.test', type: 'INMAIL_SENT', at: ago(DAY), source: S_INSTANTLY });

    // Action
    const byProfile = await ok({ profileUrl: profile });
    const byEmail = await ok({ email: 'rule.three@prospect.test' });
    const byBoth = await ok({ email: 'rule.three@prospect.test', profileUrl: profile });

    // Assertions
    expect(byProfile.platforms.map((p: { platform: string }) => p.platform)).toEqual(['heyreach']);
    expect(byEmail.platforms.map((p: { platform: string }) => p.platform)).toEqual(['instantly']);
    expect(byBoth.summary.totalEvents).toBe(2);
  });
});

describe('rule 4: counts are deduplicated by inbound payload per event type and platform', () => {
  it('counts a payload once whether it reached a sync, one or several deliveries (replays included), or both', async () => {
    // Setup
    const to = 'dedupe@prospect.test';
    await logEvent({ to, type: 'EMAIL_SENT', at: ago(4 * DAY), deliveries: [D_MIRROR] });
    await logEvent({ to, type: 'EMAIL_SENT', at: ago(3 * DAY) });
    const reply = await logEvent({ to, type: 'EMAIL_REPLY', at: ago(2 * DAY), deliveries: [D_MIRROR, D_SLACK] });
    const src = sources.get(S_SMARTLEAD)!;
    await ctx.db.prisma.delivery.create({
      data: {
        accountId: acme,
        destinationId: D_SLACK,
        destinationUrl: 'https://hooks.acme.test/replies',
        connectionId: src.connectionId,
        sourceId: S_SMARTLEAD,
        requestId: reply.requestId,
        eventType: 'EMAIL_REPLY',
        toEmail: to,
        status: 'success',
        httpStatus: 200,
        replayOfDeliveryId: reply.deliveryIds[1]!,
        createdAt: ago(2 * DAY),
      },
    });
    await logEvent({ to, type: 'EMAIL_OPEN', at: ago(DAY), sync: false, deliveries: [D_MIRROR, D_SLACK] });

    // Action
    const res = await ok({ email: to });

    // Assertions
    expect(res.summary.totalEvents).toBe(4);
    expect(res.eventTypes.map((t: { eventType: string; count: number }) => [t.eventType, t.count])).toEqual([
      ['EMAIL_OPEN', 1],
      ['EMAIL_REPLY', 1],
      ['EMAIL_SENT', 2],
    ]);
    expect(res.platforms).toEqual([{ platform: 'smartlead', count: 4, lastAt: expect.any(String), lastEventType: 'EMAIL_OPEN' }]);
  });

  it('times a payload by its first processing: a delivery replayed today is not a new touch', async () => {
    const to = 'replayed@prospect.test';
    const sent = await logEvent({ to, type: 'EMAIL_SENT', at: ago(30 * DAY), deliveries: [D_MIRROR] });
    const src = sources.get(S_SMARTLEAD)!;
    await ctx.db.prisma.delivery.create({
      data: {
        accountId: acme,
        destinationId: D_MIRROR,
        destinationUrl: 'https://hooks.acme.test/pipeline',
        connectionId: src.connectionId,
        sourceId: S_SMARTLEAD,
        requestId: sent.requestId,
        eventType: 'EMAIL_SENT',
        toEmail: to,
        status: 'success',
        httpStatus: 200,
        replayOfDeliveryId: sent.deliveryIds[0]!,
        createdAt: ago(HOUR),
      },
    });

    const res = await ok({ email: to });

    expect(res.summary).toMatchObject({ totalEvents: 1, daysSinceLastTouch: 30 });
    expect(res.eventTypes[0].lastAt).toBe(res.eventTypes[0].firstAt);
  });

  it("gives a delivery its source's platform", async () => {
    // Setup: payloads that reached only a destination, from two platforms
    const to = 'delivery.platform@prospect.test';
    await logEvent({ to, type: 'MESSAGE_SENT', at: ago(2 * DAY), source: S_HEYREACH, sync: false, deliveries: [D_MIRROR] });
    await logEvent({ to, type: 'EMAIL_SENT', at: ago(DAY), source: S_INSTANTLY, sync: false, deliveries: [D_SF] });

    const res = await ok({ email: to });

    expect(res.platforms.map((p: { platform: string; count: number; lastEventType: string }) => [p.platform, p.count, p.lastEventType])).toEqual([
      ['heyreach', 1, 'MESSAGE_SENT'],
      ['instantly', 1, 'EMAIL_SENT'],
    ]);
    expect(res.summary.lastPlatform).toBe('instantly');
  });
});

describe('rule 5: summary flags', () => {
  // [everContacted, everEmailed, everOpened, everCalled, everSocialTouched, replied, bounced, unsubscribed]
  const F = true;
  const _ = false;
  it.each([
    ['EMAIL_SENT', [F, F, _, _, _, _, _, _]],
    ['EMAIL_REPLY', [F, F, _, _, _, F, _, _]],
    ['EMAIL_OPEN', [_, _, F, _, _, _, _, _]],
    ['EMAIL_LINK_CLICK', [_, _, F, _, _, _, _, _]],
    ['EMAIL_BOUNCE', [_, _, _, _, _, _, F, _]],
    ['LEAD_UNSUBSCRIBED', [_, _, _, _, _, _, _, F]],
    ['LEAD_CATEGORY_UPDATED', [_, _, _, _, _, _, _, _]],
    ['MESSAGE_SENT', [F, _, _, _, F, _, _, _]],
    ['MESSAGE_REPLY_RECEIVED', [F, _, _, _, F, F, _, _]],
    ['INMAIL_SENT', [F, _, _, _, F, _, _, _]],
    ['INMAIL_REPLY_RECEIVED', [F, _, _, _, F, F, _, _]],
    ['CONNECTION_REQUEST_SENT', [F, _, _, _, F, _, _, _]],
    ['CONNECTION_REQUEST_ACCEPTED', [_, _, _, _, F, _, _, _]],
    ['FOLLOW_SENT', [_, _, _, _, F, _, _, _]],
    ['PROFILE_VIEWED', [_, _, _, _, F, _, _, _]],
    ['POST_LIKED', [_, _, _, _, F, _, _, _]],
    ['CALL_COMPLETED', [F, _, _, F, _, _, _, _]],
  ] as const)('%s alone sets exactly its flags', async (type, flags) => {
    // Setup
    const to = `flags.${type.toLowerCase()}@prospect.test`;
    const at = ago(2 * DAY + HOUR);
    await logEvent({ to, type, at });
    const [everContacted, everEmailed, everOpened, everCalled, everSocialTouched, replied, bounced, unsubscribed] = flags;
    const touch = type !== 'LEAD_CATEGORY_UPDATED';

    // Action
    const res = await ok({ email: to });

    // Assertions
    expect(res.found).toBe(true);
    expect(res.summary).toEqual({
      everContacted,
      everEmailed,
      everOpened,
      everCalled,
      everSocialTouched,
      totalEvents: 1,
      firstTouchAt: touch ? iso(at) : null,
      lastTouchAt: touch ? iso(at) : null,
      daysSinceLastTouch: touch ? 2 : null,
      lastEventType: touch ? type : null,
      lastPlatform: touch ? 'smartlead' : null,
    });
    expect(res.eventTypes).toEqual([{ eventType: type, count: 1, firstAt: iso(at), lastAt: iso(at) }]);
    expect(res.platforms).toEqual([{ platform: 'smartlead', count: 1, lastAt: iso(at), lastEventType: type }]);
    expect(res.outcomes).toEqual({ replied, lastReplyAt: replied ? iso(at) : null, bounced, unsubscribed, lastCategoryName: null, lastCategoryAt: null });
    expect(res.doNotContact.value).toBe(bounced || unsubscribed);
  });

  it('keeps everContacted false over opens, clicks, views, likes, follows and accepted requests together', async () => {
    const to = 'passive@prospect.test';
    for (const [i, type] of ['EMAIL_OPEN', 'EMAIL_LINK_CLICK', 'PROFILE_VIEWED', 'POST_LIKED', 'FOLLOW_SENT', 'CONNECTION_REQUEST_ACCEPTED'].entries()) {
      await logEvent({ to, type, at: ago((i + 1) * HOUR), source: i % 2 ? S_HEYREACH : S_SMARTLEAD });
    }

    const res = await ok({ email: to });

    expect(res.summary).toMatchObject({
      everContacted: false,
      everEmailed: false,
      everOpened: true,
      everSocialTouched: true,
      everCalled: false,
      totalEvents: 6,
    });
  });

  it('sorts eventTypes by event type and platforms by platform, rolling counts and times up', async () => {
    // Setup: inserted in neither order
    const to = 'sorted@prospect.test';
    const t = [6, 5, 4, 3, 2, 1].map((d) => ago(d * DAY + HOUR));
    await logEvent({ to, type: 'EMAIL_SENT', at: t[0]!, source: S_SMARTLEAD });
    await logEvent({ to, type: 'EMAIL_SENT', at: t[1]!, source: S_SMARTLEAD });
    await logEvent({ to, type: 'MESSAGE_SENT', at: t[2]!, source: S_HEYREACH });
    await logEvent({ to, type: 'CALL_COMPLETED', at: t[3]!, source: S_INSTANTLY });
    await logEvent({ to, type: 'EMAIL_OPEN', at: t[4]!, source: S_SMARTLEAD });
    await logEvent({ to, type: 'CONNECTION_REQUEST_ACCEPTED', at: t[5]!, source: S_HEYREACH });

    // Action
    const res = await ok({ email: to });

    // Assertions
    expect(res.eventTypes).toEqual([
      { eventType: 'CALL_COMPLETED', count: 1, firstAt: iso(t[3]!), lastAt: iso(t[3]!) },
      { eventType: 'CONNECTION_REQUEST_ACCEPTED', count: 1, firstAt: iso(t[5]!), lastAt: iso(t[5]!) },
      { eventType: 'EMAIL_OPEN', count: 1, firstAt: iso(t[4]!), lastAt: iso(t[4]!) },
      { eventType: 'EMAIL_SENT', count: 2, firstAt: iso(t[0]!), lastAt: iso(t[1]!) },
      { eventType: 'MESSAGE_SENT', count: 1, firstAt: iso(t[2]!), lastAt: iso(t[2]!) },
    ]);
    expect(res.platforms).toEqual([
      { platform: 'heyreach', count: 2, lastAt: iso(t[5]!), lastEventType: 'CONNECTION_REQUEST_ACCEPTED' },
      { platform: 'instantly', count: 1, lastAt: iso(t[3]!), lastEventType: 'CALL_COMPLETED' },
      { platform: 'smartlead', count: 3, lastAt: iso(t[4]!), lastEventType: 'EMAIL_OPEN' },
    ]);
    expect(res.summary).toEqual({
      everContacted: true,
      everEmailed: true,
      everOpened: true,
      everCalled: true,
      everSocialTouched: true,
      totalEvents: 6,
      firstTouchAt: iso(t[0]!),
      lastTouchAt: iso(t[5]!),
      daysSinceLastTouch: 1,
      lastEventType: 'CONNECTION_REQUEST_ACCEPTED',
      lastPlatform: 'heyreach',
    });
  });

  it('takes the first and last touch and its type and platform from touches only: a category change is not a touch', async () => {
    // Setup: category changes before the first and after the last touch
    const to = 'category.last@prospect.test';
    const [c1, first, last, c2] = [5 * DAY, 3 * DAY, 2 * DAY + HOUR, HOUR].map(ago) as [Date, Date, Date, Date];
    await logEvent({ to, type: 'LEAD_CATEGORY_UPDATED', at: c1, source: S_INSTANTLY });
    await logEvent({ to, type: 'EMAIL_SENT', at: first, source: S_SMARTLEAD });
    await logEvent({ to, type: 'MESSAGE_SENT', at: last, source: S_HEYREACH });
    await logEvent({ to, type: 'LEAD_CATEGORY_UPDATED', at: c2, source: S_SMARTLEAD });

    const res = await ok({ email: to });

    expect(res.summary).toMatchObject({
      totalEvents: 4,
      firstTouchAt: iso(first),
      lastTouchAt: iso(last),
      daysSinceLastTouch: 2,
      lastEventType: 'MESSAGE_SENT',
      lastPlatform: 'heyreach',
    });
    // The platform's own last event may be the category change.
    expect(res.platforms.find((p: { platform: string }) => p.platform === 'smartlead')).toEqual({
      platform: 'smartlead',
      count: 2,
      lastAt: iso(c2),
      lastEventType: 'LEAD_CATEGORY_UPDATED',
    });
    expect(res.eventTypes.find((e: { eventType: string }) => e.eventType === 'LEAD_CATEGORY_UPDATED')).toEqual({
      eventType: 'LEAD_CATEGORY_UPDATED',
      count: 2,
      firstAt: iso(c1),
      lastAt: iso(c2),
    });
  });

  it('reports the last reply across email and social replies', async () => {
    const to = 'replies@prospect.test';
    const [emailReply, sent, socialReply] = [4 * DAY, 3 * DAY, 2 * DAY].map(ago) as [Date, Date, Date];
    await logEvent({ to, type: 'EMAIL_REPLY', at: emailReply });
    await logEvent({ to, type: 'EMAIL_SENT', at: sent });
    await logEvent({ to, type: 'MESSAGE_REPLY_RECEIVED', at: socialReply, source: S_HEYREACH });

    const res = await ok({ email: to });

    expect(res.outcomes).toMatchObject({ replied: true, lastReplyAt: iso(socialReply) });
  });
});

describe('rule 6: found', () => {
  it('is true for a lead category signal alone, which is no touch; the latest signal wins', async () => {
    // Setup
    const to = 'signal.only@prospect.test';
    const latest = ago(DAY);
    await signal(to, 'Interested', ago(3 * DAY));
    await signal(to, 'Meeting Request', latest, S_INSTANTLY);
    await signal(to, 'Out of office', ago(2 * DAY));

    const res = await ok({ email: to });

    expect(res).toEqual({
      ...nothing(to),
      found: true,
      outcomes: { ...nothing(to).outcomes, lastCategoryName: 'Meeting Request', lastCategoryAt: iso(latest) },
    });
  });

  it('matches a signal stored under a profile URL', async () => {
    const profile = 'https://www.linkedin.com/in/signal-profile';
    await signal(profile, 'Interested', ago(DAY), S_HEYREACH);

    const res = await ok({ profileUrl: 'uk.linkedin.com/in/signal-profile/' });

    expect(res.found).toBe(true);
    expect(res.outcomes.lastCategoryName).toBe('Interested');
    expect(res.summary.lastTouchAt).toBeNull();
  });

  it('is true for LEAD_CATEGORY_UPDATED rows alone, with no touch', async () => {
    const to = 'category.rows@prospect.test';
    await logEvent({ to, type: 'LEAD_CATEGORY_UPDATED', at: ago(2 * DAY) });
    await logEvent({ to, type: 'LEAD_CATEGORY_UPDATED', at: ago(DAY), source: S_INSTANTLY, deliveries: [D_SF] });

    const res = await ok({ email: to });

    expect(res.found).toBe(true);
    expect(res.summary).toMatchObject({
      totalEvents: 2,
      firstTouchAt: null,
      lastTouchAt: null,
      daysSinceLastTouch: null,
      lastEventType: null,
      lastPlatform: null,
    });
    expect(res.eventTypes).toEqual([expect.objectContaining({ eventType: 'LEAD_CATEGORY_UPDATED', count: 2 })]);
  });
});

describe('rule 7: daysSinceLastTouch is whole days (floor) since lastTouchAt', () => {
  it.each([
    ['10 minutes', 10 * 60_000, 0],
    ['23 hours', 23 * HOUR, 0],
    ['47 hours', 47 * HOUR, 1],
    ['3.5 days', 3.5 * DAY, 3],
    ['400.5 days', 400.5 * DAY, 400],
  ])('is the floor for a touch %s ago', async (label, ms, days) => {
    const to = `days.${label.replace(/\W+/g, '-')}@prospect.test`;
    const at = ago(ms);
    await logEvent({ to, type: 'EMAIL_SENT', at });
    // An older touch and a newer category change must not move it.
    await logEvent({ to, type: 'EMAIL_OPEN', at: new Date(at.getTime() - 5 * DAY) });
    await logEvent({ to, type: 'LEAD_CATEGORY_UPDATED', at: ago(60_000) });

    const res = await ok({ email: to });

    expect(res.summary.lastTouchAt).toBe(iso(at));
    expect(res.summary.daysSinceLastTouch).toBe(days);
  });
});

describe('rule 8: doNotContact reports hard signals only', () => {
  it.each([
    ['a bounce', ['EMAIL_BOUNCE'], ['bounced']],
    ['an unsubscribe', ['LEAD_UNSUBSCRIBED'], ['unsubscribed']],
    ['an unsubscribe, then a bounce', ['LEAD_UNSUBSCRIBED', 'EMAIL_BOUNCE'], ['bounced', 'unsubscribed']],
    ['a bounce, then an unsubscribe', ['EMAIL_BOUNCE', 'LEAD_UNSUBSCRIBED'], ['bounced', 'unsubscribed']],
  ])('is set by %s', async (label, types, reasons) => {
    const to = `dnc.${label.replace(/\W+/g, '-')}@prospect.test`;
    for (const [i, type] of ['EMAIL_SENT', ...types].entries()) await logEvent({ to, type, at: ago((5 - i) * DAY) });

    const res = await ok({ email: to });

    expect(res.doNotContact).toEqual({ value: true, reasons });
    expect(res.outcomes).toMatchObject({ bounced: reasons.includes('bounced'), unsubscribed: reasons.includes('unsubscribed') });
  });

  it('is not set by replies, soft categories or a "Do not contact" category name', async () => {
    const to = 'dnc.soft@prospect.test';
    await logEvent({ to, type: 'EMAIL_REPLY', at: ago(3 * DAY) });
    await logEvent({ to, type: 'LEAD_CATEGORY_UPDATED', at: ago(2 * DAY) });
    await signal(to, 'Do Not Contact', ago(DAY));

    const res = await ok({ email: to });

    expect(res.doNotContact).toEqual({ value: false, reasons: [] });
    expect(res.outcomes).toMatchObject({ bounced: false, unsubscribed: false, lastCategoryName: 'Do Not Contact' });
  });
});

describe('rule 9: blocklists is reserved', () => {
  it('is never evaluated, even for a contact whose domain is on a synced block list', async () => {
    // acme's "Customers and partners" domain list holds globex.test.
    const to = 'buyer@globex.test';
    await logEvent({ to, type: 'EMAIL_SENT', at: ago(DAY) });

    const found = await ok({ email: to });
    const unknown = await ok({ email: 'nobody@initech.test' });

    expect(found.found).toBe(true);
    expect(found.blocklists).toEqual({ evaluated: false, matched: false, matches: [] });
    expect(unknown.blocklists).toEqual({ evaluated: false, matched: false, matches: [] });
  });
});

describe('rule 10: timestamps are processing time', () => {
  it("reports when the payload was processed, not the sequencer's event time", async () => {
    const to = 'processing.time@prospect.test';
    const at = ago(2 * DAY);
    await logEvent({ to, type: 'EMAIL_SENT', at, body: { event_type: 'EMAIL_SENT', to_email: to, event_timestamp: '2020-01-01T00:00:00.000Z' } });

    const res = await ok({ email: to });

    expect(res.summary).toMatchObject({ firstTouchAt: iso(at), lastTouchAt: iso(at), daysSinceLastTouch: 2 });
    expect(res.eventTypes[0]).toMatchObject({ firstAt: iso(at), lastAt: iso(at) });
  });
});

describe('rule 11: no prior outreach', () => {
  it('answers found false with empty arrays, false flags and null times for an unknown email', async () => {
    const res = await ok({ email: 'Never.Contacted@Prospect.test' });

    expect(res).toEqual(nothing('never.contacted@prospect.test'));
  });

  it('answers the same for unknown profiles, with a null email', async () => {
    const res = await ok({ profileUrl: ['linkedin.com/in/never-contacted', 'twitter.com/nevercontacted'] });

    expect(res).toEqual(nothing(null, ['https://www.linkedin.com/in/never-contacted', 'https://x.com/nevercontacted']));
  });
});

describe('rule 12 and validation: 400', () => {
  it.each([
    ['no parameter', ''],
    ['an empty email', 'email='],
    ['a blank email', 'email=%20%20'],
    ['an empty profileUrl', 'profileUrl='],
    ['only commas', 'profileUrl=,%20,'],
    ['both empty', 'email=&profileUrl='],
    ['empty values repeated', 'profileUrl=&profileUrl=%20'],
    ['only unrelated parameters', 'name=jane'],
  ])('without an identity (%s)', async (_case, query) => {
    const res = await outreach(query);
    expect400(res, /at least one.*(email|profileUrl)/i);
    expect(typeof res.body.message).toBe('string');
  });

  it.each([
    ['not an address', 'jane'],
    ['no domain', 'jane@'],
    ['two @', 'jane@@prospect.test'],
    ['a space inside', 'jane doe@prospect.test'],
    ['an undotted domain', 'jane@localhost'],
  ])('for an invalid email (%s), as one string', async (_case, email) => {
    const res = await outreach({ email });
    expect400(res, /email/);
    expect(typeof res.body.message).toBe('string');
  });

  it.each([['acme.com'], ['@acme.com'], ['ACME.COM'], ['mail.acme.co.uk']])('for a bare company domain as email (%s)', async (email) => {
    const res = await outreach({ email });
    expect400(res, /domain/);
    expect(typeof res.body.message).toBe('string');
  });

  it.each([
    ['a bare domain', 'https://acme.com', /bare domain/],
    ['a bare domain without scheme', 'acme.com', /bare domain/],
    ['the network itself', 'linkedin.com', /bare domain/],
    ['the network with www and a slash', 'https://www.linkedin.com/', /bare domain/],
    ['a company page', 'linkedin.com/company/acme', /not a person's profile/],
    ['a company page with scheme', 'https://www.linkedin.com/company/acme/about/', /not a person's profile/],
    ['an /in/ without a slug', 'linkedin.com/in/', /not a person's profile/],
    ['the microblog itself', 'x.com', /x\.com/],
    ['a microblog site page', 'https://twitter.com/home', /microblog/],
    ['another site', 'https://example.com/jane', /profile/],
    ['another scheme', 'ftp://linkedin.com/in/jane', /http/],
  ])('for a profileUrl that is %s, as one string', async (_case, profileUrl, pattern) => {
    const res = await outreach({ profileUrl });
    expect400(res, pattern);
    expect(typeof res.body.message).toBe('string');
  });

  it('skips empty values next to a real identity (an empty form field, a trailing comma)', async () => {
    await logEvent({ to: 'https://www.linkedin.com/in/empty-fields', type: 'MESSAGE_SENT', at: ago(DAY), source: S_HEYREACH });
    for (const query of [
      'email=&profileUrl=linkedin.com/in/empty-fields',
      'profileUrl=linkedin.com/in/empty-fields,',
      'profileUrl=linkedin.com/in/empty-fields&profileUrl=',
    ]) {
      const res = await ok(query);
      expect(res.found, query).toBe(true);
      expect(res.query.profileUrls, query).toEqual(['https://www.linkedin.com/in/empty-fields']);
    }
  });

  it('rejects the whole lookup when one identity of several is invalid', async () => {
    await logEvent({ to: 'one.bad@prospect.test', type: 'EMAIL_SENT', at: ago(DAY) });

    expect400(await outreach({ email: 'one.bad@prospect.test', profileUrl: 'linkedin.com/company/acme' }), /not a person's profile/);
    expect400(await outreach({ email: 'one.bad@prospect.test', profileUrl: 'linkedin.com/in/fine,acme.com' }), /bare domain/);
    expect400(await outreach({ email: 'acme.com', profileUrl: 'linkedin.com/in/fine' }), /bare domain/);
  });

  it('lists several problems as an array of messages', async () => {
    const res = await outreach({ email: '@acme.com', profileUrl: ['linkedin.com/company/acme', 'https://acme.com'] });

    const messages = expect400(res);
    expect(Array.isArray(res.body.message)).toBe(true);
    expect(messages).toHaveLength(3);
    expect(messages[0]).toMatch(/email/);
    expect(messages.slice(1).join(' | ')).toMatch(/not a person's profile.*bare domain/);
  });

  it('accepts five profileUrl values in all and refuses six, counting comma-separated ones', async () => {
    const urls = (n: number) => Array.from({ length: n }, (_, i) => `linkedin.com/in/five-${i}`);

    expect((await outreach({ profileUrl: urls(5) })).status).toBe(200);
    expect((await outreach({ profileUrl: [urls(3).join(','), ...urls(5).slice(3)] })).status).toBe(200);

    const six: Params[] = [
      { profileUrl: urls(6) },
      { profileUrl: [urls(3).join(','), urls(6).slice(3).join(',')] },
      { profileUrl: urls(6).join(',') },
      { email: 'six@prospect.test', profileUrl: urls(6) },
    ];
    for (const params of six) {
      const res = await outreach(params);
      expect400(res, /5/);
      expect(typeof res.body.message).toBe('string');
    }
    // Many more: still a 400 that says how many may be given.
    expect400(await outreach({ profileUrl: urls(40) }), /at most 5/);
    // Too many and an invalid one: every problem, as an array.
    const both = await outreach({ profileUrl: [...urls(5), 'linkedin.com/company/acme'] });
    expect(expect400(both)).toEqual([expect.stringMatching(/at most 5/), expect.stringMatching(/not a person's profile/)]);
  });

  it('refuses a repeated email parameter', async () => {
    for (const email of [
      ['a@prospect.test', 'b@prospect.test'],
      ['same@prospect.test', 'same@prospect.test'],
    ]) {
      const res = await outreach({ email });
      expect400(res, /email/);
    }
  });
});

describe('deprecated top-level email', () => {
  it('is an alias of query.email: the lowercased address, or null with profiles only', async () => {
    const withEmail = await ok({ email: 'Alias@Prospect.TEST', profileUrl: 'x.com/aliasperson' });
    const withoutEmail = await ok({ profileUrl: 'x.com/aliasperson' });
    const blankEmail = await ok({ email: '', profileUrl: 'x.com/aliasperson' });

    expect([withEmail.email, withEmail.query.email]).toEqual(['alias@prospect.test', 'alias@prospect.test']);
    expect([withoutEmail.email, withoutEmail.query.email]).toEqual([null, null]);
    expect([blankEmail.email, blankEmail.query.email]).toEqual([null, null]);
  });

  it('is marked deprecated in the OpenAPI document', () => {
    const schemas = (openApiDocument as unknown as { components: { schemas: Record<string, { properties: Record<string, { deprecated?: boolean }> }> } })
      .components.schemas;
    expect(schemas.ContactOutreach!.properties.email!.deprecated).toBe(true);
  });
});

describe('authentication, account isolation and connection scope', () => {
  it('answers 401 without a valid key, before looking at the parameters', async () => {
    for (const key of [null, keys.acmeRevoked]) {
      for (const query of ['email=jane@prospect.test', '', 'email=acme.com']) {
        const res = await outreach(query, key);
        expect(res.status).toBe(401);
        expect(res.body).toEqual({ statusCode: 401, message: 'Invalid API key', error: 'Unauthorized' });
        expect(res.headers.get('www-authenticate')).toBe('Bearer realm="Service API"');
      }
    }
    const malformed = await apiFetch(`${ctx.server.baseUrl}/api/v1/contacts/outreach?email=jane@prospect.test`, { headers: { authorization: 'Basic abc' } });
    expect(malformed.status).toBe(401);
  });

  it('answers 403 to a key that reaches no API-enabled connection', async () => {
    await ctx.db.prisma.connection.update({ where: { id: GX }, data: { apiEnabled: false } });
    try {
      const res = await outreach({ email: 'jane@prospect.test' }, keys.globexRead);
      expect(res.status).toBe(403);
      expect(res.body.error).toBe('Forbidden');
    } finally {
      await ctx.db.prisma.connection.update({ where: { id: GX }, data: { apiEnabled: true } });
    }
  });

  it("never counts another account's rows or signals", async () => {
    // Setup: one address known to both accounts, one known to globex only
    const to = 'shared@prospect.test';
    const acmeAt = ago(2 * DAY);
    await logEvent({ to, type: 'EMAIL_SENT', at: acmeAt, deliveries: [D_MIRROR] });
    await logEvent({ to, type: 'EMAIL_REPLY', at: ago(DAY), source: S_LEMLIST, deliveries: [D_GX] });
    await logEvent({ to, type: 'EMAIL_BOUNCE', at: ago(HOUR), source: S_LEMLIST });
    await signal(to, 'Not interested', ago(HOUR), S_LEMLIST);
    await logEvent({ to: 'globex.only@prospect.test', type: 'CALL_COMPLETED', at: ago(DAY), source: S_LEMLIST });
    await signal('globex.only@prospect.test', 'Interested', ago(DAY), S_LEMLIST);
    await logEvent({ to: 'https://www.linkedin.com/in/globex-only', type: 'MESSAGE_SENT', at: ago(DAY), source: S_LEMLIST });

    // Action
    const asAcme = await ok({ email: to });
    const asGlobex = await ok({ email: to }, keys.globexRead);

    // Assertions
    expect(asAcme.summary).toMatchObject({ totalEvents: 1, lastTouchAt: iso(acmeAt), lastPlatform: 'smartlead' });
    expect(asAcme.platforms.map((p: { platform: string }) => p.platform)).toEqual(['smartlead']);
    expect(asAcme.outcomes).toMatchObject({ replied: false, bounced: false, lastCategoryName: null });
    expect(asAcme.doNotContact).toEqual({ value: false, reasons: [] });

    expect(asGlobex.summary).toMatchObject({ totalEvents: 2, everEmailed: true, lastPlatform: 'lemlist' });
    expect(asGlobex.platforms.map((p: { platform: string }) => p.platform)).toEqual(['lemlist']);
    expect(asGlobex.outcomes).toMatchObject({ replied: true, bounced: true, lastCategoryName: 'Not interested' });

    expect(await ok({ email: 'globex.only@prospect.test' })).toEqual(nothing('globex.only@prospect.test'));
    expect(await ok({ profileUrl: 'linkedin.com/in/globex-only' })).toEqual(nothing(null, ['https://www.linkedin.com/in/globex-only']));
    // The test fixture's jane is acme's alone.
    expect(await ok({ email: 'jane@prospect.test' }, keys.globexRead)).toEqual(nothing('jane@prospect.test'));
  });

  it("gives a connection-scoped key only its connection's rows and signals", async () => {
    // Setup: rows and signals on both of acme's live connections
    const to = 'scoped@prospect.test';
    const hubAt = ago(3 * DAY);
    await logEvent({ to, type: 'EMAIL_SENT', at: hubAt, deliveries: [D_MIRROR] });
    await signal(to, 'Interested', ago(2 * DAY));
    await logEvent({ to, type: 'CALL_COMPLETED', at: ago(DAY), source: S_INSTANTLY, deliveries: [D_SF] });
    await logEvent({ to, type: 'LEAD_UNSUBSCRIBED', at: ago(DAY), source: S_INSTANTLY, sync: false, deliveries: [D_SF] });
    await signal(to, 'Meeting Request', ago(HOUR), S_INSTANTLY);
    await logEvent({ to: 'salesforce.only@prospect.test', type: 'EMAIL_REPLY', at: ago(DAY), source: S_INSTANTLY, deliveries: [D_SF] });
    await signal('salesforce.only@prospect.test', 'Interested', ago(DAY), S_INSTANTLY);

    // Action
    const whole = await ok({ email: to });
    const scoped = await ok({ email: to }, keys.acmeHubspotOnly);

    // Assertions
    expect(whole.summary).toMatchObject({ totalEvents: 3, everCalled: true, lastPlatform: 'instantly' });
    expect(whole.outcomes).toMatchObject({ unsubscribed: true, lastCategoryName: 'Meeting Request' });
    expect(whole.platforms.map((p: { platform: string }) => p.platform)).toEqual(['instantly', 'smartlead']);

    expect(scoped.summary).toMatchObject({
      totalEvents: 1,
      everCalled: false,
      lastTouchAt: iso(hubAt),
      lastPlatform: 'smartlead',
      lastEventType: 'EMAIL_SENT',
    });
    expect(scoped.platforms.map((p: { platform: string }) => p.platform)).toEqual(['smartlead']);
    expect(scoped.outcomes).toMatchObject({ unsubscribed: false, lastCategoryName: 'Interested' });
    expect(scoped.doNotContact).toEqual({ value: false, reasons: [] });

    expect(await ok({ email: 'salesforce.only@prospect.test' }, keys.acmeHubspotOnly)).toEqual(nothing('salesforce.only@prospect.test'));
    expect((await ok({ email: 'salesforce.only@prospect.test' })).found).toBe(true);
  });

  it('never counts rows of a deleted connection or of one whose API access is off', async () => {
    // Setup
    await logEvent({ to: 'deleted.connection@prospect.test', type: 'EMAIL_REPLY', at: ago(DAY), source: S_PIPEDRIVE });
    await signal('deleted.connection@prospect.test', 'Interested', ago(DAY), S_PIPEDRIVE);
    await logEvent({ to: 'api.off@prospect.test', type: 'EMAIL_SENT', at: ago(DAY), source: S_INSTANTLY, deliveries: [D_SF] });

    expect(await ok({ email: 'deleted.connection@prospect.test' })).toEqual(nothing('deleted.connection@prospect.test'));
    expect((await ok({ email: 'api.off@prospect.test' })).found).toBe(true);
    await ctx.db.prisma.connection.update({ where: { id: SF }, data: { apiEnabled: false } });
    try {
      expect(await ok({ email: 'api.off@prospect.test' })).toEqual(nothing('api.off@prospect.test'));
    } finally {
      await ctx.db.prisma.connection.update({ where: { id: SF }, data: { apiEnabled: true } });
    }
  });
});

describe('rule 13: its own rate bucket', () => {
  it('carries no X-RateLimit-* headers and takes nothing from the general account bucket', async () => {
    // Setup: a general route shows the account bucket's headers
    const before = await apiGet(ctx.server.baseUrl, '/me', keys.acmeRead);
    expect(before.headers.get('x-ratelimit-limit')).not.toBeNull();
    const remaining = Number(before.headers.get('x-ratelimit-remaining'));

    // Action + Assertions: 200, 400 and 401 of outreach
    const answers = [
      await outreach({ email: 'bucket@prospect.test' }),
      await outreach({ email: 'jane@prospect.test', profileUrl: 'linkedin.com/in/jane-prospect' }),
      await outreach({ email: 'acme.com' }),
      await outreach(''),
      await outreach({ email: 'bucket@prospect.test' }, keys.globexRead),
      await outreach({ email: 'bucket@prospect.test' }, null),
    ];
    expect(answers.map((r) => r.status)).toEqual([200, 200, 400, 400, 200, 401]);
    for (const res of answers) expect(rateHeaders(res)).toEqual(NO_RATE_HEADERS);

    const after = await apiGet(ctx.server.baseUrl, '/me', keys.acmeRead);
    expect(Number(after.headers.get('x-ratelimit-remaining'))).toBe(remaining - 1);
  });

  it('counts lookups in the account outreach bucket, not in the per-IP one', async () => {
    const windows = async () =>
      Object.fromEntries(
        (await ctx.db.query<{ bucket: string; hits: number }>('SELECT bucket, hits FROM rate_limit_windows')).map((r) => [r.bucket, Number(r.hits)]),
      );
    // A general route opens this client's per-IP window.
    expect((await apiGet(ctx.server.baseUrl, '/me', keys.acmeRead)).status).toBe(200);
    const before = await windows();

    await outreach({ email: 'bucket.count@prospect.test' });
    await outreach({ email: 'bucket.count@prospect.test' });

    const after = await windows();
    const key = `outreach:${acme}`;
    // Fixed 60 s window: two more hits, unless the window rolled over in between.
    expect([(before[key] ?? 0) + 2, 2]).toContain(after[key]);
    // Lookups add nothing to the per-IP window.
    const ipBuckets = Object.keys(after).filter((bucket) => bucket.startsWith('ip:'));
    expect(ipBuckets.length).toBeGreaterThan(0);
    for (const bucket of ipBuckets) expect(after[bucket]).toBeLessThanOrEqual(before[bucket]!);
  });
});
