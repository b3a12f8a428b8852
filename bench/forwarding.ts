/**
 * `npm run bench:forwarding`: how fast accepted events reach the customers' forwarding URLs, end to end,
 * while one of two destinations is slow, next to the CRM sync of the same events.
 *
 * On a throwaway embedded PostgreSQL with PRODUCTION durability (fsync and synchronous_commit on), with
 * every service process as production runs it: the ingress (`node --import tsx src/main.ts api`, its own
 * process) and one worker process wired as `src/main.ts worker` wires one (startWorker: the `jobs` runner
 * for the sync drains and the `loops` runner for deliveries__send, FORWARDING_* and WORKER_CONCURRENCY read as
 * the service reads them). One account, one HubSpot connection (the HubSpot emulator answering), BENCH_SOURCES
 * Smartlead sources each bound to two destinations (`eventTypes: []`, `isDelayed: false`: the ingress
 * writes both first attempts with the request): "healthy" answers 200 at once, "hanging" answers 200 after
 * BENCH_HANG_MS to every 1/BENCH_HANG_SHARE-th request. Both destinations are destination emulators
 * (src/emulators/destination.ts) on 127.0.0.1, each on its own port (its own origin: sockets are capped per
 * origin), in this process with the HubSpot emulator; this process's event-loop delay is printed, since it
 * stamps the emulators' receive times.
 *
 * A warm-up of BENCH_WARMUP_EVENTS goes all the way through first. Then the load generator (autocannon,
 * its own process, BENCH_CONNECTIONS keep-alive connections) POSTs BENCH_EVENTS events as fast as it goes
 * (the five Smartlead samples, each with a lead email of its own), and the bench waits until every
 * accepted request has a successful delivery to both destinations and a sync status (or nothing moved for
 * BENCH_STALL_S). Rates are counted from the first request's `requests.created_at` to the last delivery's
 * `created_at` (its attempt's start) or the last sync's `updated_at`; delays per event are the emulator's
 * receive time (and the delivery row's `created_at`) minus `requests.created_at`.
 *
 * This file also runs as its own child processes: `--load` (autocannon, commands on stdin) and `--worker`.
 *
 * Environment: BENCH_EVENTS (50000), BENCH_WARMUP_EVENTS (2000), BENCH_CONNECTIONS (50), BENCH_SOURCES (1),
 * BENCH_HANG_SHARE (0.1), BENCH_HANG_MS (5000), BENCH_STALL_S (120), BENCH_PROFILE (a folder: CPU profiles
 * of the api and worker processes, pg_stat_statements' top statements); the service's own
 * WORKER_CONCURRENCY, FORWARDING_CONCURRENCY, FORWARDING_MAX_IN_FLIGHT and FORWARDING_RETRY_SCHEDULE.
 */
import { randomBytes } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import os from 'node:os';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { seedFixture } from '../src/admin/seed.js';
import { loadConfig } from '../src/config.js';
import { sampleFolder } from '../src/connectors/sequencers/samples.js';
import { installJobSchema } from '../src/db/job-schema.js';
import { createPrisma } from '../src/db/prisma.js';
import { FORWARDING_HEADERS } from '../src/jobs/deliveries__send.js';
import { workerPoolSize, workerSettings } from '../src/worker.js';
import { startDestinationEmulator, type DestinationEmulator } from '../src/emulators/destination.js';
import { startHubspotEmulator } from '../src/emulators/hubspot.js';
import {
  ask,
  type Child,
  childSpec,
  cores,
  cpuMeter,
  type LoadResult,
  loadRole,
  postgresPids,
  startApiChild,
  startChild,
  untilLive,
  withUniqueLead,
  workerRole,
  type WorkerSpec,
} from './processes.js';
import { cleanups, envNumber, fmt, log, maxOf, minOf, ms, out, pct, runBench, throwawayDatabase } from './support.js';

