/**
 * A worker process killed (SIGKILL) while its forwarding attempts are in flight: once another worker
 * has taken over the dead one's jobs, every event has exactly one success delivery per destination, and
 * an event a destination received twice carried the same event id both times.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FORWARDING_HEADERS } from '../../src/jobs/deliveries__send.js';
import type { DestinationEmulator } from '../../src/emulators/destination.js';
import type { HubspotEmulator } from '../../src/emulators/hubspot.js';
import { TEST_ENCRYPTION_KEY } from '../support/database.js';
import { createPipeline, startForwardingRig, ingest, smartleadEvent } from '../support/forwarding.js';
import { useTestServer } from '../support/server.js';
import { killPoint } from '../support/kill-point.js';
import { startService } from '../support/service-process.js';
import { eventually, startTestWorker } from '../support/worker.js';

const ctx = useTestServer();
const EVENTS = 12;
const HUBSPOT_TOKEN = 'fwd-crash-token';

let hubspot: HubspotEmulator;
let receiver: DestinationEmulator;
let connectionId: number;

beforeAll(async () => {
  const rig = await startForwardingRig(ctx.db, HUBSPOT_TOKEN);
  ({ connectionId, hubspot, receiver } = rig);
});

afterAll(async () => {
  await hubspot?.close();
  await receiver?.close();
});

const successes = async (requestIds: number[]) =>
  (await ctx.db.query<{ n: number }>("SELECT count(*)::int AS n FROM deliveries WHERE status = 'success' AND request_id = ANY($1::bigint[])", [requestIds]))[0]!
    .n;

describe('a worker killed mid-delivery', () => {
  it('loses no delivery, and repeats an event with the same event id', async () => {
    // Setup: an immediate and a delayed destination, the events accepted before any worker runs.
    const { destinations, code } = await createPipeline(ctx.db.prisma, {
      connectionId,
      name: 'fwdCrash',
      baseUrl: receiver.url,
      bindings: [{ isDelayed: false }, { isDelayed: true }],
    });
    const requestIds: number[] = [];
    const bodies = new Map<string, number>();
    for (let i = 0; i < EVENTS; i += 1) {
      const body = smartleadEvent('EMAIL_SENT', `crash${i}@prospect.test`, { sequence_number: i });
      const requestId = await ingest(ctx.server.baseUrl, code, body);
      requestIds.push(requestId);
      bodies.set(body, requestId);
    }
    receiver.answerAlways({ delayMs: 30_000 });
    // A random number of requests answered at once before the kill; every later one waits 30 s, so the kill finds them in flight.
    const answeredBeforeKill = killPoint('deliveries answered before the kill', 1, 10);
    receiver.answerNext(answeredBeforeKill, {});
    const victim = startService('worker', {
      DATABASE_URL: ctx.db.url,
      ENCRYPTION_KEY: TEST_ENCRYPTION_KEY.toString('hex'),
      HUBSPOT_BASE_URL: hubspot.url,
      OUTBOUND_ALLOW_PRIVATE: 'true',
      FORWARDING_RETRY_SCHEDULE: '0.2,0.2',
      LOG_LEVEL: 'info',
    });

    // Action: kill it once some attempts are recorded and more are waiting for their answer.
    try {
      await victim.waitFor('"msg":"started"');
      await eventually(
        async () => ((await successes(requestIds)) >= answeredBeforeKill && receiver.received.length > answeredBeforeKill + 2 ? true : undefined),
        30_000,
        'attempts recorded and attempts in flight',
      );
    } finally {
      victim.child.kill('SIGKILL');
    }
    await victim.exited;
    const atKill = await successes(requestIds);
    expect(atKill).toBeLessThan(EVENTS * destinations.length);
    const inFlightAtKill = receiver.received.length - atKill;
    expect(inFlightAtKill).toBeGreaterThan(0);

    // Another worker takes over, including the sending loops the dead one held locked.
    receiver.answerAlways({});
    const rescuer = await startTestWorker(ctx.db.url, { urls: { HUBSPOT: hubspot.url } }, { staleAfterMs: 1_000, forwarding: { retrySchedule: [0.2, 0.2] } });
    try {
      await eventually(async () => ((await successes(requestIds)) === EVENTS * destinations.length ? true : undefined), 30_000, 'every delivery made');
    } finally {
      await rescuer.stop();
    }

    // Assertions: one success per event and destination, nothing else, nothing pending.
    const rows = await ctx.db.query<{ request_id: string; destination_id: number; status: string }>(
      'SELECT request_id, destination_id, status::text AS status FROM deliveries WHERE request_id = ANY($1::bigint[]) ORDER BY request_id, destination_id',
      [requestIds],
    );
    const expected = requestIds.flatMap((id) => destinations.map((d) => ({ request_id: String(id), destination_id: d.id, status: 'success' })));
    expect(rows).toEqual(expected.sort((a, b) => Number(a.request_id) - Number(b.request_id) || a.destination_id - b.destination_id));
    expect(
      (await ctx.db.query<{ n: number }>('SELECT count(*)::int AS n FROM pending_deliveries WHERE request_id = ANY($1::bigint[])', [requestIds]))[0]!.n,
    ).toBe(0);
    const syncs = await ctx.db.query<{ n: number }>("SELECT count(*)::int AS n FROM syncs WHERE status = 'success' AND request_id = ANY($1::bigint[])", [
      requestIds,
    ]);
    expect(syncs[0]!.n).toBe(EVENTS);

    // Every event reached every destination under its own id; the repeats (the attempts in flight at
    // the kill) carried the same id as the first time.
    for (const destination of destinations) {
      const received = receiver.on(destination.path);
      const idsByBody = new Map<string, Set<string>>();
      for (const r of received) {
        const ids = idsByBody.get(r.body.toString('utf8')) ?? new Set<string>();
        ids.add(String(r.headers[FORWARDING_HEADERS.eventId]));
        idsByBody.set(r.body.toString('utf8'), ids);
      }
      expect(idsByBody.size).toBe(EVENTS);
      for (const [body, ids] of idsByBody) expect([...ids]).toEqual([String(bodies.get(body))]);
    }
    const repeats = receiver.received.length - EVENTS * destinations.length;
    expect(repeats).toBeGreaterThan(0);
  }, 90_000);
});
