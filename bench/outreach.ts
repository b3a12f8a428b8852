/**
 * `npm run bench:outreach`: latency of GET /api/v1/contacts/outreach over a long history, against the same
 * statement run directly with `pg` in the same run ("Outreach must stay fast with history": p50/p95 over
 * 5,000,000 syncs for a 100,000-contact account, the ratio to the direct indexed SQL, target p95 < 20 ms).
 *
 * On a throwaway embedded PostgreSQL (durability off, removed at the end even on error or Ctrl-C): one
 * account with 10 connections x 4 sources (smartlead, instantly, lemlist, heyreach; each connection with a
 * forwarding destination) and an account-scoped key, and a noisy second account (5 connections) whose
 * rows interleave with it. The history is generated here, set-based (one INSERT ... SELECT generate_series
 * statement per chunk writing requests, syncs and deliveries together, chunks walking the 60 days from
 * oldest to newest, both accounts in every chunk): `src/admin/generate-history.ts` is not reused because it
 * draws contacts uniformly from requests / 8 of them (625,000 at 5,000,000 requests) with no say over the
 * number of contacts or their skew, which is what an outreach lookup's cost depends on.
 *
 * Data (times BENCH_SCALE; the volume per contact stays the same at every scale):
 * - main account: 100,000 contacts and 5,000,000 syncs (one request each), ~50 per contact: 80 % of the
 *   syncs spread evenly over the contacts, 20 % skewed to low contact numbers (share of contacts <= x is
 *   sqrt(x / N)), so the heaviest contacts have thousands. Four in five contacts are email addresses (email
 *   events from smartlead, instantly and lemlist); one in five are LinkedIn profiles stored normalised,
 *   `https://www.linkedin.com/in/lead-<n>` (a third of them with a trailing slash, another stored variant),
 *   with social events from heyreach. 85 % of a contact's events come from its "home" source.
 * - 10 % of requests were forwarded (one delivery each, same event and contact).
 * - one in five contacts has 1 to 3 lead category signals.
 * - noisy account: 20,000 contacts and 1,000,000 syncs; half its contacts are also contacts of the main
 *   account (same emails and profiles), half exist in the noisy account only.
 *
 * Then the real app listens on 127.0.0.1 in this process (the outreach limiter runs with a limit never
 * reached) and lookups are timed over keep-alive HTTP, one request at a time, each alternating with the
 * resolver's statement on one `pg` connection (API first on even samples, SQL first on odd ones, so neither
 * side always finds the other's pages in shared buffers). Every lookup is a fresh contact drawn from a
 * seeded generator: by email of an existing contact (most), by email of one of the 50 heaviest contacts, by
 * a pasted non-canonical profile URL, by email + 2 profile URLs, and by an unknown email (half of them are
 * contacts of the noisy account only). Apart from that mix, the single heaviest contact is looked up 40
 * times (the worst case), and the resolver's statement for it is EXPLAINed.
 *
 * Environment: BENCH_SCALE (default 1; 0.02 for a quick run), BENCH_SAMPLES (default 1000 lookups, warm-up
 * a tenth), BENCH_APP_WARMUP (default 1000 untimed lookups first).
 */
import { randomBytes } from 'node:crypto';
import os from 'node:os';
import pg from 'pg';
import { seedFixture } from '../src/admin/seed.js';
import { createPrisma, type PrismaClient } from '../src/db/prisma.js';
import { parseOutreachQuery } from '../src/domain/outreach.js';
import { outreachStatement, type OutreachRow } from '../src/schema/outreach.js';
import { mulberry32 } from '../test/support/random.js';
import {
  ApiClient,
  cleanups,
  envNumber,
  fmt,
  HISTORY_PG_SETTINGS as PG_SETTINGS,
  log,
  maxOf,
  minOf,
  ms,
  out,
  pct,
  ratio,
  runBench,
  SHOWN_SETTINGS,
  startBenchApp,
  throwawayDatabase,
  withClient,
} from './support.js';

const SCALE = envNumber('BENCH_SCALE', 1);
const SAMPLES = Math.round(envNumber('BENCH_SAMPLES', 1_000));
const WARMUP = Math.max(1, Math.round(SAMPLES / 10));
const APP_WARMUP = Math.round(envNumber('BENCH_APP_WARMUP', 1_000));
const FULL = {
  main: { contacts: 100_000, syncs: 5_000_000 },
  noisy: { contacts: 20_000, syncs: 1_000_000 },
};
const DAYS = 60;
/** Share of syncs drawn from the skewed distribution (the rest: even over the contacts). */
const SKEWED_SHARE = 0.2;
/** Share of requests forwarded to a destination (one delivery each). */
const FORWARDED_SHARE = 0.1;
/** Rows (requests + syncs, both accounts) per INSERT statement. */
const CHUNK_ROWS = 100_000;
const JOBS = 2;
const SEED = 0.42;
const TARGET_P95_MS = 20;
const HEAVY_CONTACTS = 50;
/** Timed lookups of the single heaviest contact, after a few untimed ones. */
const HEAVIEST_REPEATS = 40;
const HEAVIEST_WARMUP = 4;
const KEY = 'svcapi_benchOutreachMainAccount00001';

/** The mix's kinds, and `heaviest`: the heaviest contact, timed apart from the mix. */
type Kind = 'email' | 'heavy' | 'profile' | 'email+profiles' | 'unknown' | 'heaviest';

