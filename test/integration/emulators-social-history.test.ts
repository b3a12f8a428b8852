/**
 * The HeyReach and lemlist emulators over real HTTP: the webhook bodies they return parse with our parsers
 * to the event the history describes, the history endpoints answer the stored messages and activities with
 * their paging and filters, unknown keys are refused and each limit answers 429 once spent. The backfill's
 * tests and benches rely on these behaviours.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { parseHeyReach } from '../../src/connectors/sequencers/heyreach/parser.js';
import { parseLemlist } from '../../src/connectors/sequencers/lemlist/parser.js';
import { startHeyReachEmulator } from '../../src/emulators/heyreach.js';
import { startLemlistEmulator } from '../../src/emulators/lemlist.js';
import { call, emulatorTracker } from '../support/emulator-calls.js';

const { track, closeAll } = emulatorTracker();

afterEach(closeAll);

/** `2026-01-27T10:00:00.500Z` → `2026-01-27T10:00:00`: the precision a LinkedIn message is keyed by. */
const toSecond = (date: Date | null | undefined) => date?.toISOString().slice(0, 19);

describe('HeyReach emulator', () => {
  const KEY = 'hr-key-1';
  const headers = { 'x-api-key': KEY, accept: 'application/json' };
  const conversationsOf = (url: string, json: unknown, key = KEY) =>
    call(`${url}/api/public/inbox/GetConversationsV2`, { json, headers: { ...headers, 'x-api-key': key } });

  it('returns webhook bodies our parser reads as the message: its type, the profile URL (or email), the conversation and its second', async () => {
    const hr = await track(startHeyReachEmulator());
    hr.addKey(KEY);
    const ana = hr.addLead(KEY, {
      profileUrl: 'https://www.linkedin.com/in/ana-lima-42',
      firstName: 'Ana',
      lastName: 'Lima',
      companyName: 'Lima Labs',
      campaignId: 456,
      campaignName: 'LinkedIn Q1',
    });
    const bo = hr.addLead(KEY, {
      profileUrl: 'https://www.linkedin.com/in/bo-berg',
      firstName: 'Bo',
      lastName: 'Berg',
      email: 'Bo@Berg.test',
      campaignId: 456,
      campaignName: 'LinkedIn Q1',
      linkedInAccountId: 7,
    });
    expect(ana.conversationId).toMatch(/^2-[A-Za-z0-9+/]+=*$/);

    const sent = new Date('2026-01-27T10:00:00.640Z');
    const replied = new Date('2026-01-27T11:30:05.120Z');
    const cases = [
      [hr.message(KEY, ana.conversationId, { text: 'Hi Ana, quick question', at: sent, from: 'ME' }), 'MESSAGE_SENT', 'message_sent', sent],
      [
        hr.message(KEY, ana.conversationId, { text: 'Sure, go ahead', at: replied, from: 'CORRESPONDENT' }),
        'MESSAGE_REPLY_RECEIVED',
        'every_message_reply_received',
        replied,
      ],
      [hr.message(KEY, bo.conversationId, { text: 'An InMail', at: sent, from: 'ME', inMail: true }), 'INMAIL_SENT', 'inmail_sent', sent],
      [
        hr.message(KEY, bo.conversationId, { text: 'Thanks for the InMail', at: replied, from: 'CORRESPONDENT', inMail: true }),
        'INMAIL_REPLY_RECEIVED',
        'inmail_reply_received',
        replied,
      ],
    ] as const;
    for (const [body, eventType, rawEventType, at] of cases) {
      const parsed = parseHeyReach(body);
      if (!parsed.ok) throw new Error(parsed.reason);
      expect(parsed.event).toMatchObject({ platform: 'heyreach', eventType, rawEventType, campaign: { id: '456', name: 'LinkedIn Q1' } });
      expect(toSecond(parsed.event.occurredAt)).toBe(toSecond(at));
      expect(parsed.event.message.text).toBe((body.recent_messages as Array<{ message: string }>)[0]!.message);
    }
    const [anaSent, anaReply] = cases.map(([body]) => parseHeyReach(body));
    // The reply's webhook carries the earlier send too, yet the parser reads the reply.
    expect(cases[1][0].recent_messages).toHaveLength(2);
    expect(anaReply).toMatchObject({
      ok: true,
      event: { identity: 'https://www.linkedin.com/in/ana-lima-42', message: { text: 'Sure, go ahead', direction: 'inbound' } },
    });
    expect(anaSent).toMatchObject({
      ok: true,
      event: { sequencerIds: { conversationId: ana.conversationId }, contact: { firstName: 'Ana', lastName: 'Lima', company: 'Lima Labs' } },
    });
    // A lead with an email is named by it in webhooks; the seat is the lead's account.
    expect(parseHeyReach(cases[2][0])).toMatchObject({
      ok: true,
      event: { identity: 'bo@berg.test', sequencerIds: { conversationId: bo.conversationId, senderId: '7' } },
    });
  });

  it('lists conversations newest first with their thread oldest first, as the webhooks told it, by offset and filters', async () => {
    const hr = await track(startHeyReachEmulator());
    hr.addKey(KEY);
    hr.addKey('hr-other');
    const base = Date.parse('2026-02-01T09:00:00.000Z');
    const leads = Array.from({ length: 5 }, (_, i) =>
      hr.addLead(KEY, {
        profileUrl: `https://www.linkedin.com/in/lead-${i}/`,
        firstName: `Lead${i}`,
        lastName: 'Doe',
        email: `lead${i}@acme.test`,
        campaignId: i < 3 ? 1 : 2,
        campaignName: i < 3 ? 'One' : 'Two',
        linkedInAccountId: i === 4 ? 99 : undefined,
      }),
    );
    // Lead i's last message comes i minutes later: lead 4 is newest. Lead 0's reply is stored before the send it answers.
    leads.forEach((lead, i) => hr.message(KEY, lead.conversationId, { text: `Hello ${i}`, at: new Date(base + i * 60_000), from: 'ME' }));
    hr.message(KEY, leads[0]!.conversationId, { text: 'Later reply', at: new Date(base + 10 * 60_000), from: 'CORRESPONDENT' });
    hr.message(KEY, leads[0]!.conversationId, { text: 'Early note', at: new Date(base - 60_000), from: 'ME', inMail: true });
    hr.addLead(KEY, { profileUrl: 'https://www.linkedin.com/in/silent', firstName: 'Si', lastName: 'Lent', campaignId: 1, campaignName: 'One' });
    hr.addLead('hr-other', { profileUrl: 'https://www.linkedin.com/in/elsewhere', firstName: 'El', lastName: 'Se', campaignId: 1, campaignName: 'One' });

    const first = await conversationsOf(hr.url, { filters: {}, offset: 0, limit: 2 });
    expect(first.status).toBe(200);
    // A conversation without messages is not in the inbox; another key's never.
    expect(first.body.totalCount).toBe(5);
    expect(first.body.items.map((i: { id: string }) => i.id)).toEqual([leads[0]!.conversationId, leads[4]!.conversationId]);
    const rest = await conversationsOf(hr.url, { filters: {}, offset: 2, limit: 100 });
    expect(rest.body.items.map((i: { id: string }) => i.id)).toEqual([3, 2, 1].map((i) => leads[i]!.conversationId));
    expect((await conversationsOf(hr.url, { filters: {}, offset: 5, limit: 100 })).body).toEqual({ totalCount: 5, items: [] });

    const thread = first.body.items[0];
    expect(thread).toMatchObject({
      read: false,
      lastMessageAt: new Date(base + 10 * 60_000).toISOString(),
      lastMessageText: 'Later reply',
      lastMessageSender: 'CORRESPONDENT',
      totalMessages: 3,
      linkedInAccountId: 93126,
      correspondentProfile: {
        profileUrl: 'https://www.linkedin.com/in/lead-0/',
        firstName: 'Lead0',
        lastName: 'Doe',
        emailAddress: null,
        enrichedEmailAddress: null,
      },
      linkedInAccount: { id: 93126 },
    });
    // As in real answers: no campaign id on the item and no id on the profile.
    expect(thread).not.toHaveProperty('campaignId');
    expect(thread.correspondentProfile).not.toHaveProperty('id');
    expect(thread.messages).toEqual([
      { createdAt: new Date(base - 60_000).toISOString(), body: 'Early note', subject: null, postLink: null, isInMail: true, sender: 'ME' },
      { createdAt: new Date(base).toISOString(), body: 'Hello 0', subject: null, postLink: null, isInMail: false, sender: 'ME' },
      { createdAt: new Date(base + 10 * 60_000).toISOString(), body: 'Later reply', subject: null, postLink: null, isInMail: false, sender: 'CORRESPONDENT' },
    ]);

    const ids = async (filters: Record<string, unknown>) =>
      (await conversationsOf(hr.url, { filters, offset: 0, limit: 100 })).body.items.map((i: { id: string }) => i.id);
    expect(await ids({ campaignIds: [2] })).toEqual([leads[4]!.conversationId, leads[3]!.conversationId]);
    expect(await ids({ campaignIds: [1, 2], linkedInAccountIds: [99] })).toEqual([leads[4]!.conversationId]);
    expect(await ids({ leadProfileUrl: 'http://linkedin.com/in/LEAD-2' })).toEqual([leads[2]!.conversationId]);
    expect(await ids({ leadLinkedInId: thread.correspondentProfile.linkedin_id })).toEqual([leads[0]!.conversationId]);
    expect(await ids({ searchString: 'lead3' })).toEqual([leads[3]!.conversationId]);
    expect(await ids({ seen: false })).toEqual([leads[0]!.conversationId]);
    expect(await ids({ seen: true, campaignIds: [1] })).toEqual([leads[2]!.conversationId, leads[1]!.conversationId]);
    expect(await ids({ tags: ['hot'] })).toEqual([]);
    expect(await ids({ campaignIds: [], seen: null })).toHaveLength(5);

    // Without `limit` a page holds 10; above 100, a wrong type or both lead filters are refused.
    expect((await conversationsOf(hr.url, { filters: {} })).body.items).toHaveLength(5);
    expect((await conversationsOf(hr.url, { filters: {}, offset: 0, limit: 101 })).body).toEqual({
      errors: { limit: ['The field Limit must be between 1 and 100.'] },
    });
    expect((await conversationsOf(hr.url, { filters: { campaignIds: '1' }, limit: 10 })).status).toBe(400);
    expect((await conversationsOf(hr.url, { filters: { leadProfileUrl: 'x', leadLinkedInId: 'y' }, limit: 10 })).body).toEqual({
      errorMessage: 'Provide either leadProfileUrl or leadLinkedInId, not both.',
    });
    expect((await call(`${hr.url}/api/public/inbox/GetConversationsV2`, { method: 'POST', headers })).status).toBe(400);
    expect((await call(`${hr.url}/api/public/inbox/GetConversationsV2`, { headers })).status).toBe(405);
    expect((await call(`${hr.url}/api/public/inbox/GetConversationsV3`, { json: {}, headers })).status).toBe(404);
    expect(hr.requests.find((r) => r.status === 200)).toMatchObject({
      method: 'POST',
      path: '/api/public/inbox/GetConversationsV2',
      key: KEY,
      body: { filters: {}, offset: 0, limit: 2 },
    });
  });

  it('refuses an unknown or missing key with a bare 401 and checks a known one', async () => {
    const hr = await track(startHeyReachEmulator());
    hr.addKey(KEY);
    expect(await call(`${hr.url}/api/public/auth/CheckApiKey`, { headers })).toMatchObject({ status: 200, body: null });
    expect(await call(`${hr.url}/api/public/auth/CheckApiKey`, { headers: { 'x-api-key': 'nope' } })).toMatchObject({ status: 401, body: null });
    expect((await conversationsOf(hr.url, { filters: {}, limit: 10 }, 'nope')).status).toBe(401);
    expect((await call(`${hr.url}/api/public/inbox/GetConversationsV2`, { json: { filters: {}, limit: 10 } })).status).toBe(401);
    expect(hr.requests.map((r) => r.status)).toEqual([200, 401, 401, 401]);
  });

  it('answers 429 past its requests a minute per key, with Retry-After unless told not to, and injected faults', async () => {
    const hr = await track(startHeyReachEmulator({ requestsPerMinute: 3 }));
    hr.addKey(KEY);
    hr.addKey('hr-other');
    const statuses = [];
    for (let i = 0; i < 4; i += 1) statuses.push((await conversationsOf(hr.url, { filters: {}, limit: 10 })).status);
    expect(statuses).toEqual([200, 200, 200, 429]);
    const limited = await conversationsOf(hr.url, { filters: {}, limit: 10 });
    expect(limited.status).toBe(429);
    expect(Number(limited.headers.get('retry-after'))).toBeGreaterThanOrEqual(59);
    expect(limited.body).toHaveProperty('errorMessage');
    // Each key has its own budget.
    expect((await conversationsOf(hr.url, { filters: {}, limit: 10 }, 'hr-other')).status).toBe(200);

    hr.retryAfter = false;
    const bare = await conversationsOf(hr.url, { filters: {}, limit: 10 });
    expect(bare.status).toBe(429);
    expect(bare.headers.get('retry-after')).toBeNull();

    hr.failNext(1, { status: 503, token: 'hr-other', retryAfter: 2 });
    const failed = await conversationsOf(hr.url, { filters: {}, limit: 10 }, 'hr-other');
    expect(failed).toMatchObject({ status: 503, body: { errorMessage: 'injected failure' } });
    expect(failed.headers.get('retry-after')).toBe('2');
    expect((await conversationsOf(hr.url, { filters: {}, limit: 10 }, 'hr-other')).status).toBe(200);
  });
});

