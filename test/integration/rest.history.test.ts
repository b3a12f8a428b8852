import { beforeAll, describe, expect, it } from 'vitest';
import type { ApiResponse } from '../support/openapi.js';
import { seedTestAccounts, type TestAccounts, type TestKeys } from '../support/accounts.js';
import { apiGet, around } from '../support/rest.js';
import { useTestServer } from '../support/server.js';

/**
 * The observability routes of REST API v1 (requests, syncs, deliveries and their metrics, account
 * metrics) through real HTTP, on the test accounts plus a few thousand generated history rows for both
 * accounts and both of acme's connections, spread over ~37 days well away from "now" (where the test
 * fixture's own history rows live).
 */

const ctx = useTestServer();
const get = (path: string, key: string = keys.acmeRead) => apiGet(ctx.server.baseUrl, path, key);

const DAY = 86_400_000;
const BASE = Date.parse('2025-01-01T00:00:00.000Z');
/** The window most tests read: exactly 31 days, with generated rows on both sides of it. */
const W_FROM = BASE + 3 * DAY;
const W_TO = BASE + 34 * DAY;
/** Seven acme requests (and syncs) created in the same millisecond, inside the window. */
const TIE_AT = BASE + 20 * DAY + 30 * 60_000 + 123;

const iso = (ms: number) => new Date(ms).toISOString();
const win = (from: number, to: number) => `from=${encodeURIComponent(iso(from))}&to=${encodeURIComponent(iso(to))}`;
const W = win(W_FROM, W_TO);

let ids: TestAccounts;
let keys: TestKeys;
/** Seeded ids, named. */
let acme: number, globex: number;
let HUB: number, SF: number, GX: number, PIPEDRIVE: number;
let S_SMARTLEAD: number, S_HEYREACH: number, S_INSTANTLY: number, S_LEMLIST: number;
let D_MIRROR: number, D_SLACK: number, D_SF: number, D_GX: number;

interface Row {
  id: number;
  createdAt: string;
  connectionId: number | null;
  sourceId: number | null;
  status?: string;
  destinationId?: number;
}

/** Inserts `count` requests round-robin over `sourceIds`, `groupSize` rows per timestamp, one timestamp every `step`; ids shuffled against time. */
async function insertRequests(sourceIds: number[], count: number, start: number, groupSize: number, step: string): Promise<void> {
  await ctx.db.query(
    `INSERT INTO requests (account_id, source_id, connection_id, path, body, created_at)
     SELECT c.account_id, s.id, s.connection_id, s.ingress_code, 'bulk:' || g, $2::timestamptz + (g / $4) * $5::interval
       FROM generate_series(0, $3 - 1) AS g
       JOIN sources s ON s.id = ($1::int[])[1 + g % cardinality($1::int[])]
       JOIN connections c ON c.id = s.connection_id
      ORDER BY (g * 7919) % $3`,
    [sourceIds, iso(start), count, groupSize, step],
  );
}

beforeAll(async () => {
  ids = await seedTestAccounts(ctx.db.prisma);
  keys = ids.keys;
  acme = ids.accounts.acme!;
  globex = ids.accounts.globex!;
  HUB = ids.connections['acme-hubspot']!;
  SF = ids.connections['acme-salesforce']!;
  GX = ids.connections['globex-hubspot']!;
  PIPEDRIVE = ids.connections['acme-old-pipedrive']!;
  S_SMARTLEAD = ids.sources['acme-smartlead']!;
  S_HEYREACH = ids.sources['acme-heyreach']!;
  S_INSTANTLY = ids.sources['acme-instantly']!;
  S_LEMLIST = ids.sources['globex-lemlist']!;
  D_MIRROR = ids.destinations['acme-crm-mirror']!;
  D_SLACK = ids.destinations['acme-replies-slack']!;

  // Destinations for acme's second connection and for globex, bound to their sources.
  const prisma = ctx.db.prisma;
  D_SF = (await prisma.forwardingDestination.create({ data: { connectionId: SF, url: 'https://hooks.acme.test/salesforce' } })).id;
  D_GX = (await prisma.forwardingDestination.create({ data: { connectionId: GX, url: 'https://hooks.globex.test/all' } })).id;
  await prisma.destinationBinding.create({ data: { sourceId: S_INSTANTLY, destinationId: D_SF } });
  await prisma.destinationBinding.create({ data: { sourceId: S_LEMLIST, destinationId: D_GX } });

  // acme: 3,600 requests over 37.5 days on three sources (two connections), four per hour-timestamp.
  await insertRequests([S_SMARTLEAD, S_HEYREACH, S_INSTANTLY], 3600, BASE, 4, '1 hour');
  // acme: seven requests of one source in the very same millisecond.
  await insertRequests([S_SMARTLEAD], 7, TIE_AT, 7, '1 hour');
  // globex: 800 requests, one an hour.
  await insertRequests([S_LEMLIST], 800, BASE, 1, '1 hour');

  // One sync per generated request: 50% success, 20% warning, 20% error, 10% never recorded (NULL).
  await ctx.db.query(
    `INSERT INTO syncs (account_id, connection_id, source_id, request_id, platform, status, event_type, to_email, error, created_at, updated_at)
     SELECT r.account_id, r.connection_id, r.source_id, r.id, s.platform,
            (CASE WHEN r.id % 10 < 5 THEN 'success' WHEN r.id % 10 < 7 THEN 'warning' WHEN r.id % 10 < 9 THEN 'error' END)::sync_status,
            'EMAIL_SENT', 'lead' || r.id || '@bulk.test',
            CASE WHEN r.id % 10 BETWEEN 5 AND 8 THEN jsonb_build_object('message', 'bulk failure ' || r.id) END,
            r.created_at, r.created_at
       FROM requests r JOIN sources s ON s.id = r.source_id
      WHERE r.body LIKE 'bulk:%'
      ORDER BY r.id % 7, r.id`,
  );
  // Deliveries for every other request, one per destination its source is bound to; 20% errors.
  await ctx.db.query(
    `INSERT INTO deliveries (account_id, destination_id, destination_url, connection_id, source_id, request_id, event_type, to_email,
                             status, http_status, error, created_at)
     SELECT r.account_id, d.id, d.url, r.connection_id, r.source_id, r.id, 'EMAIL_SENT', 'lead' || r.id || '@bulk.test',
            (CASE WHEN r.id % 5 = 0 THEN 'error' ELSE 'success' END)::delivery_status,
            CASE WHEN r.id % 10 = 0 THEN NULL WHEN r.id % 5 = 0 THEN 502 ELSE 200 END,
            CASE WHEN r.id % 5 = 0 THEN jsonb_build_object('message', 'Bad gateway') END,
            r.created_at
       FROM requests r
       JOIN destination_bindings b ON b.source_id = r.source_id
       JOIN destinations d ON d.id = b.destination_id
      WHERE r.body LIKE 'bulk:%' AND r.id % 2 = 0
      ORDER BY r.id % 5, r.id, d.id`,
  );
});