/** The lookup mix, in the order of the report. */
const KINDS: { kind: Kind; label: string; share: number }[] = [
  { kind: 'email', label: 'email (existing contact)', share: 0.62 },
  { kind: 'heavy', label: `email (${HEAVY_CONTACTS} heaviest contacts)`, share: 0.03 },
  { kind: 'profile', label: 'profileUrl (pasted form)', share: 0.15 },
  { kind: 'email+profiles', label: 'email + 2 profileUrls', share: 0.1 },
  { kind: 'unknown', label: 'unknown email (found: false)', share: 0.1 },
];

interface Lookup {
  kind: Kind;
  /** The API path and query. */
  path: string;
  /** What the resolver matches (from the domain's own parser). */
  identities: string[];
  expectFound: boolean;
}

interface Sample {
  lookup: Lookup;
  apiMs: number;
  sqlMs: number;
  /** From the SQL: events (the sum of group counts), and whether anything was found. */
  events: number;
}

interface Population {
  main: AccountShape;
  noisy: AccountShape;
  /** Emails of the heaviest email contacts of the main account. */
  heavy: { email: string; syncs: number }[];
}

interface AccountShape {
  id: number;
  contacts: number;
  /** Contact numbers are firstContact .. firstContact + contacts - 1. */
  firstContact: number;
  syncs: number;
}

async function run(): Promise<number> {
  log(`bench:outreach  scale ${SCALE}  (BENCH_SCALE; 1 = ${fmt(FULL.main.syncs)} syncs over ${fmt(FULL.main.contacts)} contacts, plus a noisy account)`);
  const db = await throwawayDatabase(PG_SETTINGS);

  const encryptionKey = randomBytes(32);
  const prisma: PrismaClient = createPrisma(db.url);
  cleanups.push(() => prisma.$disconnect());
  const seeded = await seedFixture(prisma, benchFixture(), encryptionKey);
  const mainContacts = Math.max(1_000, Math.round(FULL.main.contacts * SCALE));
  const noisyContacts = Math.max(200, Math.round(FULL.noisy.contacts * SCALE));
  const main: AccountShape = {
    id: seeded.accounts.main as number,
    contacts: mainContacts,
    firstContact: 1,
    syncs: Math.max(50_000, Math.round(FULL.main.syncs * SCALE)),
  };
  const noisy: AccountShape = {
    id: seeded.accounts.noisy as number,
    contacts: noisyContacts,
    firstContact: mainContacts - Math.floor(noisyContacts / 2) + 1,
    syncs: Math.max(10_000, Math.round(FULL.noisy.syncs * SCALE)),
  };

  const generated = await generate(db.url, [main, noisy]);
  // Write out what generation left in shared buffers now, rather than while latencies are measured.
  await withClient(db.url, (client) => client.query('CHECKPOINT'));

  const sql = new pg.Client({ connectionString: db.url });
  await sql.connect();
  cleanups.push(() => sql.end());
  const connectionIds = (
    await sql.query<{ id: number }>('SELECT id FROM connections WHERE account_id = $1 AND api_enabled AND deleted_at IS NULL ORDER BY id', [main.id])
  ).rows.map((r) => r.id);
  const heavy = (
    await sql.query<{ email: string; n: string }>(
      `SELECT to_email AS email, count(*) AS n FROM syncs WHERE account_id = $1 AND to_email LIKE '%@%' GROUP BY to_email ORDER BY n DESC, to_email LIMIT $2`,
      [main.id, HEAVY_CONTACTS],
    )
  ).rows.map((r) => ({ email: r.email, syncs: Number(r.n) }));
  const population: Population = { main, noisy, heavy };

  const server = await startBenchApp(db.url, encryptionKey);
  cleanups.push(() => server.close());
  const api = new ApiClient(server.port, KEY);
  cleanups.push(() => Promise.resolve(api.close()));

  await printSettings(sql, generated, population, connectionIds);

  const problems: string[] = [];
  const statements = await statementsPerLookup(db.url, encryptionKey, lookupFor('email', mulberry32(7), population, 0));

  // ---- measure: the app warmed up first (V8 optimises its hot paths over the first thousand requests or
  // so; a serving process is long past that), then each lookup through the API and as direct SQL ----
  log(`warming up the app: ${fmt(APP_WARMUP)} lookups`);
  const warmRandom = mulberry32(11);
  for (let i = 0; i < APP_WARMUP; i++) await api.get(lookupFor(pickKind(warmRandom), warmRandom, population, i).path);
  // Each lookup through the API and as direct SQL, API first on even samples and SQL first on odd ones.
  const measure = async (lookup: Lookup, i: number): Promise<Sample> => {
    const statement = outreachStatement(main.id, connectionIds, lookup.identities);
    let apiMs = 0;
    let sqlMs = 0;
    let body = '';
    let row: OutreachRow | undefined;
    const timeApi = async () => {
      const t = performance.now();
      body = (await api.get(lookup.path)).body;
      apiMs = performance.now() - t;
    };
    const timeSql = async () => {
      const t = performance.now();
      row = (await sql.query<OutreachRow>(statement.text, statement.values)).rows[0];
      sqlMs = performance.now() - t;
    };
    if (i % 2 === 0) {
      await timeApi();
      await timeSql();
    } else {
      await timeSql();
      await timeApi();
    }
    const events = (row?.groups ?? []).reduce((n, g) => n + g.count, 0);
    compare(lookup, JSON.parse(body) as OutreachBody, row, events, problems);
    return { lookup, apiMs, sqlMs, events };
  };
  const random = mulberry32(1);
  const samples: Sample[] = [];
  const started = performance.now();
  for (let i = -WARMUP; i < SAMPLES; i++) {
    const sample = await measure(lookupFor(pickKind(random), random, population, i + WARMUP), i);
    if (i < 0) continue;
    samples.push(sample);
    if ((i + 1) % Math.max(1, Math.round(SAMPLES / 10)) === 0)
      log(`measured ${i + 1}/${SAMPLES} lookups (${((performance.now() - started) / 1000).toFixed(0)} s)`);
  }
  // The worst case, apart from the mix: the heaviest contact, looked up again and again.
  const heaviest = heavy[0];
  const worst: Sample[] = [];
  if (heaviest) {
    const repeated = lookup('heaviest', heaviest.email, [], true);
    for (let i = -HEAVIEST_WARMUP; i < HEAVIEST_REPEATS; i++) {
      const sample = await measure(repeated, i);
      if (i >= 0) worst.push(sample);
    }
  }

  // ---- report ----
  const failedKinds = printTable(samples, worst);
  out(
    `SQL statements per API request (counted on a second app instance): ${statements} through Prisma (the key, the lookup), plus the limiter's one on its own pool`,
  );
  if (problems.length > 0) {
    out(`\nAPI and SQL disagree (the comparison is void until fixed; ${problems.length} problem(s), the first 10):`);
    for (const p of problems.slice(0, 10)) out(`  - ${p}`);
  } else {
    out(`\nChecks: every measured API answer matched its SQL (found, totalEvents, lastCategoryName) and the expected found.`);
  }
  if (heaviest) {
    const identities = identitiesOf(heaviest.email, []);
    out(`\nEXPLAIN (ANALYZE, BUFFERS) of the resolver's statement for the heaviest contact (${heaviest.email}, ${fmt(heaviest.syncs)} syncs):`);
    await explain(sql, outreachStatement(main.id, connectionIds, identities));
  }
  for (const kind of failedKinds) {
    const slowest = samples.filter((s) => s.lookup.kind === kind).sort((a, b) => b.sqlMs - a.sqlMs)[0];
    if (!slowest) continue;
    out(`\nEXPLAIN (ANALYZE, BUFFERS) of the slowest SQL sample of "${labelOf(kind)}" (${slowest.lookup.path}):`);
    await explain(sql, outreachStatement(main.id, connectionIds, slowest.lookup.identities));
  }
  return problems.length > 0 ? 1 : 0;
}

