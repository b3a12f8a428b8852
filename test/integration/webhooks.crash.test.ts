/**
 * A worker process killed (SIGKILL) while its webhook attempts are in flight: once another worker has
 * taken over the dead one's sending loops, every delivery has succeeded, none is lost and none is doubled
 * in the database; only the attempts in flight at the kill reached their endpoint twice (at least once),
 * each time signed with the endpoint's secret and under the same event and delivery ids.
 */
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { WEBHOOK_HEADERS } from '../../src/jobs/webhook_deliveries__send.js';
import { WORKER_APPLICATION_NAME } from '../../src/worker.js';
import { startDestinationEmulator, type DestinationEmulator } from '../../src/emulators/destination.js';
import { seedTestAccounts } from '../support/accounts.js';
import { TEST_ENCRYPTION_KEY } from '../support/database.js';
import { useTestServer } from '../support/server.js';
import { killPoint } from '../support/kill-point.js';
import { startService } from '../support/service-process.js';
import { api, verifyDelivery } from '../support/webhooks.js';
import { eventually, startTestWorker } from '../support/worker.js';

const ctx = useTestServer({ OUTBOUND_ALLOW_PRIVATE: 'true' });
const PATHS = ['/crash-a', '/crash-b', '/crash-c'];
const PINGS_PER_ENDPOINT = 25;
const TOTAL = PATHS.length * PINGS_PER_ENDPOINT;
/** Requests in flight per endpoint in the victim: each endpoint's loop takes a few rounds of answers. */
const MAX_IN_FLIGHT = 8;
/** Every answer before the kill waits this long, so the kill finds attempts in flight. */
const ANSWER_DELAY_MS = 300;
const RETRY_SCHEDULE = [0.2, 0.2, 0.2];

let writeKey: string;
let receiver: DestinationEmulator;

beforeAll(async () => {
  const seeded = await seedTestAccounts(ctx.db.prisma);
  writeKey = seeded.keys.acmeWrite;
  const acme = seeded.accounts.acme!;
  // The seeded endpoint points at a host that does not exist: out of the way.
  await ctx.db.prisma.webhookEndpoint.updateMany({ where: { accountId: acme }, data: { isActive: false } });
  receiver = await startDestinationEmulator({ tls: inject('testCertificate') });
});

afterAll(async () => {
  await receiver?.close();
});

interface Endpoint {
  publicId: string;
  id: number;
  secret: string;
  path: string;
  eventIds: string[];
}

interface Row {
  public_id: string;
  endpoint_id: number;
  status: string;
  last_http_status: number | null;
  event_public_id: string;
}

const rowsOf = (endpoints: Endpoint[]) =>
  ctx.db.query<Row>(
    `SELECT d.public_id, d.endpoint_id, d.status::text AS status, d.last_http_status, ev.public_id AS event_public_id
       FROM webhook_deliveries d JOIN platform_events ev ON ev.id = d.event_id
      WHERE d.endpoint_id = ANY($1::int[]) ORDER BY d.id`,
    [endpoints.map((e) => e.id)],
  );

const succeeded = async (endpoints: Endpoint[]) => (await rowsOf(endpoints)).filter((r) => r.status === 'SUCCEEDED').length;

const header = (request: DestinationEmulator['received'][number], name: string) => String(request.headers[name]);

