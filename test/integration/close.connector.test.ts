import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { CrmConfig, CrmEvent } from '../../src/connectors/crm/index.js';
import { Lockstep } from '../../src/connectors/crm/lockstep.js';
import { createHttpClient, type HttpClient } from '../../src/connectors/http/client.js';
import { EVENT_TYPES } from '../../src/domain/event-types.js';
import { startCloseEmulator, type CloseEmulator } from '../../src/emulators/close.js';
import { ALL_OPTIONS, connector, crmEvent, NO_OPTIONS, recorder, thrown } from '../support/crm-run.js';
import { crmUrls } from '../support/worker.js';

// The Close connector against the Close emulator, over real sockets (127.0.0.1, so OUTBOUND_ALLOW_PRIVATE on).

let http: HttpClient;
let close: CloseEmulator;

beforeAll(() => {
  http = createHttpClient({ allowPrivate: true });
});

afterAll(() => {
  http.close();
});

beforeEach(async () => {
  close = await startCloseEmulator();
});

afterEach(async () => {
  await close.close();
});

function config(extra: Partial<CrmConfig> = {}): CrmConfig {
  return { urls: crmUrls({ CLOSE: close.url }), outboundAllowPrivate: true, http, retry: { baseDelayMs: 20, maxDelayMs: 100 }, timeoutMs: 2_000, ...extra };
}

const API_KEY = { apiKey: 'close-api-key' };
const OAUTH = { accessToken: 'close-access-initial', refreshToken: 'close-refresh-initial', clientId: 'close-client-id', clientSecret: 'close-client-secret' };

/** A Close connector with its own memory: the connection id keys what it remembers between syncs. */
let connections = 0;
function closeConnector(credentials: unknown = API_KEY, extra: Partial<CrmConfig> = {}) {
  connections += 1;
  return connector('CLOSE', credentials, config({ connection: { id: 9_000 + connections, organizationId: null }, ...extra }));
}

