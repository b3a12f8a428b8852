/**
 * `npm run bench:history`: what a year of history on time partitions (issue 31) costs the REST reads,
 * and what dropping a month costs the ingress.
 *
 * On a throwaway embedded PostgreSQL (removed at the end, even on error or Ctrl-C): one busy account (20
 * connections x 5 sources, an account-scoped key) and 20 small ones (1 connection, 3 sources each).
 * `prepareHistory` puts the history tables on partitions with a retention that keeps the whole year
 * (every kind of history, request bodies included, kept from the first generated day on). The year runs from
 * the first day of the month twelve months before the current one until now, at a fixed rate per day
 * (times BENCH_SCALE): month one (that first calendar month) is generated first and measured as the newest
 * window there is; then the other months up to now, and the same calls are measured again for the newest
 * window and for month one's window (the same rows, now under a year of partitions). Then, on production
 * durability and with the ingress (`src/main.ts api`, its own process) taking a steady load from a load
 * process (Smartlead samples, five events per lead), `maintainHistory` runs with a retention that puts
 * exactly month one past it (and a day of bodies, as production's round of that day), then month two's,
 * month three's: ingress latency before and during each drop, the drop's own duration, and the disk
 * before and after; then a round with the default retention (90/30/400 days).
 *
 * This file also runs as its own child process: `--load` (POSTs at a fixed rate, commands on stdin).
 *
 * Environment: BENCH_SCALE (1), BENCH_SAMPLES (300), BENCH_METRIC_SAMPLES (60), BENCH_APP_WARMUP (1000),
 * BENCH_INGRESS_RATE (1000 POSTs/s), BENCH_BEFORE_S (10), BENCH_AFTER_S (5), BENCH_DROP_MONTHS (3).
 */
import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import readline from 'node:readline';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { generateHistory, type GenerateHistorySummary } from '../src/admin/generate-history.js';
import { seedFixture } from '../src/admin/seed.js';
import { DEFAULT_RETENTION } from '../src/config.js';
import { sampleFolder } from '../src/connectors/sequencers/samples.js';
import { maintainHistory, prepareHistory, type RetentionDays, type RoundReport } from '../src/db/history/maintain.js';
import { identSql, listPartitions } from '../src/db/history/catalog.js';
import { HISTORY_TABLE_NAMES, HISTORY_TABLES } from '../src/db/history/tables.js';
import { createPrisma } from '../src/db/prisma.js';
import { expiredPartitions, partitionName, spanEnd, spanStart } from '../src/domain/partitions.js';
import { ask, childSpec, cores, cpuMeter, postgresPids, startApiChild, startChild, untilLive, withUniqueLead } from './processes.js';
import {
  ApiClient,
  cleanups,
  envNumber,
  fmt,
  HISTORY_PG_SETTINGS,
  log,
  maxOf,
  ms,
  out,
  pct,
  ratio,
  runBench,
  SHOWN_SETTINGS,
  startBenchApp,
  throwawayDatabase,
} from './support.js';

const SCALE = envNumber('BENCH_SCALE', 1);
const SAMPLES = Math.round(envNumber('BENCH_SAMPLES', 300));
const WARMUP = Math.max(1, Math.round(SAMPLES / 10));
const METRIC_SAMPLES = Math.round(envNumber('BENCH_METRIC_SAMPLES', 60));
const METRIC_WARMUP = Math.max(1, Math.round(METRIC_SAMPLES / 10));
const APP_WARMUP = Math.round(envNumber('BENCH_APP_WARMUP', 1_000));
const INGRESS_RATE = envNumber('BENCH_INGRESS_RATE', 1_000);
const BEFORE_S = envNumber('BENCH_BEFORE_S', 10);
const AFTER_S = envNumber('BENCH_AFTER_S', 5);
/** Months dropped one after another under the load, each measured against the seconds before it. */
const DROP_TRIALS = Math.max(1, Math.round(envNumber('BENCH_DROP_MONTHS', 3)));
/** Seconds of load before "before" starts (connections made, the ingress's batching settled). */
const LOAD_WARMUP_S = 3;

/** Requests (each with a sync; deliveries for a tenth of them) per day at BENCH_SCALE=1. */
const BUSY_PER_DAY = 6_000;
const SMALL_PER_DAY = 300;
const SMALL_ACCOUNTS = 20;
const DELIVERY_SHARE = 0.1;
const PAGE_LIMIT = 100;
const TARGET = { pageP95Ms: 15, pageRatio: 1.2, ingressRatio: 1.2, dropMs: 1_000 };
const KEY = 'svcapi_benchHistoryBusyAccount00001';
const DAY_MS = 86_400_000;
const SELF = fileURLToPath(import.meta.url);
const SPEC_ENV = 'BENCH_HISTORY_CHILD';
/** Leads whose events interleave: each lead's five events come 200 requests apart. */
const LEADS_PER_BLOCK = 200;
/** The Smartlead samples in the order a lead lives them. */
const EVENT_ORDER = ['EMAIL_SENT', 'EMAIL_OPEN', 'EMAIL_LINK_CLICK', 'EMAIL_REPLY', 'LEAD_CATEGORY_UPDATED'];
/** Durability is off while generating (reloaded, not on the command line, so that the ingress runs with production's). */
const DURABILITY = ['fsync', 'synchronous_commit', 'full_page_writes'];
const PG_SETTINGS = Object.fromEntries(Object.entries(HISTORY_PG_SETTINGS).filter(([name]) => !DURABILITY.includes(name)));

// ------------------------------------------------------------------------------------------------
// The load process: POSTs at a fixed rate (open loop), each answer's send time and latency kept.

interface LoadSpec {
  port: number;
  paths: string[];
  /** Bodies with `[<id>]` where the lead goes, in the order a lead's events come. */
  templates: string[];
  perSecond: number;
}
type LoadCommand = { start: true } | { stop: true };
/** [sent at (ms since the epoch), latency ms, HTTP status (0: no answer)] */
type LoadSample = [number, number, number];
interface LoadAnswer {
  startedAt: number;
  sent: number;
  samples: LoadSample[];
}

/** `--load`: `start` sends spec.perSecond POSTs a second until `stop`, which answers every sample once all are answered. */
async function loadRole(spec: LoadSpec): Promise<void> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 64 });
  const samples: LoadSample[] = [];
  let [sent, inFlight, startedAt] = [0, 0, 0];
  let timer: NodeJS.Timeout | undefined;
  const per = LEADS_PER_BLOCK * spec.templates.length;
  const send = (i: number) => {
    // Block b holds leads b*200 .. b*200+199; its first 200 requests are their first events, and so on.
    const [block, j] = [Math.floor(i / per), i % per];
    const lead = block * LEADS_PER_BLOCK + (j % LEADS_PER_BLOCK);
    const body = (spec.templates[Math.floor(j / LEADS_PER_BLOCK)] as string).replaceAll('[<id>]', String(lead));
    const path = spec.paths[lead % spec.paths.length] as string;
    const at = performance.timeOrigin + performance.now();
    const t = performance.now();
    let answered = false;
    const done = (status: number) => {
      if (answered) return;
      answered = true;
      samples.push([at, performance.now() - t, status]);
      inFlight -= 1;
    };
    inFlight += 1;
    const req = http.request(
      {
        host: '127.0.0.1',
        port: spec.port,
        path,
        method: 'POST',
        agent,
        headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) },
      },
      (res) => {
        res.resume();
        res.on('end', () => done(res.statusCode ?? 0));
        res.on('error', () => done(0));
      },
    );
    req.on('error', () => done(0));
    req.end(body);
  };
  const answer = (a: unknown) => process.stdout.write(`${JSON.stringify(a)}\n`);
  for await (const line of readline.createInterface({ input: process.stdin })) {
    const command = JSON.parse(line) as LoadCommand;
    if ('start' in command) {
      const t0 = performance.now();
      startedAt = performance.timeOrigin + t0;
      timer = setInterval(() => {
        const due = Math.floor(((performance.now() - t0) / 1000) * spec.perSecond);
        while (sent < due) send(sent++);
      }, 2);
      answer({ startedAt, sent: 0, samples: [] });
    } else {
      clearInterval(timer);
      while (inFlight > 0) await new Promise((r) => setTimeout(r, 20));
      answer({ startedAt, sent, samples } satisfies LoadAnswer);
    }
  }
}