describe('lemlist emulator', () => {
  const KEY = 'lm-key-1';
  const basic = (user: string, password: string) => ({ authorization: `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}` });
  const auth = basic('', KEY);
  const activitiesOf = (url: string, query: Record<string, string>, headers: Record<string, string> = auth) =>
    call(`${url}/api/activities?${new URLSearchParams({ version: 'v2', ...query }).toString()}`, { headers });

  it('returns the activity as its webhook body, which our parser reads with its type, lead, time and activity id', async () => {
    const lm = await track(startLemlistEmulator());
    lm.addKey(KEY);
    const { leadId } = lm.addLead(KEY, {
      email: 'John@Acme.test',
      firstName: 'John',
      lastName: 'Doe',
      linkedinUrl: 'https://www.linkedin.com/in/john-doe',
      campaignId: 'cam_abc123',
      campaignName: 'GTM',
    });
    expect(leadId).toMatch(/^lea_[A-Za-z0-9]{17}$/);

    const sentAt = new Date('2026-03-24T09:00:00.123Z');
    const cases = [
      [lm.activity(KEY, leadId, { type: 'emailsSent', at: sentAt, subject: 'Quick idea', text: 'Hi John' }), 'EMAIL_SENT', 'Hi John'],
      [lm.activity(KEY, leadId, { type: 'emailsOpened', at: new Date('2026-03-24T10:00:00.000Z') }), 'EMAIL_OPEN', null],
      [
        lm.activity(KEY, leadId, { type: 'emailsReplied', at: new Date('2026-03-25T20:55:49.877Z'), text: 'Sounds interesting!' }),
        'EMAIL_REPLY',
        'Sounds interesting!',
      ],
      [
        lm.activity(KEY, leadId, { type: 'linkedinSent', at: new Date('2026-03-26T08:00:00.000Z'), text: 'Hi on LinkedIn', step: 1 }),
        'MESSAGE_SENT',
        'Hi on LinkedIn',
      ],
      [
        lm.activity(KEY, leadId, { type: 'linkedinReplied', at: new Date('2026-03-26T09:00:00.000Z'), text: 'Hello back', step: 1 }),
        'MESSAGE_REPLY_RECEIVED',
        'Hello back',
      ],
      [lm.activity(KEY, leadId, { type: 'emailsInterested', at: new Date('2026-03-26T10:00:00.000Z') }), 'LEAD_CATEGORY_UPDATED', null],
    ] as const;
    for (const [body, eventType, text] of cases) {
      expect(body._id).toMatch(/^act_[A-Za-z0-9]{17}$/);
      const parsed = parseLemlist(body);
      if (!parsed.ok) throw new Error(parsed.reason);
      expect(parsed.event).toMatchObject({
        platform: 'lemlist',
        eventType,
        identity: 'john@acme.test',
        campaign: { id: 'cam_abc123', name: 'GTM' },
        message: { text },
        sequencerIds: { activityId: body._id, leadId, teamId: body.teamId },
      });
      expect(parsed.event.occurredAt?.toISOString()).toBe(body.createdAt);
    }
    const [sent, opened, replied, linkedin] = cases.map(([body]) => body);
    expect(sent).toMatchObject({
      sequenceStep: 0,
      isFirst: true,
      subject: 'Quick idea',
      linkedinUrl: 'https://www.linkedin.com/in/john-doe',
      leadFirstName: 'John',
      name: 'GTM',
    });
    expect(sent).not.toHaveProperty('lead');
    // An open or reply points at its step's send: the same email and the send's time.
    expect(opened).toMatchObject({ emailId: sent!.emailId, relatedSentAt: sentAt.toISOString() });
    expect(replied).toMatchObject({ emailId: sent!.emailId, stepId: sent!.stepId, sequenceId: sent!.sequenceId });
    expect(linkedin).not.toHaveProperty('emailId');
    expect(linkedin!.stepId).not.toBe(sent!.stepId);
    expect(lm.activity(KEY, leadId, { type: 'emailsOpened', at: new Date('2026-03-27T10:00:00.000Z') }).isFirst).toBe(false);
  });

  it('lists activities newest first as a bare array, by offset, with the filters and the v2 lead', async () => {
    const lm = await track(startLemlistEmulator());
    lm.addKey(KEY);
    lm.addKey('lm-other');
    const a = lm.addLead(KEY, { email: 'a@acme.test', firstName: 'Ann', campaignId: 'cam_1', campaignName: 'One' }).leadId;
    const b = lm.addLead(KEY, { email: 'b@acme.test', campaignId: 'cam_2', campaignName: 'Two' }).leadId;
    const other = lm.addLead('lm-other', { email: 'x@else.test', campaignId: 'cam_1', campaignName: 'One' }).leadId;
    const base = Date.parse('2026-04-01T00:00:00.000Z');
    // 103 sends to Ann a minute apart, then Bo's three activities; stored out of time order.
    const sends = Array.from({ length: 103 }, (_, i) => lm.activity(KEY, a, { type: 'emailsSent', at: new Date(base + i * 60_000), step: i % 3 }));
    const bo = [
      lm.activity(KEY, b, { type: 'emailsReplied', at: new Date(base + 300 * 60_000), text: 'Yes' }),
      lm.activity(KEY, b, { type: 'emailsSent', at: new Date(base + 200 * 60_000) }),
      lm.activity(KEY, b, { type: 'linkedinSent', at: new Date(base + 250 * 60_000) }),
    ];
    lm.activity('lm-other', other, { type: 'emailsSent', at: new Date(base) });

    const first = await activitiesOf(lm.url, {});
    expect(first.status).toBe(200);
    expect(Array.isArray(first.body)).toBe(true);
    // The default page is 100; newest first.
    expect(first.body).toHaveLength(100);
    expect(first.body.slice(0, 3).map((x: { _id: string }) => x._id)).toEqual([bo[0]!._id, bo[2]!._id, bo[1]!._id]);
    const second = await activitiesOf(lm.url, { offset: '100' });
    expect(second.body.map((x: { _id: string }) => x._id)).toEqual([5, 4, 3, 2, 1, 0].map((i) => sends[i]!._id));
    expect((await activitiesOf(lm.url, { offset: '106' })).body).toEqual([]);

    // The item is the webhook's activity plus the lead v2 nests, its state its latest activity.
    const { lead, ...activity } = first.body[0];
    expect(activity).toEqual(bo[0]);
    expect(lead).toEqual({
      _id: b,
      isPaused: false,
      state: 'emailsReplied',
      personalized: false,
      source: 'api',
      contactId: bo[0]!.contactId,
      enrichment: {},
      variables: { email: 'b@acme.test' },
    });

    const idsOf = async (query: Record<string, string>) => (await activitiesOf(lm.url, query)).body.map((x: { _id: string }) => x._id);
    expect(await idsOf({ campaignId: 'cam_2' })).toEqual([bo[0]!._id, bo[2]!._id, bo[1]!._id]);
    expect(await idsOf({ leadId: b, type: 'emailsSent' })).toEqual([bo[1]!._id]);
    expect(await idsOf({ campaignId: 'cam_1', limit: '2', offset: '1' })).toEqual([sends[101]!._id, sends[100]!._id]);
    // Dates bound createdAt inclusively, as ISO 8601 or Unix seconds; the primary name wins over its alias.
    const window = { minDate: new Date(base + 100 * 60_000).toISOString(), maxDate: String((base + 250 * 60_000) / 1000) };
    expect(await idsOf(window)).toEqual([bo[2]!._id, bo[1]!._id, sends[102]!._id, sends[101]!._id, sends[100]!._id]);
    expect(await idsOf({ ...window, startDate: new Date(base + 250 * 60_000).toISOString() })).toHaveLength(5);
    expect(await idsOf({ startDate: new Date(base + 250 * 60_000).toISOString() })).toEqual([bo[0]!._id, bo[2]!._id]);
    // Ann's first three sends are each the first of their step.
    expect(await idsOf({ leadId: a, isFirst: 'true' })).toEqual([sends[2]!._id, sends[1]!._id, sends[0]!._id]);

    const refused = async (query: Record<string, string>) => (await activitiesOf(lm.url, query)).status;
    expect(await refused({ limit: '101' })).toBe(400);
    expect(await refused({ limit: '0' })).toBe(400);
    expect(await refused({ offset: '-1' })).toBe(400);
    expect(await refused({ minDate: 'yesterday' })).toBe(400);
    expect(await refused({ minDate: '1775000000', maxDate: '1775000000' })).toBe(400);
    const noVersion = await call(`${lm.url}/api/activities?campaignId=cam_1`, { headers: auth });
    expect(noVersion).toMatchObject({ status: 400, body: 'version=v2 is mandatory' });
    expect(noVersion.headers.get('content-type')).toMatch(/^text\/plain/);
    expect(lm.requests.at(-1)).toMatchObject({ method: 'GET', path: '/api/activities', query: 'campaignId=cam_1', status: 400, key: KEY });
  });

  it('takes the key only as the Basic password of an empty user', async () => {
    const lm = await track(startLemlistEmulator());
    lm.addKey(KEY, 'Acme');
    expect(await call(`${lm.url}/api/team`, { headers: auth })).toMatchObject({ status: 200, body: { name: 'Acme', _id: expect.stringMatching(/^tea_/) } });
    for (const headers of [{}, basic(KEY, ''), basic('', 'nope'), basic('someone', KEY), { authorization: `Bearer ${KEY}` }]) {
      const refused = await activitiesOf(lm.url, {}, headers);
      expect(refused).toMatchObject({ status: 401, body: null });
      expect(refused.headers.get('x-ratelimit-limit')).toBeNull();
    }
  });

  it('answers 429 past its requests every 2 s per key with Retry-After and X-RateLimit-* headers, then lets the next in', async () => {
    const lm = await track(startLemlistEmulator({ requestsPer2s: 3 }));
    lm.addKey(KEY);
    lm.addKey('lm-other');
    const answers = [];
    for (let i = 0; i < 4; i += 1) answers.push(await call(`${lm.url}/api/team`, { headers: auth }));
    expect(answers.map((r) => r.status)).toEqual([200, 200, 200, 429]);
    expect(answers.map((r) => r.headers.get('x-ratelimit-remaining'))).toEqual(['2', '1', '0', '0']);
    const limited = answers[3]!;
    expect(limited.headers.get('x-ratelimit-limit')).toBe('3');
    // A date string, not a number of seconds.
    const reset = limited.headers.get('x-ratelimit-reset')!;
    expect(reset).toMatch(/^\w{3} \w{3} \d{2} \d{4} \d{2}:\d{2}:\d{2} GMT[+-]\d{4}/);
    expect(Math.abs(Date.parse(reset) - Date.now())).toBeLessThanOrEqual(3_000);
    const retryAfter = Number(limited.headers.get('retry-after'));
    expect(retryAfter).toBeGreaterThanOrEqual(1);
    expect(retryAfter).toBeLessThanOrEqual(2);
    expect((await call(`${lm.url}/api/team`, { headers: basic('', 'lm-other') })).status).toBe(200);

    await new Promise((resolve) => setTimeout(resolve, retryAfter * 1000 + 50));
    expect((await call(`${lm.url}/api/team`, { headers: auth })).status).toBe(200);

    lm.failNext(1, { status: 500, path: '/api/activities' });
    expect(await activitiesOf(lm.url, {})).toMatchObject({ status: 500, body: 'Injected failure' });
    expect((await activitiesOf(lm.url, {})).status).toBe(200);
  });
});