/** Ids of a history table's rows, newest first by (created_at, id), straight from SQL. */
async function sqlIds(table: 'requests' | 'syncs' | 'deliveries', where: string, params: unknown[]): Promise<number[]> {
  const rows = await ctx.db.query<{ id: string }>(`SELECT id FROM ${table} WHERE ${where} ORDER BY created_at DESC, id DESC`, params);
  return rows.map((r) => Number(r.id));
}

/** Rows of acme's two live connections in the window W, plus `extra` SQL. */
function acmeInW(extra = 'true', params: unknown[] = []): [string, unknown[]] {
  const n = params.length;
  return [
    `account_id = $${n + 1} AND connection_id = ANY($${n + 2}::int[]) AND created_at >= $${n + 3} AND created_at <= $${n + 4} AND (${extra})`,
    [...params, acme, [HUB, SF], iso(W_FROM), iso(W_TO)],
  ];
}

/** Follows nextCursor from the first page to the last; checks each page's envelope on the way. */
async function walk(path: string, key: string = keys.acmeRead, limit?: number): Promise<Row[]> {
  const rows: Row[] = [];
  let cursor: string | null = null;
  for (let page = 0; page < 200; page += 1) {
    const res: ApiResponse = await get(`${path}${limit ? `&limit=${limit}` : ''}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`, key);
    expect(res.status, res.text).toBe(200);
    expect(res.body.data.length).toBeLessThanOrEqual(limit ?? 100);
    rows.push(...(res.body.data as Row[]));
    if (!res.body.hasMore) {
      expect(res.body.nextCursor).toBeNull();
      return rows;
    }
    expect(res.body.nextCursor).toEqual(expect.any(String));
    cursor = res.body.nextCursor as string;
  }
  throw new Error(`${path}: more than 200 pages`);
}

const idsOf = (rows: { id: number }[]) => rows.map((r) => r.id);

/** Asserts newest first by (createdAt, id). */
function expectNewestFirst(rows: Row[]): void {
  for (let i = 1; i < rows.length; i += 1) {
    const [a, b] = [rows[i - 1]!, rows[i]!];
    const [ta, tb] = [Date.parse(a.createdAt), Date.parse(b.createdAt)];
    expect(ta > tb || (ta === tb && a.id > b.id), `row ${i}: (${a.createdAt}, ${a.id}) before (${b.createdAt}, ${b.id})`).toBe(true);
  }
}

/** The spec's 400: `{statusCode, message, error}`, message a string or an array of strings. */
function expect400(res: ApiResponse, pattern?: RegExp): void {
  expect(res.status, res.text).toBe(400);
  expect(res.body).toEqual({ statusCode: 400, message: expect.anything(), error: 'Bad Request' });
  const messages = [res.body.message].flat() as unknown[];
  expect(messages.length).toBeGreaterThan(0);
  for (const m of messages) expect(m).toEqual(expect.stringMatching(/\S/));
  if (pattern) expect(messages.join(' | ')).toMatch(pattern);
}

function expect404(res: ApiResponse, message: string): void {
  expect(res.status, res.text).toBe(404);
  expect(res.body).toEqual({ statusCode: 404, message, error: 'Not Found' });
}

/** Every route that takes from/to (list and metrics), with acme's ids in the path. */
const windowedRoutes = () => [
  '/requests',
  '/requests/metrics',
  `/sources/${S_SMARTLEAD}/requests`,
  '/syncs',
  '/syncs/metrics',
  `/sources/${S_SMARTLEAD}/syncs`,
  '/deliveries',
  `/destinations/${D_MIRROR}/deliveries`,
  `/destinations/${D_MIRROR}/deliveries/metrics`,
  '/account/metrics',
];

