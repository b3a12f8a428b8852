/**
 * A worker process killed (SIGKILL) in the middle of a batch: every accepted request still ends with
 * exactly one sync outcome, and the CRM holds exactly one activity per event (the job resumes from the
 * steps its crm_state records, and a create whose answer was lost is looked up before it is resent).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sealSecret } from '../../src/domain/secrets.js';
import { startHubspotEmulator, type HubspotEmulator } from '../emulators/hubspot.js';
import { seedTestAccounts } from '../support/accounts.js';
import { TEST_ENCRYPTION_KEY } from '../support/database.js';
import { useTestServer } from '../support/server.js';
import { killPoint } from '../support/kill-point.js';
import { startService } from '../support/service-process.js';
import { eventually, startTestWorker } from '../support/worker.js';

const ctx = useTestServer();
const EVENTS = 120;
const CODE = 'crashTestSmartlead01';
let hubspot: HubspotEmulator;

beforeAll(async () => {
  const ids = await seedTestAccounts(ctx.db.prisma);
  hubspot = await startHubspotEmulator({ accessToken: 'crash-token' });
  const connection = ids.connections['acme-hubspot']!;
  await ctx.db.prisma.connection.update({
    where: { id: connection },
    data: { credentialsEncrypted: sealSecret(TEST_ENCRYPTION_KEY, JSON.stringify({ accessToken: 'crash-token' })) },
  });
  await ctx.db.prisma.source.create({ data: { connectionId: connection, platform: 'smartlead', ingressCode: CODE } });
});

afterAll(async () => {
  await hubspot?.close();
});

const recorded = async (requestIds: number[]) =>
  Number(
    (await ctx.db.query<{ n: string }>('SELECT count(*) AS n FROM syncs WHERE status IS NOT NULL AND request_id = ANY($1::bigint[])', [requestIds]))[0]!.n,
  );

describe('a worker killed mid-batch', () => {
  it('loses nothing and writes no activity twice', async () => {
    const requestIds: number[] = [];
    for (let i = 0; i < EVENTS; i += 1) {
      const body = JSON.stringify({ event_type: 'EMAIL_SENT', to_email: `crash${i}@prospect.test`, subject: `Hello ${i}`, sent_message: { text: 'Hi there' } });
      const res = await fetch(`${ctx.server.baseUrl}/webhooks/${CODE}`, { method: 'POST', body });
      expect(res.status).toBe(200);
      requestIds.push(((await res.json()) as { requestId: number }).requestId);
    }
    // Slow CRM answers, so the kill lands while writes are in flight.
    hubspot.slow(40);
    const victim = startService('worker', {
      DATABASE_URL: ctx.db.url,
      ENCRYPTION_KEY: TEST_ENCRYPTION_KEY.toString('hex'),
      HUBSPOT_BASE_URL: hubspot.url,
      OUTBOUND_ALLOW_PRIVATE: 'true',
      LOG_LEVEL: 'info',
      // Few slots, so syncs finish one after another and the kill lands while some are written and some not.
      WORKER_CONCURRENCY: '4',
    });
    await victim.waitFor('"msg":"started"');
    const point = killPoint('recorded syncs', 1, 60);
    await eventually(async () => ((await recorded(requestIds)) >= point ? true : undefined), 60_000, `${point} recorded syncs`);
    victim.child.kill('SIGKILL');
    await victim.exited;
    const atKill = await recorded(requestIds);
    expect(atKill).toBeLessThan(EVENTS);

    // Another worker takes over, including the jobs the dead one held locked.
    hubspot.slow(0);
    const rescuer = await startTestWorker(ctx.db.url, { hubspotBaseUrl: hubspot.url }, { staleAfterMs: 1_000 });
    try {
      await eventually(async () => ((await recorded(requestIds)) === EVENTS ? true : undefined), 60_000, 'every sync recorded');
    } finally {
      await rescuer.stop();
    }

    const syncs = await ctx.db.query<{ request_id: string; status: string; n: string }>(
      'SELECT request_id, status, count(*) OVER (PARTITION BY request_id) AS n FROM syncs WHERE request_id = ANY($1::bigint[])',
      [requestIds],
    );
    expect(syncs).toHaveLength(EVENTS);
    expect(syncs.filter((s) => s.status !== 'success' || s.n !== '1')).toEqual([]);
    // Exactly one contact and one email engagement per event.
    const emails = [...hubspot.emails.values()];
    expect(emails).toHaveLength(EVENTS);
    expect(new Set([...hubspot.contacts.values()].map((c) => c.properties.email)).size).toBe(EVENTS);
    expect(hubspot.contacts.size).toBe(EVENTS);
  }, 180_000);
});

describe('a live worker holding a job longer than the stale time', () => {
  it('keeps its lock: the job is neither freed nor run twice', async () => {
    // A worker that calls others dead after 1 s without a heartbeat, and a CRM that takes 3 s to create.
    const before = hubspot.emails.size;
    hubspot.slow(3_000, /^\/crm\/v3\/objects\/emails$/);
    const worker = await startTestWorker(ctx.db.url, { hubspotBaseUrl: hubspot.url }, { staleAfterMs: 1_000 });
    try {
      const body = JSON.stringify({ event_type: 'EMAIL_SENT', to_email: 'patient@prospect.test', subject: 'Slow one', sent_message: { text: 'Hi' } });
      const res = await fetch(`${ctx.server.baseUrl}/webhooks/${CODE}`, { method: 'POST', body });
      const { requestId } = (await res.json()) as { requestId: number };
      await eventually(async () => ((await recorded([requestId])) === 1 ? true : undefined), 30_000, 'the slow sync recorded');
      // Time for a wrongly freed second run to reach the CRM too.
      await new Promise((resolve) => setTimeout(resolve, 3_500));
    } finally {
      hubspot.slow(0);
      await worker.stop();
    }
    expect(hubspot.emails.size - before).toBe(1);
  }, 60_000);
});