// ---------------------------------------------------------------------------------------------------
// The statement

interface OutreachBody {
  found: boolean;
  summary: { totalEvents: number };
  outcomes: { lastCategoryName: string | null };
}

function compare(lookup: Lookup, body: OutreachBody, row: OutreachRow | undefined, events: number, problems: string[]): void {
  const found = events > 0 || Boolean(row?.signal);
  const category = row?.signal?.name ?? null;
  const where = `${labelOf(lookup.kind)} ${lookup.path}`;
  if (body.found !== found || body.summary.totalEvents !== events || body.outcomes.lastCategoryName !== category) {
    problems.push(
      `${where}: API found=${body.found} totalEvents=${body.summary.totalEvents} category=${body.outcomes.lastCategoryName}; SQL found=${found} events=${events} category=${category}`,
    );
  } else if (found !== lookup.expectFound) {
    problems.push(`${where}: found=${found}, expected ${lookup.expectFound}`);
  }
}

/** How many statements one lookup sends through Prisma, counted on a second app instance (kept apart
 * so that the measured one carries no query logging). */
async function statementsPerLookup(databaseUrl: string, encryptionKey: Buffer, lookup: Lookup): Promise<number> {
  let count = 0;
  const server = await startBenchApp(databaseUrl, encryptionKey, {}, { onQuery: () => count++ });
  const client = new ApiClient(server.port, KEY);
  try {
    await client.get(lookup.path); // the first use of the key may also note lastUsedAt
    count = 0;
    await client.get(lookup.path);
    return count;
  } finally {
    client.close();
    await server.close();
  }
}

async function explain(sql: pg.Client, statement: { text: string; values: unknown[] }): Promise<void> {
  const plan = await sql.query<{ 'QUERY PLAN': string }>(`EXPLAIN (ANALYZE, BUFFERS) ${statement.text}`, statement.values);
  for (const line of plan.rows) out(`  ${line['QUERY PLAN']}`);
}

// ---------------------------------------------------------------------------------------------------
// The lookups

/** Contact n's stored identity: an email for four in five, a LinkedIn profile for every fifth. The SQL
 * of {@link identitySql} writes the same. */
function isProfileContact(n: number): boolean {
  return n % 5 === 0;
}

function emailOf(n: number): string {
  return `lead${n}@company${n % 997}.example`;
}

function slugOf(n: number): string {
  return `lead-${n}`;
}

function identitySql(n: string): string {
  return `CASE WHEN ${n} % 5 = 0 THEN 'https://www.linkedin.com/in/lead-' || ${n} || CASE WHEN ${n} % 3 = 0 THEN '/' ELSE '' END
               ELSE 'lead' || ${n} || '@company' || (${n} % 997) || '.example' END`;
}