/** The cursor lists. */
const pagedRoutes = () => [
  '/requests',
  `/sources/${S_SMARTLEAD}/requests`,
  '/syncs',
  `/sources/${S_SMARTLEAD}/syncs`,
  '/deliveries',
  `/destinations/${D_MIRROR}/deliveries`,
];

describe('window and page-size rules', () => {
  const at = (ms: number) => encodeURIComponent(iso(ms));
  it.each([
    ['from is missing', () => `to=${at(W_TO)}`, /from/],
    ['to is missing', () => `from=${at(W_FROM)}`, /\bto\b/],
    ['from is not a date', () => `from=yesterday&to=${at(W_TO)}`, /from/],
    ['to is not ISO 8601', () => `from=${at(W_FROM)}&to=${encodeURIComponent('01/15/2025')}`, /\bto\b/],
    ['from is after to', () => `from=${at(W_TO)}&to=${at(W_FROM)}`, /from/],
    ['the span is 31 days and 1 ms', () => `from=${at(W_FROM)}&to=${at(W_TO + 1)}`, /31 days/],
    ['from is given twice', () => `from=${at(W_FROM)}&from=${at(W_FROM)}&to=${at(W_TO)}`, /from/],
  ])('answers 400 on every windowed route when %s', async (_case, query, pattern) => {
    for (const route of windowedRoutes()) {
      const res = await get(`${route}?${query()}`);
      expect400(res, pattern);
    }
  });

  it('lists every window problem at once, as an array of messages', async () => {
    const res = await get('/syncs');

    expect400(res);
    expect(res.body.message).toEqual([expect.stringMatching(/from/), expect.stringMatching(/\bto\b/)]);
  });

  it('accepts a span of exactly 31 days, from equal to to, a bare date and a UTC offset', async () => {
    const windows = [
      W,
      win(TIE_AT, TIE_AT),
      'from=2025-01-04&to=2025-02-04',
      `from=${encodeURIComponent('2025-01-04T02:00:00+02:00')}&to=${encodeURIComponent('2025-02-04T02:00:00+02:00')}`,
    ];
    for (const query of windows) {
      for (const route of windowedRoutes()) {
        const res = await get(`${route}?${query}`);
        expect(res.status, `${route}?${query}: ${res.text}`).toBe(200);
      }
    }
  });

  // `new Date` would roll 2025-02-30 over to March 2 and run the query on another window.
  it.each(['2025-02-30T00:00:00Z', '2025-13-01T00:00:00Z', '2025-01-01T24:00:00Z', '2025-01-01T12:60:00Z'])(
    'answers 400 to a date-time that does not exist (%s)',
    async (from) => {
      for (const route of ['/syncs/metrics', '/requests']) {
        const res = await get(`${route}?from=${encodeURIComponent(from)}&to=2025-03-05T00:00:00Z`);
        expect400(res, /from/);
      }
    },
  );

  it.each([['0'], ['501'], ['abc'], ['-1'], ['1.5']])('answers 400 to limit=%s on every cursor list', async (limit) => {
    for (const route of pagedRoutes()) {
      const res = await get(`${route}?${W}&limit=${limit}`);
      expect400(res, /limit/);
    }
  });

  it('pages 100 rows by default and at most 500', async () => {
    for (const route of ['/requests', '/syncs', '/deliveries']) {
      const byDefault = await get(`${route}?${W}`);
      expect(byDefault.body.data).toHaveLength(100);
      expect(byDefault.body.hasMore).toBe(true);

      const max = await get(`${route}?${W}&limit=500`);
      expect(max.body.data).toHaveLength(500);
      expect(idsOf(max.body.data).slice(0, 100)).toEqual(idsOf(byDefault.body.data));
    }
  });

  it('/requests/metrics and /syncs/metrics ignore cursor and limit, /syncs/metrics also status', async () => {
    for (const route of ['/requests/metrics', '/syncs/metrics']) {
      const plain = await get(`${route}?${W}`);
      const noisy = await get(`${route}?${W}&limit=abc&cursor=garbage${route === '/syncs/metrics' ? '&status=error' : ''}`);

      expect(noisy.status, noisy.text).toBe(200);
      expect(noisy.body).toEqual(plain.body);
    }
  });
});

