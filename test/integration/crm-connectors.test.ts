import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createHttpClient, type HttpClient } from '../../src/connectors/http/client.js';
import { CrmError, crmConnector, type CrmConfig, type CrmState } from '../../src/connectors/crm/index.js';
import { CONTACT_UPSERTS, ENGAGEMENT_CREATES } from '../../src/connectors/crm/hubspot/index.js';
import { Lockstep } from '../../src/connectors/crm/lockstep.js';
import { type HubspotEmulator, startHubspotEmulator } from '../../src/emulators/hubspot.js';
import { type SalesforceEmulator, startSalesforceEmulator } from '../../src/emulators/salesforce.js';
import { ALL_OPTIONS, connector, crmEvent, NO_OPTIONS, recorder, thrown } from '../support/crm-run.js';
import { crmUrls } from '../support/worker.js';

// The connectors against the emulators, over real sockets (127.0.0.1, so OUTBOUND_ALLOW_PRIVATE on).

let http: HttpClient;

beforeAll(() => {
  http = createHttpClient({ allowPrivate: true });
});

afterAll(() => {
  http.close();
});

// ---------------------------------------------------------------------------------------------
// Factories

function hubspotConfig(hs: HubspotEmulator, extra: Partial<CrmConfig> = {}): CrmConfig {
  return {
    urls: crmUrls({ HUBSPOT: hs.url }),
    outboundAllowPrivate: true,
    http,
    retry: { baseDelayMs: 20, maxDelayMs: 100 },
    timeoutMs: 2_000,
    ...extra,
  };
}

function salesforceConfig(sf: SalesforceEmulator, extra: Partial<CrmConfig> = {}): CrmConfig {
  return {
    urls: crmUrls({ SALESFORCE: sf.loginUrl }),
    outboundAllowPrivate: true,
    http,
    retry: { baseDelayMs: 20, maxDelayMs: 100 },
    timeoutMs: 2_000,
    ...extra,
  };
}

/** The keys each saved state added to the one before. */
function addedKeys(states: CrmState[]): string[][] {
  return states.map((state, i) =>
    Object.keys(state)
      .filter((key) => !(key in (states[i - 1] ?? {})))
      .sort(),
  );
}

// ---------------------------------------------------------------------------------------------

describe('crmConnector', () => {
  it('has no connector for other CRM kinds', () => {
    expect(crmConnector('PIPEDRIVE', {}, { urls: crmUrls(), outboundAllowPrivate: false })).toBeUndefined();
  });

  it('refuses malformed credentials naming the fields, never their values', () => {
    const error = (() => {
      try {
        crmConnector('SALESFORCE', { instanceUrl: 'not a url sf-secret-value', accessToken: '' }, { urls: crmUrls(), outboundAllowPrivate: false });
      } catch (e) {
        return e;
      }
      return undefined;
    })();

    expect(error).toBeInstanceOf(CrmError);
    expect((error as CrmError).kind).toBe('auth');
    expect((error as CrmError).message).toContain('instanceUrl');
    expect((error as CrmError).message).not.toContain('sf-secret-value');
  });

  it('refuses a CRM on a private address unless OUTBOUND_ALLOW_PRIVATE', async () => {
    const hs = await startHubspotEmulator();
    const strict = createHttpClient({ allowPrivate: false });
    try {
      const error = await thrown(
        connector('HUBSPOT', { accessToken: 'hs-access-initial' }, { ...hubspotConfig(hs), outboundAllowPrivate: false, http: strict }).write(
          recorder(crmEvent(), NO_OPTIONS).run,
        ),
      );

      expect(error.kind).toBe('rejected');
      expect(error.message).toMatch(/private, loopback or reserved/);
      expect(hs.requests).toHaveLength(0);
    } finally {
      strict.close();
      await hs.close();
    }
  });
});