/** How people paste profile URLs: tracking queries, country hosts, overlays, hashes, capitals. */
const PASTED_FORMS: ((slug: string) => string)[] = [
  (slug) => `linkedin.com/in/${slug}/?trk=public_profile_browsemap`,
  (slug) => `https://www.linkedin.com/in/${slug.replace(/^l/, 'L')}/`,
  (slug) => `http://uk.linkedin.com/in/${slug}?originalSubdomain=uk`,
  (slug) => `https://www.linkedin.com/in/${slug}/overlay/contact-info/`,
  (slug) => `www.linkedin.com/in/${slug}#experience`,
];

function pickKind(random: () => number): Kind {
  let r = random();
  for (const k of KINDS) {
    if (r < k.share) return k.kind;
    r -= k.share;
  }
  return 'email';
}

function lookupFor(kind: Kind, random: () => number, population: Population, i: number): Lookup {
  const { main, noisy, heavy } = population;
  const contact = (profile: boolean): number => {
    for (;;) {
      const n = main.firstContact + Math.floor(random() * main.contacts);
      if (isProfileContact(n) === profile) return n;
    }
  };
  const pasted = (n: number) => (PASTED_FORMS[Math.floor(random() * PASTED_FORMS.length)] as (slug: string) => string)(slugOf(n));
  switch (kind) {
    case 'email':
      return lookup(kind, emailOf(contact(false)), [], true);
    case 'heaviest':
      return lookup(kind, heavy[0]?.email ?? emailOf(contact(false)), [], true);
    case 'heavy': {
      const email = heavy[Math.floor(random() * heavy.length)]?.email ?? emailOf(contact(false));
      return lookup(kind, email, [], true);
    }
    case 'profile':
      return lookup(kind, null, [pasted(contact(true))], true);
    case 'email+profiles':
      return lookup(kind, emailOf(contact(false)), [pasted(contact(true)), pasted(contact(true))], true);
    case 'unknown': {
      // Half: nobody's. Half: a contact of the noisy account only (rows exist, for another account).
      const noisyOnly = noisy.firstContact + noisy.contacts - 1 - main.contacts;
      if (i % 2 === 0 || noisyOnly < 10) return lookup(kind, `nobody${i}@unknown${i % 50}.example`, [], false);
      for (;;) {
        const n = main.contacts + 1 + Math.floor(random() * noisyOnly);
        if (!isProfileContact(n)) return lookup(kind, emailOf(n), [], false);
      }
    }
  }
}

function lookup(kind: Kind, email: string | null, profileUrls: string[], expectFound: boolean): Lookup {
  const params = [...(email ? [`email=${encodeURIComponent(email)}`] : []), ...profileUrls.map((u) => `profileUrl=${encodeURIComponent(u)}`)];
  return { kind, path: `/api/v1/contacts/outreach?${params.join('&')}`, identities: identitiesOf(email, profileUrls), expectFound };
}

/** The identities the resolver matches, from the same parser. */
function identitiesOf(email: string | null, profileUrls: string[]): string[] {
  const parsed = parseOutreachQuery(email, profileUrls);
  if (!parsed.ok) throw new Error(`bench lookup rejected: ${parsed.problems.join('; ')}`);
  return parsed.query.identities;
}

function labelOf(kind: Kind): string {
  return KINDS.find((k) => k.kind === kind)?.label ?? kind;
}

// ---------------------------------------------------------------------------------------------------
// The history

interface Generated {
  inserted: { requests: number; syncs: number; deliveries: number; signals: number };
  elapsedMs: { insert: number; vacuum: number };
  window: { from: Date; to: Date };
}

const sqlArray = (values: string[]) => `ARRAY[${values.map((v) => `'${v.replace(/'/g, "''")}'`).join(',')}]`;
const weighted = (weights: [string, number][]) => sqlArray(weights.flatMap(([v, n]) => Array<string>(n).fill(v)));
/** 40 slots each, repeated by weight: sends outnumber opens, opens outnumber replies. */
const EMAIL_EVENTS = weighted([
  ['EMAIL_SENT', 20],
  ['EMAIL_OPEN', 10],
  ['EMAIL_LINK_CLICK', 3],
  ['EMAIL_REPLY', 3],
  ['EMAIL_BOUNCE', 1],
  ['LEAD_UNSUBSCRIBED', 1],
  ['LEAD_CATEGORY_UPDATED', 2],
]);
const SOCIAL_EVENTS = weighted([
  ['CONNECTION_REQUEST_SENT', 10],
  ['CONNECTION_REQUEST_ACCEPTED', 5],
  ['MESSAGE_SENT', 12],
  ['MESSAGE_REPLY_RECEIVED', 3],
  ['PROFILE_VIEWED', 6],
  ['INMAIL_SENT', 2],
  ['LEAD_CATEGORY_UPDATED', 2],
]);
const CATEGORIES = sqlArray(['Interested', 'Meeting booked', 'Not interested', 'Out of office', 'Wrong person', 'Do not contact']);

/** A contact's home source among its kind's sources of the account (`n` sources). */
const homeSource = (contact: string, n: string) => `((${contact}) * 7919) % ${n}`;

/**
 * One chunk: $2[i] requests for account $1[i], timed inside [$3, $3 + $4 ms), each with a sync, a share $6
 * with a delivery; ids from the requests sequence $8, in time order. Contact by the skewed or the even draw
 * ($5), source its home one 85 % of the time.
 */