// ------------------------------------------------------------------------------------------------

interface Window {
  label: string;
  from: Date;
  to: Date;
}

interface Endpoint {
  name: string;
  kind: 'page' | 'metric' | 'lookup';
  samples: number;
  warmup: number;
  path(w: Window, ids: Ids): string;
  /** The statement behind it (as the resolver builds it), for plans. */
  sql(w: Window, ids: Ids, key: KeyReach): { text: string; values: unknown[] };
}

interface KeyReach {
  accountId: number;
  connectionIds: number[];
}

/** Per window, the sync the lookup asks for (the window's newest). */
type Ids = Map<string, string>;

/** Timings per window label and endpoint name. */
type Timings = Map<string, number[]>;

const at = (w: Window, e: Endpoint) => `${w.label}|${e.name}`;
const range = (w: Window) => `from=${encodeURIComponent(w.from.toISOString())}&to=${encodeURIComponent(w.to.toISOString())}`;

const ENDPOINTS: Endpoint[] = [
  {
    name: '/requests first page',
    kind: 'page',
    samples: SAMPLES,
    warmup: WARMUP,
    path: (w) => `/api/v1/requests?${range(w)}&limit=${PAGE_LIMIT}`,
    sql: (w, _ids, k) => ({
      text: `SELECT id, account_id AS "accountId", content_type AS "contentType", source_id AS "sourceId", connection_id AS "connectionId", path, created_at AS "createdAt"
               FROM requests WHERE account_id = $1 AND connection_id = ANY($2::int[]) AND created_at >= $3 AND created_at <= $4
              ORDER BY created_at DESC, id DESC LIMIT ${PAGE_LIMIT + 1}`,
      values: [k.accountId, k.connectionIds, w.from, w.to],
    }),
  },
  {
    name: '/syncs first page',
    kind: 'page',
    samples: SAMPLES,
    warmup: WARMUP,
    path: (w) => `/api/v1/syncs?${range(w)}&limit=${PAGE_LIMIT}`,
    sql: (w, _ids, k) => ({
      text: `SELECT ${SYNC_COLUMNS} FROM syncs WHERE account_id = $1 AND connection_id = ANY($2::int[]) AND created_at >= $3 AND created_at <= $4
              ORDER BY created_at DESC, id DESC LIMIT ${PAGE_LIMIT + 1}`,
      values: [k.accountId, k.connectionIds, w.from, w.to],
    }),
  },
  {
    name: '/syncs/metrics',
    kind: 'metric',
    samples: METRIC_SAMPLES,
    warmup: METRIC_WARMUP,
    path: (w) => `/api/v1/syncs/metrics?${range(w)}`,
    sql: (w, _ids, k) => ({
      text: `SELECT count(*) FILTER (WHERE status = 'success') AS success, count(*) FILTER (WHERE status = 'warning') AS warning,
                    count(*) FILTER (WHERE status = 'error' OR status IS NULL) AS error
               FROM syncs WHERE connection_id = ANY($1::int[]) AND created_at >= $2 AND created_at <= $3`,
      values: [k.connectionIds, w.from, w.to],
    }),
  },
  {
    name: '/requests/metrics',
    kind: 'metric',
    samples: METRIC_SAMPLES,
    warmup: METRIC_WARMUP,
    path: (w) => `/api/v1/requests/metrics?${range(w)}`,
    sql: (w, _ids, k) => ({
      text: `SELECT count(*) AS count FROM requests WHERE connection_id = ANY($1::int[]) AND created_at >= $2 AND created_at <= $3`,
      values: [k.connectionIds, w.from, w.to],
    }),
  },
  {
    name: '/syncs/:id',
    kind: 'lookup',
    samples: SAMPLES,
    warmup: WARMUP,
    path: (w, ids) => `/api/v1/syncs/${ids.get(w.label)}`,
    sql: (w, ids, k) => ({
      text: `SELECT ${SYNC_COLUMNS} FROM syncs WHERE id = $1 AND account_id = $2 AND connection_id = ANY($3::int[])`,
      values: [ids.get(w.label), k.accountId, k.connectionIds],
    }),
  },
];

/** SYNC_COLUMNS of src/schema/sync.ts. */
const SYNC_COLUMNS = `id, COALESCE(status::text, 'error') AS status, connection_id AS "connectionId", source_id AS "sourceId",
  event_type AS "eventType", to_email AS "toEmail", platform, request_id AS "payloadId", error, crm_state AS "crmState", attempts,
  created_at AS "createdAt", updated_at AS "updatedAt"`;

