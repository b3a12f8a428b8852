/**
 * The sequencer emulator's message history over real HTTP: the webhook bodies it answers for each message
 * read with our parsers, Smartlead's message-history and Instantly's email list answer the same messages
 * (and the backfill's own readers find the same message ids in them), Instantly's list pages by cursor and
 * filters, and both history limits answer 429 while the block-list routes stay outside them.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { HttpRequest } from '../../src/connectors/http/client.js';
import type { InboundEvent, SequencerParser } from '../../src/connectors/sequencers/event.js';
import type { HistoryLead, SequencerHistory } from '../../src/connectors/sequencers/history.js';
import { instantlyHistory } from '../../src/connectors/sequencers/instantly/history.js';
import { parseInstantly } from '../../src/connectors/sequencers/instantly/parser.js';
import { smartleadHistory } from '../../src/connectors/sequencers/smartlead/history.js';
import { parseSmartlead } from '../../src/connectors/sequencers/smartlead/parser.js';
import { startSequencerEmulator, type SequencerEmulator, type SequencerEmulatorOptions } from '../../src/emulators/sequencer.js';
import { call } from '../support/emulator-calls.js';

const started: SequencerEmulator[] = [];

afterEach(async () => {
  vi.useRealTimers();
  await Promise.all(started.splice(0).map((emulator) => emulator.close()));
});

async function start(options: SequencerEmulatorOptions): Promise<SequencerEmulator> {
  const emulator = await startSequencerEmulator(options);
  started.push(emulator);
  return emulator;
}

/** The event a webhook body parses to (the test fails when it does not parse). */
function parsed(parser: SequencerParser, body: unknown): InboundEvent {
  const result = parser(body);
  if (!result.ok) throw new Error(result.reason);
  return result.event;
}

/** Every webhook body a backfill reader synthesises from the emulator, its calls made over HTTP (404 is null, as the job reads it). */
async function readHistory(history: SequencerHistory, baseUrl: string, apiKey: string, leads: HistoryLead[], since: Date): Promise<Record<string, unknown>[]> {
  const bodies: Record<string, unknown>[] = [];
  const round = {
    account: { baseUrl, apiKey, clientId: null },
    leads,
    since,
    call: async (request: HttpRequest) => {
      const response = await fetch(String(request.url), { method: request.method ?? 'GET', headers: request.headers ?? {} });
      if (response.status === 404) return null;
      expect(response.status).toBe(200);
      return response.json();
    },
  };
  for await (const page of history.read(round)) bodies.push(...page);
  return bodies;
}