const CHUNK_SQL = `
WITH o AS (
  SELECT a.account_id, a.n_email, a.n_social,
         a.first_contact + CASE WHEN random() < $5::float8 THEN floor(a.contacts * (random() ^ 2))::int
                                ELSE floor(random() * a.contacts)::int END AS contact,
         date_trunc('milliseconds', $3::timestamptz + random() * $4::float8 * interval '1 millisecond') AS created_at,
         random() AS r_src, random() AS r_event, random() AS r_status, random() AS r_fwd, 1 + floor(random() * 300)::int AS campaign
    FROM unnest($1::int[], $2::int[]) AS u(account_id, n)
    JOIN bench_accounts a ON a.account_id = u.account_id
    CROSS JOIN LATERAL generate_series(1, u.n) AS g
),
kinded AS (
  SELECT o.*, o.contact % 5 = 0 AS social, CASE WHEN o.contact % 5 = 0 THEN o.n_social ELSE o.n_email END AS n_src FROM o
),
described AS (
  SELECT k.*, s.source_id, s.connection_id, s.platform, s.ingress_code, s.dest_id, s.dest_url,
         CASE WHEN k.social THEN (${SOCIAL_EVENTS})[1 + floor(k.r_event * 40)::int]
              ELSE (${EMAIL_EVENTS})[1 + floor(k.r_event * 40)::int] END AS event_type,
         ${identitySql('k.contact')} AS to_email
    FROM kinded k
    JOIN bench_sources s
      ON s.account_id = k.account_id AND s.social = k.social
     AND s.k = CASE WHEN k.r_src < 0.85 THEN ${homeSource('k.contact', 'k.n_src')}
                    ELSE floor((k.r_src - 0.85) / 0.15 * k.n_src)::int % k.n_src END
),
base AS MATERIALIZED (
  SELECT nextval($8::regclass) AS request_id, x.*
    FROM (SELECT * FROM described ORDER BY created_at) x
),
ins_r AS (
  INSERT INTO requests (id, account_id, source_id, connection_id, path, body, created_at)
  SELECT request_id, account_id, source_id, connection_id, ingress_code,
         (CASE platform
            WHEN 'lemlist' THEN json_build_object('type', event_type, 'leadEmail', to_email, 'campaignId', 'cam_' || campaign, 'createdAt', created_at)
            WHEN 'heyreach' THEN json_build_object('event_type', event_type, 'lead', json_build_object('profile_url', to_email), 'campaign_id', campaign, 'timestamp', created_at)
            ELSE json_build_object('event_type', event_type, 'to_email', to_email, 'campaign_id', campaign, 'event_timestamp', created_at)
          END)::text,
         created_at
    FROM base
  RETURNING 1
),
ins_s AS (
  INSERT INTO syncs (account_id, connection_id, source_id, request_id, platform, status, event_type, to_email, error, attempts, created_at, updated_at)
  SELECT account_id, connection_id, source_id, request_id, platform,
         (CASE WHEN r_status < 0.01 THEN NULL WHEN r_status < 0.05 THEN 'error' WHEN r_status < 0.08 THEN 'warning' ELSE 'success' END)::sync_status,
         event_type, to_email,
         CASE WHEN r_status >= 0.01 AND r_status < 0.05 THEN '{"status": 429, "category": "RATE_LIMITS", "message": "You have reached your secondly limit."}'::jsonb END,
         CASE WHEN r_status < 0.01 THEN 0 ELSE 1 END,
         created_at, LEAST($7::timestamptz, created_at + (40 + r_event * 2500) * interval '1 millisecond')
    FROM base ORDER BY request_id
  RETURNING 1
),
ins_d AS (
  INSERT INTO deliveries (account_id, destination_id, destination_url, connection_id, source_id, request_id, event_type, to_email,
                          status, http_status, error, created_at)
  SELECT account_id, dest_id, dest_url, connection_id, source_id, request_id, event_type, to_email,
         (CASE WHEN r_fwd < $6::float8 * 0.05 THEN 'error' ELSE 'success' END)::delivery_status,
         CASE WHEN r_fwd < $6::float8 * 0.05 THEN 502 ELSE 200 END,
         CASE WHEN r_fwd < $6::float8 * 0.05 THEN '{"message": "destination answered with an error status"}'::jsonb END,
         LEAST($7::timestamptz, created_at + (100 + r_event * 1500) * interval '1 millisecond')
    FROM base WHERE r_fwd < $6::float8 ORDER BY request_id
  RETURNING 1
)
SELECT (SELECT count(*) FROM ins_r) AS requests, (SELECT count(*) FROM ins_s) AS syncs, (SELECT count(*) FROM ins_d) AS deliveries`;

/** One in five contacts has 1 to 3 lead category signals, from its home source, at random times. */
const SIGNALS_SQL = `
INSERT INTO lead_category_signals (account_id, connection_id, source_id, platform, contact, category_id, category_name, created_at)
SELECT a.account_id, s.connection_id, s.source_id, s.platform, ${identitySql('c.n')}, 'cat_' || cat.i, (${CATEGORIES})[cat.i + 1],
       date_trunc('milliseconds', $1::timestamptz + random() * $2::float8 * interval '1 millisecond')
  FROM bench_accounts a
  CROSS JOIN LATERAL generate_series(a.first_contact, a.first_contact + a.contacts - 1) AS c(n)
  CROSS JOIN LATERAL generate_series(1, 1 + c.n % 3) AS k
  CROSS JOIN LATERAL (SELECT (c.n * 31 + k * 7) % 6 AS i) cat
  JOIN bench_sources s
    ON s.account_id = a.account_id AND s.social = (c.n % 5 = 0)
   AND s.k = ${homeSource('c.n', 'CASE WHEN c.n % 5 = 0 THEN a.n_social ELSE a.n_email END')}
 WHERE (c.n * 2654435761) % 100 < 20`;

