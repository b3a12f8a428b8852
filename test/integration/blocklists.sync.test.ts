/**
 * Block list sync end to end (issue 16): the real worker fetches each list from a CRM emulator (HubSpot
 * list memberships and batch reads; Salesforce SOQL paging), normalises and deduplicates the values, and
 * pushes them to a sequencer emulator (Smartlead with its client, Instantly in calls of at most 1,000),
 * each CRM x sequencer pair; a seeded CREATED list starts at the every-minute schedule's run; an
 * incremental round pushes only new entries; pause and resync answer as the spec says; a refused value
 * is recorded on its entry; a CRM error is recorded on the list and shows in the account status.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { seedFixture, type SeedResult } from '../../src/admin/seed.js';
import { startHubspotEmulator, type HubspotEmulator } from '../../src/emulators/hubspot.js';
import { startSalesforceEmulator, type SalesforceEmulator } from '../../src/emulators/salesforce.js';
import { startSequencerEmulator, type SequencerEmulator } from '../../src/emulators/sequencer.js';
import { TEST_ENCRYPTION_KEY } from '../support/database.js';
import { apiFetch } from '../support/openapi.js';
import { apiGet } from '../support/rest.js';
import { useTestServer } from '../support/server.js';
import { eventually, startTestWorker } from '../support/worker.js';

const ctx = useTestServer();
const KEYS = { writer: 'svcapi_blocklistSyncWriter000000001', reader: 'svcapi_blocklistSyncReader000000001' };
const SEQ = { smartlead: 'smartlead-blocklist-key', instantly: 'instantly-blocklist-key' };
const HUBSPOT_TOKEN = 'blocklist-hubspot-token';

let hubspot: HubspotEmulator;
let salesforce: SalesforceEmulator;
let sequencer: SequencerEmulator;
let worker: { stop(): Promise<void> };
let seeded: SeedResult;
const lists: Record<string, string> = {};

const DOMAINS = ['https://www.Acme.test/about', 'beta.test', 'ceo@gamma.test', 'www.beta.test', 'not a domain', ''];
const ADDRESSES = [' Ann@Acme.TEST ', 'bob@beta.test', 'ann@acme.test', 'nobody', 'cy@gamma.test'];

beforeAll(async () => {
  hubspot = await startHubspotEmulator({ accessToken: HUBSPOT_TOKEN });
  salesforce = await startSalesforceEmulator({ accessToken: 'blocklist-sf-token', queryBatchSize: 2 });
  sequencer = await startSequencerEmulator({ smartleadKeys: [SEQ.smartlead], instantlyKeys: [SEQ.instantly] });
  lists.hubspotDomains = hubspot.addList({ name: 'Customers', objectType: 'companies', values: DOMAINS });
  lists.hubspotAddresses = hubspot.addList({ name: 'Unsubscribed', objectType: 'contacts', values: ADDRESSES });
  salesforce.addRecords('Contact', [
    { Email: 'Opted.Out@Delta.test', HasOptedOutOfEmail: true },
    { Email: 'still.in@delta.test', HasOptedOutOfEmail: false },
    { Email: 'gone@epsilon.test', HasOptedOutOfEmail: true },
    { Email: 'again@delta.test', HasOptedOutOfEmail: true },
  ]);
  seeded = await seedFixture(ctx.db.prisma, fixture(), TEST_ENCRYPTION_KEY);
  worker = await startTestWorker(
    ctx.db.url,
    { urls: { HUBSPOT: hubspot.url, SALESFORCE: salesforce.loginUrl } },
    { blocklists: { pushUrls: { smartlead: sequencer.url, instantly: sequencer.url } } },
  );
}, 60_000);

afterAll(async () => {
  await worker?.stop();
  await Promise.all([hubspot?.close(), salesforce?.close(), sequencer?.close()]);
});

function fixture() {
  const list = (ref: string, platform: 'smartlead' | 'instantly', blockType: 'ADDRESS' | 'DOMAIN', crmSource: unknown) => ({
    ref,
    listName: ref,
    platform,
    blockType,
    crmSource,
    sequencer: platform === 'smartlead' ? { apiKey: SEQ.smartlead, clientId: '77' } : { apiKey: SEQ.instantly },
  });
  return {
    accounts: [
      {
        ref: 'blocking',
        capabilities: { canUseApi: true, canUserAccount: true, canBlockList: true, canUseWebhooks: true },
        connections: [
          {
            ref: 'hubspot',
            crm: 'HUBSPOT',
            credentials: { accessToken: HUBSPOT_TOKEN },
            blocklists: [
              list('hs-domains-smartlead', 'smartlead', 'DOMAIN', { listId: lists.hubspotDomains }),
              list('hs-addresses-instantly', 'instantly', 'ADDRESS', { listId: lists.hubspotAddresses }),
            ],
          },
          {
            ref: 'salesforce',
            crm: 'SALESFORCE',
            credentials: { instanceUrl: salesforce.instanceUrl, accessToken: 'blocklist-sf-token' },
            blocklists: [
              list('sf-addresses-smartlead', 'smartlead', 'ADDRESS', { object: 'Contact' }),
              list('sf-domains-instantly', 'instantly', 'DOMAIN', { object: 'Contact' }),
            ],
          },
        ],
        apiKeys: [
          { name: 'writer', key: KEYS.writer, scopes: ['read', 'write'] },
          { name: 'reader', key: KEYS.reader },
        ],
      },
    ],
  };
}

const id = (ref: string) => seeded.blocklists[ref]!;

async function listsNow(): Promise<Array<Record<string, unknown> & { id: number }>> {
  const res = await apiGet(ctx.server.baseUrl, '/blocklists', KEYS.reader);
  expect(res.status).toBe(200);
  return res.body.blocklists;
}

function settled(ids: number[], ms = 75_000) {
  return eventually(
    async () => {
      const now = (await listsNow()).filter((l) => ids.includes(l.id));
      return now.every((l) => l.status === 'SYNCED' && l.pendingCount === 0) ? now : undefined;
    },
    ms,
    `block lists ${ids.join(', ')} SYNCED`,
  );
}

const post = (path: string, key: string) => apiFetch(`${ctx.server.baseUrl}/api/v1${path}`, { method: 'POST', headers: { authorization: `Bearer ${key}` } });

describe('block list sync', () => {
  it('fetches each seeded CREATED list at the schedule and pushes it to its sequencer, for every CRM x sequencer pair', async () => {
    // The worker runs the schedule every minute (graphile-worker knows its crontab item); the test runs it
    // once now, as the minute would, rather than wait up to a minute for it.
    const [cron] = await ctx.db.query<{ identifier: string }>(
      `SELECT identifier FROM graphile_worker_loops._private_known_crontabs WHERE identifier = 'blocklists-schedule'`,
    );
    expect(cron).toBeDefined();
    await ctx.db.query(`SELECT graphile_worker_loops.add_job('blocklists__schedule', '{}'::json)`);
    const all = ['hs-domains-smartlead', 'hs-addresses-instantly', 'sf-addresses-smartlead', 'sf-domains-instantly'].map(id);
    const synced = await settled(all);
    for (const l of synced) expect(l).toMatchObject({ isEnabled: true, lastError: null, lastFetchedAt: expect.any(String) });

    // Normalised (lowercased, trimmed, registrable domain, www. and scheme gone) and deduplicated; invalid values dropped.
    expect([...sequencer.smartlead(SEQ.smartlead).values].sort()).toEqual(
      ['acme.test', 'beta.test', 'gamma.test', 'again@delta.test', 'gone@epsilon.test', 'opted.out@delta.test'].sort(),
    );
    expect([...sequencer.instantly(SEQ.instantly).values].sort()).toEqual(
      ['ann@acme.test', 'bob@beta.test', 'cy@gamma.test', 'delta.test', 'epsilon.test'].sort(),
    );
    expect(sequencer.smartlead(SEQ.smartlead).duplicates + sequencer.instantly(SEQ.instantly).duplicates).toBe(0);
    expect(synced.find((l) => l.id === id('hs-domains-smartlead'))).toMatchObject({ syncedCount: 3, pendingCount: 0 });
    // Smartlead gets the list's client; Salesforce was read page by page (2 records per batch).
    expect(sequencer.requests.filter((r) => r.vendor === 'smartlead' && r.method === 'POST').every((r) => r.status === 200)).toBe(true);
    expect(salesforce.requests.filter((r) => r.path.includes('/query/')).length).toBeGreaterThan(0);
  }, 90_000);

  it('pushes only the new entries in an incremental round', async () => {
    hubspot.addToList(lists.hubspotAddresses!, ['dee@delta.test', 'bob@beta.test']);
    const before = sequencer.instantly(SEQ.instantly).received.length;
    await queueRound(id('hs-addresses-instantly'), 'incremental');
    await eventually(() => Promise.resolve(sequencer.instantly(SEQ.instantly).values.has('dee@delta.test') ? true : undefined), 20_000, 'dee pushed');
    await settled([id('hs-addresses-instantly')], 20_000);
    expect(sequencer.instantly(SEQ.instantly).received.slice(before)).toEqual(['dee@delta.test']);
  }, 30_000);

  it("waits out the sequencer's 429 for its Retry-After, then pushes", async () => {
    sequencer.failNext(1, { status: 429, retryAfter: 2, path: /bulk-create/ });
    hubspot.addToList(lists.hubspotAddresses!, ['later@delta.test']);
    await queueRound(id('hs-addresses-instantly'), 'incremental');
    await eventually(() => Promise.resolve(sequencer.instantly(SEQ.instantly).values.has('later@delta.test') ? true : undefined), 20_000, 'later pushed');
    const calls = sequencer.requests.filter((r) => r.vendor === 'instantly' && r.path.endsWith('bulk-create'));
    const refused = calls.findLast((r) => r.status === 429)!;
    const next = calls.find((r) => r.at > refused.at)!;
    expect(next.status).toBe(200);
    expect(next.at - refused.at).toBeGreaterThanOrEqual(1_900);
  }, 30_000);

  it('records a value the sequencer refuses on its entry, and pushes the rest', async () => {
    const plausible = sequencer.rejects;
    sequencer.rejects = (value) => value === 'refused@delta.test';
    try {
      hubspot.addToList(lists.hubspotAddresses!, ['refused@delta.test', 'fine@delta.test']);
      await queueRound(id('hs-addresses-instantly'), 'incremental');
      await eventually(() => Promise.resolve(sequencer.instantly(SEQ.instantly).values.has('fine@delta.test') ? true : undefined), 20_000, 'fine pushed');
      await settled([id('hs-addresses-instantly')], 20_000);
      const [entry] = await ctx.db.query<{ push_error: string | null; pushed_at: Date | null }>(
        "SELECT push_error, pushed_at FROM blocklist_entries WHERE value = 'refused@delta.test'",
      );
      expect(entry).toMatchObject({ pushed_at: null, push_error: expect.stringContaining('Instantly answered 400') });
    } finally {
      sequencer.rejects = plausible;
    }
  }, 30_000);

  it('pauses (write scope first) and resyncs, with exactly one of concurrent resyncs winning', async () => {
    const list = id('hs-domains-smartlead');
    expect((await post('/blocklists/999999/pause', KEYS.reader)).body).toMatchObject({ statusCode: 403, message: 'API key requires the "write" scope' });
    expect((await post('/blocklists/999999/pause', KEYS.writer)).body).toMatchObject({ statusCode: 404, message: 'Blocklist 999999 not found' });
    const paused = await post(`/blocklists/${list}/pause`, KEYS.writer);
    expect(paused.body).toEqual({ id: list, isEnabled: false, status: 'SYNCED' });
    expect((await post(`/blocklists/${list}/pause`, KEYS.writer)).body).toEqual(paused.body);

    hubspot.addToList(lists.hubspotDomains!, ['zeta.test']);
    const answers = await Promise.all([1, 2, 3].map(() => post(`/blocklists/${list}/resync`, KEYS.writer)));
    const won = answers.filter((a) => a.status === 200);
    expect(won.map((a) => a.body)).toEqual([{ id: list, queued: true, isEnabled: true, status: 'FETCHING' }]);
    for (const lost of answers.filter((a) => a.status !== 200))
      expect(lost.body).toMatchObject({ statusCode: 409, message: 'Blocklist resync already in progress' });

    await settled([list], 20_000);
    expect(sequencer.smartlead(SEQ.smartlead).values.has('zeta.test')).toBe(true);
    // A full reload pushed nothing already pushed.
    expect(sequencer.smartlead(SEQ.smartlead).duplicates).toBe(0);
  }, 30_000);

  it('stops pushing when paused, and a resync finishes the list', async () => {
    const list = id('hs-addresses-instantly');
    hubspot.addToList(
      lists.hubspotAddresses!,
      Array.from({ length: 3_000 }, (_, i) => `paused${i}@omega.test`),
    );
    sequencer.slow(300, /bulk-create/);
    try {
      const before = sequencer.instantly(SEQ.instantly).received.length;
      await queueRound(list, 'incremental');
      await eventually(() => Promise.resolve(sequencer.instantly(SEQ.instantly).received.length > before ? true : undefined), 20_000, 'a first call');
      expect((await post(`/blocklists/${list}/pause`, KEYS.writer)).body).toMatchObject({ isEnabled: false });
      // The call in flight at the pause may land; no other starts.
      await new Promise((resolve) => setTimeout(resolve, 1_500));
      const atPause = sequencer.instantly(SEQ.instantly).received.length;
      expect(atPause - before).toBeLessThanOrEqual(2_000);
      await new Promise((resolve) => setTimeout(resolve, 1_000));
      expect(sequencer.instantly(SEQ.instantly).received.length).toBe(atPause);
      expect((await listsNow()).find((l) => l.id === list)).toMatchObject({ isEnabled: false, pendingCount: expect.any(Number) });
    } finally {
      sequencer.slow(0);
    }
    expect((await post(`/blocklists/${list}/resync`, KEYS.writer)).status).toBe(200);
    await eventually(() => Promise.resolve(sequencer.instantly(SEQ.instantly).values.has('paused2999@omega.test') ? true : undefined), 20_000, 'all pushed');
    await settled([list], 20_000);
    expect(sequencer.instantly(SEQ.instantly).duplicates).toBe(0);
  }, 45_000);

  it('records a CRM error on the list and in the account status, and the next round clears it', async () => {
    const list = id('hs-addresses-instantly');
    hubspot.failNext(1, { status: 400, path: /\/crm\/lists\/2026-03\// });
    await queueRound(list, 'incremental');
    const failed = await eventually(async () => (await listsNow()).find((l) => l.id === list && l.lastError !== null), 20_000, 'lastError');
    expect(failed).toMatchObject({ status: 'SYNCED', lastAttemptedAt: expect.any(String) });
    const status = await apiGet(ctx.server.baseUrl, '/account/status', KEYS.reader);
    const hubspotStatus = status.body.connections.find((c: { crm: string }) => c.crm === 'HUBSPOT');
    expect(hubspotStatus.blocklists).toMatchObject({ status: 'error', lastError: expect.any(String) });

    await queueRound(list, 'incremental');
    await eventually(async () => ((await listsNow()).find((l) => l.id === list)?.lastError === null ? true : undefined), 20_000, 'error cleared');
  }, 45_000);
});

/** Queues a round of the list as the schedule does, without waiting for the next minute. */
async function queueRound(blocklistId: number, kind: 'full' | 'incremental'): Promise<void> {
  await ctx.db.query(
    `SELECT graphile_worker_loops.add_job('blocklists__fetch', json_build_object('blocklistId', $1::int, 'kind', $2::text),
       queue_name => 'blocklist:' || $1, job_key => 'blocklist-fetch:' || $1)`,
    [blocklistId, kind],
  );
}