const EVENTS = Math.round(envNumber('BENCH_EVENTS', 50_000));
const WARMUP_EVENTS = Math.round(Number(process.env.BENCH_WARMUP_EVENTS ?? 2_000));
if (!Number.isInteger(WARMUP_EVENTS) || WARMUP_EVENTS < 0) throw new Error('BENCH_WARMUP_EVENTS must be a whole number (0: no warm-up)');
const CONNECTIONS = Math.round(envNumber('BENCH_CONNECTIONS', 50));
const SOURCES = Math.round(envNumber('BENCH_SOURCES', 1));
const HANG_SHARE = envNumber('BENCH_HANG_SHARE', 0.1);
const HANG_MS = Math.round(envNumber('BENCH_HANG_MS', 5_000));
const STALL_MS = envNumber('BENCH_STALL_S', 120) * 1000;
/** A folder: the api and worker processes write V8 CPU profiles there, and the run prints pg_stat_statements' top statements. */
const PROFILE = process.env.BENCH_PROFILE || undefined;
const TARGET = { healthyPerSecond: 2_000, healthyP99Ms: 1_000 };
const TOKEN = 'bench-hubspot-token';
const PAYLOADS = sampleFolder('smartlead');
const SELF = fileURLToPath(import.meta.url);
const SPEC_ENV = 'BENCH_FORWARDING_CHILD';
/** The event-loop delay histogram samples every this many ms and records the interval itself: the lag is what exceeds it. */
const LOOP_DELAY_RESOLUTION_MS = 10;
const lag = (nanoseconds: number) => Math.max(0, nanoseconds / 1e6 - LOOP_DELAY_RESOLUTION_MS);

/** The service's own settings for the worker, read as src/main.ts reads them (defaults where unset). */
const SERVICE_ENV = Object.fromEntries(
  Object.entries(process.env).filter((e): e is [string, string] => e[1] !== undefined && /^(WORKER_CONCURRENCY|FORWARDING_[A-Z_]+)$/.test(e[0])),
);

// ------------------------------------------------------------------------------------------------
// Child processes: this file with a role, or src/main.ts (the same helpers as bench/ingress.ts).

/** Where a child's CPU profile goes (with BENCH_PROFILE; the load generator's is not wanted). */
const profiled = (name: string) => (PROFILE && !(name === 'load') ? PROFILE : undefined);

const role = (name: string, spec: unknown, extra: Record<string, string> = {}, echo = true) =>
  startChild(name, [SELF, `--${name}`], { [SPEC_ENV]: JSON.stringify(spec), ...extra }, { echo, profile: profiled(name) });

// ------------------------------------------------------------------------------------------------
// What the destinations received: the first arrival of each event (by its event id header), kept compact.

class Arrivals {
  /** Request id -> first arrival (ms since the epoch). */
  readonly first = new Map<string, number>();
  total = 0;

  constructor(private readonly emulator: DestinationEmulator) {}

  /** Moves what the emulator recorded into the map (its records keep headers and bodies: 50,000 of them would weigh). */
  collect(): void {
    for (const r of this.emulator.received.splice(0)) {
      this.total += 1;
      const id = r.headers[FORWARDING_HEADERS.eventId];
      if (typeof id === 'string' && !this.first.has(id)) this.first.set(id, r.at);
    }
  }

  get repeated(): number {
    return this.total - this.first.size;
  }
}

// ------------------------------------------------------------------------------------------------