describe('Smartlead message history', () => {
  it('answers webhooks our parser reads and a history, oldest first, holding the same message ids', async () => {
    const seq = await start({ smartleadKeys: ['sl-key', 'sl-other'] });
    const jane = seq.smartleadLead('sl-key', { email: 'jane@acme.test', firstName: 'Jane', lastName: 'Doe', campaignId: 9181, campaignName: 'Q1 Outreach' });
    const sent = seq.smartleadSend('sl-key', jane.id, { subject: 'Quick question', body: '<p>Hi Jane</p>', at: new Date('2026-03-02T09:00:00Z') });
    const followUp = seq.smartleadSend('sl-key', jane.id, {
      subject: 'Following up',
      body: '<p>Any thoughts?</p>',
      at: new Date('2026-03-05T09:00:00Z'),
      step: 2,
    });
    const sentId = (sent.sent_message as { message_id: string }).message_id;
    // Stored after the follow-up yet earlier than it: the history is by time.
    const reply = seq.smartleadReply('sl-key', jane.id, { text: 'Sounds good', at: new Date('2026-03-03T10:00:00Z'), to: sentId });
    const replyId = (reply.reply_message as { message_id: string }).message_id;

    expect(sentId).toMatch(/^<[0-9a-f-]{36}@smartlead\.test>$/);
    expect(sent).toMatchObject({
      event_type: 'EMAIL_SENT',
      campaign_id: 9181,
      campaign_name: 'Q1 Outreach',
      sl_email_lead_id: String(jane.id),
      sl_lead_email: 'jane@acme.test',
      to_email: 'jane@acme.test',
      to_name: 'Jane Doe',
      from_email: 'tom@northwind.test',
      subject: 'Quick question',
      sent_message: { message_id: sentId, html: '<p>Hi Jane</p>', text: 'Hi Jane', time: '2026-03-02T09:00:00.000Z' },
      sequence_number: 1,
      stats_id: expect.stringMatching(/^[0-9a-f-]{36}$/),
      time_sent: '2026-03-02T09:00:00.000Z',
      event_timestamp: '2026-03-02T09:00:00.000Z',
    });
    const sentEvent = parsed(parseSmartlead, sent);
    expect(sentEvent).toMatchObject({
      eventType: 'EMAIL_SENT',
      contact: { email: 'jane@acme.test', firstName: 'Jane', lastName: 'Doe' },
      campaign: { id: '9181', name: 'Q1 Outreach' },
      message: { subject: 'Quick question', text: 'Hi Jane', direction: 'outbound' },
      occurredAt: new Date('2026-03-02T09:00:00Z'),
    });
    expect(sentEvent.sequencerIds).toMatchObject({
      messageId: sentId,
      leadId: String(jane.id),
      statsId: sent.stats_id,
      step: '1',
      mailbox: 'tom@northwind.test',
    });

    const replyEvent = parsed(parseSmartlead, reply);
    expect(replyEvent).toMatchObject({
      eventType: 'EMAIL_REPLY',
      contact: { email: 'jane@acme.test' },
      message: { subject: 'Re: Quick question', text: 'Sounds good', direction: 'inbound' },
      occurredAt: new Date('2026-03-03T10:00:00Z'),
    });
    // A reply shares the stats id of the email it answers, as on Smartlead.
    expect(replyEvent.sequencerIds).toMatchObject({ messageId: replyId, inReplyToMessageId: sentId, statsId: sent.stats_id });
    expect(replyId).not.toBe(sentId);
    expect(parsed(parseSmartlead, followUp).sequencerIds.step).toBe('2');

    const url = (campaign: number | string, lead: number, key = 'sl-key', query = '') =>
      `${seq.url}/api/v1/campaigns/${campaign}/leads/${lead}/message-history?api_key=${key}${query}`;
    const history = await call(url(9181, jane.id));
    expect(history.status).toBe(200);
    expect(history.body.from).toBe('tom@northwind.test');
    expect(history.body.to).toBe('jane@acme.test');
    expect(history.body.history.map((item: { type: string; message_id: string }) => [item.type, item.message_id])).toEqual([
      ['SENT', sentId],
      ['REPLY', replyId],
      ['SENT', (followUp.sent_message as { message_id: string }).message_id],
    ]);
    expect(history.body.history[0]).toEqual({
      stats_id: sent.stats_id,
      type: 'SENT',
      message_id: sentId,
      time: '2026-03-02T09:00:00.000Z',
      email_body: '<p>Hi Jane</p>',
      subject: 'Quick question',
      email_seq_number: '1',
      from: 'tom@northwind.test',
      to: 'jane@acme.test',
      open_count: 0,
      click_count: 0,
    });
    expect(history.body.history[1]).toEqual({
      stats_id: sent.stats_id,
      type: 'REPLY',
      message_id: replyId,
      time: '2026-03-03T10:00:00.000Z',
      email_body: '<div>Sounds good</div>',
      email_seq_number: '1',
      from: 'jane@acme.test',
      to: 'tom@northwind.test',
      open_count: 0,
      click_count: 0,
    });
    const later = await call(url(9181, jane.id, 'sl-key', '&event_time_gt=2026-03-03T10:00:00.000Z'));
    expect(later.body.history.map((item: { email_seq_number: string }) => item.email_seq_number)).toEqual(['2']);

    // The backfill's own reader finds the messages the webhooks carry.
    const read = await readHistory(
      smartleadHistory,
      seq.url,
      'sl-key',
      [{ campaignId: '9181', leadId: String(jane.id), contact: 'jane@acme.test' }],
      new Date('2026-03-01T00:00:00Z'),
    );
    const key = (e: InboundEvent) => `${e.eventType} ${e.sequencerIds.messageId}`;
    expect(read.map((body) => key(parsed(parseSmartlead, body))).sort()).toEqual(
      [sent, reply, followUp].map((body) => key(parsed(parseSmartlead, body))).sort(),
    );

    // Unknown campaign or lead: the 404 Smartlead documents; another key has none of these; a wrong key 401.
    const noLead = await call(url(9181, jane.id + 999));
    expect([noLead.status, noLead.body]).toEqual([404, { error: 'Lead not found - Invalid lead_id.' }]);
    const noCampaign = await call(url(1, jane.id));
    expect([noCampaign.status, noCampaign.body]).toEqual([404, { error: 'Campaign not found - Invalid campaign_id.' }]);
    expect((await call(url(9181, jane.id, 'sl-other'))).status).toBe(404);
    expect((await call(url(9181, jane.id, 'wrong'))).status).toBe(401);
    expect((await call(url(9181, jane.id, 'sl-key', '&event_time_gt=yesterday'))).status).toBe(400);

    // The lead by email (what the backfill asks for a lead its webhooks named without an id): one id per email.
    const again = seq.smartleadLead('sl-key', { email: 'Jane@Acme.test', campaignId: 9300, campaignName: 'Q2 Outreach' });
    expect(again.id).toBe(jane.id);
    const byEmail = await call(`${seq.url}/api/v1/leads/?api_key=sl-key&email=${encodeURIComponent('JANE@acme.test')}`);
    expect(byEmail.body).toMatchObject({ id: jane.id, email: 'jane@acme.test', first_name: 'Jane', last_name: 'Doe' });
    expect(byEmail.body.lead_campaign_data.map((c: { campaign_id: number }) => c.campaign_id)).toEqual([9181, 9300]);
    expect((await call(`${seq.url}/api/v1/leads/?api_key=sl-key&email=nobody@acme.test`)).body).toEqual({});
    expect(() => seq.smartleadSend('sl-key', jane.id, { subject: 'Hello', body: 'Hi', at: new Date() })).toThrow(/campaignId/);
    const q2 = seq.smartleadSend('sl-key', jane.id, { subject: 'Hello', body: 'Hi', at: new Date('2026-04-01T09:00:00Z'), campaignId: 9300 });
    expect(q2).toMatchObject({ campaign_id: 9300, campaign_name: 'Q2 Outreach', sl_email_lead_id: String(jane.id) });
    expect((await call(url(9181, jane.id))).body.history).toHaveLength(3);

    // The log holds the path without the key's query string.
    expect(seq.requests[0]).toMatchObject({
      vendor: 'smartlead',
      method: 'GET',
      path: `/api/v1/campaigns/9181/leads/${jane.id}/message-history`,
      status: 200,
      key: 'sl-key',
    });
  });
});