async function run(): Promise<number> {
  const started = performance.now();
  // ---- the calendar: month one, the year, the retentions ----
  const now = new Date();
  const currentMonth = spanStart('month', now);
  const yearStart = new Date(Date.UTC(currentMonth.getUTCFullYear(), currentMonth.getUTCMonth() - 12, 1));
  const monthTwo = spanEnd('month', yearStart);
  const monthOneDays = (monthTwo.getTime() - yearStart.getTime()) / DAY_MS;
  const restDays = (now.getTime() - monthTwo.getTime()) / DAY_MS;
  // Keeps every partition from month one on (and creates none older): the whole year stays.
  const keepDays = Math.floor((now.getTime() - yearStart.getTime()) / DAY_MS);
  const keep: RetentionDays = { history: keepDays, body: keepDays, audit: keepDays };
  const windowMs = monthTwo.getTime() - yearStart.getTime() - 1;
  const monthOne: Window = { label: 'month one', from: yearStart, to: new Date(monthTwo.getTime() - 1) };
  const newest: Window = { label: 'newest', from: new Date(now.getTime() - windowMs), to: now };
  const oldest: Window = { label: "month one's", from: monthOne.from, to: monthOne.to };
  const rate = { busy: Math.max(10, Math.round(BUSY_PER_DAY * SCALE)), small: Math.max(1, Math.round(SMALL_PER_DAY * SCALE)) };
  log(
    `bench:history  scale ${SCALE}  (BENCH_SCALE; 1 = ${fmt(BUSY_PER_DAY)} requests and syncs a day for the busy account, ${fmt(SMALL_PER_DAY)} for each of ${SMALL_ACCOUNTS} small ones)`,
  );

  const db = await throwawayDatabase(PG_SETTINGS);
  const pool = new pg.Pool({ connectionString: db.url, max: 2 });
  pool.on('error', (error) => log(`bench connection: ${error.message}`));
  cleanups.push(() => pool.end());
  const q = async <T extends pg.QueryResultRow>(text: string, values: unknown[] = []) => (await pool.query<T>(text, values)).rows;
  await setDurability(q, false);
  await prepareHistory(db.url, { retention: keep });

  const encryptionKey = randomBytes(32);
  const prisma = createPrisma(db.url);
  const seeded = await seedFixture(prisma, fixture(), encryptionKey);
  await prisma.$disconnect();
  const busyId = seeded.accounts.busy as number;
  const smallIds = Array.from({ length: SMALL_ACCOUNTS }, (_, i) => seeded.accounts[`small${i}`] as number);
  const reach: KeyReach = {
    accountId: busyId,
    connectionIds: (await q<{ id: number }>('SELECT id FROM connections WHERE account_id = $1 ORDER BY id', [busyId])).map((r) => r.id),
  };
  const ingressPaths = (
    await q<{ code: string }>(
      `SELECT s.ingress_code AS code FROM sources s JOIN connections c ON c.id = s.connection_id WHERE c.account_id = $1 AND s.platform = 'smartlead' ORDER BY s.id`,
      [busyId],
    )
  ).map((r) => `/webhooks/${encodeURIComponent(r.code)}`);

  const settings = await q<{ name: string; setting: string }>(`SELECT name, current_setting(name) AS setting FROM unnest($1::text[]) AS name`, [
    [...SHOWN_SETTINGS, 'full_page_writes', 'max_wal_size'],
  ]);
  out(`bench:history  scale ${SCALE}  (${os.cpus().length} CPUs, Node ${process.version})`);
  out(`PostgreSQL while generating and reading: ${settings.map((s) => `${s.name}=${s.setting}`).join(' ')}`);
  out(
    `accounts: 1 busy (20 connections x 5 sources, 40 of them Smartlead) at ${fmt(rate.busy)} requests a day; ${SMALL_ACCOUNTS} small (1 connection x 3 sources) at ${fmt(rate.small)} a day each;`,
  );
  out(`  every request with a sync and its raw body, deliveries for ${DELIVERY_SHARE * 100} % of them (generate-history)`);
  out(
    `year: ${yearStart.toISOString().slice(0, 10)} .. ${now.toISOString()} (${((now.getTime() - yearStart.getTime()) / DAY_MS).toFixed(1)} days); ` +
      `month one = ${yearStart.toISOString().slice(0, 7)} (${monthOneDays} days), generated and measured first`,
  );
  out(`retention while measuring: ${JSON.stringify(keep)} days (every partition from month one on, none older)`);

  // ---- month one ----
  const genOne = await generate('month one', busyId, smallIds, rate, monthTwo, monthOneDays, 0.11);
  await q('CHECKPOINT');
  const server = await startBenchApp(db.url, encryptionKey);
  const closeServer = once(() => server.close());
  cleanups.push(closeServer);
  const api = new ApiClient(server.port, KEY);
  cleanups.push(() => Promise.resolve(api.close()));
  const postmaster = Number(readFileSync(`${db.clusterDir}/postmaster.pid`, 'utf8').split('\n')[0]);
  const meter = () => cpuMeter({ bench: () => [process.pid], postgres: () => postgresPids(postmaster) });
  const ids: Ids = new Map();
  ids.set(monthOne.label, await newestSync(q, busyId, monthOne));
  ids.set(oldest.label, ids.get(monthOne.label) as string);
  await printVolume(q, 'month one', busyId, [monthOne], genOne.summaries, genOne.vacuumMs);
  const answersOne = await answers(api, monthOne, ids);
  log('month one: measuring');
  let cpu = meter();
  const one = await measure(api, [monthOne], ids);
  const cpuOne = cpu();
  const plansOne: string[] = [];
  for (const e of ENDPOINTS) plansOne.push(`  ${monthOne.label.padEnd(12)} ${e.name.padEnd(20)} ${await planSummary(pool, e.sql(monthOne, ids, reach))}`);

  // ---- the rest of the year ----
  const genRest = await generate('months two to twelve and this one', busyId, smallIds, rate, now, restDays, 0.21);
  await q('CHECKPOINT');
  ids.set(newest.label, await newestSync(q, busyId, newest));
  await printVolume(q, 'a year', busyId, [newest, oldest], genRest.summaries, genRest.vacuumMs);
  const answersOld = await answers(api, oldest, ids);
  log('month twelve: measuring');
  cpu = meter();
  const twelve = await measure(api, [newest, oldest], ids);
  const cpuTwelve = cpu();

  const problems: string[] = [];
  if (answersOld !== answersOne) problems.push(`month one's window answers differently after the year: ${answersOne} then ${answersOld}`);
  const failedRows = printReadTable(one, twelve, monthOne, [newest, oldest]);
  out(`CPU cores while measuring (others: the machine's other work, which the run competed with): month 1 ${cores(cpuOne)}; month 12 ${cores(cpuTwelve)}`);
  out('\nPlans (EXPLAIN ANALYZE of the statement each endpoint sends, on a bench connection), month 1 after its measurement, then month 12:');
  for (const line of plansOne) out(line);
  for (const w of [newest, oldest]) {
    for (const e of ENDPOINTS) out(`  ${w.label.padEnd(12)} ${e.name.padEnd(20)} ${await planSummary(pool, e.sql(w, ids, reach))}`);
  }
  for (const [w, e] of failedRows) {
    const s = e.sql(w, ids, reach);
    out(`\nEXPLAIN (ANALYZE, BUFFERS) behind ${e.name}, ${w.label} window (missed its target):`);
    for (const line of await q<{ 'QUERY PLAN': string }>(`EXPLAIN (ANALYZE, BUFFERS) ${s.text}`, s.values)) out(`  ${line['QUERY PLAN']}`);
  }
  await closeServer();

  // ---- dropping month one while the ingress takes load ----
  const drop = await dropUnderLoad(db, pool, q, encryptionKey, keep, ingressPaths, monthTwo);
  problems.push(...drop.problems);

  const verdicts = [failedRows.length === 0, drop.ok];
  out('');
  out(`RESULT reads after a year: ${verdicts[0] ? 'PASS' : 'FAIL'}; drop under load: ${verdicts[1] ? 'PASS' : 'FAIL'}`);
  if (problems.length > 0) {
    out('\nProblems (the figures are void until fixed):');
    for (const p of problems) out(`  - ${p}`);
  }
  log(`bench:history done in ${((performance.now() - started) / 1000).toFixed(0)} s`);
  return verdicts.every(Boolean) && problems.length === 0 ? 0 : 1;

  async function generate(label: string, busy: number, small: number[], perDay: { busy: number; small: number }, end: Date, days: number, seed: number) {
    const summaries: GenerateHistorySummary[] = [];
    for (const [accounts, n, s] of [
      [[busy], perDay.busy, seed],
      [small, perDay.small, seed + 0.01],
    ] as const) {
      const requests = Math.max(1, Math.round(n * days));
      log(
        `${label}: ${fmt(requests)} requests a${accounts.length > 1 ? ` small account (x${accounts.length})` : 't the busy account'} over ${days.toFixed(1)} days`,
      );
      summaries.push(
        await generateHistory(db.url, {
          accountIds: [...accounts],
          requests,
          syncRatio: 1,
          deliveries: Math.round(requests * DELIVERY_SHARE),
          days,
          errorRate: 0.05,
          warningRate: 0.03,
          nullRate: 0.01,
          chunkSize: 100_000,
          jobs: 2,
          seed: s,
          vacuum: false,
          now: end,
          progress: log,
        }),
      );
    }
    // The tables as a settled autovacuum leaves them: every page all-visible, so that counts are index-only.
    // Not generate-history's own closing VACUUM: measured, it left most of month one's syncs pages (and
    // sometimes every requests page) not all-visible. VACUUM marks a page all-visible only once its rows'
    // inserts are hinted committed, which waits until the WAL of the commit is flushed; with
    // synchronous_commit off, the generator's last commits are not, nor are the VACUUM's own ANALYZE
    // commits, which share the commit-log LSN group of the data's few transaction ids. Hence a CHECKPOINT
    // (flushes the WAL) and the VACUUM on a session that commits synchronously.
    const t = performance.now();
    const client = await pool.connect();
    try {
      await client.query('SET synchronous_commit = on');
      await client.query('CHECKPOINT');
      await client.query('VACUUM (ANALYZE) requests, syncs, deliveries, request_bodies');
      await client.query('RESET synchronous_commit');
    } finally {
      client.release();
    }
    return { summaries, vacuumMs: performance.now() - t };
  }
}

// ------------------------------------------------------------------------------------------------
// Reads