/** Writes the history of `accounts` (their sources seeded), in time order, `JOBS` chunks at a time. */
async function generate(databaseUrl: string, accounts: AccountShape[]): Promise<Generated> {
  const started = performance.now();
  const to = new Date();
  const spanMs = DAYS * 86_400_000;
  const from = new Date(to.getTime() - spanMs);
  const total = accounts.reduce((n, a) => n + a.syncs, 0);
  const chunks = Math.ceil(total / CHUNK_ROWS);
  log(
    `generating history: ${accounts.map((a) => `${fmt(a.syncs)} syncs over ${fmt(a.contacts)} contacts`).join(' and ')} in ${DAYS} days, ${chunks} chunk(s), ${JOBS} job(s)`,
  );

  await withClient(databaseUrl, async (client) => {
    // Helper tables of the throwaway database (dropped below): each account's sources by kind, numbered.
    await client.query(
      `CREATE UNLOGGED TABLE bench_sources AS
       SELECT c.account_id, s.platform = 'heyreach' AS social,
              (row_number() OVER (PARTITION BY c.account_id, s.platform = 'heyreach' ORDER BY s.id) - 1)::int AS k,
              s.id AS source_id, s.connection_id, s.platform, s.ingress_code, d.id AS dest_id, d.url AS dest_url
         FROM sources s JOIN connections c ON c.id = s.connection_id
         JOIN LATERAL (SELECT d.id, d.url FROM destinations d WHERE d.connection_id = c.id ORDER BY d.id LIMIT 1) d ON true
        WHERE c.account_id = ANY($1::int[])`,
      [accounts.map((a) => a.id)],
    );
    await client.query(
      `CREATE UNLOGGED TABLE bench_accounts AS
       SELECT u.account_id, u.contacts, u.first_contact,
              (SELECT count(*) FROM bench_sources s WHERE s.account_id = u.account_id AND NOT s.social)::int AS n_email,
              (SELECT count(*) FROM bench_sources s WHERE s.account_id = u.account_id AND s.social)::int AS n_social
         FROM unnest($1::int[], $2::int[], $3::int[]) AS u(account_id, contacts, first_contact)`,
      [accounts.map((a) => a.id), accounts.map((a) => a.contacts), accounts.map((a) => a.firstContact)],
    );
    await client.query('ANALYZE bench_sources; ANALYZE bench_accounts');
  });

  const sequence = await withClient(databaseUrl, async (client) => {
    const name = (await client.query<{ name: string | null }>(`SELECT pg_get_serial_sequence('requests', 'id') AS name`)).rows[0]?.name;
    if (!name) throw new Error('requests.id has no sequence (are the migrations applied?)');
    return name;
  });
  const inserted = { requests: 0, syncs: 0, deliveries: 0, signals: 0 };
  let next = 0;
  let done = 0;
  let failed = false;
  const work = async () => {
    await withClient(databaseUrl, async (client) => {
      // Nothing else writes meanwhile and every reference is to a seeded row or a request of the same
      // statement: the per-row foreign-key triggers (over half the time) are skipped.
      await client.query(`SET synchronous_commit = off; SET jit = off; SET work_mem = '64MB'; SET session_replication_role = replica`);
      for (let chunk = next++; chunk < chunks && !failed; chunk = next++) {
        const counts = accounts.map((a) => Math.floor(((chunk + 1) * a.syncs) / chunks) - Math.floor((chunk * a.syncs) / chunks));
        await client.query('BEGIN');
        try {
          await client.query('SELECT setseed($1)', [(((SEED + 1) / 2 + chunk * 0.6180339887498949) % 1) * 2 - 1]);
          const { rows } = await client.query<{ requests: string; syncs: string; deliveries: string }>(CHUNK_SQL, [
            accounts.map((a) => a.id),
            counts,
            new Date(from.getTime() + (chunk / chunks) * spanMs),
            spanMs / chunks,
            SKEWED_SHARE,
            FORWARDED_SHARE,
            to,
            sequence,
          ]);
          await client.query('COMMIT');
          inserted.requests += Number(rows[0]?.requests ?? 0);
          inserted.syncs += Number(rows[0]?.syncs ?? 0);
          inserted.deliveries += Number(rows[0]?.deliveries ?? 0);
        } catch (error) {
          failed = true;
          await client.query('ROLLBACK').catch(() => {});
          throw error;
        }
        done += 1;
        const seconds = (performance.now() - started) / 1000;
        log(
          `generate: ${((done / chunks) * 100).toFixed(0).padStart(3)}%  ${fmt(inserted.syncs)} syncs, ${fmt(inserted.deliveries)} deliveries  ` +
            `${seconds.toFixed(1)} s, ETA ${((seconds / done) * (chunks - done)).toFixed(0)} s`,
        );
      }
    });
  };
  const outcomes = await Promise.allSettled(Array.from({ length: Math.min(JOBS, chunks) }, work));
  const rejected = outcomes.find((o): o is PromiseRejectedResult => o.status === 'rejected');
  if (rejected) throw rejected.reason;

  return withClient(databaseUrl, async (client) => {
    await client.query(`SET synchronous_commit = off; SET session_replication_role = replica`);
    await client.query('SELECT setseed($1)', [SEED]);
    inserted.signals = (await client.query(SIGNALS_SQL, [from, spanMs])).rowCount ?? 0;
    await client.query('RESET session_replication_role');
    await client.query('DROP TABLE bench_sources, bench_accounts');
    const insertedAt = performance.now();
    log('generate: VACUUM (ANALYZE) requests, syncs, deliveries, lead_category_signals ...');
    await client.query('VACUUM (ANALYZE) requests, syncs, deliveries, lead_category_signals');
    return {
      inserted,
      elapsedMs: { insert: Math.round(insertedAt - started), vacuum: Math.round(performance.now() - insertedAt) },
      window: { from, to },
    };
  });
}

