import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateHistory, HISTORY_DEFAULTS, type GenerateHistoryOptions, type GenerateHistorySummary } from '../../src/admin/generate-history.js';
import { seedTestAccounts, type TestAccounts } from '../support/accounts.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';

/**
 * `generate-history` (src/admin/generate-history.ts) against what its README section promises: the
 * counts it reports are the rows it wrote, statuses split per the rates, `created_at` inside the window
 * at millisecond precision with ids growing with it, references valid (it may skip the foreign-key
 * triggers), and the same `seed` on the same tables gives the same rows.
 */

const NOW = new Date('2025-06-30T12:00:00.000Z');
const DAYS = 30;
const WINDOW_FROM = new Date(NOW.getTime() - DAYS * 86_400_000);

/** As the CLI passes them (its defaults), at a test's volume; rates far from the defaults so a mix-up shows. */
function options(accountIds: number[], overrides: Partial<GenerateHistoryOptions> = {}): GenerateHistoryOptions {
  return {
    ...HISTORY_DEFAULTS,
    accountIds,
    requests: 2_000,
    syncRatio: 0.8,
    deliveries: 200,
    days: DAYS,
    errorRate: 0.5,
    warningRate: 0.2,
    nullRate: 0.1,
    chunkSize: 500,
    seed: 0.25,
    now: NOW,
    progress: () => {},
    ...overrides,
  };
}

/** The highest id of each table before the run: generated rows are those above it (the seed writes a little history). */
interface Before {
  requests: number;
  syncs: number;
  deliveries: number;
}

interface Generated {
  db: TestDatabase;
  accounts: TestAccounts;
  before: Before;
  summary: GenerateHistorySummary;
}

/** How instantly names the canonical event types in its payloads (smartlead uses them as they are). */
const INSTANTLY_EVENTS = {
  EMAIL_SENT: 'email_sent',
  EMAIL_OPEN: 'email_opened',
  EMAIL_LINK_CLICK: 'link_clicked',
  EMAIL_REPLY: 'reply_received',
  EMAIL_BOUNCE: 'email_bounced',
  LEAD_UNSUBSCRIBED: 'lead_unsubscribed',
};

const databases: TestDatabase[] = [];

/** A fresh database with the test accounts, then generate-history with `optionsFor(accounts)`. */
async function generate(optionsFor: (accounts: TestAccounts) => GenerateHistoryOptions): Promise<Generated> {
  const db = await createTestDatabase();
  databases.push(db);
  const accounts = await seedTestAccounts(db.prisma);
  const [before] = await db.query<{ requests: string; syncs: string; deliveries: string }>(
    `SELECT (SELECT COALESCE(max(id), 0) FROM requests) AS requests, (SELECT COALESCE(max(id), 0) FROM syncs) AS syncs,
            (SELECT COALESCE(max(id), 0) FROM deliveries) AS deliveries`,
  );
  const summary = await generateHistory(db.url, optionsFor(accounts));
  return { db, accounts, before: { requests: Number(before!.requests), syncs: Number(before!.syncs), deliveries: Number(before!.deliveries) }, summary };
}

/** md5 of every generated column of every generated row, per table, in id order (`requests.path` aside: seeded ingress codes are random). */
async function fingerprint({ db, before }: Generated): Promise<{ requests: string; syncs: string; deliveries: string }> {
  const [row] = await db.query<{ requests: string; syncs: string; deliveries: string }>(
    `SELECT
       (SELECT md5(string_agg(concat_ws('|', r.id, r.account_id, r.source_id, r.connection_id, b.body, r.created_at), E'\\n' ORDER BY r.id))
          FROM requests r JOIN request_bodies b ON b.request_id = r.id AND b.created_at = r.created_at WHERE r.id > $1) AS requests,
       (SELECT md5(string_agg(concat_ws('|', id, account_id, connection_id, source_id, request_id, platform, status, event_type, to_email,
                                        error, attempts, created_at, updated_at), E'\\n' ORDER BY id))
          FROM syncs WHERE id > $2) AS syncs,
       (SELECT md5(string_agg(concat_ws('|', id, account_id, destination_id, destination_url, connection_id, source_id, request_id, event_type,
                                        to_email, status, http_status, error, created_at), E'\\n' ORDER BY id))
          FROM deliveries WHERE id > $3) AS deliveries`,
    [before.requests, before.syncs, before.deliveries],
  );
  return row!;
}