describe('ordering and cursor pagination', () => {
  it('serves rows newest first by (createdAt, id), rows of one millisecond by id descending', async () => {
    for (const route of ['/requests', '/syncs', '/deliveries']) {
      const res = await get(`${route}?${W}&limit=500`);
      expectNewestFirst(res.body.data);
      // The generated ids run against time, so this is not the id order.
      expect(idsOf(res.body.data)).not.toEqual([...idsOf(res.body.data)].sort((a, b) => b - a));
    }
  });

  it('pages through rows sharing one createdAt by id, without skipping or repeating any', async () => {
    // Setup: the seven requests and syncs created in the same millisecond are the only rows of a from = to window
    const tie = win(TIE_AT, TIE_AT);
    for (const table of ['requests', 'syncs'] as const) {
      const expected = await sqlIds(table, 'account_id = $1 AND created_at = $2', [acme, iso(TIE_AT)]);
      expect(expected).toHaveLength(7);

      // Action
      const pages: number[][] = [];
      let cursor: string | null = null;
      do {
        const res: ApiResponse = await get(`/${table}?${tie}&limit=3${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`);
        pages.push(idsOf(res.body.data));
        cursor = res.body.nextCursor;
      } while (cursor);

      // Assertions
      expect(pages.map((p) => p.length)).toEqual([3, 3, 1]);
      expect(pages.flat()).toEqual(expected);
      expect(pages.flat()).toEqual([...expected].sort((a, b) => b - a));
    }
  });

  it('walks /requests page by page to exactly the rows of the window, once each', async () => {
    const rows = await walk(`/requests?${W}`, keys.acmeRead, 500);

    expect(rows.length).toBeGreaterThan(2900);
    expect(idsOf(rows)).toEqual(await sqlIds('requests', ...acmeInW()));
    expect(new Set(idsOf(rows)).size).toBe(rows.length);
    expect(rows[0]).toEqual({
      id: expect.any(Number),
      sourceId: expect.any(Number),
      connectionId: expect.any(Number),
      path: expect.any(String),
      fetched: false,
      duplicateOf: null,
      createdAt: expect.any(String),
    });
  });

  it('walks /syncs with the default page size, and /sources/:sourceId/syncs with an odd one, to the window rows', async () => {
    const all = await walk(`/syncs?${W}`);
    expect(idsOf(all)).toEqual(await sqlIds('syncs', ...acmeInW()));

    const ofSource = await walk(`/sources/${S_SMARTLEAD}/syncs?${W}`, keys.acmeRead, 137);
    expect(idsOf(ofSource)).toEqual(await sqlIds('syncs', ...acmeInW('source_id = $1', [S_SMARTLEAD])));
    expectNewestFirst(ofSource);
  });

  it('walks /deliveries and /sources/:sourceId/requests to the window rows', async () => {
    const deliveries = await walk(`/deliveries?${W}`, keys.acmeRead, 500);
    expect(idsOf(deliveries)).toEqual(await sqlIds('deliveries', ...acmeInW()));

    const requests = await walk(`/sources/${S_INSTANTLY}/requests?${W}`, keys.acmeRead, 250);
    expect(idsOf(requests)).toEqual(await sqlIds('requests', ...acmeInW('source_id = $1', [S_INSTANTLY])));
    expect(requests.every((r) => r.sourceId === S_INSTANTLY && r.connectionId === SF)).toBe(true);
  });
});

describe('cursor security', () => {
  const firstCursor = async (path: string, key: string = keys.acmeRead): Promise<string> => {
    const res = await get(path, key);
    expect(res.body.nextCursor).toEqual(expect.any(String));
    return res.body.nextCursor as string;
  };

  it('answers 400 to garbage and to a tampered cursor', async () => {
    const cursor = await firstCursor(`/requests?${W}&limit=5`);
    const [version, payload, signature] = cursor.split('.') as [string, string, string];
    const [ms, id] = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as [number, string];
    const forged = Buffer.from(JSON.stringify([ms + 86_400_000, id])).toString('base64url');
    const flipped = signature.slice(0, -1) + (signature.endsWith('A') ? 'B' : 'A');

    for (const bad of [
      'garbage',
      'v1.abc.def',
      `${version}.${forged}.${signature}`,
      `${version}.${payload}.${flipped}`,
      `v2.${payload}.${signature}`,
      `${cursor}.x`,
    ]) {
      const res = await get(`/requests?${W}&limit=5&cursor=${encodeURIComponent(bad)}`);
      expect400(res, /cursor/);
    }
  });

  it('answers 400 to a cursor of another list, another filter set or another window', async () => {
    // Setup
    const fromSyncs = await firstCursor(`/syncs?${W}&limit=5`);
    const ofErrors = await firstCursor(`/syncs?${W}&status=error&limit=5`);
    const ofSource = await firstCursor(`/sources/${S_SMARTLEAD}/requests?${W}&limit=5`);
    const ofDestination = await firstCursor(`/destinations/${D_MIRROR}/deliveries?${W}&limit=5`);
    const c = (cursor: string) => `cursor=${encodeURIComponent(cursor)}`;

    // Action + Assertions
    for (const path of [
      `/requests?${W}&limit=5&${c(fromSyncs)}`,
      `/deliveries?${W}&limit=5&${c(fromSyncs)}`,
      `/syncs?${W}&status=success&limit=5&${c(ofErrors)}`,
      `/syncs?${W}&limit=5&${c(ofErrors)}`,
      `/syncs?${win(W_FROM + 1, W_TO)}&status=error&limit=5&${c(ofErrors)}`,
      `/syncs?${W}&status=error&connectionId=${HUB}&limit=5&${c(ofErrors)}`,
      `/sources/${S_HEYREACH}/requests?${W}&limit=5&${c(ofSource)}`,
      `/destinations/${D_SLACK}/deliveries?${W}&limit=5&${c(ofDestination)}`,
      `/destinations/${D_MIRROR}/deliveries?${W}&status=error&limit=5&${c(ofDestination)}`,
    ]) {
      expect400(await get(path));
    }
    // The query that produced the cursor still takes it.
    expect((await get(`/syncs?${W}&status=error&limit=5&${c(ofErrors)}`)).status).toBe(200);
    expect((await get(`/sources/${S_SMARTLEAD}/requests?${W}&limit=5&${c(ofSource)}`)).status).toBe(200);
  });

  it("answers 400 to a cursor obtained with another account's key or another key's reach", async () => {
    // Setup
    const globexCursor = await firstCursor(`/syncs?${W}&limit=5`, keys.globexRead);
    const acmeCursor = await firstCursor(`/syncs?${W}&limit=5`, keys.acmeRead);

    // Action
    const acmeWithGlobex = await get(`/syncs?${W}&limit=5&cursor=${encodeURIComponent(globexCursor)}`, keys.acmeRead);
    const globexWithAcme = await get(`/syncs?${W}&limit=5&cursor=${encodeURIComponent(acmeCursor)}`, keys.globexRead);
    const scopedWithAccount = await get(`/syncs?${W}&limit=5&cursor=${encodeURIComponent(acmeCursor)}`, keys.acmeHubspotOnly);

    // Assertions
    expect400(acmeWithGlobex, /cursor/);
    expect400(globexWithAcme, /cursor/);
    expect400(scopedWithAccount, /cursor/);
  });
});