describe('Instantly email list', () => {
  const A = '7f3e9a10-aaaa-bbbb-cccc-ddddeeeeffff';
  const B = '7f3e9a10-1111-2222-3333-444455556666';
  const at = (minute: number) => new Date(Date.UTC(2026, 8, 23, 8, minute));
  const auth = { authorization: 'Bearer in-key' };

  it('answers webhooks our parser reads and lists the same emails, paged by cursor and filtered', async () => {
    const seq = await start({ instantlyKeys: ['in-key', 'in-other'] });
    const webhooks: Record<string, unknown>[] = [];
    const email = (minute: number, fields: { campaignId?: string; lead?: string; kind?: 'sent' | 'received'; autoReply?: boolean; text?: string }) => {
      const webhook = seq.instantlyEmail('in-key', {
        campaignId: fields.campaignId ?? A,
        campaignName: fields.campaignId === B ? 'Second campaign' : 'Finance hiring signal',
        lead: fields.lead ?? `lead${minute}@acme.test`,
        subject: fields.kind === 'received' ? 'Re: Quick question' : 'Quick question',
        text: fields.text ?? `Message at ${minute}`,
        at: at(minute),
        kind: fields.kind ?? 'sent',
        ...(fields.autoReply === undefined ? {} : { autoReply: fields.autoReply }),
      });
      webhooks.push(webhook);
      return webhook;
    };
    const sent = email(0, { lead: 'jane@acme.test', text: 'Hi Jane' });
    for (let minute = 1; minute <= 5; minute += 1) email(minute, {});
    const reply = email(30, { lead: 'jane@acme.test', kind: 'received', text: 'Sounds good' });
    const auto = email(45, { lead: 'bob@beta.test', kind: 'received', autoReply: true, text: 'Out of office' });
    const other = [email(10, { campaignId: B }), email(20, { campaignId: B })];

    expect(sent).toMatchObject({
      event_type: 'email_sent',
      timestamp: '2026-09-23T08:00:00.000Z',
      workspace: expect.any(String),
      campaign_id: A,
      campaign_name: 'Finance hiring signal',
      lead_email: 'jane@acme.test',
      email_account: 'tom@northwind.test',
      step: 1,
      email_id: expect.stringMatching(/^[0-9a-f-]{36}$/),
      email_subject: 'Quick question',
      email_text: 'Hi Jane',
      email_html: '<div>Hi Jane</div>',
    });
    const sentEvent = parsed(parseInstantly, sent);
    expect(sentEvent).toMatchObject({
      eventType: 'EMAIL_SENT',
      contact: { email: 'jane@acme.test' },
      campaign: { id: A, name: 'Finance hiring signal' },
      message: { subject: 'Quick question', text: 'Hi Jane', direction: 'outbound' },
      occurredAt: at(0),
    });
    expect(sentEvent.sequencerIds).toMatchObject({ emailId: sent.email_id, step: '1', mailbox: 'tom@northwind.test', workspaceId: sent.workspace });
    const replyEvent = parsed(parseInstantly, reply);
    expect(replyEvent).toMatchObject({ eventType: 'EMAIL_REPLY', message: { subject: 'Re: Quick question', text: 'Sounds good', direction: 'inbound' } });
    expect(replyEvent.sequencerIds.emailId).toBe(reply.email_id);
    expect(parsed(parseInstantly, auto)).toMatchObject({ eventType: 'EMAIL_AUTO_REPLY', sequencerIds: { emailId: auto.email_id } });

    const list = async (query: string, headers = auth) => call(`${seq.url}/api/v2/emails?${query}`, { headers });
    type Page = { items: Array<Record<string, unknown> & { id: string }>; next_starting_after: string | null };

    // Campaign A, 3 a page, newest first by default, through the cursor.
    const pages: Page[] = [];
    for (let cursor: string | null = null, first = true; first || cursor !== null; first = false) {
      const page = await list(`campaign_id=${A}&limit=3${cursor ? `&starting_after=${cursor}` : ''}`);
      expect(page.status).toBe(200);
      pages.push(page.body);
      cursor = page.body.next_starting_after;
      if (cursor !== null) expect(cursor).toBe(page.body.items.at(-1).id);
    }
    expect(pages.map((p) => p.items.length)).toEqual([3, 3, 2]);
    expect(pages.at(-1)!.next_starting_after).toBeNull();
    const stored = pages.flatMap((p) => p.items);
    expect(stored.map((e) => e.timestamp_created)).toEqual([45, 30, 5, 4, 3, 2, 1, 0].map((minute) => at(minute).toISOString()));
    expect(stored.map((e) => e.id).sort()).toEqual(
      webhooks
        .filter((w) => w.campaign_id === A)
        .map((w) => String(w.email_id))
        .sort(),
    );

    const sentEmail = stored.find((e) => e.id === sent.email_id);
    expect(sentEmail).toEqual({
      id: sent.email_id,
      timestamp_created: '2026-09-23T08:00:00.000Z',
      timestamp_email: '2026-09-23T08:00:00.000Z',
      message_id: expect.stringMatching(/^<[0-9a-f-]{36}@northwind\.test>$/),
      subject: 'Quick question',
      from_address_email: 'tom@northwind.test',
      to_address_email_list: 'jane@acme.test',
      body: { text: 'Hi Jane', html: '<div>Hi Jane</div>' },
      content_preview: 'Hi Jane',
      organization_id: sent.workspace,
      eaccount: 'tom@northwind.test',
      campaign_id: A,
      lead: 'jane@acme.test',
      ue_type: 1,
      step: 1,
      is_unread: 0,
      is_auto_reply: 0,
      thread_id: expect.any(String),
    });
    const replyEmail = stored.find((e) => e.id === reply.email_id);
    expect(replyEmail).toMatchObject({ ue_type: 2, is_auto_reply: 0, lead: 'jane@acme.test', thread_id: sentEmail!.thread_id });
    expect(stored.find((e) => e.id === auto.email_id)).toMatchObject({ ue_type: 2, is_auto_reply: 1, lead: 'bob@beta.test' });

    // Filters: order, time window (both bounds inclusive), type, campaign, another key.
    const asc = await list(`campaign_id=${A}&sort_order=asc&limit=2`);
    expect(asc.body.items.map((e: { id: string }) => e.id)[0]).toBe(sent.email_id);
    const window = await list(`min_timestamp_created=${at(2).toISOString()}&max_timestamp_created=${at(20).toISOString()}&sort_order=asc`);
    expect(window.body.items.map((e: { timestamp_created: string }) => e.timestamp_created)).toEqual([2, 3, 4, 5, 10, 20].map((m) => at(m).toISOString()));
    expect(window.body.next_starting_after).toBeNull();
    const received = await list('email_type=received');
    expect(received.body.items.map((e: { id: string }) => e.id)).toEqual([auto.email_id, reply.email_id]);
    expect((await list(`campaign_id=${B}`)).body.items.map((e: { id: string }) => e.id)).toEqual(other.map((w) => w.email_id).reverse());
    expect((await list('')).body.items).toHaveLength(10);
    expect((await list('', { authorization: 'Bearer in-other' })).body).toEqual({ items: [], next_starting_after: null });

    for (const bad of ['limit=0', 'limit=101', 'sort_order=up', 'email_type=opened', 'min_timestamp_created=soon', `starting_after=${'0'.repeat(36)}`]) {
      const refused = await list(bad);
      expect([bad, refused.status, refused.body.statusCode]).toEqual([bad, 400, 400]);
    }
    expect((await list('', { authorization: 'Bearer wrong' })).status).toBe(401);

    // The backfill's own reader finds the emails the webhooks name.
    const read = await readHistory(instantlyHistory, seq.url, 'in-key', [{ campaignId: A, leadId: null, contact: 'jane@acme.test' }], at(0));
    const key = (e: InboundEvent) => `${e.eventType} ${e.sequencerIds.emailId}`;
    expect(read.map((body) => key(parsed(parseInstantly, body))).sort()).toEqual(
      webhooks
        .filter((w) => w.campaign_id === A)
        .map((body) => key(parsed(parseInstantly, body)))
        .sort(),
    );
  });
});