afterAll(async () => {
  await Promise.all(databases.map((db) => db.drop()));
});

describe('generate-history, one account with deliveries', () => {
  let run: Generated;
  let acme: number;
  const count = async (sql: string, ...params: unknown[]): Promise<number> => Number((await run.db.query<{ n: string }>(sql, params))[0]!.n);

  beforeAll(async () => {
    run = await generate((accounts) => options([accounts.accounts.acme!]));
    acme = run.accounts.accounts.acme!;
  });

  it('reports the live sources it read, the window and the chunks', () => {
    // acme: smartlead and heyreach on the live HubSpot connection (which has destinations), instantly on the
    // disconnected (not deleted) Salesforce one (none); the deleted Pipedrive connection's sources are left out.
    expect(run.summary.accounts).toEqual([{ id: acme, sources: 3, sourcesWithDestinations: 2 }]);
    expect(run.summary.window).toEqual({ from: WINDOW_FROM.toISOString(), to: NOW.toISOString() });
    expect(run.summary.chunks).toBe(4);
  });

  it('reports the rows it wrote, per table and per status', async () => {
    const { before, summary } = run;
    expect(summary.inserted.requests).toBe(2_000);
    expect(summary.inserted.deliveries).toBe(200);
    expect(await count('SELECT count(*) AS n FROM requests WHERE id > $1 AND account_id = $2', before.requests, acme)).toBe(2_000);
    expect(await count('SELECT count(*) AS n FROM requests WHERE id > $1', before.requests)).toBe(2_000);
    expect(await count('SELECT count(*) AS n FROM syncs WHERE id > $1', before.syncs)).toBe(summary.inserted.syncs);
    expect(await count('SELECT count(*) AS n FROM deliveries WHERE id > $1', before.deliveries)).toBe(200);

    const syncs = await run.db.query<{ status: string; n: string }>(
      `SELECT COALESCE(status::text, 'null') AS status, count(*) AS n FROM syncs WHERE id > $1 GROUP BY 1`,
      [before.syncs],
    );
    expect(summary.syncsByStatus).toEqual({ success: 0, warning: 0, error: 0, null: 0, ...Object.fromEntries(syncs.map((s) => [s.status, Number(s.n)])) });
    const deliveries = await run.db.query<{ status: string; n: string }>(
      `SELECT status::text AS status, count(*) AS n FROM deliveries WHERE id > $1 GROUP BY 1`,
      [before.deliveries],
    );
    expect(summary.deliveriesByStatus).toEqual({ success: 0, error: 0, ...Object.fromEntries(deliveries.map((d) => [d.status, Number(d.n)])) });
    expect(summary.rowsPerSecond).toBeGreaterThan(0);
  });

  it('gives about sync-ratio of the requests a sync, at most one each', async () => {
    const share = run.summary.inserted.syncs / 2_000;
    expect(share).toBeGreaterThan(0.75);
    expect(share).toBeLessThan(0.85);
    expect(await count('SELECT count(DISTINCT request_id) AS n FROM syncs WHERE id > $1', run.before.syncs)).toBe(run.summary.inserted.syncs);
  });

  it('splits sync and delivery statuses per the rates', () => {
    const { syncsByStatus: s, deliveriesByStatus: d, inserted } = run.summary;
    const share = (n: number, of: number) => n / of;
    // null 0.1, error 0.5, warning 0.2, success the rest (0.2), over about 1,600 syncs.
    expect(share(s.null, inserted.syncs)).toBeGreaterThan(0.07);
    expect(share(s.null, inserted.syncs)).toBeLessThan(0.13);
    expect(share(s.error, inserted.syncs)).toBeGreaterThan(0.45);
    expect(share(s.error, inserted.syncs)).toBeLessThan(0.55);
    expect(share(s.warning, inserted.syncs)).toBeGreaterThan(0.16);
    expect(share(s.warning, inserted.syncs)).toBeLessThan(0.24);
    expect(share(s.success, inserted.syncs)).toBeGreaterThan(0.16);
    expect(share(s.success, inserted.syncs)).toBeLessThan(0.24);
    // Deliveries fail at the error rate: 0.5 of 200.
    expect(share(d.error, inserted.deliveries)).toBeGreaterThan(0.4);
    expect(share(d.error, inserted.deliveries)).toBeLessThan(0.6);
  });

  it('writes each status with its details', async () => {
    const wrong = await count(
      `SELECT count(*) AS n FROM syncs WHERE id > $1 AND NOT CASE
         WHEN status IS NULL THEN error IS NULL AND attempts = 0
         WHEN status = 'error' THEN error IS NOT NULL AND attempts BETWEEN 1 AND 3
         WHEN status = 'warning' THEN error ? 'message' AND attempts = 1
         ELSE error IS NULL AND attempts = 1 END`,
      run.before.syncs,
    );
    expect(wrong).toBe(0);
    const wrongDeliveries = await count(
      `SELECT count(*) AS n FROM deliveries WHERE id > $1 AND NOT CASE
         WHEN status = 'success' THEN http_status = 200 AND error IS NULL
         ELSE (http_status IS NULL OR http_status >= 400) AND error ? 'message' END`,
      run.before.deliveries,
    );
    expect(wrongDeliveries).toBe(0);
  });

  it('times every row inside the window at millisecond precision, ids growing with created_at', async () => {
    const [requests] = await run.db.query<{ min: Date; max: Date; sub_ms: string; out_of_order: string }>(
      `SELECT min(created_at), max(created_at), count(*) FILTER (WHERE created_at <> date_trunc('milliseconds', created_at)) AS sub_ms,
              count(*) FILTER (WHERE created_at < previous) AS out_of_order
         FROM (SELECT created_at, lag(created_at) OVER (ORDER BY id) AS previous FROM requests WHERE id > $1) r`,
      [run.before.requests],
    );
    expect(requests!.min.getTime()).toBeGreaterThanOrEqual(WINDOW_FROM.getTime());
    expect(requests!.max.getTime()).toBeLessThanOrEqual(NOW.getTime());
    // Uniform over the window: the first and last of 2,000 fall near its ends.
    expect(requests!.min.getTime() - WINDOW_FROM.getTime()).toBeLessThan(86_400_000);
    expect(NOW.getTime() - requests!.max.getTime()).toBeLessThan(86_400_000);
    expect(Number(requests!.sub_ms)).toBe(0);
    expect(Number(requests!.out_of_order)).toBe(0);
    // The window's halves hold about half each (chunks walk it from oldest to newest).
    const firstHalf = await count(
      'SELECT count(*) AS n FROM requests WHERE id > $1 AND created_at < $2',
      run.before.requests,
      new Date((WINDOW_FROM.getTime() + NOW.getTime()) / 2),
    );
    expect(firstHalf).toBeGreaterThan(900);
    expect(firstHalf).toBeLessThan(1_100);

    // A sync has its request's time (as the service writes it) and its outcome within seconds, never after
    // the window; deliveries follow their request likewise; both in request order.
    const late = await count(
      `SELECT count(*) AS n FROM syncs s JOIN requests r ON r.id = s.request_id
        WHERE s.id > $1 AND NOT (s.created_at = r.created_at AND s.updated_at >= r.created_at AND s.updated_at <= LEAST($2, r.created_at + interval '3 seconds')
                                 AND s.updated_at = date_trunc('milliseconds', s.updated_at))`,
      run.before.syncs,
      NOW,
    );
    expect(late).toBe(0);
    const lateDeliveries = await count(
      `SELECT count(*) AS n FROM deliveries d JOIN requests r ON r.id = d.request_id
        WHERE d.id > $1 AND NOT (d.created_at >= r.created_at AND d.created_at <= LEAST($2, r.created_at + interval '3 seconds')
                                 AND d.created_at = date_trunc('milliseconds', d.created_at))`,
      run.before.deliveries,
      NOW,
    );
    expect(lateDeliveries).toBe(0);
    const syncsOutOfOrder = await count(
      `SELECT count(*) AS n FROM (SELECT request_id, lag(request_id) OVER (ORDER BY id) AS previous FROM syncs WHERE id > $1) s WHERE request_id < previous`,
      run.before.syncs,
    );
    expect(syncsOutOfOrder).toBe(0);
  });

  it('refers only to rows that exist, of the same account, connection and source', async () => {
    const dangling = await count(
      `SELECT (SELECT count(*) FROM syncs s LEFT JOIN requests r ON r.id = s.request_id
                WHERE s.id > $1 AND (r.id IS NULL OR (r.account_id, r.connection_id, r.source_id) <> (s.account_id, s.connection_id, s.source_id)))
            + (SELECT count(*) FROM deliveries d LEFT JOIN requests r ON r.id = d.request_id
                LEFT JOIN destinations x ON x.id = d.destination_id AND x.url = d.destination_url AND x.connection_id = d.connection_id
                WHERE d.id > $2 AND (r.id IS NULL OR x.id IS NULL OR (r.account_id, r.connection_id, r.source_id) <> (d.account_id, d.connection_id, d.source_id)))
            + (SELECT count(*) FROM requests r LEFT JOIN sources s ON s.id = r.source_id AND s.connection_id = r.connection_id
                LEFT JOIN connections c ON c.id = r.connection_id AND c.account_id = r.account_id AND c.deleted_at IS NULL
                WHERE r.id > $3 AND (s.id IS NULL OR c.id IS NULL OR r.path IS DISTINCT FROM s.ingress_code)) AS n`,
      run.before.syncs,
      run.before.deliveries,
      run.before.requests,
    );
    expect(dangling).toBe(0);
    // The request ordinals carry the deliveries evenly: 200 over 2,000 is one per tenth request, each from a
    // source with destinations (smartlead: its bindings; heyreach: its connection's), none from instantly.
    const perRequest = await run.db.query<{ platform: string; n: string; requests: string }>(
      `SELECT s.platform, count(*) AS n, count(DISTINCT d.request_id) AS requests FROM deliveries d JOIN sources s ON s.id = d.source_id
        WHERE d.id > $1 GROUP BY 1 ORDER BY 1`,
      [run.before.deliveries],
    );
    expect(perRequest.map((p) => p.platform)).toEqual(['heyreach', 'smartlead']);
    expect(perRequest.every((p) => p.n === p.requests)).toBe(true);
    // Every source received requests, and shows when it last did (the seeded history may be the latest).
    const sources = await run.db.query<{ platform: string; requests: string; last_ok: boolean }>(
      `SELECT s.platform, count(r.id) FILTER (WHERE r.id > $1) AS requests, s.last_event_received_at = max(r.created_at) AS last_ok
         FROM sources s JOIN connections c ON c.id = s.connection_id AND c.deleted_at IS NULL
         LEFT JOIN requests r ON r.source_id = s.id
        WHERE c.account_id = $2 GROUP BY s.id ORDER BY 1`,
      [run.before.requests, acme],
    );
    expect(sources.map((s) => s.platform)).toEqual(['heyreach', 'instantly', 'smartlead']);
    for (const s of sources) {
      expect(Number(s.requests)).toBeGreaterThan(300);
      expect(s.last_ok).toBe(true);
    }
  });

  it("writes each platform's contacts, event types and request bodies", async () => {
    const wrong = await count(
      `SELECT count(*) AS n FROM syncs s JOIN request_bodies r ON r.request_id = s.request_id AND r.created_at = s.created_at
        WHERE s.id > $1 AND NOT CASE s.platform
          WHEN 'heyreach' THEN s.to_email LIKE 'https://www.linkedin.com/in/lead-%'
                           AND s.event_type IN ('CONNECTION_REQUEST_SENT', 'CONNECTION_REQUEST_ACCEPTED', 'MESSAGE_SENT', 'MESSAGE_REPLY_RECEIVED')
                           AND r.body::jsonb #>> '{lead,profile_url}' = s.to_email AND r.body::jsonb ->> 'event_type' = lower(s.event_type)
          ELSE s.to_email LIKE 'lead%@company%.example'
               AND s.event_type IN ('EMAIL_SENT', 'EMAIL_OPEN', 'EMAIL_LINK_CLICK', 'EMAIL_REPLY', 'EMAIL_BOUNCE', 'LEAD_UNSUBSCRIBED')
               AND r.body::jsonb ->> 'to_email' = s.to_email
               AND r.body::jsonb ->> 'event_type' = CASE s.platform WHEN 'instantly' THEN $2::jsonb ->> s.event_type ELSE s.event_type END END`,
      run.before.syncs,
      JSON.stringify(INSTANTLY_EVENTS),
    );
    expect(wrong).toBe(0);
    // Sends outnumber opens, opens outnumber replies.
    const events = Object.fromEntries(
      (await run.db.query<{ event_type: string; n: string }>(`SELECT event_type, count(*) AS n FROM syncs WHERE id > $1 GROUP BY 1`, [run.before.syncs])).map(
        (e) => [e.event_type, Number(e.n)],
      ),
    );
    expect(events.EMAIL_SENT).toBeGreaterThan(events.EMAIL_OPEN!);
    expect(events.EMAIL_OPEN).toBeGreaterThan(events.EMAIL_REPLY!);
  });

  it('writes the same rows for the same seed on the same tables, other rows for another seed', async () => {
    const again = await generate((accounts) => options([accounts.accounts.acme!]));
    expect(again.before).toEqual(run.before);
    expect(again.summary.inserted).toEqual(run.summary.inserted);
    expect(again.summary.syncsByStatus).toEqual(run.summary.syncsByStatus);
    const prints = await fingerprint(run);
    expect(await fingerprint(again)).toEqual(prints);
    expect(Object.values(prints).every((p) => /^[0-9a-f]{32}$/.test(p))).toBe(true);

    const other = await generate((accounts) => options([accounts.accounts.acme!], { seed: -0.5 }));
    const otherPrints = await fingerprint(other);
    expect(otherPrints.requests).not.toBe(prints.requests);
    expect(otherPrints.syncs).not.toBe(prints.syncs);
    expect(otherPrints.deliveries).not.toBe(prints.deliveries);
  });
});