async function newestSync(q: Query, accountId: number, w: Window): Promise<string> {
  const [row] = await q<{ id: string }>(
    'SELECT id::text FROM syncs WHERE account_id = $1 AND created_at >= $2 AND created_at <= $3 ORDER BY created_at DESC, id DESC LIMIT 1',
    [accountId, w.from, w.to],
  );
  if (!row) throw new Error(`no sync in the ${w.label} window`);
  return row.id;
}

/** What the window's calls answer (page ids, counts), to check that month one's window answers the same after the year. */
async function answers(api: ApiClient, w: Window, ids: Ids): Promise<string> {
  const parts: string[] = [];
  for (const e of ENDPOINTS) {
    const body = JSON.parse((await api.get(e.path(w, ids))).body) as { data?: { id: number | string }[] } & Record<string, unknown>;
    parts.push(`${e.name}: ${body.data ? `${body.data.length} rows, ${body.data[0]?.id}..${body.data[body.data.length - 1]?.id}` : JSON.stringify(body)}`);
  }
  return parts.join('; ');
}

/**
 * The app warmed up (V8 settles over the first thousand requests), then rounds over every window and
 * endpoint, one request at a time; an endpoint with fewer samples (the metrics) takes part in evenly
 * spaced rounds, so whatever the machine does meanwhile falls on all of them alike.
 */
async function measure(api: ApiClient, windows: Window[], ids: Ids): Promise<Timings> {
  const cheap = windows.flatMap((w) => ENDPOINTS.filter((e) => e.kind !== 'metric').map((e) => e.path(w, ids)));
  log(`warming up the app: ${fmt(APP_WARMUP)} requests`);
  for (let i = 0; i < APP_WARMUP; i++) await api.get(cheap[i % cheap.length] as string);
  const timings: Timings = new Map();
  const rounds = Math.max(...ENDPOINTS.map((e) => e.samples));
  const warmups = Math.max(...ENDPOINTS.map((e) => e.warmup));
  const begun = performance.now();
  for (let round = -warmups; round < rounds; round++) {
    for (const w of windows) {
      for (const e of ENDPOINTS) {
        const warming = round < 0;
        const [n, of, i] = warming ? [e.warmup, warmups, round + warmups] : [e.samples, rounds, round];
        if ((i * n) % of >= n) continue; // not this endpoint's turn
        const t = performance.now();
        await api.get(e.path(w, ids));
        const took = performance.now() - t;
        if (warming) continue;
        const list = timings.get(at(w, e)) ?? [];
        list.push(took);
        timings.set(at(w, e), list);
      }
    }
    if (round >= 0 && (round + 1) % Math.max(1, Math.round(rounds / 5)) === 0)
      log(`  measured ${round + 1}/${rounds} rounds (${((performance.now() - begun) / 1000).toFixed(0)} s)`);
  }
  return timings;
}

/** Month twelve against month one, per endpoint and window; the rows that missed a target. */
function printReadTable(one: Timings, twelve: Timings, monthOne: Window, windows: Window[]): [Window, Endpoint][] {
  const failed: [Window, Endpoint][] = [];
  const lines: string[][] = [];
  for (const e of ENDPOINTS) {
    const base = one.get(at(monthOne, e)) ?? [];
    const [b50, b95] = [pct(base, 0.5), pct(base, 0.95)];
    for (const w of windows) {
      const t = twelve.get(at(w, e)) ?? [];
      const [t50, t95] = [pct(t, 0.5), pct(t, 0.95)];
      let target = 'none (printed)';
      const misses: string[] = [];
      if (e.kind === 'page') {
        target = `p95 < ${TARGET.pageP95Ms} ms, x p95 <= ${TARGET.pageRatio}`;
        if (t95 >= TARGET.pageP95Ms || b95 >= TARGET.pageP95Ms) misses.push('p95');
        if (t95 > b95 * TARGET.pageRatio) misses.push('slower than month one');
      }
      if (misses.length > 0) failed.push([w, e]);
      lines.push([e.name, w.label, ms(b50), ms(b95), ms(t50), ms(t95), ratio(t50, b50), ratio(t95, b95), target, e.kind === 'page' ? verdict(misses) : '']);
    }
  }
  const header = ['endpoint', 'window', 'month 1 p50', 'p95', 'month 12 p50', 'p95', 'x p50', 'x p95', 'target', 'result'];
  const widths = header.map((h, i) => Math.max(h.length, ...lines.map((l) => (l[i] as string).length)));
  const numeric = (i: number) => i >= 2 && i <= 7;
  const render = (cells: string[]) => `| ${cells.map((c, i) => (numeric(i) ? c.padStart(widths[i] as number) : c.padEnd(widths[i] as number))).join(' | ')} |`;
  out('');
  out(render(header));
  out(`|${widths.map((w, i) => (numeric(i) ? `${'-'.repeat(w + 1)}:` : '-'.repeat(w + 2))).join('|')}|`);
  for (const line of lines) out(render(line));
  out(
    `\nTimes in ms through the API (keep-alive HTTP, one request at a time, the busy account's key); x = month 12 / month 1. Windows of ${(monthOne.to.getTime() - monthOne.from.getTime() + 1) / DAY_MS} days (month one's length):`,
  );
  out(`month 1 measured "month one" = ${monthOne.from.toISOString()} .. ${monthOne.to.toISOString()}, the newest window there was; month 12 measured "newest"`);
  out(
    `(ending now) and "month one's" (the same window: the same rows, under a year of partitions). Samples: ${SAMPLES} per page and lookup, ${METRIC_SAMPLES} per metric;`,
  );
  out(`pages limit ${PAGE_LIMIT}. /syncs/:id looks up the window's newest sync (no target of its own).`);
  return failed;
}

interface PlanNode {
  'Node Type': string;
  'Relation Name'?: string;
  'Subplans Removed'?: number;
  'Shared Hit Blocks'?: number;
  'Shared Read Blocks'?: number;
  Plans?: PlanNode[];
}

/** Which partitions a statement touched, and what it cost: pruning at a glance. */
async function planSummary(pool: pg.Pool, statement: { text: string; values: unknown[] }): Promise<string> {
  const { rows } = await pool.query<{
    'QUERY PLAN': [{ Plan: PlanNode; 'Planning Time': number; 'Execution Time': number; JIT?: { Timing: { Total: number } } }];
  }>(`EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) ${statement.text}`, statement.values);
  const top = rows[0]?.['QUERY PLAN'][0];
  if (!top) return 'no plan';
  const jit = top.JIT ? `, JIT ${ms(top.JIT.Timing.Total)} ms of it` : '';
  const relations = new Set<string>();
  let removed = 0;
  const walk = (node: PlanNode) => {
    if (node['Relation Name']) relations.add(node['Relation Name']);
    removed += node['Subplans Removed'] ?? 0;
    for (const child of node.Plans ?? []) walk(child);
  };
  walk(top.Plan);
  const names = [...relations].sort();
  const scanned = names.length <= 3 ? names.join(', ') : `${names[0]} .. ${names[names.length - 1]}`;
  return (
    `${names.length} partition(s) scanned (${scanned})${removed ? `, ${removed} pruned at run time` : ''}; ` +
    `planning ${ms(top['Planning Time'])} ms, execution ${ms(top['Execution Time'])} ms${jit}, buffers hit ${fmt(top.Plan['Shared Hit Blocks'] ?? 0)} read ${fmt(top.Plan['Shared Read Blocks'] ?? 0)}`
  );
}

