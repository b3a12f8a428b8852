/**
 * Pause and resync of a block list (spec: Block lists; issue 16), without a worker: the answer and the
 * persisted state at each status, the order of the checks (write scope, then block lists enabled, then
 * the lookup, then the 409s), connection-scoped keys, and support staff in the explorer under the same rules.
 */
import { beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { seedFixture, type SeedResult } from '../../src/admin/seed.js';
import { TEST_ENCRYPTION_KEY } from '../support/database.js';
import { apiFetch } from '../support/openapi.js';
import { SUPPORT_TOKEN, useTestServer } from '../support/server.js';

const ctx = useTestServer();
const KEYS = {
  writer: 'svcapi_blocklistActionsWriter0000001',
  reader: 'svcapi_blocklistActionsReader0000001',
  scoped: 'svcapi_blocklistActionsScoped0000001',
  noLists: 'svcapi_blocklistActionsNoLists000001',
};
let seeded: SeedResult;

beforeAll(async () => {
  const list = (ref: string, more: Record<string, unknown> = {}) => ({
    ref,
    listName: ref,
    platform: 'smartlead',
    blockType: 'DOMAIN',
    crmSource: { listId: '1' },
    sequencer: { apiKey: 'sequencer-key-actions' },
    ...more,
  });
  seeded = await seedFixture(
    ctx.db.prisma,
    {
      accounts: [
        {
          ref: 'lists',
          connections: [
            {
              ref: 'hubspot',
              crm: 'HUBSPOT',
              credentials: { accessToken: 'actions-token' },
              blocklists: [list('main'), list('sourceless', { hasCrmSource: false, crmSource: undefined })],
            },
          ],
          apiKeys: [
            { name: 'writer', key: KEYS.writer, scopes: ['read', 'write'] },
            { name: 'reader', key: KEYS.reader },
            { name: 'scoped', key: KEYS.scoped, scopes: ['read', 'write'], connectionScope: 'connection', connection: 'hubspot' },
          ],
        },
        {
          ref: 'without',
          capabilities: { canUseApi: true, canUserAccount: true, canBlockList: false, canUseWebhooks: true },
          connections: [{ ref: 'hubspot2', crm: 'HUBSPOT', credentials: { accessToken: 'actions-token-2' }, blocklists: [list('disabled')] }],
          apiKeys: [{ name: 'writer', key: KEYS.noLists, scopes: ['read', 'write'] }],
        },
      ],
    },
    TEST_ENCRYPTION_KEY,
  );
});

const id = (ref: string) => seeded.blocklists[ref]!;
const post = (path: string, key: string) => apiFetch(`${ctx.server.baseUrl}/api/v1${path}`, { method: 'POST', headers: { authorization: `Bearer ${key}` } });

async function setList(ref: string, status: string, isEnabled = true): Promise<void> {
  await ctx.db.query(`UPDATE blocklists SET status = $2::blocklist_status, is_enabled = $3, last_error = 'old', last_fetched_at = now() WHERE id = $1`, [
    id(ref),
    status,
    isEnabled,
  ]);
}

async function row(ref: string) {
  const [r] = await ctx.db.query<{ status: string; is_enabled: boolean; last_fetched_at: Date | null; last_error: string | null }>(
    'SELECT status::text, is_enabled, last_fetched_at, last_error FROM blocklists WHERE id = $1',
    [id(ref)],
  );
  return r!;
}

const fetchJobs = (ref: string) =>
  ctx.db.query<{ payload: { kind: string } }>("SELECT payload FROM graphile_worker_loops._private_jobs WHERE key = 'blocklist-fetch:' || $1", [id(ref)]);

beforeEach(async () => {
  await ctx.db.query('DELETE FROM graphile_worker_loops._private_jobs');
});

describe('POST /api/v1/blocklists/:id/pause', () => {
  it.each([
    ['CREATED', 'CREATED'],
    ['FETCHING', 'SYNCING_NEW_CONTACTS'],
    ['SYNCING', 'SYNCING_NEW_CONTACTS'],
    ['SYNCED', 'SYNCED'],
    ['SYNCING_NEW_CONTACTS', 'SYNCING_NEW_CONTACTS'],
  ])('pauses a %s list as %s, and again the same', async (status, after) => {
    await setList('main', status);
    const first = await post(`/blocklists/${id('main')}/pause`, KEYS.writer);
    expect(first.status).toBe(200);
    expect(first.body).toEqual({ id: id('main'), isEnabled: false, status: after });
    expect(await row('main')).toMatchObject({ status: after, is_enabled: false });
    expect((await post(`/blocklists/${id('main')}/pause`, KEYS.writer)).body).toEqual(first.body);
  });

  it('checks the write scope before the lookup, and hides other accounts’ lists', async () => {
    expect((await post('/blocklists/123456/pause', KEYS.reader)).body).toEqual({
      statusCode: 403,
      error: 'Forbidden',
      message: 'API key requires the "write" scope',
    });
    expect((await post(`/blocklists/${id('disabled')}/pause`, KEYS.writer)).body).toMatchObject({
      statusCode: 404,
      message: `Blocklist ${id('disabled')} not found`,
    });
    expect((await post('/blocklists/abc/pause', KEYS.writer)).body).toMatchObject({ statusCode: 404, message: 'Blocklist abc not found' });
  });

  it('lets a connection-scoped key pause its connection’s list', async () => {
    await setList('main', 'SYNCED');
    expect((await post(`/blocklists/${id('main')}/pause`, KEYS.scoped)).body).toEqual({ id: id('main'), isEnabled: false, status: 'SYNCED' });
  });
});

describe('POST /api/v1/blocklists/:id/resync', () => {
  it('queues a full reload of a paused list and enables it, clearing lastFetchedAt and the error', async () => {
    await setList('main', 'SYNCING_NEW_CONTACTS', false);
    const res = await post(`/blocklists/${id('main')}/resync`, KEYS.scoped);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ id: id('main'), queued: true, isEnabled: true, status: 'FETCHING' });
    expect(await row('main')).toEqual({ status: 'FETCHING', is_enabled: true, last_fetched_at: null, last_error: null });
    expect((await fetchJobs('main')).map((j) => j.payload.kind)).toEqual(['full']);
  });

  it.each(['FETCHING', 'SYNCING'])('refuses while %s: 409 already in progress', async (status) => {
    await setList('main', status);
    expect((await post(`/blocklists/${id('main')}/resync`, KEYS.writer)).body).toEqual({
      statusCode: 409,
      error: 'Conflict',
      message: 'Blocklist resync already in progress',
    });
    expect(await row('main')).toMatchObject({ status, last_error: 'old' });
  });

  it('refuses while a fetch of the list is queued, whatever its status', async () => {
    await setList('main', 'SYNCED');
    await ctx.db.query(
      "SELECT graphile_worker_loops.add_job('blocklists__fetch', json_build_object('blocklistId', $1::int, 'kind', 'incremental'), job_key => 'blocklist-fetch:' || $1, run_at => now() + interval '1 hour')",
      [id('main')],
    );
    expect((await post(`/blocklists/${id('main')}/resync`, KEYS.writer)).body).toMatchObject({
      statusCode: 409,
      message: 'Blocklist resync already in progress',
    });
  });

  it('refuses a list without a CRM source', async () => {
    expect((await post(`/blocklists/${id('sourceless')}/resync`, KEYS.writer)).body).toMatchObject({
      statusCode: 409,
      message: 'Blocklist has no CRM source to resync from',
    });
  });

  it('checks, in order: the write scope, block lists enabled, the lookup', async () => {
    expect((await post('/blocklists/123456/resync', KEYS.reader)).body).toMatchObject({ statusCode: 403, message: 'API key requires the "write" scope' });
    expect((await post(`/blocklists/${id('disabled')}/resync`, KEYS.noLists)).body).toMatchObject({
      statusCode: 403,
      message: 'Block lists are not enabled for this connection',
    });
    expect((await post('/blocklists/123456/resync', KEYS.noLists)).body).toMatchObject({
      statusCode: 403,
      message: 'Block lists are not enabled for this connection',
    });
    expect((await post('/blocklists/123456/resync', KEYS.writer)).body).toMatchObject({ statusCode: 404, message: 'Blocklist 123456 not found' });
  });

  it('lets exactly one of many concurrent resyncs win', async () => {
    await setList('main', 'SYNCED');
    const answers = await Promise.all(Array.from({ length: 8 }, () => post(`/blocklists/${id('main')}/resync`, KEYS.writer)));
    expect(answers.map((a) => a.status).sort()).toEqual([200, 409, 409, 409, 409, 409, 409, 409]);
    expect(await fetchJobs('main')).toHaveLength(1);
  });
});

