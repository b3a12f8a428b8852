/**
 * Block lists pushed to EmailBison (issue 33): each customer's own instance (the account's `baseUrl`), one
 * value a call at the blacklist of its kind, a value the workspace already holds counted as pushed, a 429
 * waited out, and the token never in the list's error.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { seedFixture, type SeedResult } from '../../src/admin/seed.js';
import { startEmailBisonEmulator, type EmailBisonEmulator } from '../../src/emulators/emailbison.js';
import { startHubspotEmulator, type HubspotEmulator } from '../../src/emulators/hubspot.js';
import { TEST_ENCRYPTION_KEY } from '../support/database.js';
import { apiGet } from '../support/rest.js';
import { useTestServer } from '../support/server.js';
import { eventually, startTestWorker } from '../support/worker.js';

const ctx = useTestServer();
const KEY = 'svcapi_emailbisonBlocklistReader0001';
const TOKEN = '9|emailbisonBlocklistToken';
const HUBSPOT_TOKEN = 'emailbison-blocklist-hubspot';

let hubspot: HubspotEmulator;
let emailbison: EmailBisonEmulator;
let worker: { stop(): Promise<void> };
let seeded: SeedResult;
let addressList: string;

beforeAll(async () => {
  hubspot = await startHubspotEmulator({ accessToken: HUBSPOT_TOKEN });
  emailbison = await startEmailBisonEmulator();
  emailbison.addWorkspace(TOKEN);
  emailbison.addWorkspace('9|someoneElse');
  addressList = hubspot.addList({ name: 'Unsubscribed', objectType: 'contacts', values: ['Ann@Acme.test', 'bob@beta.test', 'held@acme.test', 'nobody'] });
  const domains = hubspot.addList({ name: 'Customers', objectType: 'companies', values: ['https://www.gamma.test/', 'delta.test'] });
  // Already on the workspace's blacklist (pushed by hand): EmailBison answers 422 "already been taken".
  await fetch(`${emailbison.url}/api/blacklisted-emails`, {
    method: 'POST',
    headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
    body: JSON.stringify({ email: 'held@acme.test' }),
  });
  const sequencer = { apiKey: TOKEN, baseUrl: `${emailbison.url}/` };
  seeded = await seedFixture(
    ctx.db.prisma,
    {
      accounts: [
        {
          connections: [
            {
              ref: 'hubspot',
              crm: 'HUBSPOT',
              credentials: { accessToken: HUBSPOT_TOKEN },
              blocklists: [
                { ref: 'addresses', listName: 'Unsubscribed', platform: 'emailbison', blockType: 'ADDRESS', crmSource: { listId: addressList }, sequencer },
                { ref: 'domains', listName: 'Customers', platform: 'emailbison', blockType: 'DOMAIN', crmSource: { listId: domains }, sequencer },
              ],
            },
          ],
          apiKeys: [{ name: 'reader', key: KEY }],
        },
      ],
    },
    TEST_ENCRYPTION_KEY,
  );
  worker = await startTestWorker(ctx.db.url, { urls: { HUBSPOT: hubspot.url } });
}, 60_000);

afterAll(async () => {
  await worker?.stop();
  await Promise.all([hubspot?.close(), emailbison?.close()]);
});

describe('block lists pushed to EmailBison', () => {
  it("reach the account's own instance, one value a call, a value already held counting as pushed", async () => {
    emailbison.failNext(1, { status: 429, retryAfter: 1, path: '/api/blacklisted-domains' });
    await ctx.db.query(`SELECT graphile_worker_loops.add_job('blocklists__schedule', '{}'::json)`);
    const ids = [seeded.blocklists.addresses!, seeded.blocklists.domains!];
    const lists = await eventually(
      async () => {
        const res = await apiGet(ctx.server.baseUrl, '/blocklists', KEY);
        const mine = (res.body.blocklists as Array<{ id: number; status: string; pendingCount: number }>).filter((l) => ids.includes(l.id));
        return mine.every((l) => l.status === 'SYNCED' && l.pendingCount === 0) ? mine : undefined;
      },
      60_000,
      'EmailBison lists SYNCED',
    );
    expect(lists).toHaveLength(2);
    const held = emailbison.blacklist(TOKEN);
    expect(held.emails.sort()).toEqual(['ann@acme.test', 'bob@beta.test', 'held@acme.test']);
    expect(held.domains.sort()).toEqual(['delta.test', 'gamma.test']);
    expect(emailbison.blacklist('9|someoneElse')).toEqual({ emails: [], domains: [] });
    const posts = emailbison.requests.filter((r) => r.method === 'POST' && r.token === TOKEN);
    // Three addresses (one already held) and two domains, one a call; the 429 waited out and sent again.
    expect(posts.map((r) => r.status).sort()).toEqual([201, 201, 201, 201, 201, 422, 429].sort());
  }, 90_000);

  it('records a refused token on the list, naming the sequencer and never the token', async () => {
    emailbison.failNext(1, { status: 401, path: '/api/blacklisted-emails', body: { message: `Unauthenticated token ${TOKEN}` } });
    hubspot.addToList(addressList, ['cy@gamma.test']);
    // Due for its incremental round now rather than in BLOCKLIST_REFRESH_MINUTES.
    await ctx.db.query(`UPDATE blocklists SET last_attempted_at = NULL WHERE id = $1`, [seeded.blocklists.addresses]);
    await ctx.db.query(`SELECT graphile_worker_loops.add_job('blocklists__schedule', '{}'::json)`);
    const list = await eventually(
      async () => {
        const res = await apiGet(ctx.server.baseUrl, '/blocklists', KEY);
        const mine = (res.body.blocklists as Array<{ id: number; lastError: string | null }>).find((l) => l.id === seeded.blocklists.addresses);
        return mine?.lastError ? mine : undefined;
      },
      60_000,
      'the refusal recorded',
    );
    expect(list.lastError).toContain('EmailBison answered 401');
    expect(list.lastError).not.toContain(TOKEN);
  }, 90_000);
});