async function printVolume(q: Query, label: string, busyId: number, windows: Window[], generated: GenerateHistorySummary[], vacuumMs: number): Promise<void> {
  const inserted = generated.reduce((sum, g) => sum + g.inserted.requests + g.inserted.syncs + g.inserted.deliveries, 0);
  const insertMs = generated.reduce((sum, g) => sum + g.elapsedMs.insert, 0);
  out(
    `\n${label}: generated ${fmt(inserted)} rows (requests, syncs, deliveries; bodies besides) in ${(insertMs / 1000).toFixed(1)} s + CHECKPOINT, VACUUM ANALYZE ${(vacuumMs / 1000).toFixed(1)} s`,
  );
  const [rows] = await q<Record<string, string>>(
    `SELECT (SELECT count(*) FROM requests) AS requests, (SELECT count(*) FROM syncs) AS syncs, (SELECT count(*) FROM deliveries) AS deliveries,
            (SELECT count(*) FROM request_bodies) AS bodies, (SELECT count(*) FROM syncs WHERE account_id = $1) AS busy_syncs`,
    [busyId],
  );
  out(
    `  rows in all: ${fmt(Number(rows?.requests))} requests, ${fmt(Number(rows?.syncs))} syncs (${fmt(Number(rows?.busy_syncs))} of the busy account), ` +
      `${fmt(Number(rows?.deliveries))} deliveries, ${fmt(Number(rows?.bodies))} request bodies`,
  );
  for (const w of windows) {
    const [n] = await q<{ syncs: string; requests: string }>(
      `SELECT (SELECT count(*) FROM syncs WHERE account_id = $1 AND created_at >= $2 AND created_at <= $3) AS syncs,
              (SELECT count(*) FROM requests WHERE account_id = $1 AND created_at >= $2 AND created_at <= $3) AS requests`,
      [busyId, w.from, w.to],
    );
    out(`  busy account in the ${w.label} window: ${fmt(Number(n?.syncs))} syncs, ${fmt(Number(n?.requests))} requests`);
  }
  const visible = await q<{ table: string; share: string }>(
    `SELECT t.name AS table, round(100.0 * sum(c.relallvisible) / nullif(sum(c.relpages), 0), 1)::text AS share
       FROM unnest(ARRAY['requests', 'syncs', 'deliveries']) WITH ORDINALITY AS t(name, ord)
       JOIN pg_partition_tree(t.name::regclass) p ON p.isleaf JOIN pg_class c ON c.oid = p.relid
      GROUP BY t.name, t.ord ORDER BY t.ord`,
  );
  out(`  ${await sizeLine(q)}`);
  out(`  pages all-visible (index-only scans need no heap): ${visible.map((v) => `${v.table} ${v.share} %`).join(', ')}`);
}

// ------------------------------------------------------------------------------------------------
// The drop under load

type Query = <T extends pg.QueryResultRow>(text: string, values?: unknown[]) => Promise<T[]>;

interface Sizes {
  database: number;
  tables: { table: string; partitions: number; bytes: number }[];
}

async function sizes(q: Query): Promise<Sizes> {
  const [db] = await q<{ bytes: string }>('SELECT pg_database_size(current_database()) AS bytes');
  const tables = await q<{ table: string; partitions: string; bytes: string }>(
    `SELECT t.name AS table, count(*) FILTER (WHERE p.level > 0) AS partitions, coalesce(sum(pg_total_relation_size(p.relid)) FILTER (WHERE p.isleaf), 0) AS bytes
       FROM unnest($1::text[]) WITH ORDINALITY AS t(name, ord) CROSS JOIN LATERAL pg_partition_tree(t.name::regclass) p
      GROUP BY t.name, t.ord ORDER BY t.ord`,
    [HISTORY_TABLE_NAMES],
  );
  return { database: Number(db?.bytes), tables: tables.map((t) => ({ table: t.table, partitions: Number(t.partitions), bytes: Number(t.bytes) })) };
}

const mb = (bytes: number) => `${fmt(Math.round(bytes / 2 ** 20))} MB`;

async function sizeLine(q: Query): Promise<string> {
  const s = await sizes(q);
  const history = s.tables.reduce((sum, t) => sum + t.bytes, 0);
  return `disk: database ${mb(s.database)}, history tables ${mb(history)} (${s.tables
    .filter((t) => t.bytes > 0)
    .map((t) => `${t.table} ${mb(t.bytes)} in ${t.partitions} partitions`)
    .join(', ')})`;
}

function printSizes(label: string, before: Sizes, after: Sizes): void {
  const sum = (s: Sizes) => s.tables.reduce((total, t) => total + t.bytes, 0);
  out(`${label}: database ${mb(before.database)} -> ${mb(after.database)}; history tables ${mb(sum(before))} -> ${mb(sum(after))}`);
  for (const [i, t] of before.tables.entries()) {
    const a = after.tables[i];
    if (!a || (t.bytes === a.bytes && t.partitions === a.partitions && t.bytes === 0)) continue;
    out(
      `  ${t.table.padEnd(20)} ${mb(t.bytes).padStart(9)} in ${String(t.partitions).padStart(3)} partitions -> ${mb(a.bytes).padStart(9)} in ${String(a.partitions).padStart(3)}`,
    );
  }
}

/** What a round dropped, per table: how many partitions, from which to which. */
function dropped(report: RoundReport): string {
  const byTable = new Map<string, string[]>();
  for (const name of report.dropped) {
    const table = name.replace(/_p\d{8}$/, '');
    byTable.set(table, [...(byTable.get(table) ?? []), name]);
  }
  const parts = [...byTable].map(([table, names]) => {
    const sorted = names.sort();
    return sorted.length === 1 ? sorted[0] : `${table}: ${sorted.length} (${sorted[0]} .. ${sorted[sorted.length - 1]})`;
  });
  const held = report.held.map((h) => `${h.partition} (${h.reason})`);
  return `${parts.join(', ') || 'nothing'}${held.length ? `; HELD ${held.join(', ')}` : ''}${report.failures.length ? `; FAILED ${report.failures.join(', ')}` : ''}`;
}

async function setDurability(q: Query, on: boolean): Promise<void> {
  for (const name of DURABILITY) await q(on ? `ALTER SYSTEM RESET ${name}` : `ALTER SYSTEM SET ${name} = off`);
  await q('SELECT pg_reload_conf()');
  await new Promise((r) => setTimeout(r, 500));
}

