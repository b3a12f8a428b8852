/**
 * The emulators' block list additions over real HTTP: HubSpot lists (memberships paging, batch read),
 * Salesforce query paging by nextRecordsUrl, and the sequencers' block-list APIs (Smartlead and
 * Instantly on one server). Block list sync tests and benches rely on these behaviours.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { startHubspotEmulator } from '../../src/emulators/hubspot.js';
import { startSalesforceEmulator } from '../../src/emulators/salesforce.js';
import { startSequencerEmulator } from '../../src/emulators/sequencer.js';
import { call, emulatorTracker } from '../support/emulator-calls.js';

const { track, closeAll } = emulatorTracker();

afterEach(closeAll);

describe('HubSpot emulator lists', () => {
  const auth = { authorization: 'Bearer hs-access-initial' };

  it('pages a list of contacts by `after`, the last page without `paging`, and sees members added later', async () => {
    const hs = await track(startHubspotEmulator());
    const listId = hs.addList({
      name: 'Do not contact',
      objectType: 'contacts',
      values: ['a@acme.test', ' Ann@Example.COM ', 'not an email', '', 'a@acme.test'],
    });

    const list = await call(`${hs.url}/crm/lists/2026-03/${listId}`, { headers: auth });
    expect(list.status).toBe(200);
    expect(list.body.list).toEqual({ listId, name: 'Do not contact', objectTypeId: '0-1', processingType: 'MANUAL', size: 4 });

    const pages: Array<{ results: Array<{ recordId: string }>; paging?: { next: { after: string } } }> = [];
    let after: string | undefined;
    do {
      const page = await call(`${hs.url}/crm/lists/2026-03/${listId}/memberships?limit=3${after ? `&after=${after}` : ''}`, { headers: auth });
      expect(page.status).toBe(200);
      pages.push(page.body);
      after = page.body.paging?.next?.after;
    } while (after !== undefined);
    expect(pages.map((p) => p.results.length)).toEqual([3, 1]);
    expect(pages[1]).not.toHaveProperty('paging');
    expect(pages[0]!.results[0]).toEqual({ recordId: expect.any(String), membershipTimestamp: expect.stringMatching(/^\d{4}-\d{2}-\d{2}T/) });
    // Values are stored as given; the empty one makes a contact without an email.
    const emails = pages.flatMap((p) => p.results).map((m) => hs.contacts.get(m.recordId)?.properties.email);
    expect(emails).toEqual(['a@acme.test', ' Ann@Example.COM ', 'not an email', undefined]);

    hs.addToList(listId, ['a@acme.test', 'new@acme.test']);
    const again = await call(`${hs.url}/crm/lists/2026-03/${listId}/memberships?limit=250`, { headers: auth });
    expect(again.body.results).toHaveLength(5);
    expect(again.body).not.toHaveProperty('paging');

    expect((await call(`${hs.url}/crm/lists/2026-03/${listId}/memberships?limit=251`, { headers: auth })).body.category).toBe('VALIDATION_ERROR');
    const unknown = await call(`${hs.url}/crm/lists/2026-03/999/memberships`, { headers: auth });
    expect(unknown.status).toBe(404);
    expect(unknown.body).toMatchObject({ status: 'error', category: 'OBJECT_NOT_FOUND' });
    expect((await call(`${hs.url}/crm/lists/2026-03/${listId}`)).status).toBe(401);
    expect(hs.requests.at(-1)).toMatchObject({ method: 'GET', path: `/crm/lists/2026-03/${listId}`, status: 401 });
  });

  it('batch reads companies, answering 207 with the ids not found', async () => {
    const hs = await track(startHubspotEmulator());
    const first = hs.addList({ name: 'Competitors', objectType: 'companies', values: ['https://www.acme.test/path', 'rival.test'] });
    // The same domain in another list is the same company.
    const second = hs.addList({ name: 'Partners', objectType: 'companies', values: ['rival.test'] });
    expect(hs.companies.size).toBe(2);
    expect((await call(`${hs.url}/crm/lists/2026-03/${second}`, { headers: auth })).body.list.objectTypeId).toBe('0-2');
    const ids = [...hs.lists.get(first)!.memberIds];

    const partial = await call(`${hs.url}/crm/objects/2026-03/companies/batch/read`, {
      headers: auth,
      json: { inputs: [...ids, '424242'].map((id) => ({ id })), properties: ['domain'] },
    });
    expect(partial.status).toBe(207);
    expect(partial.body.results.map((r: { id: string; properties: Record<string, string> }) => [r.id, r.properties.domain, r.properties.hs_object_id])).toEqual(
      [
        [ids[0], 'https://www.acme.test/path', ids[0]],
        [ids[1], 'rival.test', ids[1]],
      ],
    );
    expect(partial.body.errors).toEqual([{ status: 'error', category: 'OBJECT_NOT_FOUND', message: expect.any(String), context: { ids: ['424242'] } }]);

    const complete = await call(`${hs.url}/crm/objects/2026-03/companies/batch/read`, {
      headers: auth,
      json: { inputs: [{ id: ids[0] }], properties: ['domain'] },
    });
    expect(complete.status).toBe(200);
    expect(complete.body).toMatchObject({ status: 'COMPLETE', results: [{ id: ids[0], archived: false }] });
    expect(complete.body).not.toHaveProperty('errors');

    const tooMany = Array.from({ length: 101 }, (_, i) => ({ id: String(i) }));
    const refused = await call(`${hs.url}/crm/objects/2026-03/contacts/batch/read`, { headers: auth, json: { inputs: tooMany, properties: ['email'] } });
    expect(refused.status).toBe(400);
    expect(refused.body.category).toBe('VALIDATION_ERROR');
  });
});

describe('Salesforce emulator query paging', () => {
  it('pages a block list query by nextRecordsUrl across three batches', async () => {
    const sf = await track(startSalesforceEmulator({ queryBatchSize: 2 }));
    sf.addRecords('Contact', [
      ...Array.from({ length: 5 }, (_, i) => ({ LastName: `Out ${i}`, Email: `out${i}@acme.test`, HasOptedOutOfEmail: true })),
      { LastName: 'In', Email: 'in@acme.test' },
    ]);
    const auth = { authorization: 'Bearer sf-access-initial' };
    const soql = 'SELECT Id, Email FROM Contact WHERE HasOptedOutOfEmail = true';

    const batches: Array<{ totalSize: number; done: boolean; nextRecordsUrl?: string; records: Array<{ Email: string }> }> = [];
    let next: string | undefined = `/services/data/v62.0/query?q=${encodeURIComponent(soql)}`;
    while (next !== undefined) {
      const answer = await call(`${sf.instanceUrl}${next}`, { headers: auth });
      expect(answer.status).toBe(200);
      batches.push(answer.body);
      next = answer.body.done ? undefined : answer.body.nextRecordsUrl;
    }
    expect(batches.map((b) => [b.totalSize, b.done, b.records.length])).toEqual([
      [5, false, 2],
      [5, false, 2],
      [5, true, 1],
    ]);
    expect(batches[0]!.nextRecordsUrl).toMatch(/^\/services\/data\/v62\.0\/query\/\w+-2$/);
    expect(batches[2]).not.toHaveProperty('nextRecordsUrl');
    expect(batches.flatMap((b) => b.records.map((r) => r.Email))).toEqual([
      'out0@acme.test',
      'out1@acme.test',
      'out2@acme.test',
      'out3@acme.test',
      'out4@acme.test',
    ]);
    // A retried page is served again; a made-up locator is not.
    expect((await call(`${sf.instanceUrl}${batches[0]!.nextRecordsUrl}`, { headers: auth })).body.records).toHaveLength(2);
    const bad = await call(`${sf.instanceUrl}/services/data/v62.0/query/01gNOPE-2`, { headers: auth });
    expect(bad.status).toBe(400);
    expect(bad.body[0].errorCode).toBe('INVALID_QUERY_LOCATOR');
    expect(sf.requests.filter((r) => r.path.startsWith('/services/data/v62.0/query/')).map((r) => r.status)).toEqual([200, 200, 200, 400]);

    sf.seed('Lead', { LastName: 'L', Company: 'C', Email: 'lead@acme.test', HasOptedOutOfEmail: true });
    sf.addRecords('Account', [
      { Name: 'Acme', Website: 'https://acme.test', Do_Not_Contact__c: true },
      { Name: 'Other', Website: 'other.test' },
    ]);
    const leads = await call(
      `${sf.instanceUrl}/services/data/v62.0/query?q=${encodeURIComponent('SELECT Id, Email FROM Lead WHERE HasOptedOutOfEmail = true')}`,
      {
        headers: auth,
      },
    );
    expect(leads.body).toMatchObject({ totalSize: 1, done: true, records: [{ Email: 'lead@acme.test' }] });
    const accounts = await call(
      `${sf.instanceUrl}/services/data/v62.0/query?q=${encodeURIComponent('SELECT Id, Website FROM Account WHERE Do_Not_Contact__c = true')}`,
      {
        headers: auth,
      },
    );
    expect(accounts.body).toMatchObject({ totalSize: 1, done: true, records: [{ Website: 'https://acme.test' }] });
    const kept = await call(`${sf.instanceUrl}/services/data/v62.0/query?q=${encodeURIComponent('SELECT Id FROM Account WHERE Do_Not_Contact__c = false')}`, {
      headers: auth,
    });
    expect(kept.body.totalSize).toBe(1);
  });
});

describe('Sequencer emulator', () => {
  it('Smartlead: adds to a set, lists with filters, refuses unknown keys and a call with a rejected value', async () => {
    const seq = await track(startSequencerEmulator({ smartleadKeys: ['sl-key'] }));
    const add = (json: unknown, key = 'sl-key') => call(`${seq.url}/api/v1/leads/add-domain-block-list?api_key=${key}`, { json });

    expect((await add({ domain_block_list: ['acme.test', 'ceo@rival.test'], client_id: 7 })).status).toBe(200);
    expect((await add({ domain_block_list: ['acme.test', 'new.test'] })).status).toBe(200);
    const list = seq.smartlead('sl-key');
    expect([...list.values]).toEqual(['acme.test', 'ceo@rival.test', 'new.test']);
    expect(list.received).toEqual(['acme.test', 'ceo@rival.test', 'acme.test', 'new.test']);
    expect([list.distinct, list.duplicates]).toEqual([3, 1]);

    const all = await call(`${seq.url}/api/v1/leads/get-domain-block-list?api_key=sl-key&offset=0&limit=100`);
    expect(all.body).toEqual([
      { id: expect.any(Number), email_or_domain: 'acme.test', created_at: expect.any(String), source: 'api', client_id: 7 },
      { id: expect.any(Number), email_or_domain: 'ceo@rival.test', created_at: expect.any(String), source: 'api', client_id: 7 },
      { id: expect.any(Number), email_or_domain: 'new.test', created_at: expect.any(String), source: 'api', client_id: null },
    ]);
    const filtered = await call(
      `${seq.url}/api/v1/leads/get-domain-block-list?api_key=sl-key&filter_client_id=7&filter_email_or_domain=RIVAL&offset=0&limit=1`,
    );
    expect(filtered.body.map((e: { email_or_domain: string }) => e.email_or_domain)).toEqual(['ceo@rival.test']);
    expect((await call(`${seq.url}/api/v1/leads/get-domain-block-list?api_key=sl-key&limit=1001`)).status).toBe(400);

    const unknown = await add({ domain_block_list: ['x.test'] }, 'wrong');
    expect(unknown.status).toBe(401);
    expect(unknown.body).toEqual({ error: expect.any(String) });

    const refused = await add({ domain_block_list: ['ok.test', 'https://www.acme.test/path'] });
    expect(refused.status).toBe(400);
    expect(refused.body.error).toContain('https://www.acme.test/path');
    expect(list.values.has('ok.test')).toBe(false);
    expect(list.rejected).toEqual(['ok.test', 'https://www.acme.test/path']);
    expect(seq.requests.map((r) => [r.vendor, r.method, r.status, r.values])).toEqual([
      ['smartlead', 'POST', 200, 2],
      ['smartlead', 'POST', 200, 2],
      ['smartlead', 'GET', 200, 0],
      ['smartlead', 'GET', 200, 0],
      ['smartlead', 'GET', 400, 0],
      ['smartlead', 'POST', 401, 1],
      ['smartlead', 'POST', 400, 2],
    ]);
    expect(seq.requests[0]).toMatchObject({ path: '/api/v1/leads/add-domain-block-list', key: 'sl-key' });
  });

  it('Instantly: bulk-create answers only the entries created, refuses 1001 values, and injects 429 with Retry-After', async () => {
    const seq = await track(startSequencerEmulator({ instantlyKeys: ['in-key'] }));
    const auth = { authorization: 'Bearer in-key' };
    const bulk = (values: unknown[], headers = auth) => call(`${seq.url}/api/v2/block-lists-entries/bulk-create`, { headers, json: { bl_values: values } });

    const first = await bulk(['acme.test', 'ceo@rival.test']);
    expect(first.status).toBe(200);
    expect(first.body).toEqual([
      { id: expect.any(String), timestamp_created: expect.any(String), organization_id: expect.any(String), bl_value: 'acme.test', is_domain: true },
      { id: expect.any(String), timestamp_created: expect.any(String), organization_id: expect.any(String), bl_value: 'ceo@rival.test', is_domain: false },
    ]);
    const second = await bulk(['acme.test', 'new.test', 'new.test']);
    expect(second.body.map((e: { bl_value: string }) => e.bl_value)).toEqual(['new.test']);
    const single = await call(`${seq.url}/api/v2/block-lists-entries`, { headers: auth, json: { bl_value: 'acme.test' } });
    expect(single.body).toMatchObject({ id: first.body[0].id, bl_value: 'acme.test' });
    const list = seq.instantly('in-key');
    expect([list.values.size, list.received.length, list.distinct, list.duplicates]).toEqual([3, 6, 3, 3]);

    const tooMany = await bulk(Array.from({ length: 1001 }, (_, i) => `d${i}.test`));
    expect(tooMany.status).toBe(400);
    expect(tooMany.body).toMatchObject({ statusCode: 400, error: 'Bad Request' });
    const rejected = await bulk(['fine.test', 'not an email']);
    expect(rejected.status).toBe(400);
    expect(rejected.body.message).toContain('not an email');
    expect(list.values.has('fine.test')).toBe(false);
    expect((await bulk(['x.test'], { authorization: 'Bearer wrong' })).status).toBe(401);

    seq.failNext(1, { status: 429, retryAfter: 3, path: '/bulk-create' });
    const limited = await bulk(['later.test']);
    expect(limited.status).toBe(429);
    expect(limited.headers.get('retry-after')).toBe('3');
    expect(limited.body).toMatchObject({ statusCode: 429, error: 'Too Many Requests' });
    expect(list.values.has('later.test')).toBe(false);
    expect((await bulk(['later.test'])).status).toBe(200);
    expect(list.values.has('later.test')).toBe(true);
  });
});