describe('generate-history, several accounts', () => {
  it('gives each account the same volume, their rows interleaved in time, with two jobs', async () => {
    const run = await generate((accounts) =>
      options([accounts.accounts.acme!, accounts.accounts.globex!], { deliveries: 0, syncRatio: 1, jobs: 2, chunkSize: 1_000, vacuum: false }),
    );
    const { acme, globex } = run.accounts.accounts;
    expect(run.summary.accounts).toEqual([
      { id: acme, sources: 3, sourcesWithDestinations: 2 },
      { id: globex, sources: 1, sourcesWithDestinations: 0 },
    ]);
    expect(run.summary.inserted).toEqual({ requests: 4_000, syncs: 4_000, deliveries: 0 });
    expect(run.summary.chunks).toBe(4);
    const perAccount = await run.db.query<{ account_id: number; n: string; syncs: string; min: Date; max: Date }>(
      `SELECT r.account_id, count(*) AS n, count(s.id) AS syncs, min(r.created_at), max(r.created_at)
         FROM requests r LEFT JOIN syncs s ON s.request_id = r.id WHERE r.id > $1 GROUP BY 1 ORDER BY 1`,
      [run.before.requests],
    );
    expect(perAccount.map((a) => [a.account_id, Number(a.n), Number(a.syncs)])).toEqual([
      [acme, 2_000, 2_000],
      [globex, 2_000, 2_000],
    ]);
    for (const a of perAccount) {
      expect(a.min.getTime() - WINDOW_FROM.getTime()).toBeLessThan(86_400_000);
      expect(NOW.getTime() - a.max.getTime()).toBeLessThan(86_400_000);
    }
    // Interleaved: in id order, the account changes about every other row, not once.
    const switches = Number(
      (
        await run.db.query<{ n: string }>(
          `SELECT count(*) FILTER (WHERE account_id <> previous) AS n FROM (SELECT account_id, lag(account_id) OVER (ORDER BY id) AS previous FROM requests WHERE id > $1) r`,
          [run.before.requests],
        )
      )[0]!.n,
    );
    expect(switches).toBeGreaterThan(1_000);
    expect(await run.db.query(`SELECT 1 FROM deliveries WHERE id > $1`, [run.before.deliveries])).toEqual([]);
  });

  it('refuses deliveries for an account without forwarding destinations, writing nothing', async () => {
    const db = await createTestDatabase();
    databases.push(db);
    const accounts = await seedTestAccounts(db.prisma);
    const [before] = await db.query<{ n: string }>('SELECT count(*) AS n FROM requests');
    await expect(generateHistory(db.url, options([accounts.accounts.acme!, accounts.accounts.globex!]))).rejects.toThrow(
      `account ${accounts.accounts.globex} has no forwarding destination`,
    );
    expect(await db.query<{ n: string }>('SELECT count(*) AS n FROM requests')).toEqual([before]);
  });
});
