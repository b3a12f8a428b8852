/**
 * Close as a block list source (issue 32): the real worker reads a Close organisation's 5,000 unsubscribed
 * emails (paged) and a Smart View's contacts from the Close emulator and pushes them to Smartlead and
 * Instantly (emulators, real HTTP), normalised and deduplicated.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { seedFixture, type SeedResult } from '../../src/admin/seed.js';
import { startCloseEmulator, type CloseEmulator } from '../../src/emulators/close.js';
import { startSequencerEmulator, type SequencerEmulator } from '../../src/emulators/sequencer.js';
import { TEST_ENCRYPTION_KEY } from '../support/database.js';
import { apiGet } from '../support/rest.js';
import { useTestServer } from '../support/server.js';
import { eventually, startTestWorker } from '../support/worker.js';

const ctx = useTestServer();
const READER = 'svcapi_closeBlocklistReader0000001';
const SEQ = { smartlead: 'close-blocklist-smartlead', instantly: 'close-blocklist-instantly' };
const CLOSE_KEY = 'close-blocklist-key';
const UNSUBSCRIBED = 5_000;

let close: CloseEmulator;
let sequencer: SequencerEmulator;
let worker: { stop(): Promise<void> };
let seeded: SeedResult;

beforeAll(async () => {
  close = await startCloseEmulator({ apiKeys: [CLOSE_KEY] });
  for (let i = 0; i < UNSUBSCRIBED; i++) close.unsubscribed.set(`gone-${i}@unsub${i % 50}.test`, new Date().toISOString());
  // A Smart View of two contacts, one of them with its address in capitals.
  close.contacts.set('cont_view1', {
    id: 'cont_view1',
    lead_id: 'lead_v',
    name: 'A',
    emails: [{ email: 'Ann@Customer.TEST', type: 'office', is_unsubscribed: false }],
    urls: [],
    date_created: '',
  });
  close.contacts.set('cont_view2', {
    id: 'cont_view2',
    lead_id: 'lead_v',
    name: 'B',
    emails: [{ email: 'bob@partner.test', type: 'office', is_unsubscribed: false }],
    urls: [],
    date_created: '',
  });
  close.smartViews.set('save_customers', { id: 'save_customers', name: 'Customers', contactIds: new Set(['cont_view1', 'cont_view2']) });
  sequencer = await startSequencerEmulator({ smartleadKeys: [SEQ.smartlead], instantlyKeys: [SEQ.instantly] });
  seeded = await seedFixture(
    ctx.db.prisma,
    {
      accounts: [
        {
          ref: 'close-blocking',
          capabilities: { canUseApi: true, canUserAccount: true, canBlockList: true, canUseWebhooks: true },
          connections: [
            {
              ref: 'close',
              crm: 'CLOSE',
              credentials: { apiKey: CLOSE_KEY },
              blocklists: [
                {
                  ref: 'unsubscribed',
                  listName: 'Close unsubscribed',
                  platform: 'smartlead',
                  blockType: 'ADDRESS',
                  crmSource: {},
                  sequencer: { apiKey: SEQ.smartlead },
                },
                {
                  ref: 'customers',
                  listName: 'Close customers',
                  platform: 'instantly',
                  blockType: 'DOMAIN',
                  crmSource: { smartViewId: 'save_customers' },
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
    { urls: { CLOSE: close.url } },
    { blocklists: { pushUrls: { smartlead: sequencer.url, instantly: sequencer.url } } },
  );
}, 60_000);

afterAll(async () => {
  await worker?.stop();
  await Promise.all([close?.close(), sequencer?.close()]);
});

describe('a Close block list', () => {
  it("pushes the organization's 5,000 unsubscribed emails to Smartlead, and a Smart View's domains to Instantly", async () => {
    await ctx.db.query(`SELECT graphile_worker_loops.add_job('blocklists__schedule', '{}'::json)`);
    const ids = [seeded.blocklists.unsubscribed!, seeded.blocklists.customers!];

    const synced = await eventually(
      async () => {
        const res = await apiGet(ctx.server.baseUrl, '/blocklists', READER);
        const now = (res.body.blocklists as Array<{ id: number; status: string; pendingCount: number; entryCount?: number }>).filter((l) => ids.includes(l.id));
        return now.length === 2 && now.every((l) => l.status === 'SYNCED' && l.pendingCount === 0) ? now : undefined;
      },
      90_000,
      'both Close block lists SYNCED',
    );

    expect(synced).toHaveLength(2);
    const pushed = sequencer.smartlead(SEQ.smartlead).values;
    expect(pushed.size).toBe(UNSUBSCRIBED);
    expect(pushed.has('gone-4999@unsub49.test')).toBe(true);
    expect([...sequencer.instantly(SEQ.instantly).values].sort()).toEqual(['customer.test', 'partner.test']);
    // Read a hundred at a time.
    expect(close.apiRequests().filter((r) => r.path === '/api/v1/unsubscribe/email/')).toHaveLength(UNSUBSCRIBED / 100);
  }, 120_000);
});