describe('sync status and metrics', () => {
  it('shows the fixture syncs around now, a never-recorded result as error', async () => {
    const res = await get(`/syncs?${around()}&status=error`);

    expect(res.status).toBe(200);
    expect(res.body.data.map((s: { eventType: string }) => s.eventType).sort()).toEqual(['EMAIL_LINK_CLICK', 'EMAIL_OPEN']);
    const neverRecorded = res.body.data.find((s: { eventType: string }) => s.eventType === 'EMAIL_LINK_CLICK');
    expect(neverRecorded).toEqual({
      id: expect.any(Number),
      status: 'error',
      connectionId: HUB,
      sourceId: S_SMARTLEAD,
      eventType: 'EMAIL_LINK_CLICK',
      toEmail: 'sam@prospect.test',
      platform: 'smartlead',
      payloadId: expect.any(Number),
      error: null,
      createdAt: expect.any(String),
    });
    const one = await get(`/syncs/${neverRecorded.id}`);
    expect(one.status).toBe(200);
    expect(one.body).toEqual(neverRecorded);
  });

  it('status=error returns the error rows and the ones whose status IS NULL, as "error"', async () => {
    const rows = await walk(`/syncs?${W}&status=error`, keys.acmeRead, 500);

    const nullIds = await sqlIds('syncs', ...acmeInW('status IS NULL'));
    expect(nullIds.length).toBeGreaterThan(200);
    expect(idsOf(rows)).toEqual(await sqlIds('syncs', ...acmeInW("status = 'error' OR status IS NULL")));
    expect(rows.every((r) => r.status === 'error')).toBe(true);
    expect(idsOf(rows)).toEqual(expect.arrayContaining(nullIds));
  });

  it('status=success and status=warning return only those rows; an unknown status is a 400', async () => {
    for (const status of ['success', 'warning']) {
      const rows = await walk(`/syncs?${W}&status=${status}`, keys.acmeRead, 500);
      expect(idsOf(rows)).toEqual(await sqlIds('syncs', ...acmeInW('status = $1::sync_status', [status])));
      expect(rows.every((r) => r.status === status)).toBe(true);
    }
    expect400(await get(`/syncs?${W}&status=failed`), /status/);
  });

  it('/syncs/metrics counts by status exactly what /syncs returns for the same filters', async () => {
    // Action: the counts per status, and the lists walked per status
    const metrics = await get(`/syncs/metrics?${W}`);
    const listed: Record<string, number> = {};
    for (const status of ['success', 'warning', 'error']) listed[status] = (await walk(`/syncs?${W}&status=${status}`, keys.acmeRead, 500)).length;
    const [sql] = await ctx.db.query<{ success: string; warning: string; error: string }>(
      `SELECT count(*) FILTER (WHERE status = 'success') AS success, count(*) FILTER (WHERE status = 'warning') AS warning,
              count(*) FILTER (WHERE status = 'error' OR status IS NULL) AS error FROM syncs WHERE ${acmeInW()[0]}`,
      acmeInW()[1],
    );

    // Assertions
    expect(metrics.status).toBe(200);
    expect(metrics.body).toEqual(listed);
    expect(metrics.body).toEqual({ success: Number(sql!.success), warning: Number(sql!.warning), error: Number(sql!.error) });
    expect(metrics.body.success + metrics.body.warning + metrics.body.error).toBeGreaterThan(2900);
  });

  it.each([
    ['no filter', () => ''],
    ['sourceId', () => `&sourceId=${S_SMARTLEAD}`],
    ['connectionId', () => `&connectionId=${SF}`],
    ['sourceId and connectionId', () => `&sourceId=${S_HEYREACH}&connectionId=${HUB}`],
  ])('the /syncs/metrics sum equals the number of rows /syncs returns, with %s', async (_case, filters) => {
    const metrics = await get(`/syncs/metrics?${W}${filters()}`);
    const rows = await walk(`/syncs?${W}${filters()}`, keys.acmeRead, 500);

    expect(rows.length).toBeGreaterThan(900);
    expect(metrics.body.success + metrics.body.warning + metrics.body.error).toBe(rows.length);
    expect(metrics.body.error).toBe(rows.filter((r) => r.status === 'error').length);
  });

  it('/syncs/metrics, /requests/metrics and the lists agree on the fixture rows around now', async () => {
    const window = around();
    const syncs = await walk(`/syncs?${window}`);
    const requests = await walk(`/requests?${window}`);

    expect(await get(`/syncs/metrics?${window}`).then((r) => r.body)).toEqual({ success: 2, warning: 1, error: 2 });
    expect(syncs).toHaveLength(5);
    expect(await get(`/requests/metrics?${window}`).then((r) => r.body)).toEqual({ count: requests.length, fetched: 0 });
    expect(requests).toHaveLength(5);
  });
});