async function run(): Promise<number> {
  const db = await throwawayDatabase({ max_connections: '200', ...(PROFILE ? { shared_preload_libraries: 'pg_stat_statements' } : {}) });
  const encryptionKey = randomBytes(32);
  // The worker's settings as the service would read them from this environment.
  const config = loadConfig({ DATABASE_URL: db.url, ENCRYPTION_KEY: encryptionKey.toString('hex'), OUTBOUND_ALLOW_PRIVATE: 'true', ...SERVICE_ENV });
  const settings = workerSettings(config.workerConcurrency);
  await installJobSchema(db.url);

  // The emulators, in this process: HubSpot, and the two destinations on ports of their own.
  const hubspot = await startHubspotEmulator({ accessToken: TOKEN });
  cleanups.push(() => hubspot.close());
  const healthy = await startDestinationEmulator();
  cleanups.push(() => healthy.close());
  const hanging = await startDestinationEmulator();
  cleanups.push(() => hanging.close());
  hanging.answerShare(HANG_SHARE, { delayMs: HANG_MS });
  const arrivals = { healthy: new Arrivals(healthy), hanging: new Arrivals(hanging) };

  const prisma = createPrisma(db.url);
  cleanups.push(() => prisma.$disconnect());
  const codes = Array.from({ length: SOURCES }, (_, i) => `benchForwardingSource${String(i).padStart(3, '0')}`);
  const seeded = await seedFixture(prisma, fixture(codes, { healthy: `${healthy.url}/events`, hanging: `${hanging.url}/events` }), encryptionKey);
  const destinationIds = { healthy: seeded.destinations.healthy!, hanging: seeded.destinations.hanging! };
  await prisma.$disconnect();
  const pool = new pg.Pool({ connectionString: db.url, max: 2 });
  // pool.end() resolves before its connections have closed: one still closing when PostgreSQL stops gets
  // "terminating connection due to administrator command", which must not crash the cleanup.
  pool.on('error', (error) => log(`bench connection: ${error.message}`));
  cleanups.push(() => pool.end());
  const q = async <T extends pg.QueryResultRow>(text: string, values: unknown[] = []) => (await pool.query<T>(text, values)).rows;
  const postmaster = Number(readFileSync(`${db.clusterDir}/postmaster.pid`, 'utf8').split('\n')[0]);
  const pgSettings = await q<{ name: string; setting: string; unit: string | null }>(
    "SELECT name, setting, unit FROM pg_settings WHERE name IN ('server_version', 'fsync', 'synchronous_commit', 'full_page_writes', 'shared_buffers', 'max_connections', 'autovacuum') ORDER BY name",
  );
  if (PROFILE) await q('CREATE EXTENSION pg_stat_statements');

  // The ingress, the worker and the load generator, each in its own process.
  const load = role('load', {}, {}, false);
  const { api, port: apiPort } = await startApiChild(db.url, encryptionKey, { env: { OUTBOUND_ALLOW_PRIVATE: 'true' }, profile: profiled('api') });
  await untilLive(apiPort, api);
  const workerSpec: WorkerSpec = { url: db.url, concurrency: config.workerConcurrency, forwarding: config.forwarding, crmUrls: { HUBSPOT: hubspot.url } };
  const worker = role('worker', workerSpec, { ENCRYPTION_KEY: encryptionKey.toString('hex') });
  await worker.next(/^ready$/);

  const samples = readdirSync(PAYLOADS)
    .sort()
    .map((file) => readFileSync(new URL(file, PAYLOADS), 'utf8'));
  const requests = codes.flatMap((code) => samples.map(withUniqueLead).map((body) => ({ path: `/webhooks/${code}`, body })));

  out(
    `bench:forwarding  (${os.cpus().length} CPUs, Node ${process.version}, load average ${os
      .loadavg()
      .map((l) => l.toFixed(2))
      .join(' ')} at start)`,
  );
  out(`PostgreSQL: ${pgSettings.map((s) => `${s.name}=${s.setting}${s.unit && s.unit !== 'ms' && s.unit !== 's' ? ` ${s.unit}` : ''}`).join(', ')}`);
  out('  production durability (fsync on, synchronous_commit on): every 200 answered is on disk with both first attempts.');
  out(
    `events: ${fmt(EVENTS)} (after ${fmt(WARMUP_EVENTS)} warm-up events through the whole pipeline), the ${samples.length} Smartlead samples over ${SOURCES} source(s) of one`,
  );
  out(
    `  HubSpot connection, each event with a lead email of its own; autocannon in its own process, ${CONNECTIONS} keep-alive connections, as fast as it goes`,
  );
  out('ingress: `node --import tsx src/main.ts api` in its own process; worker: one process wired as `src/main.ts worker` (startWorker)');
  out(
    `destinations (each source bound to both, eventTypes [], isDelayed false): healthy answers 200 at once; hanging answers 200 after ${fmt(HANG_MS)} ms to every ${Math.round(1 / HANG_SHARE)}th request`,
  );
  out('  (destination and HubSpot emulators over real HTTP on 127.0.0.1, in the bench process)');
  out(
    `graphile-worker: jobs runner ${JSON.stringify(settings)}; loops runner concurrency ${config.forwarding.concurrency} (FORWARDING_CONCURRENCY); pool max ${workerPoolSize(settings)}`,
  );
  out(
    `forwarding: FORWARDING_CONCURRENCY=${config.forwarding.concurrency}, FORWARDING_MAX_IN_FLIGHT=${config.forwarding.maxInFlight}, FORWARDING_RETRY_SCHEDULE=${config.forwarding.retrySchedule.join(',')} s${Object.keys(SERVICE_ENV).length > 0 ? ` (from the environment: ${Object.keys(SERVICE_ENV).join(', ')})` : ' (defaults)'}`,
  );
  out('');

  const stats = { q, load, apiPort, requests, destinationIds, arrivals };
  if (WARMUP_EVENTS > 0) {
    log(`warm-up: ${fmt(WARMUP_EVENTS)} events`);
    const warm = await push(stats, WARMUP_EVENTS);
    if (!warm.complete) throw new Error('the warm-up did not complete: see the progress above');
  }

  await q('CHECKPOINT');
  if (PROFILE) await q('SELECT pg_stat_statements_reset()');
  const loopDelay = monitorEventLoopDelay({ resolution: LOOP_DELAY_RESOLUTION_MS });
  const cpu = cpuMeter({
    ingress: () => [api.proc.pid!],
    worker: () => [worker.proc.pid!],
    'bench+emulators': () => [process.pid],
    load: () => [load.proc.pid!],
    postgres: () => postgresPids(postmaster),
  });
  const crmBefore = hubspot.requests.length;
  log(`pushing ${fmt(EVENTS)} events`);
  loopDelay.enable();
  const waits = PROFILE ? waitSampler(db.url) : undefined;
  let usedWhilePushing: Record<string, number> | undefined;
  const pushed = await push(stats, EVENTS, () => (usedWhilePushing = cpu()));
  const waited = await waits?.stop();
  loopDelay.disable();
  const used = cpu();
  const crmCalls = hubspot.requests.length - crmBefore;
  await worker.stop();

  // Per request: when it was accepted, synced, and first delivered to each destination.
  const rowsOf = await q<{
    id: string;
    at: string;
    synced: string | null;
    sync_status: string | null;
    healthy_at: string | null;
    hanging_at: string | null;
  }>(
    `SELECT r.id, extract(epoch FROM r.created_at) * 1000 AS at,
            extract(epoch FROM s.updated_at) * 1000 AS synced, coalesce(s.status::text, CASE WHEN s.id IS NULL THEN 'no sync row' ELSE 'no status' END) AS sync_status,
            extract(epoch FROM d.healthy_at) * 1000 AS healthy_at, extract(epoch FROM d.hanging_at) * 1000 AS hanging_at
       FROM requests r
       LEFT JOIN syncs s ON s.request_id = r.id
       LEFT JOIN (SELECT request_id,
                         min(created_at) FILTER (WHERE destination_id = $2 AND status = 'success') AS healthy_at,
                         min(created_at) FILTER (WHERE destination_id = $3 AND status = 'success') AS hanging_at
                    FROM deliveries WHERE request_id > $1 GROUP BY request_id) d ON d.request_id = r.id
      WHERE r.id > $1`,
    [pushed.fromId, destinationIds.healthy, destinationIds.hanging],
  );
  const attempts = await q<{ destination_id: number; status: string; http_status: number | null; n: string }>(
    'SELECT destination_id, status::text, http_status, count(*) AS n FROM deliveries WHERE request_id > $1 GROUP BY 1, 2, 3 ORDER BY 1, 2, 3',
    [pushed.fromId],
  );
  const [pendingLeft] = await q<{ n: string }>('SELECT count(*) AS n FROM pending_deliveries WHERE request_id > $1', [pushed.fromId]);

  const accepted = rowsOf.map((r) => ({
    id: r.id,
    at: Number(r.at),
    synced: r.sync_status === 'success' ? Number(r.synced) : null,
    syncStatus: r.sync_status ?? 'no status',
    healthy: r.healthy_at === null ? null : Number(r.healthy_at),
    hanging: r.hanging_at === null ? null : Number(r.hanging_at),
  }));
  const first = minOf(accepted.map((r) => r.at));
  /** Count, rate from the first request to the last of `times`, and delays from each request. */
  const measure = (pick: (r: (typeof accepted)[number]) => number | null) => {
    const delays: number[] = [];
    let last = first;
    for (const r of accepted) {
      const t = pick(r);
      if (t === null) continue;
      delays.push(t - r.at);
      if (t > last) last = t;
    }
    const seconds = (last - first) / 1000;
    return {
      n: delays.length,
      seconds,
      rate: delays.length / Math.max(seconds, 0.001),
      p50: pct(delays, 0.5),
      p99: pct(delays, 0.99),
      max: maxOf(delays),
    };
  };
  const received = (a: Arrivals) => (r: (typeof accepted)[number]) => a.first.get(r.id) ?? null;
  const rowsFor = {
    healthyDb: measure((r) => r.healthy),
    healthyReceived: measure(received(arrivals.healthy)),
    hangingDb: measure((r) => r.hanging),
    hangingReceived: measure(received(arrivals.hanging)),
    syncs: measure((r) => r.synced),
  };

  const p = pushed.load;
  out(
    `ingress: ${fmt(p.ok)} x 200 in ${p.seconds.toFixed(1)} s (${fmt(Math.round(p.rps))} req/s, p50 ${ms(p.p50)} ms, p99 ${ms(p.p99)} ms), non-2xx ${p.non2xx}, errors ${p.errors + p.timeouts}`,
  );
  out(
    `  by the end of the push: ${fmt(pushed.atPushEnd.healthy)} events received by healthy, ${fmt(pushed.atPushEnd.hanging)} by hanging, ${fmt(pushed.atPushEnd.synced)} syncs recorded`,
  );
  out('');
  out('from requests.created_at          events  first->last s   per second   delay p50   delay p99   delay max');
  const row = (label: string, m: ReturnType<typeof measure>) =>
    out(
      `${label.padEnd(32)} ${fmt(m.n).padStart(7)} ${m.seconds.toFixed(1).padStart(14)} ${fmt(Math.round(m.rate)).padStart(12)} ${`${ms(m.p50)} ms`.padStart(11)} ${`${ms(m.p99)} ms`.padStart(11)} ${`${ms(m.max)} ms`.padStart(11)}`,
    );
  row('healthy: received (emulator)', rowsFor.healthyReceived);
  row('healthy: attempt started (db)', rowsFor.healthyDb);
  row('hanging: received (emulator)', rowsFor.hangingReceived);
  row('hanging: attempt started (db)', rowsFor.hangingDb);
  row('CRM syncs (syncs.updated_at)', rowsFor.syncs);
  out('  (successful deliveries and syncs only; a rate counts from the first request accepted to the last of its column)');
  // When the healthy destination's delay grew: its p50/p99 per 5 s of acceptance.
  const windows = new Map<number, number[]>();
  for (const r of accepted) {
    const t = arrivals.healthy.first.get(r.id);
    if (t === undefined) continue;
    const w = Math.floor((r.at - first) / 5_000);
    const delays = windows.get(w) ?? [];
    delays.push(t - r.at);
    windows.set(w, delays);
  }
  const timeline = [...windows].sort((a, b) => a[0] - b[0]).map(([w, d]) => `${w * 5}s ${ms(pct(d, 0.5))}/${ms(pct(d, 0.99))}`);
  out(`healthy delay p50/p99 ms by 5 s of acceptance: ${timeline.join(', ')}`);
  out('');
  const name = (id: number) => (id === destinationIds.healthy ? 'healthy' : 'hanging');
  out(`delivery rows (attempts): ${attempts.map((a) => `${name(a.destination_id)} ${a.status} ${a.http_status ?? '-'} x ${fmt(Number(a.n))}`).join(', ')}`);
  out(
    `  emulators received: healthy ${fmt(arrivals.healthy.total)} (${fmt(arrivals.healthy.repeated)} repeats of an event), hanging ${fmt(arrivals.hanging.total)} (${fmt(arrivals.hanging.repeated)} repeats); pending attempts left ${fmt(Number(pendingLeft!.n))}`,
  );
  const syncStatuses = new Map<string, number>();
  for (const r of accepted) syncStatuses.set(r.syncStatus, (syncStatuses.get(r.syncStatus) ?? 0) + 1);
  out(
    `syncs: ${[...syncStatuses].map(([s, n]) => `${s} ${fmt(n)}`).join(', ')} of ${fmt(accepted.length)} requests; HubSpot emulator: ${fmt(crmCalls)} API calls (${(crmCalls / Math.max(1, accepted.length)).toFixed(2)} per event)`,
  );
  out(`cpu cores used while the load generator pushed: ${cores(usedWhilePushing ?? {})}`);
  out(`cpu cores used from the push to the last delivery: ${cores(used)}`);
  out(
    `bench process event-loop delay (it stamps the emulators' receive times): p50 ${ms(lag(loopDelay.percentile(50)))} ms, p99 ${ms(lag(loopDelay.percentile(99)))} ms, max ${ms(lag(loopDelay.max))} ms`,
  );

  // Verdicts.
  const lost = {
    notAccepted: EVENTS - p.ok + p.non2xx + p.errors + p.timeouts,
    rows: EVENTS - accepted.length,
    healthy: accepted.filter((r) => r.healthy === null).length,
    hanging: accepted.filter((r) => r.hanging === null).length,
    syncs: accepted.filter((r) => r.synced === null).length,
  };
  const lostTotal = Math.max(lost.notAccepted, lost.rows) + lost.healthy + lost.hanging + lost.syncs;
  const verdicts = {
    rate: rowsFor.healthyDb.rate >= TARGET.healthyPerSecond && rowsFor.healthyDb.n > 0,
    p99: rowsFor.healthyReceived.p99 < TARGET.healthyP99Ms && rowsFor.healthyDb.p99 < TARGET.healthyP99Ms,
    lost: lostTotal === 0 && pushed.complete,
  };
  const verdict = (ok: boolean) => (ok ? 'PASS' : 'FAIL');
  out('');
  out(
    `healthy destination: ${fmt(Math.round(rowsFor.healthyDb.rate))} successful deliveries/s (target >= ${fmt(TARGET.healthyPerSecond)}): ${verdict(verdicts.rate)}`,
  );
  out(
    `healthy destination delay p99: ${ms(rowsFor.healthyReceived.p99)} ms received, ${ms(rowsFor.healthyDb.p99)} ms attempt started, while the other hangs (target < ${fmt(TARGET.healthyP99Ms)} ms): ${verdict(verdicts.p99)}`,
  );
  out(
    `zero lost: ${fmt(lost.notAccepted)} not answered 200, ${fmt(lost.rows)} without a request row, ${fmt(lost.healthy)} without a successful delivery to healthy, ${fmt(lost.hanging)} to hanging, ${fmt(lost.syncs)} without a successful sync: ${verdict(verdicts.lost)}`,
  );
  out(`for comparison: CRM syncs ${fmt(Math.round(rowsFor.syncs.rate))}/s, hanging destination ${fmt(Math.round(rowsFor.hangingDb.rate))} deliveries/s`);

  if (PROFILE) {
    const top = await q<{ calls: string; total: number; mean: number; query: string }>(
      "SELECT calls, total_exec_time AS total, mean_exec_time AS mean, regexp_replace(query, '\\s+', ' ', 'g') AS query FROM pg_stat_statements ORDER BY total_exec_time DESC LIMIT 15",
    );
    out('');
    out('pg_stat_statements, top by total time:     calls   total ms   mean ms  statement');
    for (const t of top)
      out(`  ${''.padEnd(40)}${fmt(Number(t.calls)).padStart(9)} ${fmt(Math.round(t.total)).padStart(10)} ${ms(t.mean).padStart(9)}  ${t.query.slice(0, 140)}`);
    if (waited) {
      out('');
      out(
        `active backends by wait event, sampled every 50 ms during the push (${fmt(waited.samples)} samples): mean backends  wait event  application  statement`,
      );
      for (const [key, n] of [...waited.counts].sort((a, b) => b[1] - a[1]).slice(0, 20)) out(`  ${(n / waited.samples).toFixed(2).padStart(6)}  ${key}`);
    }
  }
  return verdicts.rate && verdicts.p99 && verdicts.lost ? 0 : 1;
}