describe('support staff in the explorer', () => {
  async function staff(query: string) {
    const res = await fetch(`${ctx.server.baseUrl}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${SUPPORT_TOKEN}` },
      body: JSON.stringify({ query }),
    });
    return (await res.json()) as { data?: Record<string, Record<string, unknown>>; errors?: Array<{ message: string }> };
  }

  it('pause and resync any account’s list under the same rules', async () => {
    await setList('main', 'SYNCING');
    expect((await staff(`mutation { pauseBlocklist(id: ${id('main')}) { id isEnabled status } }`)).data?.pauseBlocklist).toEqual({
      id: id('main'),
      isEnabled: false,
      status: 'SYNCING_NEW_CONTACTS',
    });
    expect((await staff(`mutation { resyncBlocklist(id: ${id('main')}) { id queued isEnabled status } }`)).data?.resyncBlocklist).toEqual({
      id: id('main'),
      queued: true,
      isEnabled: true,
      status: 'FETCHING',
    });
    expect((await staff(`mutation { resyncBlocklist(id: ${id('main')}) { id } }`)).errors?.[0]?.message).toBe('Blocklist resync already in progress');
    // The account's capability still applies to staff.
    expect((await staff(`mutation { resyncBlocklist(id: ${id('disabled')}) { id } }`)).errors?.[0]?.message).toBe(
      'Block lists are not enabled for this connection',
    );
  });
});
