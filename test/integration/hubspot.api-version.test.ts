/**
 * HubSpot's 2026-03 APIs (issue 29): the day after v1 OAuth is switched off (2027-02-16), a HubSpot
 * connection whose token has expired still refreshes it, syncs a lead's every event with every option
 * (contact, company and its association, owner, engagements, task) and fetches its block list, through
 * the real ingress, worker and block list jobs, and the HubSpot emulator (set to that date) sees no call
 * to an `/oauth/v1/` path nor to a numeric-version (`/crm/v3/`, `/crm/v4/`) one.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { seedFixture, type SeedResult } from '../../src/admin/seed.js';
import { HUBSPOT_API_VERSION } from '../../src/connectors/crm/hubspot/paths.js';
import { sampleFolder } from '../../src/connectors/sequencers/samples.js';
import { HUBSPOT_VERSIONS, startHubspotEmulator, V1_OAUTH_END, type HubspotEmulator } from '../../src/emulators/hubspot.js';
import { startSequencerEmulator, type SequencerEmulator } from '../../src/emulators/sequencer.js';
import { TEST_ENCRYPTION_KEY } from '../support/database.js';
import { apiGet } from '../support/rest.js';
import { useTestServer } from '../support/server.js';
import { eventually, startTestWorker } from '../support/worker.js';

const ctx = useTestServer();
const PAYLOADS = sampleFolder('smartlead');
const APP = { clientId: 'dated-client', clientSecret: 'dated-secret' };
const READ_KEY = 'svcapi_hubspotDatedReader00000001';
const SMARTLEAD_KEY = 'dated-smartlead-key';
const INGRESS_CODE = 'hubspotDated0001';

let hubspot: HubspotEmulator;
let sequencer: SequencerEmulator;
let worker: { stop(): Promise<void> };
let seeded: SeedResult;

beforeAll(async () => {
  // A day after HubSpot switches v1 OAuth off.
  hubspot = await startHubspotEmulator({
    accessToken: 'dated-stale-token',
    refreshToken: 'dated-refresh-token',
    ...APP,
    now: () => V1_OAUTH_END + 86_400_000,
    // The samples' senders, so the owner step finds them.
    owners: [
      { id: '601', email: 'sender@northwind.test', firstName: 'Sam', lastName: 'Sender', userId: 9601 },
      { id: '602', email: 'tom@northwind.test', firstName: 'Tom', lastName: 'Rep', userId: 9602 },
    ],
  });
  hubspot.expireAccessTokens();
  sequencer = await startSequencerEmulator({ smartleadKeys: [SMARTLEAD_KEY] });
  const listId = hubspot.addList({ name: 'Customers', objectType: 'companies', values: ['globex.test', 'initech.test'] });
  seeded = await seedFixture(
    ctx.db.prisma,
    {
      accounts: [
        {
          connections: [
            {
              ref: 'hubspot',
              crm: 'HUBSPOT',
              credentials: { accessToken: 'dated-stale-token', refreshToken: 'dated-refresh-token', ...APP },
              sources: [
                {
                  platform: 'smartlead',
                  ingressCode: INGRESS_CODE,
                  config: { createOrUpdateCompany: true, createOrUpdateTask: true, assignContactOwner: true },
                },
              ],
              blocklists: [
                {
                  ref: 'customers',
                  listName: 'Customers',
                  platform: 'smartlead',
                  blockType: 'DOMAIN',
                  crmSource: { listId },
                  sequencer: { apiKey: SMARTLEAD_KEY },
                },
              ],
            },
          ],
          apiKeys: [{ name: 'reader', key: READ_KEY }],
        },
      ],
    },
    TEST_ENCRYPTION_KEY,
  );
  worker = await startTestWorker(
    ctx.db.url,
    { urls: { HUBSPOT: hubspot.url } },
    { blocklists: { pushUrls: { smartlead: sequencer.url, instantly: sequencer.url } } },
  );
}, 60_000);

afterAll(async () => {
  await worker?.stop();
  await Promise.all([hubspot?.close(), sequencer?.close()]);
});

describe('HubSpot after v1 OAuth is switched off', () => {
  it('refreshes, syncs every event with every option and fetches a block list on 2026-03 paths only', async () => {
    // A lead's every Smartlead event (sent, opened, clicked, replied, category change), each sample once.
    for (const file of readdirSync(PAYLOADS).sort()) {
      const res = await fetch(`${ctx.server.baseUrl}/webhooks/${INGRESS_CODE}`, {
        method: 'POST',
        body: readFileSync(new URL(file, PAYLOADS), 'utf8'),
        headers: { 'content-type': 'application/json' },
      });
      expect(res.status, file).toBe(200);
    }
    await ctx.db.query(`SELECT graphile_worker_loops.add_job('blocklists__schedule', '{}'::json)`);

    const syncs = await eventually(
      async () => {
        const rows = await ctx.db.query<{ status: string | null; error: unknown }>('SELECT status, error FROM syncs');
        return rows.length > 0 && rows.every((r) => r.status !== null) ? rows : undefined;
      },
      30_000,
      'every sync written',
    );
    const list = await eventually(
      async () => {
        const { body } = await apiGet(ctx.server.baseUrl, '/blocklists', READ_KEY);
        const found = (body.blocklists as Array<{ id: number; status: string; pendingCount: number }>).find((l) => l.id === seeded.blocklists.customers);
        return found?.status === 'SYNCED' && found.pendingCount === 0 ? found : undefined;
      },
      60_000,
      'the block list SYNCED',
    );

    // Everything worked...
    expect(syncs.map((s) => [s.status, s.error])).toEqual(syncs.map(() => ['success', null]));
    expect(list).toMatchObject({ status: 'SYNCED' });
    expect([...sequencer.smartlead(SMARTLEAD_KEY).values].sort()).toEqual(['globex.test', 'initech.test']);
    expect(hubspot.companies.size).toBeGreaterThan(2);
    expect(hubspot.tasks.size).toBeGreaterThan(0);
    // ...through the dated token endpoint, after the stale token's refusal or ahead of it...
    expect(hubspot.tokenRefreshes.length).toBeGreaterThan(0);
    expect(hubspot.requests.filter((r) => r.path === `/oauth/${HUBSPOT_API_VERSION}/token`).every((r) => r.status === 200)).toBe(true);
    // ...and every family of call the connector makes, each on its 2026-03 path, none on v1 or a number.
    const paths = hubspot.requests.map((r) => r.path);
    expect(HUBSPOT_VERSIONS).toContain(HUBSPOT_API_VERSION);
    const v = HUBSPOT_API_VERSION;
    for (const family of [`/oauth/${v}/token`, `/crm/objects/${v}/`, `/crm/associations/${v}/`, `/crm/owners/${v}`, `/crm/lists/${v}/`]) {
      expect(
        paths.some((p) => p.startsWith(family)),
        family,
      ).toBe(true);
    }
    expect(paths.filter((p) => p.startsWith('/oauth/v1/') || /^\/crm\/v\d+\//.test(p))).toEqual([]);
  }, 90_000);

  it('is a date at which the emulator refuses v1 OAuth, as HubSpot will', async () => {
    const res = await fetch(`${hubspot.url}/oauth/v1/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({
        grant_type: 'refresh_token',
        client_id: APP.clientId,
        client_secret: APP.clientSecret,
        refresh_token: 'dated-refresh-token',
      }),
    });

    expect(res.status).toBe(404);
    expect(await res.json()).toMatchObject({ status: 'error', category: 'OBJECT_NOT_FOUND' });
  });
});
