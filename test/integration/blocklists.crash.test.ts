/**
 * A worker process killed (SIGKILL) while it pushes a block list: another worker resumes from the entries
 * not yet marked pushed, so every value reaches the sequencer, and no value is sent again except those of
 * the one call in flight at the kill (at most one call of 1,000: each call's entries are marked pushed as
 * soon as the sequencer accepts it).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { seedFixture, type SeedResult } from '../../src/admin/seed.js';
import { PUSH_BATCH } from '../../src/connectors/sequencers/instantly/blocklist-push.js';
import { startHubspotEmulator, type HubspotEmulator } from '../../src/emulators/hubspot.js';
import { startSequencerEmulator, type SequencerEmulator } from '../../src/emulators/sequencer.js';
import { TEST_ENCRYPTION_KEY } from '../support/database.js';
import { useTestServer } from '../support/server.js';
import { killPoint } from '../support/kill-point.js';
import { startService } from '../support/service-process.js';
import { eventually, startTestWorker } from '../support/worker.js';

const ctx = useTestServer();
const ENTRIES = 6_000;
const KEY = 'crash-instantly-key';
const FETCH_KEY = 'crash-instantly-fetch-key';
let hubspot: HubspotEmulator;
let sequencer: SequencerEmulator;
let seeded: SeedResult;
/** The HubSpot list the second test's block list reads. */
let fetchedListId: string;

beforeAll(async () => {
  hubspot = await startHubspotEmulator({ accessToken: 'crash-blocklist-token' });
  sequencer = await startSequencerEmulator({ instantlyKeys: [KEY, FETCH_KEY] });
  const listId = hubspot.addList({
    name: 'Do not contact',
    objectType: 'contacts',
    values: Array.from({ length: ENTRIES }, (_, i) => `person${i}@blocked.test`),
  });
  fetchedListId = hubspot.addList({
    name: 'Do not contact either',
    objectType: 'contacts',
    values: Array.from({ length: ENTRIES }, (_, i) => `other${i}@blocked.test`),
  });
  seeded = await seedFixture(
    ctx.db.prisma,
    {
      accounts: [
        {
          ref: 'crash',
          connections: [
            {
              ref: 'hubspot',
              crm: 'HUBSPOT',
              credentials: { accessToken: 'crash-blocklist-token' },
              blocklists: [
                // Paused until the test starts it: the killed worker's round is the first.
                {
                  ref: 'list',
                  listName: 'Do not contact',
                  platform: 'instantly',
                  blockType: 'ADDRESS',
                  crmSource: { listId },
                  sequencer: { apiKey: KEY },
                  isEnabled: false,
                },
                // Killed while it is being read from the CRM (second test).
                {
                  ref: 'fetched',
                  listName: 'Do not contact either',
                  platform: 'instantly',
                  blockType: 'ADDRESS',
                  crmSource: { listId: fetchedListId },
                  sequencer: { apiKey: FETCH_KEY },
                  isEnabled: false,
                },
              ],
            },
          ],
        },
      ],
    },
    TEST_ENCRYPTION_KEY,
  );
});

afterAll(async () => {
  await Promise.all([hubspot?.close(), sequencer?.close()]);
});

const pushed = async () =>
  Number(
    (
      await ctx.db.query<{ n: string }>('SELECT count(*) AS n FROM blocklist_entries WHERE pushed_at IS NOT NULL AND blocklist_id = $1', [
        seeded.blocklists.list,
      ])
    )[0]!.n,
  );