describe('a worker killed mid-delivery of webhooks', () => {
  it('loses no delivery, doubles none in the database, and repeats only attempts in flight, with the same ids', async () => {
    // The HTTPS receiver's certificate reaches the service process through the inherited environment.
    expect(process.env.NODE_EXTRA_CA_CERTS).toBeTruthy();

    // Setup: three endpoints on the receiver, their test pings accepted before any worker runs.
    const endpoints: Endpoint[] = [];
    for (const path of PATHS) {
      const res = await api(ctx.server.baseUrl, 'POST', '/webhooks', writeKey, { url: `${receiver.url}${path}` });
      expect(res.status).toBe(201);
      const { id } = await ctx.db.prisma.webhookEndpoint.findUniqueOrThrow({ where: { publicId: res.body.id as string } });
      endpoints.push({ publicId: res.body.id as string, id, secret: res.body.secret as string, path, eventIds: [] });
    }
    for (let i = 0; i < PINGS_PER_ENDPOINT; i += 1) {
      for (const endpoint of endpoints) {
        const res = await api(ctx.server.baseUrl, 'POST', `/webhooks/${endpoint.publicId}/test`, writeKey);
        expect(res.status).toBe(202);
        endpoint.eventIds.push(res.body.eventId as string);
      }
    }
    expect(await rowsOf(endpoints)).toHaveLength(TOTAL);
    receiver.answerAlways({ delayMs: ANSWER_DELAY_MS });
    const victim = startService('worker', {
      DATABASE_URL: ctx.db.url,
      ENCRYPTION_KEY: TEST_ENCRYPTION_KEY.toString('hex'),
      OUTBOUND_ALLOW_PRIVATE: 'true',
      WEBHOOK_RETRY_SCHEDULE: RETRY_SCHEDULE.join(','),
      WEBHOOK_MAX_IN_FLIGHT: String(MAX_IN_FLIGHT),
      LOG_LEVEL: 'info',
    });

    // Action: kill it once some attempts are recorded (a random number of them) and more are waiting for their answer.
    const point = killPoint('deliveries recorded', 1, 40);
    try {
      await victim.waitFor('"msg":"started"');
      await eventually(
        async () => {
          const done = await succeeded(endpoints);
          return done >= point && receiver.received.length - done >= MAX_IN_FLIGHT ? true : undefined;
        },
        20_000,
        'attempts recorded and attempts in flight',
      );
    } finally {
      victim.child.kill('SIGKILL');
    }
    expect(await victim.exited).toBeNull();
    // Its connections gone, no commit of the dead process can land after the snapshot below.
    await eventually(
      async () => {
        const [row] = await ctx.db.query<{ n: number }>('SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = $1 AND application_name = $2', [
          ctx.db.name,
          WORKER_APPLICATION_NAME,
        ]);
        return row!.n === 0 ? true : undefined;
      },
      10_000,
      "the dead worker's connections closed",
    );
    const atKill = await rowsOf(endpoints);
    const doneAtKill = new Set(atKill.filter((r) => r.status === 'SUCCEEDED').map((r) => r.public_id));
    const receivedAtKill = receiver.received.length;
    const sentAtKill = new Set(receiver.received.map((r) => header(r, WEBHOOK_HEADERS.deliveryId)));
    // The attempts in flight: sent, reached the receiver, never recorded.
    const inFlightAtKill = [...sentAtKill].filter((id) => !doneAtKill.has(id));
    expect(doneAtKill.size).toBeGreaterThanOrEqual(point);
    expect(doneAtKill.size).toBeLessThan(TOTAL);
    expect(inFlightAtKill.length).toBeGreaterThan(0);
    expect(atKill.filter((r) => r.status === 'PENDING')).toHaveLength(TOTAL - doneAtKill.size);
    // Before the kill, each delivery was sent once at most, and every recorded one was sent.
    expect(sentAtKill.size).toBe(receivedAtKill);
    for (const id of doneAtKill) expect(sentAtKill.has(id)).toBe(true);

    // Another worker takes over the sending loops the dead one held locked, answered at once.
    receiver.answerAlways({});
    const rescuer = await startTestWorker(ctx.db.url, {}, { staleAfterMs: 1_000, webhooks: { retrySchedule: RETRY_SCHEDULE } });
    try {
      await eventually(async () => ((await succeeded(endpoints)) === TOTAL ? true : undefined), 20_000, 'every delivery succeeded');
      // Anything that would repeat a delivery has had its time.
      await new Promise((resolve) => setTimeout(resolve, 1_000));
    } finally {
      await rescuer.stop();
    }

    // Assertions: one delivery row per ping, each SUCCEEDED, none left PENDING.
    const rows = await rowsOf(endpoints);
    expect(rows).toHaveLength(TOTAL);
    for (const endpoint of endpoints) {
      const own = rows.filter((r) => r.endpoint_id === endpoint.id);
      expect(own.map((r) => r.event_public_id).sort()).toEqual([...endpoint.eventIds].sort());
      expect(own.every((r) => r.status === 'SUCCEEDED' && r.last_http_status === 200)).toBe(true);
    }
    const byDelivery = new Map(rows.map((r) => [r.public_id, r]));

    // Every request is the endpoint's own delivery, signed with its secret, under the delivery's event id.
    const received = new Map<string, number>();
    for (const request of receiver.received) {
      const deliveryId = header(request, WEBHOOK_HEADERS.deliveryId);
      const row = byDelivery.get(deliveryId);
      expect(row, deliveryId).toBeDefined();
      const endpoint = endpoints.find((e) => e.id === row!.endpoint_id)!;
      expect(request.path).toBe(endpoint.path);
      expect(header(request, WEBHOOK_HEADERS.eventId)).toBe(row!.event_public_id);
      expect(verifyDelivery(request, endpoint.secret)).toMatchObject({ id: row!.event_public_id, type: 'test.ping' });
      received.set(deliveryId, (received.get(deliveryId) ?? 0) + 1);
    }

    // Every delivery reached its endpoint; only those in flight at the kill twice; one recorded before
    // the kill never again; after it, each delivery not recorded was sent exactly once.
    expect([...received.keys()].sort()).toEqual([...byDelivery.keys()].sort());
    const repeated = [...received].filter(([, n]) => n > 1).map(([id]) => id);
    expect(repeated.sort()).toEqual([...inFlightAtKill].sort());
    expect(Math.max(...received.values())).toBe(2);
    const afterKill = receiver.received.slice(receivedAtKill).map((r) => header(r, WEBHOOK_HEADERS.deliveryId));
    expect(afterKill.sort()).toEqual([...byDelivery.keys()].filter((id) => !doneAtKill.has(id)).sort());
    expect(receiver.received.length).toBe(TOTAL + inFlightAtKill.length);
  }, 60_000);
});