async function dropUnderLoad(
  db: { url: string; clusterDir: string },
  pool: pg.Pool,
  q: Query,
  encryptionKey: Buffer,
  keep: RetentionDays,
  paths: string[],
  monthTwo: Date,
): Promise<{ ok: boolean; problems: string[] }> {
  const problems: string[] = [];
  await setDurability(q, true);
  await q('CHECKPOINT');
  const durability = await q<{ name: string; setting: string }>(`SELECT name, current_setting(name) AS setting FROM unnest($1::text[]) AS name`, [DURABILITY]);
  const postmaster = Number(readFileSync(`${db.clusterDir}/postmaster.pid`, 'utf8').split('\n')[0]);

  // The ingress as production runs it, keeping the year (its start runs a history round with these).
  const env = { RETENTION_DAYS: String(keep.history), RAW_BODY_RETENTION_DAYS: String(keep.body), AUDIT_RETENTION_DAYS: String(keep.audit) };
  const { api, port } = await startApiChild(db.url, encryptionKey, { env });
  await untilLive(port, api);
  const folder = sampleFolder('smartlead');
  const templates = EVENT_ORDER.filter((e) => existsSync(new URL(`${e}.json`, folder))).map((e) =>
    withUniqueLead(readFileSync(new URL(`${e}.json`, folder), 'utf8')),
  );
  const spec: LoadSpec = { port, paths, templates, perSecond: INGRESS_RATE };
  const load = startChild('load', [SELF, '--load'], { [SPEC_ENV]: JSON.stringify(spec) }, { echo: false });

  // What production's round drops on the day a month's partitions expire, with the default
  // RAW_BODY_RETENTION_DAYS: that month's bodies went long before (a day at a time), and that day's round
  // drops one day of bodies, 30 days old. The round before (not measured, before the load) stands for the
  // daily rounds until then: it keeps 31 days of bodies; the measured rounds keep 30, 29, ... (a day each).
  const earlier = await maintainHistory(pool, { retention: { ...keep, body: DEFAULT_RETENTION.body + 1 } });
  out(`the daily rounds before (not measured): ${dropped(earlier)}`);
  // Its hundreds of dropped tables leave dead catalog rows: vacuumed now, not by autovacuum under the load.
  await q(
    'VACUUM pg_catalog.pg_class, pg_catalog.pg_attribute, pg_catalog.pg_depend, pg_catalog.pg_type, pg_catalog.pg_constraint, pg_catalog.pg_index, pg_catalog.pg_inherits',
  );
  await q('CHECKPOINT');

  out('');
  out(
    `Dropping months one to ${DROP_TRIALS} while the ingress takes load. PostgreSQL now: ${durability.map((s) => `${s.name}=${s.setting}`).join(' ')} (production durability)`,
  );
  out(
    `  ingress: \`src/main.ts api\` in its own process; load: its own process, ${fmt(INGRESS_RATE)} POSTs/s at a fixed rate (open loop) over ${paths.length} Smartlead`,
  );
  out(
    `  sources of the busy account, the ${templates.length} samples as each lead's events (${LEADS_PER_BLOCK} leads interleaved, a lead's events 200 requests apart)`,
  );
  out(
    `  ${LOAD_WARMUP_S} s warm-up, then per month: ${BEFORE_S} s "before", maintainHistory with the month past retention (and a day of bodies), ${AFTER_S} s "after"; no worker runs`,
  );

  const before = await sizes(q);
  const [maxId] = await q<{ id: string }>('SELECT coalesce(max(id), 0)::text AS id FROM requests');
  const cpu = cpuMeter({ ingress: () => [api.proc.pid as number], load: () => [load.proc.pid as number], postgres: () => postgresPids(postmaster) });
  await ask<LoadAnswer>(load, { start: true });
  await new Promise((r) => setTimeout(r, LOAD_WARMUP_S * 1000));
  const trials: Trial[] = [];
  let monthStart = spanStart('month', new Date(monthTwo.getTime() - 1));
  for (let k = 0; k < DROP_TRIALS; k++) {
    const monthEnd = spanEnd('month', monthStart);
    trials.push(await dropTrial(db.url, pool, { month: monthStart, monthEnd, bodyDays: DEFAULT_RETENTION.body - k }));
    monthStart = monthEnd;
  }
  await new Promise((r) => setTimeout(r, AFTER_S * 1000));
  const result = await ask<LoadAnswer>(load, { stop: true });
  const used = cpu();
  await load.stop();
  await api.stop();

  const ok200 = (s: LoadSample) => s[2] === 200;
  const line = (label: string, samples: LoadSample[], seconds: number) => {
    const lat = samples.map((s) => s[1]);
    return `  ${label.padEnd(15)} n ${fmt(samples.length).padStart(6)} (${fmt(Math.round(samples.length / seconds)).padStart(5)}/s)  p50 ${ms(pct(lat, 0.5)).padStart(6)}  p99 ${ms(pct(lat, 0.99)).padStart(6)}  max ${ms(maxOf(lat)).padStart(6)}  not 200: ${samples.filter((s) => !ok200(s)).length}`;
  };
  const figures: { dropMs: number; before: number; during: number }[] = [];
  for (const trial of trials) {
    const phase = {
      before: result.samples.filter((s) => s[0] >= trial.beforeStart && s[0] + s[1] <= trial.dropStart),
      during: result.samples.filter((s) => s[0] < trial.dropEnd && s[0] + s[1] > trial.dropStart),
      after: result.samples.filter((s) => s[0] >= trial.dropEnd && s[0] < trial.dropEnd + AFTER_S * 1000),
    };
    const dropMs = trial.dropEnd - trial.dropStart;
    figures.push({
      dropMs,
      before: pct(
        phase.before.map((s) => s[1]),
        0.99,
      ),
      during: pct(
        phase.during.map((s) => s[1]),
        0.99,
      ),
    });
    out('');
    out(
      `round dropping ${trial.month.toISOString().slice(0, 7)} (maintainHistory, retention ${trial.retention.history} days, ${trial.retention.body} for bodies, now ${trial.roundAt.toISOString()}): ${ms(dropMs)} ms`,
    );
    out(`  dropped: ${dropped(trial.report)}`);
    out(`  where its time went, by kind of statement (count, ms): ${trial.spent}`);
    out(`  by table (statements, ms): ${trial.byTable}`);
    out('  its slowest statements:');
    for (const l of trial.slowest.slice(0, 3)) out(l);
    for (const [label, w] of [
      [`the last ${BEFORE_S / 2} s before`, trial.waitedBefore],
      ['during the round', trial.waited],
    ] as const) {
      out(`  active backends ${label}, sampled every ${WAIT_SAMPLE_MS} ms (${w.samples} samples): mean backends, wait event (lock wanted), statement`);
      for (const [key, n] of [...w.counts].sort((x, y) => y[1] - x[1]).slice(0, 6)) out(`    ${(n / Math.max(1, w.samples)).toFixed(2).padStart(5)}  ${key}`);
    }
    out('  ingress latency (ms, from sending the POST to its answer), by when the request was in flight:');
    out(line('before', phase.before, BEFORE_S));
    out(line('during the drop', phase.during, Math.max(dropMs, 1) / 1000));
    out(line('after', phase.after, AFTER_S));
    // The worst answer per 100 ms, from half a second before the round to half a second after.
    const buckets: string[] = [];
    for (let t = trial.dropStart - 500; t < trial.dropEnd + 500; t += 100) {
      const inBucket = result.samples.filter((s) => s[0] >= t && s[0] < t + 100).map((s) => s[1]);
      buckets.push(inBucket.length ? ms(maxOf(inBucket)) : '-');
    }
    out(`  worst answer per 100 ms of sending, from 0.5 s before the round to 0.5 s after it: ${buckets.join(' ')}`);
    const monthly = [...trial.wantGone].filter((n) => !n.startsWith('request_bodies_'));
    const bodies = trial.wantGone.size - monthly.length;
    if (monthly.length !== HISTORY_TABLES.length - 1 || monthly.some((n) => !n.endsWith(partitionName('', trial.month))) || bodies !== 1)
      problems.push(
        `the retention of the round of ${trial.month.toISOString().slice(0, 7)} puts ${[...trial.wantGone].join(', ')} past it, not that month's and a day of bodies`,
      );
    const gone = new Set(trial.report.dropped);
    if ([...trial.wantGone].some((n) => !gone.has(n)) || [...gone].some((n) => !trial.wantGone.has(n)))
      problems.push(`the round of ${trial.month.toISOString().slice(0, 7)} dropped ${[...gone].join(', ')}, not exactly ${[...trial.wantGone].join(', ')}`);
    if (trial.report.failures.length || trial.report.held.length)
      problems.push(`the round of ${trial.month.toISOString().slice(0, 7)} held or failed: ${dropped(trial.report)}`);
  }
  out('');
  out(`cpu cores during the load: ${cores(used)}`);

  const [accepted] = await q<{ n: string }>('SELECT count(*) AS n FROM requests WHERE id > $1', [maxId?.id ?? '0']);
  const answered200 = result.samples.filter(ok200).length;
  if (Number(accepted?.n) < answered200)
    problems.push(`the ingress answered 200 to ${fmt(answered200)} POSTs but ${fmt(Number(accepted?.n))} requests are stored`);
  if (answered200 < result.sent) problems.push(`${fmt(result.sent - answered200)} of ${fmt(result.sent)} POSTs were not answered 200`);
  out(`${fmt(result.sent)} POSTs sent, ${fmt(answered200)} answered 200, ${fmt(Number(accepted?.n))} requests stored`);
  const [left] = await q<{ oldest: Date | null }>('SELECT min(created_at) AS oldest FROM requests');
  if (left?.oldest && left.oldest < monthStart)
    problems.push(`requests older than ${monthStart.toISOString().slice(0, 7)} are left (oldest ${left.oldest.toISOString()})`);

  await q('CHECKPOINT');
  const afterDrop = await sizes(q);
  out('');
  printSizes(`disk, months one to ${DROP_TRIALS} dropped`, before, afterDrop);

  // What the round's checks cost (unfinished work still needing a partition's rows: HISTORY_TABLES in
  // src/db/history/tables.ts), each table's statement on its oldest partition left, with the queues as the
  // load left them (autovacuum is off here: never analyzed), then analyzed.
  out('');
  out(`the unfinished-work checks on each table's oldest partition left (no partition of these is past retention now), queues as the load left them:`);
  const checks: { table: string; statement: { text: string; values: unknown[] }; ms: number }[] = [];
  for (const table of HISTORY_TABLES) {
    if (!table.unfinished) continue;
    const [oldestLeft] = await q<{ name: string }>(
      `SELECT c.relname AS name FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid WHERE i.inhparent = $1::regclass ORDER BY c.relname LIMIT 1`,
      [table.name],
    );
    if (!oldestLeft) continue;
    const statement = table.unfinished(identSql(oldestLeft.name));
    const summary = await planSummary(pool, statement);
    checks.push({ table: table.name, statement, ms: Number(/execution ([0-9.]+) ms/.exec(summary)?.[1] ?? 0) });
    out(`  ${oldestLeft.name.padEnd(32)} ${summary}`);
  }
  const [queues] = await q<{ syncs: string; deliveries: string; relays: string }>(
    `SELECT (SELECT count(*) FROM pending_syncs) AS syncs, (SELECT count(*) FROM pending_deliveries) AS deliveries, (SELECT count(*) FROM relay_executions) AS relays`,
  );
  out(
    `  (pending_syncs ${fmt(Number(queues?.syncs))} rows, pending_deliveries ${fmt(Number(queues?.deliveries))}, relay_executions ${fmt(Number(queues?.relays))})`,
  );
  const slowestCheck = checks.sort((a, b) => b.ms - a.ms)[0];
  if (slowestCheck) {
    out(`  EXPLAIN (ANALYZE, BUFFERS) of the slowest, ${slowestCheck.table}'s:`);
    for (const line of await q<{ 'QUERY PLAN': string }>(`EXPLAIN (ANALYZE, BUFFERS) ${slowestCheck.statement.text}`, slowestCheck.statement.values))
      out(`    ${line['QUERY PLAN']}`);
    await q('ANALYZE pending_syncs, pending_deliveries, relay_executions');
    out(`  the same after ANALYZE of the queues: ${await planSummary(pool, slowestCheck.statement)}`);
  }

  // The default retention, without load: most of the year goes.
  const timedDefaults = timedPool(db.url);
  const t = performance.now();
  const defaults = await maintainHistory(timedDefaults.pool, { retention: DEFAULT_RETENTION });
  const defaultsMs = performance.now() - t;
  await timedDefaults.pool.end();
  await q('CHECKPOINT');
  const afterDefaults = await sizes(q);
  out('');
  out(`round with the default retention ${JSON.stringify(DEFAULT_RETENTION)} days (no load): ${ms(defaultsMs)} ms`);
  out(`  dropped: ${dropped(defaults)}`);
  out(`  where its time went, by kind of statement (count, ms): ${timedDefaults.spent()}`);
  out(`  by table (statements, ms): ${timedDefaults.byTable()}`);
  out('  its slowest statements:');
  for (const line of timedDefaults.slowest()) out(line);
  printSizes('disk, default retention', afterDrop, afterDefaults);

  // Each month's round against the 10 s before it; the median of the months decides (one window of half
  // a second holds 500 samples: its p99 is its fifth worst, and the machine's own hiccups come and go).
  const ratios = figures.map((f) => f.during / f.before).sort((x, y) => x - y);
  const medianRatio = ratios[Math.floor(ratios.length / 2)] ?? Infinity;
  const slowestDrop = maxOf(figures.map((f) => f.dropMs));
  const latencyOk = medianRatio <= TARGET.ingressRatio;
  const dropOk = slowestDrop < TARGET.dropMs && problems.length === 0;
  out('');
  out(
    `ingress p99 during each month's drop vs the 10 s before: ${figures.map((f) => `${ms(f.during)} / ${ms(f.before)} ms = ${ratio(f.during, f.before)}`).join('; ')}; median ${medianRatio.toFixed(2)}x (target <= ${TARGET.ingressRatio}x): ${verdict(latencyOk ? [] : ['x'])}`,
  );
  out(
    `the drop (each whole round) ${figures.map((f) => `${ms(f.dropMs)} ms`).join(', ')} (target < ${fmt(TARGET.dropMs)} ms, nothing held or failed): ${verdict(dropOk ? [] : ['x'])}`,
  );
  return { ok: latencyOk && dropOk, problems };
}