describe('access: accounts, connection-scoped keys, deleted connections', () => {
  it("answers 404 to another account's or an unknown sourceId on every route that takes one", async () => {
    for (const sourceId of [S_LEMLIST, 999_999]) {
      for (const path of [
        `/requests?${W}&sourceId=${sourceId}`,
        `/requests/metrics?${W}&sourceId=${sourceId}`,
        `/sources/${sourceId}/requests?${W}`,
        `/syncs?${W}&sourceId=${sourceId}`,
        `/syncs/metrics?${W}&sourceId=${sourceId}`,
        `/sources/${sourceId}/syncs?${W}`,
        `/deliveries?${W}&sourceId=${sourceId}`,
      ]) {
        expect404(await get(path), `Source ${sourceId} not found`);
      }
    }
    // and the other way round
    expect404(await get(`/sources/${S_SMARTLEAD}/syncs?${W}`, keys.globexRead), `Source ${S_SMARTLEAD} not found`);
    expect404(await get(`/requests/metrics?${W}&sourceId=${S_SMARTLEAD}`, keys.globexRead), `Source ${S_SMARTLEAD} not found`);
  });

  it('gives an empty page and zero counts for a connectionId outside the key, not a 404', async () => {
    for (const connectionId of [GX, PIPEDRIVE, 999_999]) {
      const list = await get(`/syncs?${W}&connectionId=${connectionId}`);
      expect(list.status).toBe(200);
      expect(list.body).toEqual({ data: [], hasMore: false, nextCursor: null });

      expect((await get(`/syncs/metrics?${W}&connectionId=${connectionId}`)).body).toEqual({ success: 0, warning: 0, error: 0 });
      expect((await get(`/deliveries?${W}&connectionId=${connectionId}`)).body).toEqual({ data: [], hasMore: false, nextCursor: null });
      expect((await get(`/account/metrics?${W}&connectionId=${connectionId}`)).body).toEqual({
        requests: { count: 0, fetched: 0 },
        syncs: { success: 0, warning: 0, error: 0 },
        deliveries: { success: 0, error: 0 },
      });
    }
    // A connection-scoped key asking for the account's other connection.
    expect((await get(`/syncs?${W}&connectionId=${SF}`, keys.acmeHubspotOnly)).body.data).toEqual([]);
  });

  it('shows a connection-scoped key only the rows of its connection', async () => {
    // Action
    const requests = await walk(`/requests?${W}`, keys.acmeHubspotOnly, 500);
    const syncs = await walk(`/syncs?${W}`, keys.acmeHubspotOnly, 500);
    const deliveries = await walk(`/deliveries?${W}`, keys.acmeHubspotOnly, 500);
    const metrics = await get(`/syncs/metrics?${W}`, keys.acmeHubspotOnly);
    const requestCount = await get(`/requests/metrics?${W}`, keys.acmeHubspotOnly);

    // Assertions
    expect(idsOf(requests)).toEqual(await sqlIds('requests', ...acmeInW('connection_id = $1', [HUB])));
    expect(idsOf(syncs)).toEqual(await sqlIds('syncs', ...acmeInW('connection_id = $1', [HUB])));
    expect(idsOf(deliveries)).toEqual(await sqlIds('deliveries', ...acmeInW('connection_id = $1', [HUB])));
    for (const rows of [requests, syncs, deliveries]) {
      expect(rows.length).toBeGreaterThan(500);
      expect(rows.every((r) => r.connectionId === HUB)).toBe(true);
    }
    expect(metrics.body.success + metrics.body.warning + metrics.body.error).toBe(syncs.length);
    expect(requestCount.body).toEqual({ count: requests.length, fetched: 0 });
  });

  it("answers 404 to a connection-scoped key for its account's other connection's source, sync and destination", async () => {
    const [sfSync] = await ctx.db.query<{ id: string }>('SELECT id FROM syncs WHERE connection_id = $1 LIMIT 1', [SF]);
    const key = keys.acmeHubspotOnly;

    expect404(await get(`/sources/${S_INSTANTLY}/requests?${W}`, key), `Source ${S_INSTANTLY} not found`);
    expect404(await get(`/syncs?${W}&sourceId=${S_INSTANTLY}`, key), `Source ${S_INSTANTLY} not found`);
    expect404(await get(`/syncs/${sfSync!.id}`, key), `Sync ${sfSync!.id} not found`);
    expect404(await get(`/destinations/${D_SF}/deliveries?${W}`, key), `Destination ${D_SF} not found`);
    expect((await get(`/syncs/${sfSync!.id}`)).status).toBe(200);
  });

  it("never shows one account another's rows", async () => {
    // Action
    const globexSyncs = await walk(`/syncs?${W}`, keys.globexRead, 500);
    const globexRequests = await walk(`/requests?${W}`, keys.globexRead, 500);
    const globexDeliveries = await walk(`/deliveries?${W}`, keys.globexRead, 500);
    const acmeSyncs = await walk(`/syncs?${W}`, keys.acmeRead, 500);

    // Assertions
    const globexWhere = 'account_id = $1 AND created_at >= $2 AND created_at <= $3';
    const globexParams = [globex, iso(W_FROM), iso(W_TO)];
    expect(idsOf(globexSyncs)).toEqual(await sqlIds('syncs', globexWhere, globexParams));
    expect(idsOf(globexRequests)).toEqual(await sqlIds('requests', globexWhere, globexParams));
    expect(idsOf(globexDeliveries)).toEqual(await sqlIds('deliveries', globexWhere, globexParams));
    expect(globexSyncs.length).toBeGreaterThan(700);
    for (const rows of [globexSyncs, globexRequests, globexDeliveries]) expect(rows.every((r) => r.connectionId === GX && r.sourceId === S_LEMLIST)).toBe(true);
    expect(acmeSyncs.some((r) => r.connectionId === GX || r.sourceId === S_LEMLIST)).toBe(false);
    const globexIds = new Set(idsOf(globexSyncs));
    expect(acmeSyncs.filter((r) => globexIds.has(r.id))).toEqual([]);
  });

  it("answers 404 Sync <id> not found for another account's sync, an unknown id and a non-numeric one", async () => {
    const [globexSync] = await ctx.db.query<{ id: string }>('SELECT id FROM syncs WHERE account_id = $1 LIMIT 1', [globex]);
    const [acmeSync] = await ctx.db.query<{ id: string }>('SELECT id FROM syncs WHERE account_id = $1 LIMIT 1', [acme]);

    expect404(await get(`/syncs/${globexSync!.id}`, keys.acmeRead), `Sync ${globexSync!.id} not found`);
    expect404(await get(`/syncs/${acmeSync!.id}`, keys.globexRead), `Sync ${acmeSync!.id} not found`);
    expect404(await get('/syncs/999999999999'), 'Sync 999999999999 not found');
    expect404(await get('/syncs/abc'), 'Sync abc not found');
    expect404(await get('/syncs/0'), 'Sync 0 not found');

    const own = await get(`/syncs/${globexSync!.id}`, keys.globexRead);
    expect(own.status).toBe(200);
    expect(own.body).toMatchObject({ id: Number(globexSync!.id), connectionId: GX, sourceId: S_LEMLIST });
  });

  it("makes a deleted connection's rows vanish from every list, metric and lookup", async () => {
    // Setup
    const before = await get(`/account/metrics?${W}`);
    const [sfSync] = await ctx.db.query<{ id: string }>('SELECT id FROM syncs WHERE connection_id = $1 LIMIT 1', [SF]);
    await ctx.db.query('UPDATE connections SET deleted_at = now() WHERE id = $1', [SF]);
    try {
      // Action
      const requests = await walk(`/requests?${W}`, keys.acmeRead, 500);
      const syncs = await walk(`/syncs?${W}`, keys.acmeRead, 500);
      const deliveries = await walk(`/deliveries?${W}`, keys.acmeRead, 500);
      const metrics = await get(`/account/metrics?${W}`);

      // Assertions
      expect(idsOf(requests)).toEqual(await sqlIds('requests', ...acmeInW('connection_id = $1', [HUB])));
      expect(idsOf(syncs)).toEqual(await sqlIds('syncs', ...acmeInW('connection_id = $1', [HUB])));
      expect(idsOf(deliveries)).toEqual(await sqlIds('deliveries', ...acmeInW('connection_id = $1', [HUB])));
      expect(metrics.body.requests.count).toBe(requests.length);
      expect(metrics.body.requests.count).toBeLessThan(before.body.requests.count);
      const m = metrics.body.syncs;
      expect(m.success + m.warning + m.error).toBe(syncs.length);
      expect(metrics.body.deliveries.success + metrics.body.deliveries.error).toBe(deliveries.length);
      expect404(await get(`/sources/${S_INSTANTLY}/requests?${W}`), `Source ${S_INSTANTLY} not found`);
      expect404(await get(`/syncs/metrics?${W}&sourceId=${S_INSTANTLY}`), `Source ${S_INSTANTLY} not found`);
      expect404(await get(`/syncs/${sfSync!.id}`), `Sync ${sfSync!.id} not found`);
      expect404(await get(`/destinations/${D_SF}/deliveries?${W}`), `Destination ${D_SF} not found`);
      expect((await get(`/syncs?${W}&connectionId=${SF}`)).body.data).toEqual([]);
    } finally {
      await ctx.db.query('UPDATE connections SET deleted_at = NULL WHERE id = $1', [SF]);
    }
    expect((await get(`/account/metrics?${W}`)).body).toEqual(before.body);
  });
});