// ---------------------------------------------------------------------------------------------------
// The report

function printTable(samples: Sample[], worst: Sample[]): Kind[] {
  const failed: Kind[] = [];
  const rows = [
    ...KINDS.map((k) => ({ label: k.label, kind: k.kind, of: samples.filter((s) => s.lookup.kind === k.kind) })),
    { label: 'all lookups (the mix)', kind: null, of: samples },
    { label: 'heaviest contact, repeated', kind: null, of: worst },
  ];
  const lines = rows
    .filter((r) => r.of.length > 0)
    .map((r) => {
      const api = r.of.map((s) => s.apiMs);
      const sql = r.of.map((s) => s.sqlMs);
      const events = r.of.map((s) => s.events);
      const identities = r.of.map((s) => s.lookup.identities.length);
      const pass = pct(api, 0.95) < TARGET_P95_MS;
      if (!pass && r.kind) failed.push(r.kind);
      return [
        r.label,
        fmt(r.of.length),
        `${minOf(identities)}-${maxOf(identities)}`,
        `${fmt(pct(events, 0.5))} / ${fmt(maxOf(events))}`,
        ms(pct(api, 0.5)),
        ms(pct(api, 0.95)),
        ms(pct(sql, 0.5)),
        ms(pct(sql, 0.95)),
        ratio(pct(api, 0.5), pct(sql, 0.5)),
        ratio(pct(api, 0.95), pct(sql, 0.95)),
        pass ? 'PASS' : 'FAIL',
      ];
    });
  const header = ['lookup', 'n', 'identities', 'events p50 / max', 'API p50', 'API p95', 'SQL p50', 'SQL p95', 'x p50', 'x p95', `p95 < ${TARGET_P95_MS} ms`];
  const widths = header.map((h, i) => Math.max(h.length, ...lines.map((l) => (l[i] as string).length)));
  const right = (i: number) => i >= 1 && i <= 9;
  const render = (cells: string[]) => `| ${cells.map((c, i) => (right(i) ? c.padStart(widths[i] as number) : c.padEnd(widths[i] as number))).join(' | ')} |`;
  out('');
  out(render(header));
  out(`|${widths.map((w, i) => (right(i) ? `${'-'.repeat(w + 1)}:` : '-'.repeat(w + 2))).join('|')}|`);
  for (const line of lines) out(render(line));
  out(`\nTimes in ms. x = API / SQL (the resolver's statement sent directly on one pg connection). identities: values in`);
  out(`ANY(...) (a profile URL expands to its stored variants). events: matching payloads (the response's totalEvents).`);
  out(`The last row is outside the mix: the contact with the most syncs, looked up ${HEAVIEST_REPEATS} times (the worst case, not the target's).`);
  const all = samples.map((s) => s.apiMs);
  const p95 = pct(all, 0.95);
  out(
    `\nRESULT: ${p95 < TARGET_P95_MS ? 'PASS' : 'FAIL'}: API p95 over all lookups ${ms(p95)} ms (target < ${TARGET_P95_MS} ms), p50 ${ms(pct(all, 0.5))} ms; ` +
      `${ratio(
        pct(all, 0.5),
        pct(
          samples.map((s) => s.sqlMs),
          0.5,
        ),
      )} the direct SQL at p50, ${ratio(
        p95,
        pct(
          samples.map((s) => s.sqlMs),
          0.95,
        ),
      )} at p95`,
  );
  return failed;
}