type Waits = { samples: number; counts: Map<string, number> };

/** One month's round under the running load, and what it was to drop. Times are epoch milliseconds. */
interface Trial {
  month: Date;
  roundAt: Date;
  retention: RetentionDays;
  report: RoundReport;
  wantGone: Set<string>;
  beforeStart: number;
  dropStart: number;
  dropEnd: number;
  waitedBefore: Waits;
  waited: Waits;
  spent: string;
  byTable: string;
  slowest: string[];
}

/**
 * BENCH_BEFORE_S seconds of the running load ("before"; active backends sampled in its second half), then
 * the round that puts `month` past retention, and with it one more day of bodies (`bodyDays` old).
 */
async function dropTrial(url: string, pool: pg.Pool, plan: { month: Date; monthEnd: Date; bodyDays: number }): Promise<Trial> {
  const beforeStart = performance.timeOrigin + performance.now();
  await new Promise((r) => setTimeout(r, (BEFORE_S / 2) * 1000));
  const waitsBefore = waitSampler(url);
  await new Promise((r) => setTimeout(r, (BEFORE_S / 2) * 1000));
  const waitedBefore = await waitsBefore.stop();

  const roundAt = new Date();
  const historyDays = Math.floor((roundAt.getTime() - plan.monthEnd.getTime()) / DAY_MS);
  const retention: RetentionDays = { history: historyDays, body: plan.bodyDays, audit: historyDays };
  const wantGone = new Set<string>();
  for (const table of HISTORY_TABLES) {
    for (const p of expiredPartitions(await listPartitions(pool, table.name), roundAt, retention[table.retention])) wantGone.add(p.name);
  }
  const timed = timedPool(url);
  const waits = waitSampler(url);
  await waits.started;
  const dropStart = performance.timeOrigin + performance.now();
  const report = await maintainHistory(timed.pool, { retention, now: roundAt });
  const dropEnd = performance.timeOrigin + performance.now();
  const waited = await waits.stop();
  await timed.pool.end();
  return {
    ...plan,
    roundAt,
    retention,
    report,
    wantGone,
    beforeStart,
    dropStart,
    dropEnd,
    waitedBefore,
    waited,
    spent: timed.spent(),
    byTable: timed.byTable(),
    slowest: timed.slowest(),
  };
}

