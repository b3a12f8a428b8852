/**
 * A campaign with every source option on (company, owner, follow-up task), its leads' events repeated as a
 * sequencer sends them, pushed as a burst into a HubSpot portal of 30 requests per 10 s (the emulator's
 * limit and the connection's budget): every event gets its outcome, HubSpot holds every contact, company,
 * association, activity and task once, the calls stay within the budget, and the worker's log at info says
 * what it did per connection, not per job.
 */
import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sealSecret } from '../../src/domain/secrets.js';
import { createLogger } from '../../src/logger.js';
import { startHubspotEmulator, type HubspotEmulator } from '../../src/emulators/hubspot.js';
import { campaignBodies, EVENTS_PER_LEAD, EVERY_OPTION, type Campaign } from '../support/campaign.js';
import { TEST_ENCRYPTION_KEY } from '../support/database.js';
import { useTestServer } from '../support/server.js';
import { eventually, startTestWorker } from '../support/worker.js';

const ctx = useTestServer();
const LIMIT = 30;
const TOKEN = 'options-burst-token';
const CODE = 'optionsBurstSource01';
const CAMPAIGN: Campaign = { leads: 40, leadsPerCompany: 4, tag: 'burst', sender: 'rep@seller.test' };
const EVENTS = CAMPAIGN.leads * EVENTS_PER_LEAD;
let hubspot: HubspotEmulator;

beforeAll(async () => {
  hubspot = await startHubspotEmulator({ accessToken: TOKEN, requestsPer10s: LIMIT });
  const account = await ctx.db.prisma.account.create({ data: { email: 'owner@burst.test' } });
  const connection = await ctx.db.prisma.connection.create({
    data: {
      accountId: account.id,
      crm: 'HUBSPOT',
      credentialsEncrypted: sealSecret(TEST_ENCRYPTION_KEY, JSON.stringify({ accessToken: TOKEN })),
      crmRateLimit: { requestsPer10s: LIMIT },
    },
  });
  await ctx.db.prisma.source.create({
    data: {
      connectionId: connection.id,
      platform: 'smartlead',
      ingressCode: CODE,
      ...EVERY_OPTION,
    },
  });
});

afterAll(async () => {
  await hubspot?.close();
});

describe('a burst of repeated leads with every option on, into a portal of 30 requests per 10 s', () => {
  it('writes every event, and every contact, company, association, activity and task once, within the budget', async () => {
    // Setup: the worker, its log read at info.
    const lines: string[] = [];
    const sink = new Writable({
      write(chunk: Buffer, _encoding, done) {
        lines.push(...chunk.toString('utf8').split('\n').filter(Boolean));
        done();
      },
    });
    const worker = await startTestWorker(ctx.db.url, { urls: { HUBSPOT: hubspot.url } }, { logger: createLogger('info', sink) });

    // Action: the campaign, as fast as the ingress takes it.
    let requestIds: number[];
    try {
      requestIds = await Promise.all(
        campaignBodies(CAMPAIGN).map(async (body) => {
          const res = await fetch(`${ctx.server.baseUrl}/webhooks/${CODE}`, { method: 'POST', body });
          return ((await res.json()) as { requestId: number }).requestId;
        }),
      );
      await eventually(
        async () => {
          const [row] = await ctx.db.query<{ n: number }>('SELECT count(*)::int AS n FROM syncs WHERE status IS NOT NULL AND request_id = ANY($1::bigint[])', [
            requestIds,
          ]);
          return row?.n === EVENTS ? true : undefined;
        },
        60_000,
        'every outcome',
      );
    } finally {
      await worker.stop();
    }

    // Assertions: every event written once.
    const statuses = await ctx.db.query<{ status: string; n: number }>(
      'SELECT status::text, count(*)::int AS n FROM syncs WHERE request_id = ANY($1::bigint[]) GROUP BY 1',
      [requestIds],
    );
    expect(statuses).toEqual([{ status: 'success', n: EVENTS }]);
    expect(await ctx.db.query('SELECT 1 FROM pending_syncs WHERE request_id = ANY($1::bigint[])', [requestIds])).toEqual([]);
    const contacts = [...hubspot.contacts.values()];
    expect(contacts).toHaveLength(CAMPAIGN.leads);
    expect(contacts.every((c) => c.properties.hubspot_owner_id === '501')).toBe(true);
    const ids = new Set(contacts.map((c) => c.id));
    const toContacts = (type: string) => hubspot.associations.filter((a) => a.fromType === type && a.toType === 'contacts' && ids.has(a.toId));
    expect(toContacts('emails').length + toContacts('notes').length).toBe(EVENTS);
    expect(hubspot.emails.size + hubspot.notes.size).toBe(EVENTS);
    expect(toContacts('tasks')).toHaveLength(EVENTS);
    expect(hubspot.companies.size).toBe(CAMPAIGN.leads / CAMPAIGN.leadsPerCompany);
    for (const contact of contacts)
      expect(hubspot.associations.filter((a) => a.fromType === 'contacts' && a.fromId === contact.id && a.toType === 'companies')).toHaveLength(1);
    // Within the budget, in batch calls: a fraction of a call per event, and never a 429.
    expect(hubspot.requests.filter((r) => r.status === 429)).toEqual([]);
    expect(hubspot.busiestTenSeconds(TOKEN)).toBeLessThanOrEqual(LIMIT);
    expect(hubspot.requests.length / EVENTS).toBeLessThan(0.15);
    // No line per completed job at info (graphile-worker's are at debug).
    const info = lines.map((l) => JSON.parse(l) as { level: number; msg: string }).filter((l) => l.level >= 30);
    expect(info.filter((l) => l.msg.startsWith('Completed task'))).toEqual([]);
  }, 90_000);
});