async function printSettings(sql: pg.Client, generated: Generated, population: Population, connectionIds: number[]): Promise<void> {
  const { main, heavy } = population;
  const settings = (
    await sql.query<{ name: string; setting: string }>(`SELECT name, current_setting(name) AS setting FROM unnest($1::text[]) AS name`, [SHOWN_SETTINGS])
  ).rows.map((r) => `${r.name}=${r.setting}`);
  const counts = (
    await sql.query<{ table: string; account: string; total: string }>(
      `
    SELECT 'requests' AS table, CASE account_id WHEN $1 THEN 'main' ELSE 'noisy' END AS account, count(*) AS total FROM requests GROUP BY 2
    UNION ALL SELECT 'syncs', CASE account_id WHEN $1 THEN 'main' ELSE 'noisy' END, count(*) FROM syncs GROUP BY 2
    UNION ALL SELECT 'deliveries', CASE account_id WHEN $1 THEN 'main' ELSE 'noisy' END, count(*) FROM deliveries GROUP BY 2
    UNION ALL SELECT 'signals', CASE account_id WHEN $1 THEN 'main' ELSE 'noisy' END, count(*) FROM lead_category_signals GROUP BY 2
    ORDER BY 1, 2`,
      [main.id],
    )
  ).rows;
  const perContact = (
    await sql.query<{ contacts: string; profiles: string; p50: string; p95: string; p99: string; max: string }>(
      `
    WITH per AS (SELECT to_email, count(*) AS n FROM syncs WHERE account_id = $1 GROUP BY to_email)
    SELECT count(*) AS contacts, count(*) FILTER (WHERE to_email LIKE 'https://%') AS profiles,
           percentile_disc(0.5) WITHIN GROUP (ORDER BY n) AS p50, percentile_disc(0.95) WITHIN GROUP (ORDER BY n) AS p95,
           percentile_disc(0.99) WITHIN GROUP (ORDER BY n) AS p99, max(n) AS max
      FROM per`,
      [main.id],
    )
  ).rows[0];
  const platforms = (
    await sql.query<{ platform: string; n: string }>(`SELECT platform, count(*) AS n FROM syncs WHERE account_id = $1 GROUP BY platform ORDER BY n DESC`, [
      main.id,
    ])
  ).rows;
  const sizes = (
    await sql.query<{ relname: string; size: string }>(
      `SELECT relname, pg_size_pretty(pg_total_relation_size(oid)) AS size FROM pg_class
      WHERE relname IN ('requests', 'syncs', 'deliveries', 'lead_category_signals',
                        'syncs_account_id_to_email_idx', 'deliveries_account_id_to_email_idx', 'lead_category_signals_account_id_contact_created_at_idx')
      ORDER BY relkind DESC, relname`,
    )
  ).rows;
  const g = generated.inserted;
  const rows = g.requests + g.syncs + g.deliveries + g.signals;
  out(`bench:outreach  scale ${SCALE}  (${os.cpus().length} CPUs, Node ${process.version})`);
  out(
    `history: ${fmt(g.requests)} requests, ${fmt(g.syncs)} syncs, ${fmt(g.deliveries)} deliveries, ${fmt(g.signals)} lead category signals over ${DAYS} days ` +
      `(${generated.window.from.toISOString()} .. ${generated.window.to.toISOString()}), generated in ${(generated.elapsedMs.insert / 1000).toFixed(1)} s ` +
      `(${fmt(Math.round(rows / (generated.elapsedMs.insert / 1000)))} rows/s) + VACUUM ANALYZE ${(generated.elapsedMs.vacuum / 1000).toFixed(1)} s`,
  );
  out('rows:');
  for (const c of counts) out(`  ${c.table.padEnd(10)} ${c.account.padEnd(5)} ${fmt(Number(c.total)).padStart(11)}`);
  if (perContact) {
    out(
      `main account: ${fmt(Number(perContact.contacts))} contacts with syncs (${fmt(Number(perContact.profiles))} of them LinkedIn profiles); ` +
        `syncs per contact p50 ${perContact.p50}, p95 ${perContact.p95}, p99 ${perContact.p99}, max ${fmt(Number(perContact.max))}; ` +
        `${connectionIds.length} connections reached by the key`,
    );
  }
  out(`main account syncs by platform: ${platforms.map((p) => `${p.platform} ${fmt(Number(p.n))}`).join(', ')}`);
  if (heavy.length > 0) out(`${heavy.length} heaviest email contacts: ${fmt(heavy[heavy.length - 1]?.syncs ?? 0)} to ${fmt(heavy[0]?.syncs ?? 0)} syncs each`);
  out(`sizes: ${sizes.map((s) => `${s.relname} ${s.size}`).join(', ')}`);
  out(`PostgreSQL: ${settings.join(' ')}`);
  out(
    `samples: ${fmt(SAMPLES)} lookups (after ${fmt(WARMUP)} warm-up), mix ${KINDS.map((k) => `${Math.round(k.share * 100)} % ${k.label}`).join(', ')}; ` +
      `one request at a time over keep-alive HTTP, each with the direct SQL (API first on even samples, SQL first on odd); ` +
      `the app first served ${fmt(APP_WARMUP)} warm-up lookups`,
  );
}

// ---------------------------------------------------------------------------------------------------
// The app

/** Main: 10 connections x (smartlead, instantly, lemlist, heyreach), each forwarding to one destination,
 * and an account-scoped key; noisy: 5 such connections, no key. */
function benchFixture() {
  const platforms = ['smartlead', 'instantly', 'lemlist', 'heyreach'];
  const connection = (account: string, c: number) => ({
    ref: `${account}-c${c}`,
    crm: c % 2 === 0 ? 'HUBSPOT' : 'SALESFORCE',
    organizationId: `${account}-org-${c}`,
    organizationDomain: `${account}${c}.example`,
    destinations: [{ ref: `${account}-c${c}-warehouse`, url: `https://hooks.${account}${c}.example/warehouse`, description: 'Every event into the warehouse' }],
    sources: platforms.map((platform, s) => ({
      ref: `${account}-c${c}-s${s}`,
      platform,
      destinations: [{ destination: `${account}-c${c}-warehouse` }],
    })),
  });
  return {
    accounts: [
      {
        ref: 'main',
        email: 'owner@main.example',
        connections: Array.from({ length: 10 }, (_, c) => connection('main', c)),
        apiKeys: [{ ref: 'main-read', name: 'bench', key: KEY }],
      },
      {
        ref: 'noisy',
        email: 'owner@noisy.example',
        connections: Array.from({ length: 5 }, (_, c) => connection('noisy', c)),
      },
    ],
  };
}

// ---------------------------------------------------------------------------------------------------

// Last, so that every declaration above is initialised before it runs.
await runBench('bench:outreach', run);