/** A pool whose statements are timed by kind: where a history round spends its time. */
function timedPool(url: string): { pool: pg.Pool; spent(): string; byTable(): string; slowest(): string[] } {
  const pool = new pg.Pool({ connectionString: url, max: 1 });
  pool.on('error', (error) => log(`round connection: ${error.message}`));
  const spent = new Map<string, { n: number; ms: number }>();
  const byTable = new Map<string, { n: number; ms: number }>();
  // A round keeps up one table after the other: a statement naming none (BEGIN, COMMIT) is the last named one's.
  let current = '(before the first table)';
  const add = (map: Map<string, { n: number; ms: number }>, key: string, took: number) => {
    const entry = map.get(key) ?? { n: 0, ms: 0 };
    entry.n += 1;
    entry.ms += took;
    map.set(key, entry);
  };
  const slowest: { text: string; ms: number }[] = [];
  const note = (text: string, values: unknown, took: number) => {
    // A partition's name in the statement, else a table's name among its values (catalog reads take `public.<table>`).
    const named = PARTITION_NAMED.exec(text)?.[1] ?? TABLE_NAMED.exec(JSON.stringify(values ?? null))?.[1];
    if (named) current = named;
    add(spent, statementKind(text), took);
    add(byTable, current, took);
    slowest.push({ text: text.replace(/\s+/g, ' ').trim().slice(0, 110), ms: took });
    slowest.sort((a, b) => b.ms - a.ms);
    slowest.length = Math.min(slowest.length, 5);
  };
  pool.on('connect', (client) => {
    const original = client.query.bind(client) as (...args: unknown[]) => unknown;
    const timed = (...args: unknown[]): unknown => {
      const first = args[0];
      const text = typeof first === 'string' ? first : ((first as { text?: string } | undefined)?.text ?? '');
      const values = typeof first === 'string' ? args[1] : (first as { values?: unknown } | undefined)?.values;
      const t = performance.now();
      const result = original(...args);
      return result instanceof Promise ? result.finally(() => note(text, values, performance.now() - t)) : result;
    };
    Object.assign(client, { query: timed });
  });
  const render = (map: Map<string, { n: number; ms: number }>) =>
    [...map]
      .sort((a, b) => b[1].ms - a[1].ms)
      .map(([key, e]) => `${key} ${e.n}, ${ms(e.ms)}`)
      .join('; ');
  return {
    pool,
    spent: () => render(spent),
    byTable: () => render(byTable),
    slowest: () => slowest.map((e) => `      ${ms(e.ms).padStart(7)} ms  ${e.text}`),
  };
}

const TABLE_ALTERNATIVES = [...HISTORY_TABLE_NAMES].sort((a, b) => b.length - a.length).join('|');
const PARTITION_NAMED = new RegExp(`\\b(${TABLE_ALTERNATIVES})_p[0-9]{8}\\b`);
const TABLE_NAMED = new RegExp(`\\b(${TABLE_ALTERNATIVES})(?:_p[0-9]{8})?\\b`);

function statementKind(text: string): string {
  const t = text.replace(/\s+/g, ' ').trim();
  if (/DETACH PARTITION .* CONCURRENTLY/.test(t)) return 'DETACH ... CONCURRENTLY';
  if (/DETACH PARTITION .* FINALIZE/.test(t)) return 'DETACH ... FINALIZE';
  if (/DROP CONSTRAINT/.test(t)) return 'DROP CONSTRAINT (foreign keys)';
  if (/^DROP TABLE/.test(t)) return 'DROP TABLE';
  if (/^COMMIT/.test(t)) return 'COMMIT';
  if (/^(BEGIN|ROLLBACK|SET|RESET)/.test(t)) return 'BEGIN/SET/RESET';
  if (/pending_syncs|pending_deliveries|relay_executions|webhook_deliveries/.test(t)) return 'unfinished-work checks';
  if (/history_holds/.test(t)) return 'history_holds';
  if (/advisory/.test(t)) return 'advisory lock';
  if (/pg_inherits|pg_class|pg_constraint|to_regclass/.test(t)) return 'catalog reads';
  return 'other';
}

const WAIT_SAMPLE_MS = 20;

/** Active backends by wait event and statement, sampled on a connection of its own until stop(). */
function waitSampler(url: string): { started: Promise<void>; stop(): Promise<{ samples: number; counts: Map<string, number> }> } {
  const client = new pg.Client({ connectionString: url });
  const counts = new Map<string, number>();
  let [samples, running] = [0, true];
  const loop = (async () => {
    await client.connect();
    while (running) {
      const { rows } = await client.query<{ wait: string; query: string }>(
        `SELECT coalesce(a.wait_event_type || ':' || a.wait_event, 'on CPU')
                || coalesce(' (' || (SELECT string_agg(DISTINCT l.locktype || coalesce(' ' || l.relation::regclass::text, '')
                                                    || coalesce(' ' || l.classid::regclass::text || ' ' || l.objid, '') || ' ' || l.mode, ', ')
                                       FROM pg_locks l WHERE l.pid = a.pid AND NOT l.granted) || ')', '') AS wait,
                left(regexp_replace(a.query, '\\s+', ' ', 'g'), 60) AS query
           FROM pg_stat_activity a WHERE a.state = 'active' AND a.backend_type = 'client backend' AND a.pid <> pg_backend_pid()`,
      );
      samples += 1;
      for (const r of rows) counts.set(`${r.wait}  ${r.query}`, (counts.get(`${r.wait}  ${r.query}`) ?? 0) + 1);
      await new Promise((r) => setTimeout(r, WAIT_SAMPLE_MS));
    }
  })();
  return {
    started: new Promise((resolve) => setTimeout(resolve, 50)),
    stop: async () => {
      running = false;
      await loop;
      await client.end();
      return { samples, counts };
    },
  };
}

/** `close` once, whether the run or its cleanup gets there first. */
function once(close: () => Promise<void>): () => Promise<void> {
  let closing: Promise<void> | undefined;
  return () => (closing ??= close());
}

const verdict = (misses: string[]) => (misses.length === 0 ? 'PASS' : `FAIL (${misses.join(', ')})`);

/** The busy account: 20 connections x 5 sources (two of them Smartlead, with ingress codes of ours); 20 small accounts of 1 connection x 3 sources. */
function fixture() {
  const platforms = ['smartlead', 'instantly', 'lemlist', 'heyreach', 'smartlead'];
  const connection = (account: string, c: number, sources: number) => ({
    ref: `${account}-c${c}`,
    crm: c % 2 === 0 ? 'HUBSPOT' : 'SALESFORCE',
    organizationId: `${account}-org-${c}`,
    organizationDomain: `${account}${c}.example`,
    destinations: [
      { ref: `${account}-c${c}-warehouse`, url: `https://hooks.${account}${c}.example/warehouse`, description: 'Every event into the warehouse' },
      { ref: `${account}-c${c}-replies`, url: `https://hooks.${account}${c}.example/replies`, description: 'Replies to the sales channel' },
    ],
    sources: Array.from({ length: sources }, (_, s) => ({
      ref: `${account}-c${c}-s${s}`,
      platform: platforms[s % platforms.length] as string,
      ...(platforms[s % platforms.length] === 'smartlead' ? { ingressCode: `benchHistory${account}C${c}S${s}` } : {}),
      destinations: s === 0 ? [{ destination: `${account}-c${c}-warehouse` }, { destination: `${account}-c${c}-replies`, eventTypes: ['EMAIL_REPLY'] }] : [],
    })),
  });
  return {
    accounts: [
      {
        ref: 'busy',
        email: 'owner@busy.example',
        connections: Array.from({ length: 20 }, (_, c) => connection('busy', c, 5)),
        apiKeys: [{ ref: 'busy-read', name: 'bench', key: KEY }],
      },
      ...Array.from({ length: SMALL_ACCOUNTS }, (_, i) => ({
        ref: `small${i}`,
        email: `owner@small${i}.example`,
        connections: [connection(`small${i}`, 0, 3)],
      })),
    ],
  };
}

switch (process.argv[2]) {
  case '--load':
    await loadRole(childSpec<LoadSpec>(SPEC_ENV));
    break;
  default:
    await runBench('bench:history', run);
}
