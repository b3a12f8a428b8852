/**
 * GET /api/v1/events and /api/v1/events/:id: the account's platform events through real HTTP, every
 * answer checked against the OpenAPI document (apiGet), with the webhooks capability, windows, type
 * filter, cursor pages and connection-scoped keys.
 */
import { randomBytes } from 'node:crypto';
import { beforeAll, describe, expect, it } from 'vitest';
import { seedTestAccounts, type TestKeys } from '../support/accounts.js';
import { apiGet } from '../support/rest.js';
import { useTestServer } from '../support/server.js';

const ctx = useTestServer();
const get = (path: string, key: string = keys.acmeRead) => apiGet(ctx.server.baseUrl, path, key);

const BASE = Date.parse('2025-03-01T00:00:00.000Z');
const iso = (ms: number) => new Date(ms).toISOString();
const W = `from=${encodeURIComponent(iso(BASE))}&to=${encodeURIComponent(iso(BASE + 86_400_000))}`;

let keys: TestKeys;
let acme: number;
let hubspot: number;
let salesforce: number;
/** Public ids of the events written, newest first. */
const written: Array<{ id: string; type: string; connectionId: number | null }> = [];

async function insertEvent(accountId: number, type: string, connectionId: number | null, at: number): Promise<string> {
  const publicId = `svcevt_${randomBytes(12).toString('hex')}`;
  await ctx.db.query(
    `INSERT INTO platform_events (public_id, account_id, type, summary, data, connection_id, created_at) VALUES ($1, $2, $3, $4, $5::jsonb, $6, $7)`,
    [
      publicId,
      accountId,
      type,
      `${type} at ${iso(at)}`,
      JSON.stringify({ connectionId, crm: 'hubspot', sourceId: 1, sourcePlatform: 'smartlead' }),
      connectionId,
      iso(at),
    ],
  );
  return publicId;
}

beforeAll(async () => {
  const ids = await seedTestAccounts(ctx.db.prisma);
  keys = ids.keys;
  acme = ids.accounts['acme']!;
  hubspot = ids.connections['acme-hubspot']!;
  salesforce = ids.connections['acme-salesforce']!;
  // Six events an hour apart: failures and recoveries on both connections, and one of no connection.
  const plan: Array<[string, number | null]> = [
    ['sync.failed', hubspot],
    ['sync.recovered', hubspot],
    ['sync.failed', salesforce],
    ['test.ping', null],
    ['sync.recovered', salesforce],
    ['sync.failed', hubspot],
  ];
  for (const [i, [type, connectionId]] of plan.entries()) {
    const id = await insertEvent(acme, type, connectionId, BASE + (i + 1) * 3_600_000);
    written.unshift({ id, type, connectionId });
  }
  // Outside the window, and another account's event inside it.
  await insertEvent(acme, 'sync.failed', hubspot, BASE - 3_600_000);
  await insertEvent(ids.accounts['globex']!, 'sync.failed', ids.connections['globex-hubspot']!, BASE + 3_600_000);
});

describe('GET /api/v1/events', () => {
  it("lists the window's events of the account, newest first, in the platform event shape", async () => {
    const res = await get(`/events?${W}`);
    expect(res.status).toBe(200);
    expect(res.body.data.map((e: { id: string }) => e.id)).toEqual(written.map((e) => e.id));
    expect(res.body.data[0]).toEqual({
      id: written[0]!.id,
      type: 'sync.failed',
      created: iso(BASE + 6 * 3_600_000),
      summary: `sync.failed at ${iso(BASE + 6 * 3_600_000)}`,
      data: { connectionId: hubspot, crm: 'hubspot', sourceId: 1, sourcePlatform: 'smartlead' },
    });
    expect(res.body).toMatchObject({ hasMore: false, nextCursor: null });
  });

  it('filters by type, and refuses a type the service does not emit', async () => {
    const res = await get(`/events?${W}&type=sync.recovered`);
    expect(res.body.data.map((e: { id: string }) => e.id)).toEqual(written.filter((e) => e.type === 'sync.recovered').map((e) => e.id));
    const bad = await get(`/events?${W}&type=sync.exploded`);
    expect(bad.status).toBe(400);
    expect(bad.body.message).toBe('type must be one of sync.failed, sync.recovered, test.ping');
  });

  it('pages with a cursor that only works for its own query', async () => {
    const first = await get(`/events?${W}&limit=4`);
    expect(first.body).toMatchObject({ hasMore: true, nextCursor: expect.any(String) });
    const second = await get(`/events?${W}&limit=4&cursor=${encodeURIComponent(first.body.nextCursor as string)}`);
    expect([...first.body.data, ...second.body.data].map((e: { id: string }) => e.id)).toEqual(written.map((e) => e.id));
    expect(second.body).toMatchObject({ hasMore: false, nextCursor: null });
    const other = await get(`/events?${W}&limit=4&type=sync.failed&cursor=${encodeURIComponent(first.body.nextCursor as string)}`);
    expect(other.status).toBe(400);
  });

  it('requires the window, at most 31 days', async () => {
    expect((await get('/events')).status).toBe(400);
    const long = await get(`/events?from=${iso(BASE)}&to=${iso(BASE + 40 * 86_400_000)}`);
    expect(long.status).toBe(400);
  });

  it("shows a connection-scoped key its connection's events and those of no connection", async () => {
    const res = await get(`/events?${W}`, keys.acmeHubspotOnly);
    expect(res.body.data.map((e: { id: string }) => e.id)).toEqual(written.filter((e) => e.connectionId !== salesforce).map((e) => e.id));
  });

  it('answers 403 with the spec message for an account without the webhooks capability, before checking anything else', async () => {
    for (const path of [`/events?${W}`, '/events', '/events/svcevt_nothing']) {
      const res = await get(path, keys.globexRead);
      expect(res.status).toBe(403);
      expect(res.body.message).toBe('Platform webhooks are not enabled for this account');
    }
  });
});

describe('GET /api/v1/events/:id', () => {
  it('answers one event of the account', async () => {
    const res = await get(`/events/${written[2]!.id}`);
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ id: written[2]!.id, type: written[2]!.type });
  });

  it("answers 404 naming the id for another account's event, an unknown id, and an event outside a connection-scoped key", async () => {
    const [globexEvent] = await ctx.db.query<{ public_id: string }>(
      "SELECT public_id FROM platform_events WHERE account_id <> $1 AND type = 'sync.failed' LIMIT 1",
      [acme],
    );
    for (const id of [globexEvent!.public_id, 'svcevt_unknown', 'not-an-event-id']) {
      const res = await get(`/events/${id}`);
      expect(res.status).toBe(404);
      expect(res.body.message).toBe(`Event ${id} not found`);
    }
    const salesforceEvent = written.find((e) => e.connectionId === salesforce)!;
    expect((await get(`/events/${salesforceEvent.id}`, keys.acmeHubspotOnly)).status).toBe(404);
    expect((await get(`/events/${written.find((e) => e.connectionId === null)!.id}`, keys.acmeHubspotOnly)).status).toBe(200);
  });
});