describe('history limits', () => {
  it('Smartlead: 429 with Retry-After past the requests a minute of a key, block lists and other keys unaffected; a minute later served', async () => {
    const seq = await start({ smartleadKeys: ['sl-a', 'sl-b'], smartleadRequestsPerMinute: 3 });
    const lead = seq.smartleadLead('sl-a', { email: 'jane@acme.test', campaignId: 7, campaignName: 'C' });
    seq.smartleadSend('sl-a', lead.id, { subject: 'Hi', body: 'Hi', at: new Date('2026-03-02T09:00:00Z') });
    const history = (key: string) => call(`${seq.url}/api/v1/campaigns/7/leads/${lead.id}/message-history?api_key=${key}`);

    expect((await history('sl-a')).status).toBe(200);
    expect((await call(`${seq.url}/api/v1/leads/?api_key=sl-a&email=jane@acme.test`)).status).toBe(200);
    expect((await history('sl-a')).status).toBe(200);
    const limited = await history('sl-a');
    expect(limited.status).toBe(429);
    const retryAfter = Number(limited.headers.get('retry-after'));
    expect(retryAfter).toBeGreaterThanOrEqual(1);
    expect(retryAfter).toBeLessThanOrEqual(60);
    expect(limited.body).toEqual({ error: { code: 'RATE_LIMIT_EXCEEDED', message: expect.any(String), retry_after: retryAfter } });
    expect((await call(`${seq.url}/api/v1/leads/?api_key=sl-a&email=jane@acme.test`)).status).toBe(429);

    // Another key has its own minute; the block list is outside the limit.
    expect((await history('sl-b')).status).toBe(404);
    for (let i = 0; i < 10; i += 1) {
      const added = await call(`${seq.url}/api/v1/leads/add-domain-block-list?api_key=sl-a`, { json: { domain_block_list: [`d${i}.test`] } });
      expect(added.status).toBe(200);
    }
    expect((await call(`${seq.url}/api/v1/leads/get-domain-block-list?api_key=sl-a`)).status).toBe(200);
    expect(seq.smartlead('sl-a').values.size).toBe(10);

    // A rolling minute: once the first requests are older than 60 s, the key is served again.
    vi.useFakeTimers({ toFake: ['Date'] });
    vi.setSystemTime(Date.now() + 61_000);
    expect((await history('sl-a')).status).toBe(200);
    expect(seq.requests.filter((r) => r.key === 'sl-a' && !r.path.includes('block-list')).map((r) => r.status)).toEqual([200, 200, 200, 429, 429, 200]);
  });

  it('Instantly: 429 past the email-list requests a minute of a key, without the Retry-After Instantly does not document; block lists unaffected', async () => {
    const seq = await start({ instantlyKeys: ['in-a', 'in-b'], instantlyEmailsPerMinute: 2 });
    const list = (key: string) => call(`${seq.url}/api/v2/emails?limit=10`, { headers: { authorization: `Bearer ${key}` } });

    expect((await list('in-a')).status).toBe(200);
    expect((await list('in-a')).status).toBe(200);
    const limited = await list('in-a');
    expect(limited.status).toBe(429);
    expect(limited.headers.get('retry-after')).toBeNull();
    expect(limited.body).toMatchObject({ statusCode: 429, error: 'Too Many Requests' });

    expect((await list('in-b')).status).toBe(200);
    for (let i = 0; i < 5; i += 1) {
      const added = await call(`${seq.url}/api/v2/block-lists-entries/bulk-create`, {
        headers: { authorization: 'Bearer in-a' },
        json: { bl_values: [`d${i}.test`] },
      });
      expect(added.status).toBe(200);
    }
    // A test that needs a Retry-After injects it.
    seq.failNext(1, { status: 429, retryAfter: 2, path: '/api/v2/emails' });
    expect((await list('in-b')).headers.get('retry-after')).toBe('2');

    vi.useFakeTimers({ toFake: ['Date'] });
    vi.setSystemTime(Date.now() + 61_000);
    expect((await list('in-a')).status).toBe(200);
    expect(seq.requests.filter((r) => r.path === '/api/v2/emails').map((r) => [r.key, r.status])).toEqual([
      ['in-a', 200],
      ['in-a', 200],
      ['in-a', 429],
      ['in-b', 200],
      ['in-b', 429],
      ['in-a', 200],
    ]);
  });
});