describe('deliveries', () => {
  it('lists the deliveries of one destination, filtered by status', async () => {
    const all = await walk(`/destinations/${D_MIRROR}/deliveries?${W}`, keys.acmeRead, 500);
    expect(idsOf(all)).toEqual(await sqlIds('deliveries', ...acmeInW('destination_id = $1', [D_MIRROR])));
    expect(Object.keys(all[0]!).sort()).toEqual(
      [
        'id',
        'destinationId',
        'destinationUrl',
        'status',
        'httpStatus',
        'connectionId',
        'sourceId',
        'eventType',
        'toEmail',
        'payloadId',
        'error',
        'replayOfDeliveryId',
        'createdAt',
      ].sort(),
    );
    expect(all.every((d) => d.destinationId === D_MIRROR && d.connectionId === HUB && d.sourceId === S_SMARTLEAD)).toBe(true);
    expect(all[0]).toMatchObject({ destinationUrl: 'https://hooks.acme.test/pipeline', eventType: 'EMAIL_SENT' });

    for (const status of ['success', 'error']) {
      const rows = await walk(`/destinations/${D_MIRROR}/deliveries?${W}&status=${status}`, keys.acmeRead, 500);
      expect(idsOf(rows)).toEqual(await sqlIds('deliveries', ...acmeInW('destination_id = $1 AND status = $2::delivery_status', [D_MIRROR, status])));
      expect(rows.length).toBeGreaterThan(50);
      expect(rows.every((r) => r.status === status && r.destinationId === D_MIRROR)).toBe(true);
    }
    const errors = await get(`/destinations/${D_MIRROR}/deliveries?${W}&status=error&limit=500`);
    expect(errors.body.data.some((d: { httpStatus: number | null }) => d.httpStatus === null)).toBe(true);
    expect400(await get(`/destinations/${D_MIRROR}/deliveries?${W}&status=warning`), /status/);
  });

  it("answers 404 Destination <id> not found for another account's, an unknown or a non-numeric destination", async () => {
    for (const [id, key] of [
      [D_GX, keys.acmeRead],
      [D_MIRROR, keys.globexRead],
      [999_999, keys.acmeRead],
      ['abc', keys.acmeRead],
    ] as const) {
      expect404(await get(`/destinations/${id}/deliveries?${W}`, key), `Destination ${id} not found`);
      expect404(await get(`/destinations/${id}/deliveries/metrics?${W}`, key), `Destination ${id} not found`);
    }
    expect404(await get(`/deliveries?${W}&destinationId=${D_GX}`), `Destination ${D_GX} not found`);
  });

  it('counts the deliveries of one destination by status, as the list returns them', async () => {
    for (const destination of [D_MIRROR, D_SLACK, D_SF]) {
      const metrics = await get(`/destinations/${destination}/deliveries/metrics?${W}`);
      const rows = await walk(`/destinations/${destination}/deliveries?${W}`, keys.acmeRead, 500);

      expect(metrics.status).toBe(200);
      expect(metrics.body).toEqual({ success: rows.filter((r) => r.status === 'success').length, error: rows.filter((r) => r.status === 'error').length });
      expect(rows.length).toBeGreaterThan(100);
    }
    expect((await get(`/destinations/${D_GX}/deliveries/metrics?${W}`, keys.globexRead)).body.success).toBeGreaterThan(0);
  });

  it('filters the account-wide export by destinationId, sourceId and connectionId', async () => {
    const cases: [string, string, unknown[]][] = [
      [`destinationId=${D_SLACK}`, 'destination_id = $1', [D_SLACK]],
      [`sourceId=${S_INSTANTLY}`, 'source_id = $1', [S_INSTANTLY]],
      [`sourceId=${S_HEYREACH}`, 'source_id = $1', [S_HEYREACH]],
      [`connectionId=${HUB}`, 'connection_id = $1', [HUB]],
      [`connectionId=${SF}&status=error`, "connection_id = $1 AND status = 'error'", [SF]],
      [
        `destinationId=${D_MIRROR}&sourceId=${S_SMARTLEAD}&connectionId=${HUB}`,
        'destination_id = $1 AND source_id = $2 AND connection_id = $3',
        [D_MIRROR, S_SMARTLEAD, HUB],
      ],
    ];
    for (const [query, where, params] of cases) {
      const rows = await walk(`/deliveries?${W}&${query}`, keys.acmeRead, 500);
      expect(idsOf(rows), query).toEqual(await sqlIds('deliveries', ...acmeInW(where, params)));
    }
  });
});

