/**
 * Attio as a block list source (issue 32): the real worker reads an Attio list of 5,000 people (entries a page
 * of 500 at a time, then their addresses) and a list of companies from the Attio emulator and pushes them to
 * Smartlead and Instantly (emulators, real HTTP), normalised and deduplicated.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { seedFixture, type SeedResult } from '../../src/admin/seed.js';
import { startAttioEmulator, type AttioEmulator } from '../../src/emulators/attio.js';
import { startSequencerEmulator, type SequencerEmulator } from '../../src/emulators/sequencer.js';
import { TEST_ENCRYPTION_KEY } from '../support/database.js';
import { apiGet } from '../support/rest.js';
import { useTestServer } from '../support/server.js';
import { eventually, startTestWorker } from '../support/worker.js';

const ctx = useTestServer();
const READER = 'svcapi_attioBlocklistReader0000001';
const SEQ = { smartlead: 'attio-blocklist-smartlead', instantly: 'attio-blocklist-instantly' };
const ATTIO_TOKEN = 'attio-blocklist-token';
const PEOPLE = 5_000;

let attio: AttioEmulator;
const lists: Record<string, string> = {};
let sequencer: SequencerEmulator;
let worker: { stop(): Promise<void> };
let seeded: SeedResult;

beforeAll(async () => {
  attio = await startAttioEmulator({ tokens: [ATTIO_TOKEN] });
  const people = Array.from({ length: PEOPLE }, (_, i) => attio.seed('people', { email_addresses: [`Gone-${i}@Unsub${i % 50}.test`] }).id.record_id);
  lists.people = attio.addList({ name: 'Do not contact', slug: 'do-not-contact', parent: 'people', recordIds: people });
  const companies = ['https://www.customer.test', 'partner.test'].map((domain) => attio.seed('companies', { domains: [domain] }).id.record_id);
  attio.addList({ name: 'Customers', slug: 'customers', parent: 'companies', recordIds: companies });
  sequencer = await startSequencerEmulator({ smartleadKeys: [SEQ.smartlead], instantlyKeys: [SEQ.instantly] });
  seeded = await seedFixture(
    ctx.db.prisma,
    {
      accounts: [
        {
          ref: 'attio-blocking',
          capabilities: { canUseApi: true, canUserAccount: true, canBlockList: true, canUseWebhooks: true },
          connections: [
            {
              ref: 'attio',
              crm: 'ATTIO',
              credentials: { accessToken: ATTIO_TOKEN },
              blocklists: [
                {
                  ref: 'people',
                  listName: 'Attio do not contact',
                  platform: 'smartlead',
                  blockType: 'ADDRESS',
                  crmSource: { listId: lists.people },
                  sequencer: { apiKey: SEQ.smartlead },
                },
                {
                  ref: 'customers',
                  listName: 'Attio customers',
                  platform: 'instantly',
                  blockType: 'DOMAIN',
                  crmSource: { listId: 'customers' },
                  sequencer: { apiKey: SEQ.instantly },
                },
              ],
            },
          ],
          apiKeys: [{ name: 'reader', key: READER }],
        },
      ],
    },
    TEST_ENCRYPTION_KEY,
  );
  worker = await startTestWorker(
    ctx.db.url,
    { urls: { ATTIO: attio.url } },
    { blocklists: { pushUrls: { smartlead: sequencer.url, instantly: sequencer.url } } },
  );
}, 60_000);

afterAll(async () => {
  await worker?.stop();
  await Promise.all([attio?.close(), sequencer?.close()]);
});

describe('an Attio block list', () => {
  it("pushes a list of 5,000 people's addresses to Smartlead, and a list of companies' domains to Instantly", async () => {
    await ctx.db.query(`SELECT graphile_worker_loops.add_job('blocklists__schedule', '{}'::json)`);
    const ids = [seeded.blocklists.people!, seeded.blocklists.customers!];

    const synced = await eventually(
      async () => {
        const res = await apiGet(ctx.server.baseUrl, '/blocklists', READER);
        const now = (res.body.blocklists as Array<{ id: number; status: string; pendingCount: number; entryCount?: number }>).filter((l) => ids.includes(l.id));
        return now.length === 2 && now.every((l) => l.status === 'SYNCED' && l.pendingCount === 0) ? now : undefined;
      },
      90_000,
      'both Attio block lists SYNCED',
    );

    expect(synced).toHaveLength(2);
    const pushed = sequencer.smartlead(SEQ.smartlead).values;
    expect(pushed.size).toBe(PEOPLE);
    expect(pushed.has('gone-4999@unsub49.test')).toBe(true);
    expect([...sequencer.instantly(SEQ.instantly).values].sort()).toEqual(['customer.test', 'partner.test']);
    // Entries 500 at a time, each page's people in one query.
    expect(attio.apiRequests().filter((r) => r.path.endsWith('/entries/query'))).toHaveLength(PEOPLE / 500 + 1 + 1);
  }, 120_000);
});
