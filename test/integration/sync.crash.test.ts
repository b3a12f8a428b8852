/**
 * A worker process killed (SIGKILL) at a random point of a drain's batched steps: before one of its CRM
 * calls, after HubSpot carried the call out but before the answer came back, or after the answer came and
 * before the worker recorded it. Another worker finishes: every accepted request ends with exactly one sync
 * outcome, and HubSpot holds every contact, company, association, activity and task once (each sync resumes
 * from the steps its crm_state records; a create whose answer was lost is looked up before it is resent).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sealSecret } from '../../src/domain/secrets.js';
import { startHubspotEmulator, type HubspotEmulator } from '../../src/emulators/hubspot.js';
import { seedTestAccounts } from '../support/accounts.js';
import { campaignBodies, EVENTS_PER_LEAD, EVERY_OPTION, type Campaign } from '../support/campaign.js';
import { TEST_ENCRYPTION_KEY } from '../support/database.js';
import { useTestServer } from '../support/server.js';
import { killCallAndPhase } from '../support/kill-point.js';
import { startService } from '../support/service-process.js';
import { eventually, startTestWorker } from '../support/worker.js';

const ctx = useTestServer();
const CAMPAIGN: Campaign = { leads: 24, leadsPerCompany: 3, tag: 'crash', sender: 'rep@seller.test' };
const EVENTS = CAMPAIGN.leads * EVENTS_PER_LEAD;
/**
 * The round's CRM calls (the 120 events of 24 leads in one round, every option on): the owners, the
 * contacts' read and upsert, the companies' search and create, the associations, the emails and notes, and
 * the tasks (two calls of 100). Kills fall on one of the first ten.
 */
const CALLS = 10;
const PHASES = ['before', 'unanswered', 'answered'] as const;
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
  await ctx.db.prisma.source.create({
    data: {
      connectionId: connection,
      platform: 'smartlead',
      ingressCode: CODE,
      ...EVERY_OPTION,
    },
  });
});

afterAll(async () => {
  await hubspot?.close();
});

const recorded = async (requestIds: number[]) =>
  Number(
    (await ctx.db.query<{ n: string }>('SELECT count(*) AS n FROM syncs WHERE status IS NOT NULL AND request_id = ANY($1::bigint[])', [requestIds]))[0]!.n,
  );

describe('a worker killed in the middle of a batched step', () => {
  it('loses nothing and writes nothing twice', async () => {
    // Setup: a campaign's events (five per lead, in waves), all waiting for the worker.
    const requestIds: number[] = [];
    for (const body of campaignBodies(CAMPAIGN)) {
      const res = await fetch(`${ctx.server.baseUrl}/webhooks/${CODE}`, { method: 'POST', body });
      expect(res.status).toBe(200);
      requestIds.push(((await res.json()) as { requestId: number }).requestId);
    }
    const { call, phase } = killCallAndPhase('CRM call and phase', CALLS, PHASES);
    const victim = startService('worker', {
      DATABASE_URL: ctx.db.url,
      ENCRYPTION_KEY: TEST_ENCRYPTION_KEY.toString('hex'),
      HUBSPOT_BASE_URL: hubspot.url,
      OUTBOUND_ALLOW_PRIVATE: 'true',
      LOG_LEVEL: 'info',
    });
    hubspot.interceptNth(call, phase, () => victim.child.kill('SIGKILL'));

    // Action: the worker dies at that call; another takes over, including the drain the dead one held.
    await victim.exited;
    expect(await recorded(requestIds)).toBeLessThan(EVENTS);
    const rescuer = await startTestWorker(ctx.db.url, { urls: { HUBSPOT: hubspot.url } }, { staleAfterMs: 1_000 });
    try {
      await eventually(async () => ((await recorded(requestIds)) === EVENTS ? true : undefined), 60_000, 'every sync recorded');
    } finally {
      await rescuer.stop();
    }

    // Assertions: one outcome per request, and every CRM object once.
    const syncs = await ctx.db.query<{ status: string; n: string }>(
      'SELECT status, count(*) OVER (PARTITION BY request_id) AS n FROM syncs WHERE request_id = ANY($1::bigint[])',
      [requestIds],
    );
    expect(syncs).toHaveLength(EVENTS);
    expect(syncs.filter((s) => s.status !== 'success' || s.n !== '1')).toEqual([]);
    const contacts = [...hubspot.contacts.values()].filter((c) => c.properties.email?.startsWith('lead-crash-'));
    expect(contacts).toHaveLength(CAMPAIGN.leads);
    expect(new Set(contacts.map((c) => c.properties.email)).size).toBe(CAMPAIGN.leads);
    expect(contacts.every((c) => c.properties.hubspot_owner_id === '501')).toBe(true);
    const ours = new Set(contacts.map((c) => c.id));
    const engagements = (type: string) => hubspot.associations.filter((a) => a.fromType === type && a.toType === 'contacts' && ours.has(a.toId)).length;
    expect(engagements('emails') + engagements('notes')).toBe(EVENTS);
    expect(engagements('tasks')).toBe(EVENTS);
    const domains = [...hubspot.companies.values()].map((c) => c.properties.domain);
    expect(domains).toHaveLength(CAMPAIGN.leads / CAMPAIGN.leadsPerCompany);
    expect(new Set(domains).size).toBe(domains.length);
    for (const contact of contacts)
      expect(hubspot.associations.filter((a) => a.fromType === 'contacts' && a.fromId === contact.id && a.toType === 'companies')).toHaveLength(1);
  }, 120_000);
});

describe('a live worker holding a job longer than the stale time', () => {
  it('keeps its lock: the job is neither freed nor run twice', async () => {
    // A worker that calls others dead after 1 s without a heartbeat, and a CRM that takes 3 s to create.
    const before = hubspot.emails.size;
    hubspot.slow(3_000, /^\/crm\/objects\/2026-03\/emails$/);
    const worker = await startTestWorker(ctx.db.url, { urls: { HUBSPOT: hubspot.url } }, { staleAfterMs: 1_000 });
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