interface PushContext {
  q: <T extends pg.QueryResultRow>(text: string, values?: unknown[]) => Promise<T[]>;
  load: Child;
  apiPort: number;
  requests: { path: string; body: string }[];
  destinationIds: { healthy: number; hanging: number };
  arrivals: { healthy: Arrivals; hanging: Arrivals };
}

/**
 * Pushes `amount` events and waits until every accepted request has a successful delivery to both
 * destinations and a sync status, or nothing moved for STALL_MS. Polled once a second, as lightly as
 * the bench can (the times themselves come from the rows and the emulators): progress is the request
 * sequence, the syncs with a status (one index range scan) and the events the emulators received; the
 * delivery rows are counted only once the emulators have every event.
 */
async function push(ctx: PushContext, amount: number, onPushed: () => void = () => {}) {
  const [before] = await ctx.q<{ id: string }>('SELECT coalesce(max(id), 0) AS id FROM requests');
  const fromId = before!.id;
  const base = { healthy: ctx.arrivals.healthy.first.size, hanging: ctx.arrivals.hanging.first.size };
  let pushed: LoadResult | undefined;
  const pushing = ask<LoadResult>(ctx.load, { port: ctx.apiPort, requests: ctx.requests, amount, idReplacement: true }).then((r) => {
    pushed = r;
    onPushed();
  });
  let accepted: number | undefined;
  let atPushEnd: { healthy: number; hanging: number; synced: number } | undefined;
  let [progress, lastChange, lastLog, complete] = ['', Date.now(), Date.now(), false];
  const collector = setInterval(() => {
    ctx.arrivals.healthy.collect();
    ctx.arrivals.hanging.collect();
  }, 100);
  try {
    for (;;) {
      await new Promise((r) => setTimeout(r, 1_000));
      // Read before the load's end is checked, so that the exact count below covers every request counted here.
      const [now] = await ctx.q<{ ids: string; synced: string }>(
        `SELECT (SELECT last_value FROM requests_id_seq) - $1 AS ids, (SELECT count(*) FROM syncs WHERE request_id > $1 AND status IS NOT NULL) AS synced`,
        [fromId],
      );
      const received = { healthy: ctx.arrivals.healthy.first.size - base.healthy, hanging: ctx.arrivals.hanging.first.size - base.hanging };
      const synced = Number(now!.synced);
      if (pushed && accepted === undefined) {
        const [count] = await ctx.q<{ n: string }>('SELECT count(*) AS n FROM requests WHERE id > $1', [fromId]);
        accepted = Number(count!.n);
        atPushEnd = { ...received, synced };
      }
      let recorded = { healthy: 0, hanging: 0 };
      if (accepted !== undefined && synced >= accepted && received.healthy >= accepted && received.hanging >= accepted) {
        const counts = await ctx.q<{ destination_id: number; n: string }>(
          "SELECT destination_id, count(DISTINCT request_id) AS n FROM deliveries WHERE request_id > $1 AND status = 'success' GROUP BY 1",
          [fromId],
        );
        const of = (id: number) => Number(counts.find((c) => c.destination_id === id)?.n ?? 0);
        recorded = { healthy: of(ctx.destinationIds.healthy), hanging: of(ctx.destinationIds.hanging) };
        if (recorded.healthy >= accepted && recorded.hanging >= accepted) {
          complete = true;
          break;
        }
      }
      const state = JSON.stringify([now!.ids, synced, received, recorded]);
      if (state !== progress) [progress, lastChange] = [state, Date.now()];
      if (Date.now() - lastLog > 5_000) {
        lastLog = Date.now();
        log(
          `  accepted ${fmt(accepted ?? Number(now!.ids))}, synced ${fmt(synced)}, received: healthy ${fmt(received.healthy)}, hanging ${fmt(received.hanging)}`,
        );
      }
      if (Date.now() - lastChange > STALL_MS) {
        log(`  nothing moved for ${STALL_MS / 1000} s: giving up`);
        break;
      }
    }
  } finally {
    clearInterval(collector);
    ctx.arrivals.healthy.collect();
    ctx.arrivals.hanging.collect();
  }
  await pushing;
  return { fromId, load: pushed!, atPushEnd: atPushEnd ?? { healthy: 0, hanging: 0, synced: 0 }, complete };
}