describe('Close connector', () => {
  it('creates a contact (Close names its lead after it) and logs the email as a sent email activity, backdated, with the API key as Basic auth', async () => {
    // Setup
    const rec = recorder(crmEvent(), NO_OPTIONS);

    // Action
    const outcome = await closeConnector().write(rec.run);

    // Assertions
    expect(outcome.status).toBe('success');
    const [contact] = [...close.contacts.values()];
    expect(contact).toMatchObject({ name: 'Jane Doe', emails: [{ email: 'jane.doe@acme.test', type: 'office' }] });
    expect(close.leads.get(contact!.lead_id)).toMatchObject({ name: 'Jane Doe' });
    const [activity] = close.activitiesOf(contact!.lead_id);
    expect(activity).toMatchObject({
      _type: 'Email',
      status: 'sent',
      direction: 'outgoing',
      contact_id: contact!.id,
      sender: 'rep@seller.test',
      to: ['jane.doe@acme.test'],
      subject: 'Quick question',
      activity_at: '2025-03-04T10:00:00.000Z',
    });
    expect(outcome.result).toMatchObject({ crm: 'CLOSE', leadId: contact!.lead_id, contactId: contact!.id, contactCreated: true, activityId: activity!.id });
    expect(rec.persisted()).toMatchObject({ contactId: contact!.id, leadId: contact!.lead_id, activityId: activity!.id });
    expect(rec.lasts.at(-1)).toBe(true);
    expect(close.apiRequests().map((r) => `${r.method} ${r.path}`)).toEqual([
      'POST /api/v1/data/search/',
      'POST /api/v1/contact/',
      'POST /api/v1/activity/email/',
    ]);
  });

  it('logs a reply as an inbox email from the prospect to the rep, and finds the contact by its exact email only', async () => {
    // Setup: a contact whose address merely contains Jane's, then Jane's own.
    await closeConnector().write(recorder(crmEvent({ email: 'mary.jane.doe@acme.test', firstName: 'Mary' }), NO_OPTIONS).run);
    const first = await closeConnector().write(recorder(crmEvent(), NO_OPTIONS).run);

    // Action
    const reply = crmEvent({ eventType: 'EMAIL_REPLY', direction: 'inbound', subject: 'Re: Quick question', text: 'Sounds good' });
    const outcome = await closeConnector().write(recorder(reply, NO_OPTIONS).run);

    // Assertions
    expect(outcome.result).toMatchObject({ contactId: first.result.contactId, contactCreated: false });
    const activity = close.activities.get(String(outcome.result.activityId));
    expect(activity).toMatchObject({
      status: 'inbox',
      direction: 'incoming',
      sender: '"Jane Doe" <jane.doe@acme.test>',
      to: ['rep@seller.test'],
      body_text: 'Sounds good',
    });
    expect(close.contacts.size).toBe(2);
  });

  it('never creates an email activity with a status that makes Close send it, for any event type', async () => {
    const writer = closeConnector();
    for (const eventType of Object.keys(EVENT_TYPES)) {
      const direction = EVENT_TYPES[eventType as keyof typeof EVENT_TYPES].reply ? 'inbound' : 'outbound';
      await writer.write(recorder(crmEvent({ eventType, direction }), { ...NO_OPTIONS, createOrUpdateTask: true }).run);
    }

    const statuses = [...close.activities.values()].map((a) => (a._type === 'Email' ? a.status : 'note'));
    expect(close.mailSent).toEqual([]);
    expect(new Set(statuses)).toEqual(new Set(['sent', 'inbox', 'note']));
    expect(close.tasks.size).toBe(Object.keys(EVENT_TYPES).length);
  });

  it('puts the contact on the lead of its company domain, creating that lead first when Close has none, and remembers it', async () => {
    // Setup: a lead of another company whose website merely mentions acme.test in its path.
    close.leads.set('lead_other', { id: 'lead_other', name: 'Other', url: 'https://other.test/acme.test', date_created: new Date().toISOString() });
    const writer = closeConnector();

    // Action
    const jane = await writer.write(recorder(crmEvent(), { ...NO_OPTIONS, createOrUpdateCompany: true }).run);
    const searchesBefore = close.apiRequests().filter((r) => r.path === '/api/v1/data/search/').length;
    const bob = await writer.write(recorder(crmEvent({ email: 'bob@acme.test', firstName: 'Bob' }), { ...NO_OPTIONS, createOrUpdateCompany: true }).run);

    // Assertions
    const lead = close.leads.get(String(jane.result.leadId));
    expect(lead).toMatchObject({ name: 'Acme', url: 'https://acme.test' });
    expect(jane.result).toMatchObject({ contactCreated: true, leadCreated: true });
    expect(bob.result).toMatchObject({ leadId: lead!.id, contactCreated: true });
    expect(bob.result.leadCreated).toBeUndefined();
    // Bob's email was searched; his company's lead was remembered, not searched again.
    expect(close.apiRequests().filter((r) => r.path === '/api/v1/data/search/').length - searchesBefore).toBe(1);
    expect(close.apiRequests().filter((r) => r.path === '/api/v1/lead/')).toHaveLength(1);
    expect(close.apiRequests().filter((r) => r.path === '/api/v1/contact/')).toHaveLength(2);
  });

  it('finds an existing lead by its website domain (www. or not) for a new contact', async () => {
    close.leads.set('lead_acme', { id: 'lead_acme', name: 'Acme Corp', url: 'https://www.acme.test', date_created: new Date().toISOString() });

    const outcome = await closeConnector().write(recorder(crmEvent(), { ...NO_OPTIONS, createOrUpdateCompany: true }).run);

    expect(outcome.result).toMatchObject({ leadId: 'lead_acme', contactCreated: true });
    expect([...close.contacts.values()][0]).toMatchObject({ lead_id: 'lead_acme' });
  });

  it('stores a social-only person with the profile URL, finds them again by another variant of it, and logs social events as notes', async () => {
    // Setup
    const social = (eventType: string, profileUrl: string) =>
      crmEvent({ eventType, email: null, profileUrl, identity: profileUrl, subject: null, text: 'Hi Jane' });
    const writer = closeConnector();

    // Action
    const first = await writer.write(recorder(social('MESSAGE_SENT', 'https://www.linkedin.com/in/jane-doe/'), NO_OPTIONS).run);
    const second = await writer.write(recorder(social('MESSAGE_REPLY_RECEIVED', 'linkedin.com/in/Jane-Doe'), NO_OPTIONS).run);

    // Assertions
    expect(close.contacts.size).toBe(1);
    expect([...close.contacts.values()][0]).toMatchObject({ name: 'Jane Doe', urls: [{ type: 'url', url: 'https://www.linkedin.com/in/jane-doe' }] });
    expect(second.result).toMatchObject({ contactId: first.result.contactId, contactCreated: false, activityType: 'note' });
    const notes = [...close.activities.values()];
    expect(notes.map((n) => n._type)).toEqual(['Note', 'Note']);
    expect(notes[1]).toMatchObject({ title: '[smartlead] Message reply received', activity_at: '2025-03-04T10:00:00.000Z' });
    expect(String(notes[1]!.note)).toContain('Hi Jane');
  });

  it("sets the sender's user on the activity and the follow-up task, and warns when no user has the sender email", async () => {
    const writer = closeConnector();
    const known = await writer.write(recorder(crmEvent(), ALL_OPTIONS).run);
    const unknown = await writer.write(recorder(crmEvent({ email: 'bob@acme.test', senderEmail: 'stranger@seller.test' }), ALL_OPTIONS).run);

    expect(known.status).toBe('success');
    expect(close.activities.get(String(known.result.activityId))).toMatchObject({ user_id: 'user_rep000000000000000000002' });
    expect(close.tasks.get(String(known.result.taskId))).toMatchObject({ assigned_to: 'user_rep000000000000000000002', date: '2025-03-05', _type: 'lead' });
    expect(unknown.status).toBe('warning');
    expect(unknown.result.warnings).toEqual([{ step: 'owner', message: 'Close user not assigned: no user of the organization has the sender email' }]);
    // The users were listed once for the connection.
    expect(close.apiRequests().filter((r) => r.path === '/api/v1/user/')).toHaveLength(1);
  });

  it('writes no duplicate activity when the answer to its create was lost', async () => {
    close.slow(400, '/api/v1/activity/email/');
    const writer = closeConnector(API_KEY, { timeoutMs: 150 });
    const first = recorder(crmEvent(), NO_OPTIONS);
    expect((await thrown(writer.write(first.run))).kind).toBe('unavailable');
    await new Promise((resolve) => setTimeout(resolve, 400));
    expect(close.activities.size).toBe(1);

    close.slow(0);
    const outcome = await writer.write(recorder(crmEvent(), NO_OPTIONS, first.persisted()).run);

    expect(outcome.status).toBe('success');
    expect(close.activities.size).toBe(1);
    expect(outcome.result.activityId).toBe([...close.activities.keys()][0]);
    expect(close.contacts.size).toBe(1);
  });

  it.each([
    ['after the activity was written ahead, before it was sent', 2, 0],
    ['after the activity was saved', 3, 1],
  ])('writes no duplicate activity or task when a run crashes %s and is re-run', async (_case, crashAt, activitiesBefore) => {
    const options = { ...NO_OPTIONS, createOrUpdateTask: true };
    const crashing = recorder(
      crmEvent(),
      options,
      {},
      {
        onSaveState: (n) =>
          n === crashAt
            ? (() => {
                throw new Error('worker crashed');
              })()
            : undefined,
      },
    );
    const writer = closeConnector();
    await expect(writer.write(crashing.run)).rejects.toThrow('worker crashed');
    expect(close.activities.size).toBe(activitiesBefore);

    const outcome = await writer.write(recorder(crmEvent(), options, crashing.persisted()).run);

    expect(outcome.status).toBe('success');
    expect(close.contacts.size).toBe(1);
    expect(close.activities.size).toBe(1);
    expect(close.tasks.size).toBe(1);
  });

  it('shares one search among the syncs of a round', async () => {
    const round = new Lockstep(3);
    const writer = closeConnector(API_KEY, { gate: undefined });
    const run = (event: CrmEvent) => {
      const rec = recorder(event, NO_OPTIONS);
      rec.run.step = () => round.step();
      return writer.write(rec.run).finally(() => round.leave());
    };

    const outcomes = await Promise.all([run(crmEvent()), run(crmEvent({ email: 'bob@two.test' })), run(crmEvent({ email: 'cy@three.test' }))]);

    expect(outcomes.every((o) => o.status === 'success')).toBe(true);
    const searches = close.apiRequests().filter((r) => r.path === '/api/v1/data/search/');
    expect(searches).toHaveLength(1);
    expect(JSON.stringify(searches[0]!.search)).toContain('bob@two.test');
    expect(close.contacts.size).toBe(3);
  });

  it('honours Retry-After on 429 and retries 500s of searches, never of a create (it may have been written)', async () => {
    close.failNext(1, { status: 429, retryAfter: 1, path: '/data/search/' });
    close.failNext(1, { status: 500, path: '/data/search/' });
    close.failNext(1, { status: 500, path: '/activity/email/' });
    const writer = closeConnector();
    const first = recorder(crmEvent(), NO_OPTIONS);

    const started = performance.now();
    const error = await thrown(writer.write(first.run));
    const elapsed = performance.now() - started;
    const outcome = await writer.write(recorder(crmEvent(), NO_OPTIONS, first.persisted()).run);

    expect(elapsed).toBeGreaterThanOrEqual(990);
    expect(error).toMatchObject({ kind: 'unavailable', httpStatus: 500 });
    expect(outcome.status).toBe('success');
    expect(close.activities.size).toBe(1);
  });

  it("answers its RateLimit header, and a 429 past the key's limit", async () => {
    close.requestsPerSecond = 2;
    const writer = closeConnector(API_KEY, { retry: { attempts: 1 } });

    const error = await thrown(
      writer
        .write(recorder(crmEvent(), { ...NO_OPTIONS, createOrUpdateTask: true }).run)
        .then(() => writer.write(recorder(crmEvent({ email: 'b@b.test' }), NO_OPTIONS).run)),
    );

    expect(error).toMatchObject({ kind: 'rate_limited', httpStatus: 429 });
    expect(error.retryAfterMs).toBeGreaterThan(0);
  });

  it('is an auth error for a refused API key, naming no secret', async () => {
    const error = await thrown(closeConnector({ apiKey: 'revoked-close-key' }).write(recorder(crmEvent(), NO_OPTIONS).run));

    expect(error).toMatchObject({ kind: 'auth', httpStatus: 401 });
    expect(JSON.stringify({ message: error.message, payload: error.payload })).not.toContain('revoked-close-key');
  });

  it('refreshes an expired OAuth token on a 401, saves the rotated refresh token first, and refreshes ahead of a known expiry', async () => {
    // Setup: the access token Close no longer knows.
    close.accessTokens.clear();
    const rec = recorder(crmEvent(), NO_OPTIONS);

    // Action
    const outcome = await closeConnector(OAUTH).write(rec.run);
    const expiring = { ...(rec.credentials[0] as Record<string, unknown>), expiresAt: new Date(Date.now() + 30_000).toISOString() };
    const ahead = recorder(crmEvent({ email: 'bob@acme.test' }), NO_OPTIONS);
    await closeConnector(expiring).write(ahead.run);

    // Assertions
    expect(outcome.status).toBe('success');
    expect(close.tokenRefreshes).toHaveLength(2);
    expect(rec.credentials[0]).toMatchObject({ accessToken: expect.stringMatching(/^close-access-/), refreshToken: expect.stringMatching(/^close-refresh-/) });
    expect((rec.credentials[0] as { refreshToken: string }).refreshToken).not.toBe('close-refresh-initial');
    expect(close.refreshTokens.has('close-refresh-initial')).toBe(false);
    expect(ahead.credentials).toHaveLength(1);
  });

  it('is an auth error naming the RFC 6749 error when the refresh token was revoked', async () => {
    close.accessTokens.clear();
    close.refreshTokens.clear();

    const error = await thrown(closeConnector(OAUTH).write(recorder(crmEvent(), NO_OPTIONS).run));

    expect(error.kind).toBe('auth');
    expect(error.message).toContain('invalid_grant');
    expect(error.message).not.toContain('close-refresh-initial');
  });

  it('never puts credentials in thrown errors, even when Close echoes them', async () => {
    close.failNext(1, { status: 400, path: '/data/search/', body: { error: 'bad key close-api-key / Basic Y2xvc2UtYXBpLWtleTo=' } });

    const error = await thrown(closeConnector().write(recorder(crmEvent(), NO_OPTIONS).run));

    expect(error.kind).toBe('rejected');
    expect(JSON.stringify({ message: error.message, payload: error.payload })).not.toMatch(/close-api-key|Y2xvc2UtYXBpLWtleTo=/);
  });

  it('reads the unsubscribed emails page by page, and the addresses of a Smart View', async () => {
    // Setup
    for (let i = 0; i < 250; i++) close.unsubscribed.set(`gone${i}@list.test`, new Date().toISOString());
    const writer = closeConnector();
    await writer.write(recorder(crmEvent(), NO_OPTIONS).run);
    close.smartViews.set('save_customers', { id: 'save_customers', name: 'Customers', contactIds: new Set(close.contacts.keys()) });
    const { run } = recorder(crmEvent(), NO_OPTIONS);
    const read = (source: unknown) => ({
      source,
      blockType: 'ADDRESS' as const,
      renewCredentials: (used: { accessToken: string }, exchange: () => Promise<unknown>) => run.renewCredentials(used, exchange),
    });

    // Action
    const pages: string[][] = [];
    for await (const page of writer.readList(read({}))) pages.push(page);
    const view: string[] = [];
    for await (const page of writer.readList(read({ smartViewId: 'save_customers' }))) view.push(...page);

    // Assertions
    expect(pages.map((p) => p.length)).toEqual([100, 100, 50]);
    expect(view).toEqual(['jane.doe@acme.test']);
    expect(
      (
        await thrown(
          (async () => {
            for await (const page of writer.readList(read({ listId: '12' }))) void page;
          })(),
        )
      ).kind,
    ).toBe('rejected');
  });
});