describe('HubSpot connector', () => {
  let hs: HubspotEmulator;
  const credentials = { accessToken: 'hs-access-initial', refreshToken: 'hs-refresh-initial', clientId: 'hs-client-id', clientSecret: 'hs-client-secret' };

  beforeEach(async () => {
    hs = await startHubspotEmulator();
  });

  afterEach(async () => {
    await hs.close();
  });

  it('upserts the contact by email and logs the event as an email engagement', async () => {
    // Setup
    const rec = recorder(crmEvent(), NO_OPTIONS);

    // Action
    const outcome = await connector('HUBSPOT', credentials, hubspotConfig(hs)).write(rec.run);

    // Assertions
    expect(outcome.status).toBe('success');
    const [contact] = [...hs.contacts.values()];
    expect(contact?.properties).toMatchObject({ email: 'jane.doe@acme.test', firstname: 'Jane', lastname: 'Doe', company: 'Acme' });
    const emails = hs.engagementsOf(contact?.id ?? '', 'emails');
    expect(emails).toHaveLength(1);
    expect(emails[0]?.properties).toMatchObject({
      hs_timestamp: String(Date.parse('2025-03-04T10:00:00.000Z')),
      hs_email_direction: 'EMAIL',
      hs_email_status: 'SENT',
      hs_email_subject: 'Quick question',
    });
    expect(hs.associations.find((a) => a.fromType === 'emails')?.typeId).toBe(198);
    expect(hs.notes.size + hs.tasks.size + hs.companies.size).toBe(0);
    expect(outcome.result).toMatchObject({ crm: 'HUBSPOT', contactId: contact?.id, contactCreated: true, activity: { type: 'emails', id: emails[0]?.id } });
    expect(rec.persisted()).toMatchObject({ contactId: contact?.id, activityId: emails[0]?.id, activityType: 'emails' });
    // The contact saved before the next step (a retry never upserts it again), the create written ahead, then completed by the last step.
    expect(addedKeys(rec.states)).toEqual([['contactCreated', 'contactId'], ['activityPending', 'activityType', 'timestamp'], ['activityId']]);
    expect(rec.lasts).toEqual([false, false, true]);
  });

  it('writes company, association, owner and task when the source asks, saving state after each step', async () => {
    // Setup
    const rec = recorder(crmEvent({ eventType: 'EMAIL_REPLY', direction: 'inbound' }), ALL_OPTIONS);

    // Action
    const outcome = await connector('HUBSPOT', credentials, hubspotConfig(hs)).write(rec.run);

    // Assertions
    expect(outcome.status).toBe('success');
    const contact = [...hs.contacts.values()][0];
    const company = [...hs.companies.values()][0];
    expect(company?.properties).toMatchObject({ domain: 'acme.test', name: 'Acme' });
    expect(hs.associations).toContainEqual(
      expect.objectContaining({ fromType: 'contacts', fromId: contact?.id, toType: 'companies', toId: company?.id, typeId: 279 }),
    );
    expect(contact?.properties.hubspot_owner_id).toBe('501');
    expect(hs.engagementsOf(contact?.id ?? '', 'emails')[0]?.properties.hs_email_direction).toBe('INCOMING_EMAIL');
    const [task] = hs.engagementsOf(contact?.id ?? '', 'tasks');
    expect(task?.properties).toMatchObject({ hs_task_status: 'NOT_STARTED', hs_task_type: 'EMAIL', hs_task_priority: 'MEDIUM', hubspot_owner_id: '501' });
    expect(hs.associations.find((a) => a.fromType === 'tasks')?.typeId).toBe(204);
    expect(outcome.result).toMatchObject({ companyId: company?.id, ownerId: '501', taskId: task?.id });
    // One save per step, in order (the owner is given in the contact's upsert); creates are written ahead
    // (pending) and then completed.
    expect(addedKeys(rec.states)).toEqual([
      ['contactCreated', 'contactId', 'ownerDone', 'ownerId'],
      ['companyId'],
      ['companyAssociated'],
      ['activityPending', 'activityType', 'timestamp'],
      ['activityId'],
      ['taskPending'],
      ['taskId'],
    ]);
    expect(rec.lasts).toEqual([false, false, false, false, false, false, true]);
    expect(rec.persisted()).toMatchObject({
      contactId: contact?.id,
      companyId: company?.id,
      companyAssociated: true,
      ownerDone: true,
      activityId: expect.any(String),
      taskId: task?.id,
    });
  });

  it('writes nothing again when re-run with the final state', async () => {
    // Setup
    const first = recorder(crmEvent(), ALL_OPTIONS);
    const hubspot = connector('HUBSPOT', credentials, hubspotConfig(hs));
    await hubspot.write(first.run);
    const writes = hs.requests.filter((r) => r.method !== 'GET' && !r.path.endsWith('/search')).length;

    // Action
    const outcome = await hubspot.write(recorder(crmEvent(), ALL_OPTIONS, first.persisted()).run);

    // Assertions
    expect(outcome.status).toBe('success');
    expect(hs.requests.filter((r) => r.method !== 'GET' && !r.path.endsWith('/search')).length).toBe(writes);
    expect(hs.emails.size).toBe(1);
    expect(hs.tasks.size).toBe(1);
  });

  it('is a warning, with the CRM payload, when the company association fails; the activity is still written', async () => {
    // Setup
    hs.failNext(1, { status: 400, path: '/associations/default/companies/' });
    const rec = recorder(crmEvent(), { ...NO_OPTIONS, createOrUpdateCompany: true });

    // Action
    const outcome = await connector('HUBSPOT', credentials, hubspotConfig(hs)).write(rec.run);

    // Assertions
    expect(outcome.status).toBe('warning');
    const warnings = outcome.result.warnings as Array<Record<string, unknown>>;
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatchObject({ step: 'company', httpStatus: 400, payload: { status: 'error', category: 'VALIDATION_ERROR' } });
    expect(hs.companies.size).toBe(1);
    expect(hs.associations.filter((a) => a.toType === 'companies')).toHaveLength(0);
    expect(hs.emails.size).toBe(1);
    expect(rec.persisted().companyAssociated).toBeUndefined();
  });

  describe('syncs writing at once share one contact upsert call', () => {
    const upserts = () => hs.requests.filter((r) => r.path === '/crm/objects/2026-03/contacts/batch/upsert');

    it('upserts the contacts of concurrent syncs in one call, each sync with its own contact', async () => {
      const emails = ['ann@one.test', 'bob@two.test', 'cy@three.test'];
      const outcomes = await Promise.all(
        emails.map((email) => connector('HUBSPOT', credentials, hubspotConfig(hs)).write(recorder(crmEvent({ email }), NO_OPTIONS).run)),
      );

      expect(upserts()).toHaveLength(1);
      expect(CONTACT_UPSERTS.size).toBe(0); // nothing (no token) stays behind
      expect(hs.contacts.size).toBe(3);
      outcomes.forEach((outcome, i) => {
        const contact = hs.contacts.get(outcome.result.contactId as string);
        expect(contact?.properties.email).toBe(emails[i]);
        expect(outcome.result.contactCreated).toBe(true);
        expect(hs.engagementsOf(contact?.id ?? '', 'emails')).toHaveLength(1);
      });
    });

    it('sends one input for syncs of one email, and calls only one of them the creator', async () => {
      const outcomes = await Promise.all([1, 2, 3].map(() => connector('HUBSPOT', credentials, hubspotConfig(hs)).write(recorder(crmEvent(), NO_OPTIONS).run)));

      expect(upserts()).toHaveLength(1);
      expect(hs.contacts.size).toBe(1);
      expect(new Set(outcomes.map((o) => o.result.contactId)).size).toBe(1);
      expect(outcomes.map((o) => o.result.contactCreated)).toEqual([true, false, false]);
      expect(hs.emails.size).toBe(3);
    });

    it('sends each sync back to its own call when the shared one fails', async () => {
      hs.failNext(1, { status: 500, path: '/batch/upsert' });

      const outcomes = await Promise.all(
        ['ann@one.test', 'bob@two.test'].map((email) =>
          connector('HUBSPOT', credentials, hubspotConfig(hs)).write(recorder(crmEvent({ email }), NO_OPTIONS).run),
        ),
      );

      expect(outcomes.map((o) => o.status)).toEqual(['success', 'success']);
      expect(upserts().map((r) => r.status)).toEqual([500, 200, 200]);
      expect(hs.contacts.size).toBe(2);
    });

    it("honours a 429 on the shared call for every sync of the group: none calls again before the account's Retry-After", async () => {
      hs.failNext(1, { status: 429, retryAfter: 3, path: '/batch/upsert' });

      const errors = await Promise.all(
        ['ann@one.test', 'bob@two.test', 'cy@three.test'].map((email) =>
          thrown(connector('HUBSPOT', credentials, hubspotConfig(hs)).write(recorder(crmEvent({ email }), NO_OPTIONS).run)),
        ),
      );

      // Every sync goes back to the job layer with the account's wait; nobody asked HubSpot again.
      for (const error of errors) expect(error).toMatchObject({ kind: 'rate_limited', httpStatus: 429, retryAfterMs: 3_000, retryable: true });
      expect(upserts().map((r) => r.status)).toEqual([429]);
      expect(hs.contacts.size).toBe(0);
      expect(CONTACT_UPSERTS.size).toBe(0);
    });

    it('never groups syncs of different HubSpot accounts', async () => {
      hs.accessTokens.add('another-account-token');

      await Promise.all([
        connector('HUBSPOT', credentials, hubspotConfig(hs)).write(recorder(crmEvent({ email: 'ann@one.test' }), NO_OPTIONS).run),
        connector('HUBSPOT', { accessToken: 'another-account-token' }, hubspotConfig(hs)).write(recorder(crmEvent({ email: 'bob@two.test' }), NO_OPTIONS).run),
      ]);

      expect(upserts()).toHaveLength(2);
      expect(CONTACT_UPSERTS.size).toBe(0);
    });
  });

  describe('syncs writing at once with every option share a batch call per step', () => {
    const leads = [
      { email: 'ann@one.test', companyDomain: 'one.test', company: 'One' },
      { email: 'bob@two.test', companyDomain: 'two.test', company: 'Two' },
      { email: 'cy@one.test', companyDomain: 'one.test', company: 'One' },
      { email: 'dee@three.test', companyDomain: 'three.test', company: 'Three' },
    ];
    const calls = () => hs.requests.map((r) => `${r.method} ${r.path.replace(/\/\d+(?=\/|$)/g, '/:id')}`);
    // As a drain writes a round: the runs in step (src/connectors/crm/lockstep.ts), each leaving when it ends.
    const writeAll = () => {
      const lockstep = new Lockstep(leads.length);
      return Promise.all(
        leads.map((lead) =>
          connector('HUBSPOT', credentials, hubspotConfig(hs))
            .write({ ...recorder(crmEvent(lead), ALL_OPTIONS).run, step: () => lockstep.step() })
            .finally(() => lockstep.leave()),
        ),
      );
    };

    it('reads owners once, reads and upserts contacts, finds and creates companies, associates, and creates engagements in one call each', async () => {
      // Setup: two owners; Bob exists and has an owner of his own; Three's company exists.
      hs.owners.push({ id: '502', email: 'other@seller.test', firstName: 'Otto', lastName: 'Other', userId: 9002 });
      await connector('HUBSPOT', credentials, hubspotConfig(hs)).write(recorder(crmEvent({ email: 'bob@two.test' }), NO_OPTIONS).run);
      const bob = [...hs.contacts.values()][0]!;
      bob.properties.hubspot_owner_id = '502';
      const three = hs.addList({ name: 'seed', objectType: 'companies', values: ['three.test'] });
      const threeId = hs.lists.get(three)!.members[0]!.recordId;
      hs.requests.length = 0;

      // Action
      const outcomes = await writeAll();

      // Assertions: one call per step for the four syncs.
      expect(outcomes.map((o) => o.status)).toEqual(['success', 'success', 'success', 'success']);
      expect(calls().sort()).toEqual(
        [
          'GET /crm/owners/2026-03',
          'POST /crm/objects/2026-03/contacts/batch/read',
          'POST /crm/objects/2026-03/contacts/batch/upsert',
          'POST /crm/objects/2026-03/companies/search',
          'POST /crm/objects/2026-03/companies/batch/create',
          'POST /crm/associations/2026-03/contacts/companies/batch/associate/default',
          'POST /crm/objects/2026-03/emails/batch/create',
          'POST /crm/objects/2026-03/tasks/batch/create',
        ].sort(),
      );
      // The owner a contact had stays; the others get the sender's user, in the upsert.
      const contactOf = (email: string) => [...hs.contacts.values()].find((c) => c.properties.email === email)!;
      expect(leads.map((l) => contactOf(l.email).properties.hubspot_owner_id)).toEqual(['501', '502', '501', '501']);
      // A company per domain (the existing one found), each contact associated with its own.
      expect(hs.companies.size).toBe(3);
      const companyOf = (email: string) =>
        hs.associations.find((a) => a.fromType === 'contacts' && a.fromId === contactOf(email).id && a.toType === 'companies')?.toId;
      expect(companyOf('dee@three.test')).toBe(threeId);
      expect(companyOf('ann@one.test')).toBe(companyOf('cy@one.test'));
      expect(outcomes.map((o) => o.result.companyId)).toEqual(leads.map((l) => companyOf(l.email)));
      expect(hs.emails.size + hs.tasks.size).toBe(9);
    });

    it('writes the next events of the same leads with their engagement creates alone: the connection remembers contacts, owners and companies', async () => {
      // Setup
      await writeAll();
      hs.requests.length = 0;

      // Action
      const outcomes = await writeAll();

      // Assertions
      expect(outcomes.map((o) => o.status)).toEqual(['success', 'success', 'success', 'success']);
      expect(calls().sort()).toEqual(['POST /crm/objects/2026-03/emails/batch/create', 'POST /crm/objects/2026-03/tasks/batch/create']);
      expect(hs.contacts.size).toBe(4);
      expect(hs.companies.size).toBe(3);
      expect(hs.emails.size).toBe(8);
    });

    it("searches domains in groups that fit HubSpot's 3,000-character search body, and pages through the results", async () => {
      const many = Array.from({ length: 60 }, (_, i) => ({ email: `p${i}@a-rather-long-company-domain-number-${i}.test`, companyDomain: null, company: null }));
      const outcomes = await Promise.all(
        many.map((lead) =>
          connector('HUBSPOT', credentials, hubspotConfig(hs)).write(recorder(crmEvent(lead), { ...NO_OPTIONS, createOrUpdateCompany: true }).run),
        ),
      );
      expect(outcomes.every((o) => o.status === 'success')).toBe(true);
      expect(hs.requests.filter((r) => r.path.endsWith('/companies/search')).length).toBeGreaterThan(1);
      expect(hs.requests.filter((r) => r.status >= 400)).toEqual([]);
      expect(hs.companies.size).toBe(60);
    });
  });

  describe('syncs writing at once share one engagement create call', () => {
    const creates = () => hs.requests.filter((r) => r.path === '/crm/objects/2026-03/emails/batch/create');
    const write = (email: string, state: CrmState = {}) => {
      // Bob's email has a subject the emulator can be told to refuse.
      const rec = recorder(crmEvent({ email, ...(email.startsWith('bob') ? { subject: 'Refuse me' } : {}) }), NO_OPTIONS, state);
      return { rec, outcome: connector('HUBSPOT', credentials, hubspotConfig(hs)).write(rec.run) };
    };

    it('creates the engagements of concurrent syncs in one batch call, each associated with its own contact', async () => {
      const emails = ['ann@one.test', 'bob@two.test', 'cy@three.test', 'dee@four.test'];
      const outcomes = await Promise.all(emails.map((email) => write(email).outcome));

      expect(creates()).toHaveLength(1);
      expect(hs.requests.filter((r) => r.path === '/crm/objects/2026-03/emails')).toHaveLength(0);
      expect(ENGAGEMENT_CREATES.size).toBe(0);
      expect(hs.emails.size).toBe(4);
      for (const outcome of outcomes) {
        expect(outcome.status).toBe('success');
        const activity = outcome.result.activity as { id: string };
        expect(hs.engagementsOf(outcome.result.contactId as string, 'emails').map((e) => e.id)).toEqual([activity.id]);
      }
    });

    it('never writes an engagement twice when the batch call times out after HubSpot wrote it', async () => {
      // The answer comes after the client gave up (2 s), but the engagements are written.
      hs.slow(2_500, '/emails/batch/create');
      const first = ['ann@one.test', 'bob@two.test', 'cy@three.test'].map((email) => write(email));
      const errors = await Promise.all(first.map((w) => thrown(w.outcome)));
      for (const error of errors) expect(error).toMatchObject({ kind: 'unavailable', retryable: true });
      hs.slow(0);
      await new Promise((resolve) => setTimeout(resolve, 800));
      expect(hs.emails.size).toBe(3);

      // The next attempt of each sync starts from what it wrote ahead, finds its engagement, and creates nothing.
      const again = await Promise.all(first.map((w, i) => write(['ann@one.test', 'bob@two.test', 'cy@three.test'][i]!, w.rec.persisted()).outcome));
      expect(again.map((o) => o.status)).toEqual(['success', 'success', 'success']);
      expect(hs.emails.size).toBe(3);
      expect(creates()).toHaveLength(1);
    });

    it('takes back the write-ahead mark when the batch call is answered 429, so the next attempt creates without searching', async () => {
      hs.failNext(1, { status: 429, retryAfter: 1, path: '/emails/batch/create' });
      const emails = ['ann@one.test', 'bob@two.test', 'cy@three.test'];
      const first = emails.map((email) => write(email));
      const errors = await Promise.all(first.map((w) => thrown(w.outcome)));
      for (const error of errors) expect(error).toMatchObject({ kind: 'rate_limited', httpStatus: 429 });
      for (const w of first) expect(w.rec.persisted().activityPending).toBeUndefined();

      const again = await Promise.all(first.map((w, i) => write(emails[i]!, w.rec.persisted()).outcome));
      expect(again.map((o) => o.status)).toEqual(['success', 'success', 'success']);
      // A 429 wrote nothing: no search per sync (each would spend the budget the 429 said was gone), one engagement each.
      expect(hs.requests.filter((r) => r.path === '/crm/objects/2026-03/emails/search')).toEqual([]);
      expect(creates().map((r) => r.status)).toEqual([429, 201]);
      expect(hs.emails.size).toBe(3);
    });

    it('sends an input the batch answer refused back to its own sync, and keeps the others written once', async () => {
      hs.refuseCreate = (type, properties) => type === 'emails' && properties.hs_email_subject === 'Refuse me';
      try {
        const written = ['ann@one.test', 'bob@two.test', 'cy@three.test'].map((email) => write(email));
        const results = await Promise.allSettled(written.map((w) => w.outcome));
        expect(results.map((r) => r.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
        expect((results[1] as PromiseRejectedResult).reason).toMatchObject({ kind: 'rejected', httpStatus: 400 });
        expect(creates().map((r) => r.status)).toEqual([207]);
        // The refused one tried once more on its own (and was refused again); the others exist once.
        expect(hs.requests.filter((r) => r.path === '/crm/objects/2026-03/emails').map((r) => r.status)).toEqual([400]);
        expect(hs.emails.size).toBe(2);
      } finally {
        hs.refuseCreate = undefined;
      }
    });
  });

  it('honours Retry-After on 429', async () => {
    // Setup
    hs.failNext(1, { status: 429, retryAfter: 1, path: '/batch/upsert' });

    // Action
    const started = performance.now();
    const outcome = await connector('HUBSPOT', credentials, hubspotConfig(hs)).write(recorder(crmEvent(), NO_OPTIONS).run);
    const elapsed = performance.now() - started;

    // Assertions
    expect(outcome.status).toBe('success');
    const upserts = hs.requests.filter((r) => r.path.endsWith('/batch/upsert'));
    expect(upserts.map((r) => r.status)).toEqual([429, 200]);
    expect((upserts[1]?.at ?? 0) - (upserts[0]?.at ?? 0)).toBeGreaterThanOrEqual(990);
    expect(elapsed).toBeGreaterThanOrEqual(990);
  });

  it('retries 500s of a read within the write, and never resends a create HubSpot answered 500 (it may have been written)', async () => {
    // Setup: the upsert (safe to repeat) fails twice; the engagement's create once.
    hs.failNext(2, { status: 500, path: '/batch/upsert' });
    hs.failNext(1, { status: 500, path: /^\/crm\/objects\/2026-03\/emails$/ });
    const hubspot = connector('HUBSPOT', credentials, hubspotConfig(hs));
    const first = recorder(crmEvent(), NO_OPTIONS);

    // Action: the write gives up at the create, written ahead; its next attempt looks first, then creates.
    const error = await thrown(hubspot.write(first.run));
    const outcome = await hubspot.write(recorder(crmEvent(), NO_OPTIONS, first.persisted()).run);

    // Assertions
    expect(error).toMatchObject({ kind: 'unavailable', httpStatus: 500 });
    expect(first.persisted()).toMatchObject({ activityPending: true });
    expect(outcome.status).toBe('success');
    expect(hs.requests.filter((r) => r.path.endsWith('/batch/upsert')).map((r) => r.status)).toEqual([500, 500, 200]);
    expect(hs.requests.filter((r) => r.path === '/crm/objects/2026-03/emails').map((r) => r.status)).toEqual([500, 201]);
    expect(hs.requests.filter((r) => r.path === '/crm/objects/2026-03/emails/search')).toHaveLength(1);
    expect(hs.emails.size).toBe(1);
  });

  it('hands a wait longer than its budget to the job layer as rate_limited with retryAfterMs and the payload', async () => {
    hs.failNext(1, { status: 429, retryAfter: 120 });

    const error = await thrown(connector('HUBSPOT', credentials, hubspotConfig(hs)).write(recorder(crmEvent(), NO_OPTIONS).run));

    expect(error).toMatchObject({ kind: 'rate_limited', httpStatus: 429, retryAfterMs: 120_000, retryable: true });
    expect(error.payload).toMatchObject({ errorType: 'RATE_LIMIT', policyName: 'TEN_SECONDLY_ROLLING' });
    expect(hs.requests).toHaveLength(1);
  });

  it('gives up on a CRM that stays down as unavailable', async () => {
    hs.failNext(10, { status: 503 });

    const error = await thrown(
      connector('HUBSPOT', credentials, hubspotConfig(hs, { retry: { attempts: 3, baseDelayMs: 10, maxDelayMs: 20 } })).write(
        recorder(crmEvent(), NO_OPTIONS).run,
      ),
    );

    expect(error).toMatchObject({ kind: 'unavailable', httpStatus: 503 });
    expect(hs.requests).toHaveLength(3);
  });

  it('refreshes an expired token, saves the rotated refresh token before using it, and succeeds', async () => {
    // Setup
    hs.rotateRefreshTokens = true;
    hs.expireAccessTokens();
    let requestsAtSave = -1;
    const rec = recorder(crmEvent(), NO_OPTIONS, {}, { onSaveCredentials: () => (requestsAtSave = hs.requests.length) });

    // Action
    const outcome = await connector('HUBSPOT', credentials, hubspotConfig(hs)).write(rec.run);

    // Assertions
    expect(outcome.status).toBe('success');
    expect(hs.tokenRefreshes).toHaveLength(1);
    expect(rec.credentials).toHaveLength(1);
    const saved = rec.credentials[0] as Record<string, string>;
    expect(hs.accessTokens.has(saved.accessToken ?? '')).toBe(true);
    expect(saved.refreshToken).not.toBe('hs-refresh-initial');
    expect(hs.refreshTokens.has(saved.refreshToken ?? '')).toBe(true);
    expect(hs.refreshTokens.has('hs-refresh-initial')).toBe(false);
    expect(saved).toMatchObject({ clientId: 'hs-client-id', clientSecret: 'hs-client-secret', expiresAt: expect.any(String) });
    // Saved right after the token answer, before any request with the new token.
    expect(hs.requests[requestsAtSave - 1]?.path).toBe('/oauth/2026-03/token');
    expect(hs.requests.map((r) => r.status)).toEqual([401, 200, 200, 201]);
  });

  it('refreshes ahead of an expiry it knows about', async () => {
    const rec = recorder(crmEvent(), NO_OPTIONS);

    await connector('HUBSPOT', { ...credentials, expiresAt: new Date(Date.now() + 10_000).toISOString() }, hubspotConfig(hs)).write(rec.run);

    expect(hs.requests[0]?.path).toBe('/oauth/2026-03/token');
    expect(rec.credentials).toHaveLength(1);
    expect(hs.requests.every((r) => r.status < 400)).toBe(true);
  });

  it('is an auth error when the token expired and there is no refresh token', async () => {
    hs.expireAccessTokens();

    const error = await thrown(connector('HUBSPOT', { accessToken: 'hs-access-initial' }, hubspotConfig(hs)).write(recorder(crmEvent(), NO_OPTIONS).run));

    expect(error).toMatchObject({ kind: 'auth', httpStatus: 401, retryable: false });
    expect(error.payload).toMatchObject({ category: 'EXPIRED_AUTHENTICATION' });
    expect(hs.tokenRefreshes).toHaveLength(0);
  });

  it("is an auth error naming HubSpot's RFC 6749 error when the refresh token was revoked", async () => {
    hs.expireAccessTokens();
    hs.refreshTokens.clear();

    const error = await thrown(connector('HUBSPOT', credentials, hubspotConfig(hs)).write(recorder(crmEvent(), NO_OPTIONS).run));

    expect(error).toMatchObject({ kind: 'auth', httpStatus: 400, retryable: false, payload: { error: 'invalid_grant' } });
    expect(error.message).toContain('invalid_grant: missing or unknown refresh token');
    expect(error.message).not.toContain('hs-refresh-initial');
    expect(hs.requests.at(-1)).toMatchObject({ method: 'POST', path: '/oauth/2026-03/token', status: 400 });
  });

  it('writes no duplicate activity when a run crashes after step 2 and is re-run with the saved state', async () => {
    // Setup: the process dies right after persisting the second step (company).
    const crashing = recorder(
      crmEvent(),
      { ...NO_OPTIONS, createOrUpdateCompany: true, createOrUpdateTask: true },
      {},
      {
        onSaveState: (n) => {
          if (n === 2) throw new Error('worker crashed');
        },
      },
    );
    const hubspot = connector('HUBSPOT', credentials, hubspotConfig(hs));
    await expect(hubspot.write(crashing.run)).rejects.toThrow('worker crashed');
    expect(crashing.persisted()).toMatchObject({ contactId: expect.any(String), companyId: expect.any(String) });

    // Action: the job runs again with what was persisted, then once more after success.
    const again = recorder(crmEvent(), { ...NO_OPTIONS, createOrUpdateCompany: true, createOrUpdateTask: true }, crashing.persisted());
    const outcome = await hubspot.write(again.run);
    await hubspot.write(recorder(crmEvent(), { ...NO_OPTIONS, createOrUpdateCompany: true, createOrUpdateTask: true }, again.persisted()).run);

    // Assertions
    expect(outcome.status).toBe('success');
    expect(hs.contacts.size).toBe(1);
    expect(hs.companies.size).toBe(1);
    expect(hs.emails.size).toBe(1);
    expect(hs.tasks.size).toBe(1);
    expect(hs.requests.filter((r) => r.path === '/crm/objects/2026-03/companies')).toHaveLength(1);
  });

  it('writes no duplicate activity when the answer to its create was lost', async () => {
    // Setup: the email create is carried out but answered after the client gave up.
    hs.slow(400, /^\/crm\/objects\/2026-03\/emails$/);
    const hubspot = connector('HUBSPOT', credentials, hubspotConfig(hs, { timeoutMs: 150 }));
    const first = recorder(crmEvent(), NO_OPTIONS);
    const error = await thrown(hubspot.write(first.run));
    expect(error.kind).toBe('unavailable');
    await new Promise((resolve) => setTimeout(resolve, 400));
    expect(hs.emails.size).toBe(1);
    expect(first.persisted()).toMatchObject({ activityPending: true, activityType: 'emails' });

    // Action
    hs.slow(0);
    const outcome = await hubspot.write(recorder(crmEvent(), NO_OPTIONS, first.persisted()).run);

    // Assertions
    expect(outcome.status).toBe('success');
    expect(hs.emails.size).toBe(1);
    expect((outcome.result.activity as { id: string }).id).toBe([...hs.emails.keys()][0]);
  });

  it('finds or creates social-only contacts by profile URL and logs a note', async () => {
    // Setup
    const social = (profileUrl: string) =>
      crmEvent({
        eventType: 'MESSAGE_SENT',
        platform: 'heyreach',
        email: null,
        identity: profileUrl,
        profileUrl,
        subject: null,
        companyDomain: null,
        text: 'Hi Jane <3',
      });
    const hubspot = connector('HUBSPOT', credentials, hubspotConfig(hs));

    // Action
    const first = await hubspot.write(recorder(social('https://www.linkedin.com/in/jane-doe'), { ...NO_OPTIONS, createOrUpdateCompany: true }).run);
    const second = await hubspot.write(recorder(social('linkedin.com/in/Jane-Doe/'), NO_OPTIONS).run);
    await hubspot.write(recorder(social('https://x.com/janedoe'), NO_OPTIONS).run);

    // Assertions
    expect(first.status).toBe('success');
    expect(first.result.companySkipped).toBeDefined();
    expect(second.result.contactId).toBe(first.result.contactId);
    expect(second.result.contactCreated).toBe(false);
    const contacts = [...hs.contacts.values()];
    expect(contacts.map((c) => [c.properties.hs_linkedin_url, c.properties.twitterhandle, c.properties.email])).toEqual([
      ['https://www.linkedin.com/in/jane-doe', undefined, undefined],
      [undefined, 'janedoe', undefined],
    ]);
    const notes = hs.engagementsOf(String(first.result.contactId), 'notes');
    expect(notes).toHaveLength(2);
    expect(notes[0]?.properties.hs_note_body).toContain('Message sent (heyreach)');
    expect(notes[0]?.properties.hs_note_body).toContain('Hi Jane &lt;3');
    expect(hs.associations.find((a) => a.fromType === 'notes')?.typeId).toBe(202);
  });

  it('never puts credentials in thrown errors, even when the CRM echoes them', async () => {
    // Setup
    hs.failNext(1, {
      status: 400,
      body: {
        status: 'error',
        message: 'token hs-access-initial is not allowed here',
        category: 'VALIDATION_ERROR',
        errors: [{ message: 'secret hs-client-secret' }],
      },
    });

    // Action
    const error = await thrown(connector('HUBSPOT', credentials, hubspotConfig(hs)).write(recorder(crmEvent(), NO_OPTIONS).run));

    // Assertions
    const everything = `${error.message} ${error.stack ?? ''} ${JSON.stringify(error)} ${JSON.stringify(error.payload)}`;
    for (const secret of Object.values(credentials).filter((v) => v !== 'hs-client-id')) expect(everything).not.toContain(secret);
    expect(error.message).toContain('[redacted]');
    expect(error.kind).toBe('rejected');
  });
});

describe('Salesforce connector', () => {
  let sf: SalesforceEmulator;
  const credentials = () => ({
    instanceUrl: sf.instanceUrl,
    accessToken: 'sf-access-initial',
    refreshToken: 'sf-refresh-initial',
    clientId: 'sf-consumer-key',
    clientSecret: 'sf-consumer-secret',
  });

  beforeEach(async () => {
    sf = await startSalesforceEmulator();
  });

  afterEach(async () => {
    await sf.close();
  });

  it('creates a Lead when no Contact or Lead matches, and logs a completed Task with WhoId', async () => {
    // Setup
    const rec = recorder(crmEvent(), NO_OPTIONS);

    // Action
    const outcome = await connector('SALESFORCE', credentials(), salesforceConfig(sf)).write(rec.run);

    // Assertions
    expect(outcome.status).toBe('success');
    const [lead] = [...sf.leads.values()];
    expect(lead).toMatchObject({ Email: 'jane.doe@acme.test', FirstName: 'Jane', LastName: 'Doe', Company: 'Acme' });
    const [task] = sf.tasksOf(lead?.Id ?? '');
    expect(task).toMatchObject({ Status: 'Completed', TaskSubtype: 'Email', ActivityDate: '2025-03-04', Subject: '[smartlead] Email sent: Quick question' });
    expect(String(task?.Description)).toContain('Campaign: Q3 outbound');
    expect(outcome.result).toMatchObject({ crm: 'SALESFORCE', whoId: lead?.Id, whoType: 'Lead', recordCreated: true, activityId: task?.Id });
    // Contact first, then Lead, then create; every query went to the instance.
    const queries = sf.requests.filter((r) => r.query !== undefined).map((r) => r.query);
    expect(queries[0]).toMatch(/FROM Contact WHERE Email = 'jane.doe@acme.test'/);
    expect(queries[1]).toMatch(/FROM Lead WHERE Email = 'jane.doe@acme.test' AND IsConverted = false/);
    expect(sf.requests.every((r) => r.via === 'instance')).toBe(true);
    expect(rec.persisted()).toMatchObject({ whoId: lead?.Id, whoType: 'Lead', recordCreated: true, activityId: task?.Id });
    expect(rec.lasts.at(-1)).toBe(true);
    expect(rec.lasts.slice(0, -1)).not.toContain(true);
  });

  it('prefers an existing Contact over a Lead with the same email', async () => {
    const contact = sf.seed('Contact', { LastName: 'Doe', Email: 'Jane.Doe@acme.test' });
    sf.seed('Lead', { LastName: 'Doe', Company: 'Acme', Email: 'jane.doe@acme.test' });

    const outcome = await connector('SALESFORCE', credentials(), salesforceConfig(sf)).write(recorder(crmEvent(), NO_OPTIONS).run);

    expect(outcome.result).toMatchObject({ whoId: contact.Id, whoType: 'Contact', recordCreated: false });
    expect(sf.tasksOf(contact.Id)).toHaveLength(1);
    expect(sf.contacts.size + sf.leads.size).toBe(2);
  });

  it('uses an existing Lead, and creates the crmObjectType object when nothing matches', async () => {
    const lead = sf.seed('Lead', { LastName: 'Old', Company: 'Acme', Email: 'lead@acme.test' });
    const salesforce = connector('SALESFORCE', credentials(), salesforceConfig(sf));

    const found = await salesforce.write(recorder(crmEvent({ email: 'lead@acme.test' }), { ...NO_OPTIONS, crmObjectType: 'Contact' }).run);
    const created = await salesforce.write(recorder(crmEvent({ email: 'new@acme.test', lastName: null }), { ...NO_OPTIONS, crmObjectType: 'Contact' }).run);

    expect(found.result).toMatchObject({ whoId: lead.Id, whoType: 'Lead', recordCreated: false });
    expect(created.result).toMatchObject({ whoType: 'Contact', recordCreated: true });
    expect(sf.contacts.get(String(created.result.whoId))).toMatchObject({ Email: 'new@acme.test', LastName: '[not provided]', FirstName: 'Jane' });
  });

  it('escapes emails in SOQL', async () => {
    const outcome = await connector('SALESFORCE', credentials(), salesforceConfig(sf)).write(
      recorder(crmEvent({ email: "o'brien\\x@acme.test" }), NO_OPTIONS).run,
    );

    expect(outcome.status).toBe('success');
    expect(sf.requests.filter((r) => r.query !== undefined).every((r) => r.status === 200)).toBe(true);
  });

  it('assigns the sender as owner of a record it created, and a follow-up task', async () => {
    // Setup
    const rec = recorder(crmEvent(), { ...ALL_OPTIONS });

    // Action
    const outcome = await connector('SALESFORCE', credentials(), salesforceConfig(sf)).write(rec.run);

    // Assertions
    expect(outcome.status).toBe('success');
    const lead = sf.leads.get(String(outcome.result.whoId));
    expect(lead?.OwnerId).toBe('005000000000002AAA');
    const tasks = sf.tasksOf(lead?.Id ?? '');
    expect(tasks.map((t) => [t.Status, t.OwnerId, t.ActivityDate])).toEqual([
      ['Completed', '005000000000002AAA', '2025-03-04'],
      ['Not Started', '005000000000002AAA', '2025-03-05'],
    ]);
    expect(outcome.result).toMatchObject({ ownerId: '005000000000002AAA', taskId: tasks[1]?.Id });
  });

  it('is a warning when the sender is no active user', async () => {
    const outcome = await connector('SALESFORCE', credentials(), salesforceConfig(sf)).write(
      recorder(crmEvent({ senderEmail: 'gone@seller.test' }), { ...NO_OPTIONS, assignContactOwner: true }).run,
    );

    expect(outcome.status).toBe('warning');
    expect(outcome.result.warnings).toEqual([expect.objectContaining({ step: 'owner' })]);
    expect(sf.tasks.size).toBe(1);
  });

  it('refreshes an expired session at the login host, saves the rotated refresh token first, and uses the returned instance_url', async () => {
    // Setup
    sf.rotateRefreshTokens = true;
    sf.refreshInstanceUrl = sf.loginUrl; // the org "moved": its API is now answered on the other listener
    sf.expireAccessTokens();
    let requestsAtSave = -1;
    const rec = recorder(crmEvent(), NO_OPTIONS, {}, { onSaveCredentials: () => (requestsAtSave = sf.requests.length) });

    // Action
    const outcome = await connector('SALESFORCE', credentials(), salesforceConfig(sf)).write(rec.run);

    // Assertions
    expect(outcome.status).toBe('success');
    expect(sf.tokenRefreshes).toEqual([expect.objectContaining({ via: 'login', rotated: true })]);
    const saved = rec.credentials[0] as Record<string, string>;
    expect(saved.refreshToken).not.toBe('sf-refresh-initial');
    expect(sf.refreshTokens.has(saved.refreshToken ?? '')).toBe(true);
    expect(saved.instanceUrl).toBe(sf.loginUrl);
    expect(sf.accessTokens.has(saved.accessToken ?? '')).toBe(true);
    expect(sf.requests[requestsAtSave - 1]?.path).toBe('/services/oauth2/token');
    const first = sf.requests[0];
    expect(first).toMatchObject({ status: 401, via: 'instance' });
    expect(sf.requests.slice(2).every((r) => r.via === 'login' && r.status < 300)).toBe(true);
  });

  it('keeps using the new credentials for the next write', async () => {
    sf.rotateRefreshTokens = true;
    sf.expireAccessTokens();
    const salesforce = connector('SALESFORCE', credentials(), salesforceConfig(sf));

    await salesforce.write(recorder(crmEvent(), NO_OPTIONS).run);
    await salesforce.write(recorder(crmEvent({ email: 'second@acme.test' }), NO_OPTIONS).run);

    expect(sf.tokenRefreshes).toHaveLength(1);
    expect(sf.requests.filter((r) => r.status === 401)).toHaveLength(1);
  });

  it('is an auth error when the refresh token was revoked', async () => {
    sf.expireAccessTokens();
    sf.refreshTokens.clear();

    const error = await thrown(connector('SALESFORCE', credentials(), salesforceConfig(sf)).write(recorder(crmEvent(), NO_OPTIONS).run));

    expect(error).toMatchObject({ kind: 'auth', httpStatus: 400, payload: { error: 'invalid_grant' } });
    expect(error.message).not.toContain('sf-refresh-initial');
  });

  it('honours Retry-After on 429 and retries 500s of queries, never of a create (it may have been written)', async () => {
    // Setup
    sf.failNext(1, { status: 429, retryAfter: 1, path: '/query' });
    sf.failNext(1, { status: 500, path: '/query' });
    sf.failNext(1, { status: 500, path: '/sobjects/Task' });
    const salesforce = connector('SALESFORCE', credentials(), salesforceConfig(sf));
    const first = recorder(crmEvent(), NO_OPTIONS);

    // Action
    const started = performance.now();
    const error = await thrown(salesforce.write(first.run));
    const elapsed = performance.now() - started;
    const outcome = await salesforce.write(recorder(crmEvent(), NO_OPTIONS, first.persisted()).run);

    // Assertions: the queries retried in the write; the Task's create not, and looked for before it was sent again.
    expect(elapsed).toBeGreaterThanOrEqual(990);
    expect(error).toMatchObject({ kind: 'unavailable', httpStatus: 500 });
    expect(outcome.status).toBe('success');
    expect(sf.requests.map((r) => r.status)).toEqual([429, 500, 200, 200, 201, 500, 200, 201]);
    expect(sf.tasks.size).toBe(1);
  });

  it('maps the org request limit to rate_limited', async () => {
    sf.failNext(1, { status: 403 });

    const error = await thrown(connector('SALESFORCE', credentials(), salesforceConfig(sf)).write(recorder(crmEvent(), NO_OPTIONS).run));

    expect(error).toMatchObject({ kind: 'rate_limited', httpStatus: 403, payload: [{ errorCode: 'REQUEST_LIMIT_EXCEEDED' }] });
  });

  // Saves: 1 the Lead, 2 the Task written ahead (not yet sent), 3 the Task's id.
  it.each([
    ['after the Task was written ahead, before it was sent', 2, 0],
    ['after the Task (step 2) was saved', 3, 1],
  ])('writes no duplicate Task when a run crashes %s and is re-run', async (_case, crashAt, tasksBefore) => {
    // Setup
    const options = { ...NO_OPTIONS, createOrUpdateTask: true };
    const crashing = recorder(
      crmEvent(),
      options,
      {},
      {
        onSaveState: (n) => {
          if (n === crashAt) throw new Error('worker crashed');
        },
      },
    );
    const salesforce = connector('SALESFORCE', credentials(), salesforceConfig(sf));
    await expect(salesforce.write(crashing.run)).rejects.toThrow('worker crashed');
    expect(sf.tasks.size).toBe(tasksBefore);

    // Action
    const again = recorder(crmEvent(), options, crashing.persisted());
    const outcome = await salesforce.write(again.run);

    // Assertions
    expect(outcome.status).toBe('success');
    expect(sf.leads.size).toBe(1);
    const tasks = [...sf.tasks.values()];
    expect(tasks.map((t) => t.Status)).toEqual(['Completed', 'Not Started']);
  });

  it('writes no duplicate Task when the answer to its create was lost', async () => {
    sf.slow(400, '/sobjects/Task');
    const salesforce = connector('SALESFORCE', credentials(), salesforceConfig(sf, { timeoutMs: 150 }));
    const first = recorder(crmEvent(), NO_OPTIONS);
    expect((await thrown(salesforce.write(first.run))).kind).toBe('unavailable');
    await new Promise((resolve) => setTimeout(resolve, 400));
    expect(sf.tasks.size).toBe(1);

    sf.slow(0);
    const outcome = await salesforce.write(recorder(crmEvent(), NO_OPTIONS, first.persisted()).run);

    expect(outcome.status).toBe('success');
    expect(sf.tasks.size).toBe(1);
    expect(outcome.result.activityId).toBe([...sf.tasks.keys()][0]);
  });

  it('shares each step of a round: one user query, one Contact and one Lead query, one create of every new person, one create per kind of Task', async () => {
    // Setup: Bob is a Contact, Cy a Lead; Ann is new, and two of the round's syncs are hers.
    sf.seed('Contact', { LastName: 'Bob', Email: 'bob@two.test' });
    sf.seed('Lead', { LastName: 'Cy', Company: 'Three', Email: 'cy@three.test' });
    const emails = ['ann@one.test', 'bob@two.test', 'cy@three.test', 'ann@one.test', 'dee@four.test'];
    const salesforce = connector('SALESFORCE', credentials(), salesforceConfig(sf));
    const lockstep = new Lockstep(emails.length);

    // Action
    const outcomes = await Promise.all(
      emails.map((email) =>
        salesforce.write({ ...recorder(crmEvent({ email }), ALL_OPTIONS).run, step: () => lockstep.step() }).finally(() => lockstep.leave()),
      ),
    );

    // Assertions
    expect(outcomes.map((o) => o.status)).toEqual(['success', 'success', 'success', 'success', 'success']);
    const calls = sf.requests.map((r) => (r.query ? r.query.replace(/IN \(.*\)/, 'IN (...)').replace(/ ORDER BY.*/, '') : `${r.method} ${r.path}`));
    expect(calls).toEqual([
      "SELECT Id FROM User WHERE Email = 'rep@seller.test' AND IsActive = true LIMIT 1",
      'SELECT Id, Email FROM Contact WHERE Email IN (...)',
      'SELECT Id, Email FROM Lead WHERE Email IN (...) AND IsConverted = false',
      'POST /services/data/v62.0/composite/sobjects',
      'POST /services/data/v62.0/composite/sobjects',
      'POST /services/data/v62.0/composite/sobjects',
    ]);
    // One new Lead per new email, owned by the sender's user; each event its completed Task and follow-up.
    expect([...sf.leads.values()].filter((l) => l.Email === 'ann@one.test')).toHaveLength(1);
    expect(sf.leads.size).toBe(3);
    expect(outcomes[0]!.result.whoId).toBe(outcomes[3]!.result.whoId);
    expect(sf.leads.get(String(outcomes[0]!.result.whoId))?.OwnerId).toBe('005000000000002AAA');
    expect(outcomes[1]!.result).toMatchObject({ whoType: 'Contact', recordCreated: false });
    expect(outcomes[2]!.result).toMatchObject({ whoType: 'Lead', recordCreated: false });
    expect([...sf.tasks.values()].map((t) => t.Status).sort()).toEqual([...Array(5).fill('Completed'), ...Array(5).fill('Not Started')]);
  });

  it('stores social-only people as Leads with the profile URL and finds them again by any variant', async () => {
    // Setup
    const social = (profileUrl: string) =>
      crmEvent({
        eventType: 'CONNECTION_REQUEST_SENT',
        platform: 'heyreach',
        email: null,
        identity: profileUrl,
        profileUrl,
        company: null,
        companyDomain: null,
        lastName: null,
        subject: null,
      });
    const salesforce = connector('SALESFORCE', credentials(), salesforceConfig(sf));

    // Action
    const first = await salesforce.write(recorder(social('https://www.linkedin.com/in/jane-doe'), { ...NO_OPTIONS, crmObjectType: 'Contact' }).run);
    const second = await salesforce.write(recorder(social('http://linkedin.com/in/jane-doe/'), NO_OPTIONS).run);

    // Assertions
    expect(first.result).toMatchObject({ whoType: 'Lead', recordCreated: true });
    expect(sf.leads.get(String(first.result.whoId))).toMatchObject({
      Website: 'https://www.linkedin.com/in/jane-doe',
      LastName: '[not provided]',
      Company: '[not provided]',
    });
    expect(second.result).toMatchObject({ whoId: first.result.whoId, recordCreated: false });
    expect(sf.contacts.size).toBe(0);
    expect(sf.tasksOf(String(first.result.whoId)).map((t) => t.TaskSubtype)).toEqual(['Task', 'Task']);
  });

  it('never puts credentials in thrown errors, even when the CRM echoes them', async () => {
    sf.failNext(1, { status: 400, body: [{ errorCode: 'INVALID_FIELD', message: 'session sf-access-initial refused, secret sf-consumer-secret' }] });

    const error = await thrown(connector('SALESFORCE', credentials(), salesforceConfig(sf)).write(recorder(crmEvent(), NO_OPTIONS).run));

    const everything = `${error.message} ${error.stack ?? ''} ${JSON.stringify(error.payload)}`;
    for (const secret of ['sf-access-initial', 'sf-refresh-initial', 'sf-consumer-secret']) expect(everything).not.toContain(secret);
    expect(error.kind).toBe('rejected');
  });
});