/** Samples pg_stat_activity's active backends (what they wait on, who, which statement) until stopped. */
function waitSampler(url: string): { stop(): Promise<{ samples: number; counts: Map<string, number> }> } {
  const client = new pg.Client({ connectionString: url });
  client.on('error', (error) => log(`wait sampler: ${error.message}`));
  const counts = new Map<string, number>();
  let [samples, running] = [0, true];
  const sampling = (async () => {
    await client.connect();
    while (running) {
      const { rows } = await client.query<{ key: string }>(
        `SELECT coalesce(wait_event_type || ':' || wait_event, 'CPU')
                -- a lock's waiter: what the first backend it waits for is doing
                || CASE WHEN wait_event_type = 'Lock' THEN coalesce(' behind ' || (SELECT coalesce(b.wait_event_type || ':' || b.wait_event, 'CPU') || ' ' || left(regexp_replace(b.query, '\\s+', ' ', 'g'), 40)
                                                               FROM pg_stat_activity b WHERE b.pid = (pg_blocking_pids(a.pid))[1]), '') ELSE '' END
                || '  ' || coalesce(nullif(application_name, ''), '-') || '  ' || left(regexp_replace(query, '\\s+', ' ', 'g'), 70) AS key
           FROM pg_stat_activity a WHERE state = 'active' AND pid <> pg_backend_pid() AND backend_type = 'client backend'`,
      );
      samples += 1;
      for (const r of rows) counts.set(r.key, (counts.get(r.key) ?? 0) + 1);
      await new Promise((r) => setTimeout(r, 50));
    }
    await client.end();
  })();
  return {
    async stop() {
      running = false;
      await sampling;
      return { samples, counts };
    },
  };
}

function fixture(codes: string[], urls: { healthy: string; hanging: string }) {
  return {
    accounts: [
      {
        ref: 'bench',
        email: 'owner@bench.example',
        connections: [
          {
            ref: 'hs',
            crm: 'HUBSPOT',
            organizationId: 'org',
            organizationDomain: 'bench.example',
            credentials: { accessToken: TOKEN },
            destinations: [
              { ref: 'healthy', url: urls.healthy, description: 'answers at once' },
              { ref: 'hanging', url: urls.hanging, description: `answers after ${HANG_MS} ms to a share of ${HANG_SHARE}` },
            ],
            sources: codes.map((code, i) => ({
              ref: `s${i}`,
              platform: 'smartlead',
              ingressCode: code,
              destinations: [
                { destination: 'healthy', eventTypes: [], isDelayed: false },
                { destination: 'hanging', eventTypes: [], isDelayed: false },
              ],
            })),
          },
        ],
      },
    ],
  };
}

switch (process.argv[2]) {
  case '--load':
    await loadRole(CONNECTIONS);
    break;
  case '--worker':
    await workerRole(childSpec<WorkerSpec>(SPEC_ENV));
    break;
  default:
    log('bench:forwarding');
    await runBench('bench:forwarding', run);
}
