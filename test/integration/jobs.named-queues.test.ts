/**
 * graphile-worker's promise that the jobs of one named queue run one at a time, held with the worker
 * settings we ship (`startWorker`: a local queue on every lane). graphile-worker 0.17 broke it whenever a
 * local queue fetched a batch (graphile/worker#621): the loops of one forwarding destination, a block
 * list's fetch and push, or (since) a connection's sync drains would run side by side. The test watches graphile-worker's own locks while two worker
 * processes' worth of runners take several jobs of one queue, each held long enough to be seen.
 */
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { seedFixture } from '../../src/admin/seed.js';
import { blocklistsFetch } from '../../src/jobs/blocklists__fetch.js';
import { blocklistsPush } from '../../src/jobs/blocklists__push.js';
import { deliveriesSend } from '../../src/jobs/deliveries__send.js';
import { enqueue } from '../../src/jobs/enqueue.js';
import { LANE_SCHEMA, type Lane } from '../../src/jobs/lanes.js';
import { syncsDrain } from '../../src/jobs/syncs__drain.js';
import { startDestinationEmulator, type DestinationEmulator } from '../../src/emulators/destination.js';
import { startHubspotEmulator, type HubspotEmulator } from '../../src/emulators/hubspot.js';
import { startSequencerEmulator, type SequencerEmulator } from '../../src/emulators/sequencer.js';
import { createTestDatabase, TEST_ENCRYPTION_KEY, type TestDatabase } from '../support/database.js';
import { eventually, startTestWorker } from '../support/worker.js';

let db: TestDatabase;
let pool: pg.Pool;
let receiver: DestinationEmulator;
let hubspot: HubspotEmulator;
let sequencer: SequencerEmulator;
let workers: Array<{ stop(): Promise<void> }> = [];
let ids: { destination: number; blocklist: number; request: number; connection: number };

beforeAll(async () => {
  db = await createTestDatabase();
  pool = new pg.Pool({ connectionString: db.url, max: 2 });
  pool.on('error', () => {});
  receiver = await startDestinationEmulator();
  hubspot = await startHubspotEmulator({ accessToken: 'queues-token' });
  sequencer = await startSequencerEmulator({ instantlyKeys: ['queues-instantly-key'] });
  const listId = hubspot.addList({ name: 'Do not contact', objectType: 'contacts', values: ['a@blocked.test', 'b@blocked.test'] });
  const seeded = await seedFixture(
    db.prisma,
    {
      accounts: [
        {
          ref: 'queues',
          connections: [
            {
              ref: 'hubspot',
              crm: 'HUBSPOT',
              credentials: { accessToken: 'queues-token' },
              destinations: [{ ref: 'slow', url: `${receiver.url}/slow` }],
              blocklists: [
                {
                  ref: 'list',
                  listName: 'Do not contact',
                  platform: 'instantly',
                  blockType: 'ADDRESS',
                  isEnabled: false,
                  crmSource: { listId },
                  sequencer: { apiKey: 'queues-instantly-key' },
                },
              ],
              sources: [
                {
                  ref: 'source',
                  platform: 'smartlead',
                  ingressCode: 'namedQueuesSrc01',
                  destinations: [{ destination: 'slow', eventTypes: [], isDelayed: false }],
                  requests: [{ body: { event_type: 'EMAIL_SENT', to_email: 'jane@prospect.test' } }],
                },
              ],
            },
          ],
        },
      ],
    },
    TEST_ENCRYPTION_KEY,
  );
  const [request] = await db.query<{ id: string }>('SELECT id::text FROM requests ORDER BY id LIMIT 1');
  ids = { destination: seeded.destinations.slow!, blocklist: seeded.blocklists.list!, request: Number(request!.id), connection: seeded.connections.hubspot! };
  // Every answer takes a while: a job holds its queue long enough for a second one to be seen beside it.
  receiver.answerAlways({ delayMs: 300 });
  hubspot.slow(150);
  const settings = {
    blocklists: { pushUrls: { smartlead: sequencer.url, instantly: sequencer.url }, refreshMinutes: 60 },
  };
  // Two workers: two processes' runners on one database, as production scales out.
  workers = [
    await startTestWorker(db.url, { urls: { HUBSPOT: hubspot.url } }, settings),
    await startTestWorker(db.url, { urls: { HUBSPOT: hubspot.url } }, settings),
  ];
}, 60_000);

afterAll(async () => {
  await Promise.all(workers.map((w) => w.stop()));
  await pool?.end();
  await receiver?.close();
  await hubspot?.close();
  await sequencer?.close();
  await db?.drop();
});

/**
 * Queues jobs through the tasks' own rules (the queue name is the task's), all in one commit: the runners
 * then find them together, as they find the jobs a statement queues for many targets at once.
 */