/** A worker process (the one each test kills) running a full round of `list`, as the schedule would queue it. */
async function startFullRound(list: number) {
  const victim = startService('worker', {
    DATABASE_URL: ctx.db.url,
    ENCRYPTION_KEY: TEST_ENCRYPTION_KEY.toString('hex'),
    HUBSPOT_BASE_URL: hubspot.url,
    INSTANTLY_BASE_URL: sequencer.url,
    OUTBOUND_ALLOW_PRIVATE: 'true',
    LOG_LEVEL: 'info',
  });
  await victim.waitFor('"msg":"started"');
  await ctx.db.query("UPDATE blocklists SET is_enabled = true, status = 'FETCHING' WHERE id = $1", [list]);
  await ctx.db.query(
    "SELECT graphile_worker_loops.add_job('blocklists__fetch', json_build_object('blocklistId', $1::int, 'kind', 'full'), queue_name => 'blocklist:' || $1, job_key => 'blocklist-fetch:' || $1)",
    [list],
  );
  return victim;
}

/** Another worker, which takes over the killed one's jobs, run until `list` is SYNCED. */
async function rescueUntilSynced(list: number): Promise<void> {
  const rescuer = await startTestWorker(
    ctx.db.url,
    { urls: { HUBSPOT: hubspot.url } },
    { staleAfterMs: 1_000, blocklists: { pushUrls: { instantly: sequencer.url } } },
  );
  try {
    await eventually(
      async () => {
        const [row] = await ctx.db.query<{ status: string }>('SELECT status::text FROM blocklists WHERE id = $1', [list]);
        return row?.status === 'SYNCED' ? true : undefined;
      },
      60_000,
      'the list SYNCED',
    );
  } finally {
    await rescuer.stop();
  }
}

describe('a worker killed while pushing a block list', () => {
  it('resumes with the entries not yet pushed: every value reaches the sequencer, at most one call of them twice', async () => {
    const list = seeded.blocklists.list!;
    // Slow sequencer answers, so the kill lands between and during calls.
    sequencer.slow(150, /bulk-create/);
    const calls = killPoint('calls pushed', 1, 4);
    const victim = await startFullRound(list);
    await eventually(async () => ((await pushed()) >= calls * PUSH_BATCH ? true : undefined), 60_000, `${calls} calls pushed`);
    victim.child.kill('SIGKILL');
    await victim.exited;
    expect(await pushed()).toBeLessThan(ENTRIES);

    sequencer.slow(0);
    await rescueUntilSynced(list);

    const received = sequencer.instantly(KEY);
    expect(received.values.size).toBe(ENTRIES);
    expect(await pushed()).toBe(ENTRIES);
    // Only the call in flight at the kill may have been sent again.
    expect(received.duplicates).toBeLessThanOrEqual(PUSH_BATCH);
    expect(received.received.length).toBeLessThanOrEqual(ENTRIES + PUSH_BATCH);
  }, 150_000);
});

describe('a worker killed while fetching a block list', () => {
  it('is fetched again by another: the list holds each CRM value once, and each reaches the sequencer once', async () => {
    const list = seeded.blocklists.fetched!;
    // Slow membership pages (24 of them), so the kill lands while the list is being read.
    hubspot.slow(120, /memberships/);
    const victim = await startFullRound(list);
    const pages = () => hubspot.requests.filter((r) => r.path === `/crm/lists/2026-03/${fetchedListId}/memberships`).length;
    const read = killPoint('membership pages read', 1, 20);
    await eventually(() => Promise.resolve(pages() >= read ? true : undefined), 30_000, `${read} membership pages read`);
    victim.child.kill('SIGKILL');
    // Killed mid-read: 24 pages make the whole list.
    expect(pages()).toBeLessThan(ENTRIES / 250);
    await victim.exited;
    const entries = async () =>
      Number((await ctx.db.query<{ n: string }>('SELECT count(*) AS n FROM blocklist_entries WHERE blocklist_id = $1', [list]))[0]!.n);
    // The fetch stores its entries in one transaction at its end: nothing half-read was kept.
    expect(await entries()).toBe(0);

    hubspot.slow(0);
    await rescueUntilSynced(list);
    expect(await entries()).toBe(ENTRIES);
    const received = sequencer.instantly(FETCH_KEY);
    expect(received.values.size).toBe(ENTRIES);
    expect(received.duplicates).toBe(0);
  }, 150_000);
});