describe('GET /api/v1/account/metrics', () => {
  /** The sum of the per-route metrics over the key's destinations. */
  async function summed(query: string, key: string, destinations: number[]) {
    const requests = (await get(`/requests/metrics?${query}`, key)).body;
    const syncs = (await get(`/syncs/metrics?${query}`, key)).body;
    const deliveries = { success: 0, error: 0 };
    for (const destination of destinations) {
      const m = (await get(`/destinations/${destination}/deliveries/metrics?${query}`, key)).body;
      deliveries.success += m.success;
      deliveries.error += m.error;
    }
    return { requests, syncs, deliveries };
  }

  it('is the sum of the requests, syncs and deliveries metrics for the same window', async () => {
    for (const [query, key, destinations] of [
      [W, keys.acmeRead, [D_MIRROR, D_SLACK, D_SF]],
      [W, keys.acmeHubspotOnly, [D_MIRROR, D_SLACK]],
      [W, keys.globexRead, [D_GX]],
      [around(), keys.acmeRead, [D_MIRROR, D_SLACK, D_SF]],
    ] as const) {
      const res = await get(`/account/metrics?${query}`, key);
      expect(res.status).toBe(200);
      expect(res.body).toEqual(await summed(query, key, [...destinations]));
    }
    const acmeW = (await get(`/account/metrics?${W}`)).body;
    expect(acmeW.requests.count).toBeGreaterThan(2900);
    expect(acmeW.deliveries.success + acmeW.deliveries.error).toBeGreaterThan(1000);
  });

  it('narrows to one connection with connectionId', async () => {
    const res = await get(`/account/metrics?${W}&connectionId=${SF}`);
    const requests = await get(`/requests/metrics?${W}&sourceId=${S_INSTANTLY}`);
    const syncs = await get(`/syncs/metrics?${W}&connectionId=${SF}`);
    const deliveries = await get(`/destinations/${D_SF}/deliveries/metrics?${W}`);

    expect(res.body).toEqual({ requests: requests.body, syncs: syncs.body, deliveries: deliveries.body });
    expect(res.body.requests.count).toBeGreaterThan(900);
  });
});