async function inOneCommit(queue: (database: { withPgClient<T>(work: (client: pg.PoolClient) => Promise<T>): Promise<T> }) => Promise<void>): Promise<void> {
  const client = await pool.connect();
  try {
    await client.query('BEGIN');
    await queue({ withPgClient: (work) => work(client) });
    await client.query('COMMIT');
  } finally {
    client.release();
  }
}

/**
 * Polls graphile-worker's job table of `lane` until `done`, every few milliseconds: the most jobs of one
 * named queue that were locked (taken by a runner) at once.
 */
async function mostLockedAtOnce(lane: Lane, queue: string, done: () => Promise<boolean>): Promise<number> {
  const schema = LANE_SCHEMA[lane];
  let most = 0;
  const deadline = Date.now() + 30_000;
  for (;;) {
    const [row] = await db.query<{ locked: number }>(
      `SELECT count(*)::int AS locked FROM ${schema}._private_jobs j JOIN ${schema}._private_job_queues q ON q.id = j.job_queue_id
        WHERE q.queue_name = $1 AND j.locked_at IS NOT NULL`,
      [queue],
    );
    most = Math.max(most, row?.locked ?? 0);
    if (await done()) return most;
    if (Date.now() > deadline) throw new Error(`the jobs of ${queue} did not finish`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

const jobsLeft = async (lane: Lane, queue: string) => {
  const schema = LANE_SCHEMA[lane];
  const [row] = await db.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM ${schema}._private_jobs j JOIN ${schema}._private_job_queues q ON q.id = j.job_queue_id WHERE q.queue_name = $1`,
    [queue],
  );
  return row?.n ?? 0;
};

describe('jobs of one named queue, with the worker settings we ship', () => {
  it('runs the sending loops of one destination one at a time', async () => {
    // Setup: attempts to send, and five loops of the destination queued at once (distinct keys, one queue).
    await db.query('INSERT INTO pending_deliveries (destination_id, request_id) SELECT $1, $2 FROM generate_series(1, 3)', [ids.destination, ids.request]);
    const queue = deliveriesSend.defaults.queueName!({ destinationId: ids.destination });

    // Action
    await inOneCommit(async (database) => {
      for (let i = 0; i < 5; i += 1) await enqueue(database, deliveriesSend, { destinationId: ids.destination }, { jobKey: `overlap-${i}` });
    });

    // Assertions
    expect(await mostLockedAtOnce('loops', queue, async () => (await jobsLeft('loops', queue)) === 0)).toBe(1);
    await eventually(() => Promise.resolve(receiver.received.length >= 3 ? true : undefined), 10_000, 'the deliveries');
  }, 40_000);

  it("runs a connection's sync drains one at a time", async () => {
    // Setup: a waiting sync, and five drains of its connection queued at once (distinct keys, one queue).
    await db.query('INSERT INTO pending_syncs (request_id, connection_id) VALUES ($1, $2)', [ids.request, ids.connection]);
    const queue = syncsDrain.defaults.queueName!({ connectionId: ids.connection });

    // Action
    await inOneCommit(async (database) => {
      for (let i = 0; i < 5; i += 1) await enqueue(database, syncsDrain, { connectionId: ids.connection }, { jobKey: `overlap-drain-${i}` });
    });

    // Assertions
    expect(await mostLockedAtOnce('jobs', queue, async () => (await jobsLeft('jobs', queue)) === 0)).toBe(1);
    expect(await db.query('SELECT status::text FROM syncs WHERE request_id = $1', [ids.request])).toEqual([{ status: 'success' }]);
  }, 40_000);

  it("runs a block list's fetch and push one after the other", async () => {
    // Setup: the list's fetch and push queued together (each under its own key, in the list's queue).
    await db.query('UPDATE blocklists SET is_enabled = true WHERE id = $1', [ids.blocklist]);
    const queue = blocklistsFetch.defaults.queueName!({ blocklistId: ids.blocklist, kind: 'full' });
    expect(blocklistsPush.defaults.queueName!({ blocklistId: ids.blocklist })).toBe(queue);

    // Action
    await inOneCommit(async (database) => {
      await enqueue(database, blocklistsFetch, { blocklistId: ids.blocklist, kind: 'full' });
      await enqueue(database, blocklistsPush, { blocklistId: ids.blocklist });
      await enqueue(database, blocklistsFetch, { blocklistId: ids.blocklist, kind: 'incremental' }, { jobKey: 'overlap-second-fetch' });
    });

    // Assertions
    expect(await mostLockedAtOnce('loops', queue, async () => (await jobsLeft('loops', queue)) === 0)).toBe(1);
    expect(hubspot.requests.filter((r) => r.path.includes('/lists/')).length).toBeGreaterThan(0);
  }, 40_000);
});
