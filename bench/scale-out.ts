/**
 * `npm run bench:processes`: several API and worker processes on one PostgreSQL under mixed load, next to
 * one API and one worker process under the same load in the same run.
 *
 * Each setup on a fresh throwaway embedded PostgreSQL (the previous one stopped, so that its vacuum does not run in
 * the next window, and every setup starts from the same rows), with PRODUCTION durability (fsync and
 * synchronous_commit on), one account
 * with BENCH_PORTALS HubSpot connections (one portal each, at BENCH_PER_10S requests per rolling 10 s: the
 * emulator's limit per token and the connection's `crmRateLimit`), each with two Smartlead sources (every
 * option on: company by domain, owner from the sender, follow-up task) bound to a forwarding destination of
 * its own (a destination emulator answering 200 at once), and a read key. BENCH_HISTORY requests (with their
 * syncs) of history over 60 days are generated first (`generate-history`), so the REST windows hold rows.
 *
 * For each setup of BENCH_SETUPS (`1x1,2x2`: API processes x worker processes), the processes run as production
 * runs them: `node --import tsx src/main.ts api` and `node --import tsx src/main.ts worker`, all started at
 * once against the one database. Before the window the bench waits for the machine to be quiet (other work on a
 * shared machine). After a warm-up (BENCH_WARMUP s of the same load, then the backlog drained),
 * for BENCH_DURATION s at the same time:
 * - the ingress load (a process of its own): BENCH_RATE events/s in all, paced, split evenly over the API
 *   processes, as campaigns send them (test/support/campaign.ts: five events per lead, sent, follow-up sent,
 *   opened, a reply, a category change, in waves), each portal getting an equal share;
 * - REST reads (another process): BENCH_READ_RATE GETs/s in all, paced, over the API processes in turn,
 *   `/api/v1/requests`, `/api/v1/syncs` and `/api/v1/syncs/metrics` in turn, each over the last 31 days;
 * - the workers draining the syncs to the HubSpot emulator and the deliveries to the destinations.
 * Printed per setup: ingress req/s, p50/p99 (per API process too); REST p50/p95/p99 per endpoint; syncs and
 * deliveries completed per second and the backlog when the load stops, and from acceptance to outcome
 * p50/p95/p99; CPU per process group and per process (from /proc); PostgreSQL's commits/s (pg_stat_database),
 * WAL bytes/s, client connections (most at once, active on average) and what active backends waited on
 * (pg_stat_activity sampled every 250 ms); CRM calls, 429s, the busiest 10 s per portal; then how long the
 * backlog took to drain; warnings and errors the service processes logged. Last, every figure side by side
 * with the ratio of each setup to the first.
 *
 * This file also runs as its own child processes: `--ingress` (the paced POSTs) and `--reads` (the paced GETs).
 *
 * Environment: BENCH_SETUPS (1x1,2x2), BENCH_DURATION (s, 60), BENCH_WARMUP (s, 5), BENCH_RATE (events/s, 400),
 * BENCH_READ_RATE (GETs/s, 30), BENCH_PORTALS (4), BENCH_PER_10S (100), BENCH_HISTORY (requests, 200000; 0: none),
 * BENCH_CONNECTIONS (keep-alive sockets of the ingress load, 50), BENCH_CAMPAIGN_LEADS (leads per campaign, 1000),
 * BENCH_DRAIN_S (s, 90), BENCH_QUIET_WAIT_S (s, 300: how long to wait for a machine shared with other work to be quiet
 * before each window), BENCH_STATEMENTS (1: pg_stat_statements loaded, each window's top statements printed).
 */
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import readline from 'node:readline';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { generateHistory, HISTORY_DEFAULTS } from '../src/admin/generate-history.js';
import { seedFixture } from '../src/admin/seed.js';
import { installJobSchema } from '../src/db/job-schema.js';
import { createPrisma } from '../src/db/prisma.js';
import { startDestinationEmulator, type DestinationEmulator } from '../src/emulators/destination.js';
import { startHubspotEmulator, type HubspotEmulator } from '../src/emulators/hubspot.js';
import { WORKER_APPLICATION_NAME } from '../src/worker.js';
import { campaignBodies, EVENTS_PER_LEAD } from '../test/support/campaign.js';
import { ask, type Child, cores, cpuMeter, postgresPids, startApiChild, startChild, untilLive } from './processes.js';
import { cleanups, envNumber, fmt, log, ms, out, pct, runBench, throwawayDatabase } from './support.js';

const SETUPS = (process.env.BENCH_SETUPS || '1x1,2x2').split(',').map((s) => {
  const m = /^\s*(\d+)x(\d+)\s*$/.exec(s);
  if (!m || Number(m[1]) < 1 || Number(m[2]) < 1) throw new Error('BENCH_SETUPS must be API x worker process counts, comma-separated: 1x1,2x2');
  return { apis: Number(m[1]), workers: Number(m[2]) };
});
const DURATION = envNumber('BENCH_DURATION', 60);
const WARMUP = envNumber('BENCH_WARMUP', 5);
const RATE = envNumber('BENCH_RATE', 400);
const READ_RATE = envNumber('BENCH_READ_RATE', 30);
const PORTALS = Math.round(envNumber('BENCH_PORTALS', 4));
const PER_10S = Math.round(envNumber('BENCH_PER_10S', 100));
const HISTORY = Math.round(Number(process.env.BENCH_HISTORY ?? 200_000));
if (!Number.isInteger(HISTORY) || HISTORY < 0) throw new Error('BENCH_HISTORY must be a whole number (0: no history)');
const CONNECTIONS = Math.round(envNumber('BENCH_CONNECTIONS', 50));
const CAMPAIGN_LEADS = Math.round(envNumber('BENCH_CAMPAIGN_LEADS', 1_000));
const DRAIN_MS = envNumber('BENCH_DRAIN_S', 90) * 1000;
/** Set: pg_stat_statements is loaded, and each window's top statements by execution time are printed. */
const STATEMENTS = process.env.BENCH_STATEMENTS === '1';
const QUIET_WAIT_MS = Number(process.env.BENCH_QUIET_WAIT_S ?? 300) * 1000;
const QUIET_CORES = 0.3;
const WINDOW_DAYS = 31;
const API_KEY = 'svcapi_benchProcessesReadKey0001';
const SENDER = 'rep@seller.test';
const OWNERS = [{ id: '501', email: SENDER, firstName: 'Rita', lastName: 'Rep', userId: 9001 }];
const EVERY_OPTION = { createOrUpdateCompany: true, createOrUpdateTask: true, assignContactOwner: true, crmObjectType: null };
const READ_PATHS = ['/api/v1/requests', '/api/v1/syncs', '/api/v1/syncs/metrics'];
const SELF = fileURLToPath(import.meta.url);
const token = (portal: number) => `bench-portal-${portal}`;
const ingressCode = (portal: number, source: string) => `benchProcessesP${portal}${source}`;

// ------------------------------------------------------------------------------------------------
// The load roles: each its own process, one command (JSON line) in, one result (JSON line) out.

interface IngressSpec {
  /** One port per API process: request i goes to ports[i % ports.length]. */
  ports: number[];
  /** Per portal, its sources' ingress paths. */
  portals: string[][];
  rate: number;
  seconds: number;
  connections: number;
  /** Makes this run's leads its own. */
  tag: string;
  campaignLeads: number;
}

interface Latencies {
  n: number;
  failed: number;
  p50: number;
  p95: number;
  p99: number;
  max: number;
  errors: string[];
}

interface IngressResult {
  startedAt: number;
  seconds: number;
  sent: number;
  ok: number;
  all: Latencies;
  byPort: Latencies[];
}

interface ReadsSpec {
  ports: number[];
  key: string;
  rate: number;
  seconds: number;
}

interface ReadsResult {
  seconds: number;
  all: Latencies;
  byPath: Record<string, Latencies>;
}

/** Idle keep-alive sockets are closed by the client before Node's server closes them (keepAliveTimeout, 5 s): no request races the close. */
const IDLE_SOCKET_MS = 4_000;

const sleep = (msToWait: number) => new Promise((r) => setTimeout(r, msToWait));

/** Calls `send(i)` for i = 0 .. rate x seconds - 1, request i due at i / rate s, without waiting for answers (open loop). */
async function paced(rate: number, seconds: number, send: (i: number) => Promise<void>): Promise<number> {
  const total = Math.round(rate * seconds);
  const pending = new Set<Promise<void>>();
  const t0 = performance.now();
  let i = 0;
  while (i < total) {
    const due = Math.min(total, Math.floor(((performance.now() - t0) / 1000) * rate) + 1);
    while (i < due) {
      const p: Promise<void> = send(i++).finally(() => pending.delete(p));
      pending.add(p);
    }
    await sleep(Math.max(4, t0 + (i / rate) * 1000 - performance.now()));
  }
  await Promise.all(pending);
  return total;
}

/** One HTTP request; resolves its status (0 when it failed without one) and its body's head when not 2xx. */
function httpRequest(
  agent: http.Agent,
  port: number,
  options: { method: string; path: string; body?: string; headers?: Record<string, string> },
): Promise<{ status: number; head: string }> {
  return new Promise((resolve) => {
    const headers: Record<string, string | number> = { ...options.headers };
    if (options.body !== undefined) Object.assign(headers, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(options.body) });
    const req = http.request({ host: '127.0.0.1', port, path: options.path, method: options.method, agent, headers, timeout: 60_000 }, (res) => {
      const status = res.statusCode ?? 0;
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => void (status >= 300 && chunks.push(chunk)));
      res.on('end', () => resolve({ status, head: Buffer.concat(chunks).toString('utf8').slice(0, 200) }));
      res.on('error', (error) => resolve({ status: 0, head: error.message }));
    });
    req.on('timeout', () => req.destroy(new Error('no answer in 60 s')));
    req.on('error', (error) => resolve({ status: 0, head: error.message }));
    req.end(options.body);
  });
}

class Recorder {
  private readonly times: number[] = [];
  private failed = 0;
  private readonly errors = new Map<string, number>();

  async time(call: () => Promise<{ status: number; head: string }>): Promise<void> {
    const at = performance.now();
    const { status, head } = await call();
    if (status >= 200 && status < 300) this.times.push(performance.now() - at);
    else {
      this.failed += 1;
      const key = `${status} ${head}`.slice(0, 160);
      this.errors.set(key, (this.errors.get(key) ?? 0) + 1);
    }
  }

  result(): Latencies {
    let max = 0;
    for (const t of this.times) max = Math.max(max, t);
    return {
      n: this.times.length,
      failed: this.failed,
      p50: pct(this.times, 0.5),
      p95: pct(this.times, 0.95),
      p99: pct(this.times, 0.99),
      max,
      errors: [...this.errors].map(([e, n]) => `${n} x ${e}`).slice(0, 5),
    };
  }

  static merge(recorders: Recorder[]): Recorder {
    const all = new Recorder();
    for (const r of recorders) {
      // One at a time: spreading a long run's samples into push's arguments overflows the call stack.
      for (const t of r.times) all.times.push(t);
      all.failed += r.failed;
      for (const [e, n] of r.errors) all.errors.set(e, (all.errors.get(e) ?? 0) + n);
    }
    return all;
  }
}

/** Each portal's campaigns, one after the other, each in the order a sequencer sends it. */
function* portalEvents(spec: IngressSpec, portal: number): Generator<{ path: string; body: string }> {
  const paths = spec.portals[portal]!;
  for (let c = 0; ; c += 1) {
    const bodies = campaignBodies({ leads: spec.campaignLeads, leadsPerCompany: 3, tag: `${spec.tag}p${portal}c${c}`, sender: SENDER });
    for (let k = 0; k < bodies.length; k += 1) yield { path: paths[k % paths.length]!, body: bodies[k]! };
  }
}

async function ingressRun(spec: IngressSpec): Promise<IngressResult> {
  const perPort = Math.max(1, Math.ceil(spec.connections / spec.ports.length));
  const agents = spec.ports.map(() => new http.Agent({ keepAlive: true, maxSockets: perPort, timeout: IDLE_SOCKET_MS }));
  const recorders = spec.ports.map(() => new Recorder());
  const streams = spec.portals.map((_, p) => portalEvents(spec, p));
  const startedAt = Date.now();
  const sent = await paced(spec.rate, spec.seconds, (i) => {
    const event = streams[i % streams.length]!.next().value as { path: string; body: string };
    const at = i % spec.ports.length;
    return recorders[at]!.time(() => httpRequest(agents[at]!, spec.ports[at]!, { method: 'POST', path: event.path, body: event.body }));
  });
  for (const agent of agents) agent.destroy();
  const all = Recorder.merge(recorders).result();
  return { startedAt, seconds: (Date.now() - startedAt) / 1000, sent, ok: all.n, all, byPort: recorders.map((r) => r.result()) };
}

async function readsRun(spec: ReadsSpec): Promise<ReadsResult> {
  const agents = spec.ports.map(() => new http.Agent({ keepAlive: true, maxSockets: 8, timeout: IDLE_SOCKET_MS }));
  const recorders = Object.fromEntries(READ_PATHS.map((p) => [p, new Recorder()]));
  const started = performance.now();
  await paced(spec.rate, spec.seconds, (i) => {
    const path = READ_PATHS[i % READ_PATHS.length]!;
    const at = Math.floor(i / READ_PATHS.length) % spec.ports.length;
    const to = new Date();
    const from = new Date(to.getTime() - WINDOW_DAYS * 86_400_000);
    const query = `from=${encodeURIComponent(from.toISOString())}&to=${encodeURIComponent(to.toISOString())}`;
    return recorders[path]!.time(() =>
      httpRequest(agents[at]!, spec.ports[at]!, { method: 'GET', path: `${path}?${query}`, headers: { authorization: `Bearer ${spec.key}` } }),
    );
  });
  for (const agent of agents) agent.destroy();
  return {
    seconds: (performance.now() - started) / 1000,
    all: Recorder.merge(Object.values(recorders)).result(),
    byPath: Object.fromEntries(Object.entries(recorders).map(([p, r]) => [p, r.result()])),
  };
}

async function serve<S, R>(run: (spec: S) => Promise<R>): Promise<void> {
  for await (const line of readline.createInterface({ input: process.stdin })) process.stdout.write(`${JSON.stringify(await run(JSON.parse(line) as S))}\n`);
}

// ------------------------------------------------------------------------------------------------
// The bench.

type Q = <T extends pg.QueryResultRow>(text: string, values?: unknown[]) => Promise<T[]>;

interface Rig {
  q: Q;
  dbUrl: string;
  encryptionKey: Buffer;
  postmaster: number;
  hubspot: HubspotEmulator;
  destinations: DestinationEmulator[];
  ingress: Child;
  reads: Child;
}

/** What a service process logged at warn or above (pino's JSON lines: level 40 and 50+), and on stderr. */
class LogCount {
  warn = 0;
  error = 0;
  stderr = 0;
  readonly samples: string[] = [];

  watch(child: Child): void {
    readline.createInterface({ input: child.proc.stdout! }).on('line', (line) => {
      const level = /"level":(\d+)/.exec(line)?.[1];
      if (level === undefined || Number(level) < 40) return;
      if (Number(level) >= 50) this.error += 1;
      else this.warn += 1;
      if (this.samples.length < 8) this.samples.push(`[${child.name}] ${/"msg":"([^"]*)"/.exec(line)?.[1] ?? line.slice(0, 200)}`);
    });
    child.proc.stderr!.on('data', (chunk: Buffer) => {
      this.stderr += chunk.toString().split('\n').filter(Boolean).length;
      if (this.samples.length < 8) this.samples.push(`[${child.name} stderr] ${chunk.toString().slice(0, 200)}`);
    });
  }
}

interface Delays {
  n: number;
  p50: number;
  p95: number;
  p99: number;
}

interface SetupResult {
  label: string;
  ingress: IngressResult;
  reads: ReadsResult;
  window: number;
  accepted: number;
  synced: number;
  forwarded: number;
  waitingSyncs: number;
  waitingDeliveries: number;
  statuses: string;
  syncDelay: Delays;
  forwardDelay: Delays;
  cpu: Record<string, number>;
  perProcess: Record<string, number>;
  pg: {
    commits: number;
    rollbacks: number;
    deadlocks: number;
    walBytes: number;
    maxClients: number;
    maxWorkerClients: number;
    meanActive: number;
    waits: [string, number][];
  };
  crm: { calls: number; refused: number; busiest: number[] };
  drain: { ms: number; done: boolean; syncsLeft: number; deliveriesLeft: number };
  logs: LogCount;
  /** The machine's busy cores just before the window, with the service processes idle: other work sharing it. */
  quiet: number;
  /** With BENCH_STATEMENTS=1: the window's top statements by execution time. */
  statements: { calls: string; total: number; share: number; mean: number; query: string }[];
}

/**
 * A fresh database for one setup, as every setup gets the same: migrated, seeded, its history generated; the
 * emulators. `close()` stops it all (PostgreSQL too: an idle cluster of a finished setup would still vacuum
 * during the next one's window).
 */
async function prepare(ingress: Child, reads: Child): Promise<Rig & { history: string; inWindow: string; settings: string; close(): Promise<void> }> {
  const db = await throwawayDatabase({ max_connections: '200', ...(STATEMENTS ? { shared_preload_libraries: 'pg_stat_statements' } : {}) });
  const encryptionKey = randomBytes(32);
  await installJobSchema(db.url);
  const hubspot = await startHubspotEmulator({ accessToken: token(0), requestsPer10s: PER_10S, owners: OWNERS });
  for (let p = 1; p < PORTALS; p += 1) hubspot.accessTokens.add(token(p));
  const destinations: DestinationEmulator[] = [];
  for (let p = 0; p < PORTALS; p += 1) destinations.push(await startDestinationEmulator());
  const prisma = createPrisma(db.url);
  const pool = new pg.Pool({ connectionString: db.url, max: 3 });
  let closing: Promise<void> | undefined;
  const close = () =>
    (closing ??= (async () => {
      await Promise.all([pool.end(), prisma.$disconnect(), hubspot.close(), ...destinations.map((d) => d.close())]);
      await db.stop();
    })());
  cleanups.push(close);

  const seeded = await seedFixture(prisma, fixture(destinations.map((d) => d.url)), encryptionKey);
  const accountId = seeded.accounts.bench!;
  const q: Q = async <T extends pg.QueryResultRow>(text: string, values: unknown[] = []) => (await pool.query<T>(text, values)).rows;
  if (STATEMENTS) await q('CREATE EXTENSION pg_stat_statements');
  const postmaster = Number(readFileSync(`${db.clusterDir}/postmaster.pid`, 'utf8').split('\n')[0]);
  let history = 'none';
  if (HISTORY > 0) {
    log(`generating ${fmt(HISTORY)} requests of history`);
    const summary = await generateHistory(db.url, {
      ...HISTORY_DEFAULTS,
      accountIds: [accountId],
      requests: HISTORY,
      deliveries: Math.round(HISTORY / 10),
      jobs: 2,
      seed: 0.31,
      progress: () => {},
    });
    history = `${fmt(summary.inserted.requests)} requests, ${fmt(summary.inserted.syncs)} syncs, ${fmt(summary.inserted.deliveries)} deliveries over ${HISTORY_DEFAULTS.days} days (generate-history, ${(summary.elapsedMs.total / 1000).toFixed(1)} s)`;
  }
  const [inWindow] = await q<{ requests: string; syncs: string }>(
    `SELECT (SELECT count(*) FROM requests WHERE account_id = $1 AND created_at >= now() - interval '${WINDOW_DAYS} days') AS requests,
            (SELECT count(*) FROM syncs WHERE account_id = $1 AND created_at >= now() - interval '${WINDOW_DAYS} days') AS syncs`,
    [accountId],
  );
  const settings = await q<{ name: string; setting: string; unit: string | null }>(
    "SELECT name, setting, unit FROM pg_settings WHERE name IN ('server_version', 'fsync', 'synchronous_commit', 'shared_buffers', 'max_connections', 'autovacuum', 'max_wal_size') ORDER BY name",
  );
  return {
    q,
    dbUrl: db.url,
    encryptionKey,
    postmaster,
    hubspot,
    destinations,
    ingress,
    reads,
    history,
    inWindow: `${fmt(Number(inWindow!.requests))} requests, ${fmt(Number(inWindow!.syncs))} syncs`,
    settings: settings.map((s) => `${s.name}=${s.setting}${s.unit && s.unit !== 'ms' && s.unit !== 's' ? ` ${s.unit}` : ''}`).join(', '),
    close,
  };
}

async function run(): Promise<number> {
  const ingress = startChild('ingress', [SELF, '--ingress'], {}, { echo: false });
  const reads = startChild('reads', [SELF, '--reads'], {}, { echo: false });
  out(
    `bench:processes  (${os.cpus().length} CPUs, Node ${process.version}, load average ${os
      .loadavg()
      .map((l) => l.toFixed(2))
      .join(' ')} at start)`,
  );
  out('each setup on a fresh throwaway embedded PostgreSQL (the same seed and history; the previous one stopped), production durability');
  out(`  (fsync on, synchronous_commit on), one database for every process of the setup; one account: ${PORTALS} HubSpot connections (a portal each,`);
  out(`  ${PER_10S} requests per rolling 10 s: the emulator's limit per token and the connection's crmRateLimit), two Smartlead sources each (company`);
  out(
    '  by domain, owner from the sender, follow-up task), each bound to a destination of its connection (a destination emulator each, answering 200 at once)',
  );
  out(
    `load, for ${DURATION} s per setup after a ${WARMUP} s warm-up and a drained backlog: ${fmt(RATE)} ingress events/s (campaigns of ${fmt(CAMPAIGN_LEADS)} leads x ${EVENTS_PER_LEAD} events,`,
  );
  out(
    `  in waves, an equal share per portal; paced, open loop, ${CONNECTIONS} keep-alive sockets over the API processes) and ${READ_RATE} REST GETs/s (${READ_PATHS.join(', ')}`,
  );
  out(`  in turn, ${WINDOW_DAYS}-day window, the API processes in turn); each load generator in a process of its own`);
  out('service processes: `node --import tsx src/main.ts api` and `node --import tsx src/main.ts worker` (WORKER_CONCURRENCY and the rest: defaults)');

  const results: SetupResult[] = [];
  for (const [n, setup] of SETUPS.entries()) {
    const rig = await prepare(ingress, reads);
    if (n === 0) {
      out(`PostgreSQL: ${rig.settings}`);
      out(`history: ${rig.history}; in the REST window: ${rig.inWindow}`);
    }
    results.push(await runSetup(rig, setup));
    await rig.close();
  }
  compare(results);
  const failed = results.some((r) => r.ingress.all.failed > 0 || r.reads.all.failed > 0);
  if (failed) out('some requests were not answered 2xx (above): exit status 1');
  return failed ? 1 : 0;
}

async function runSetup(rig: Rig, setup: { apis: number; workers: number }): Promise<SetupResult> {
  const { q } = rig;
  const label = `${setup.apis} api + ${setup.workers} worker`;
  const tag = `s${setup.apis}x${setup.workers}`;
  out('');
  out(`== ${label} process(es) ==`);
  log(`${label}: starting the processes`);
  const logs = new LogCount();
  const hex = rig.encryptionKey.toString('hex');
  const [workersBefore] = await q<{ n: string }>('SELECT count(*) AS n FROM pg_stat_activity WHERE application_name = $1', [WORKER_APPLICATION_NAME]);
  const workers = Array.from({ length: setup.workers }, (_, i) =>
    startChild(`worker${i + 1}`, ['src/main.ts', 'worker'], {
      DATABASE_URL: rig.dbUrl,
      ENCRYPTION_KEY: hex,
      LOG_LEVEL: 'warn',
      HUBSPOT_BASE_URL: rig.hubspot.url,
      HUBSPOT_REQUESTS_PER_10S: String(PER_10S),
      OUTBOUND_ALLOW_PRIVATE: 'true',
    }),
  );
  const apis = await Promise.all(
    Array.from({ length: setup.apis }, (_, i) =>
      startApiChild(rig.dbUrl, rig.encryptionKey, {
        name: `api${i + 1}`,
        // The limiters run on every request (their cost is part of it), with limits this load never reaches.
        env: { RATE_LIMIT_PER_IP: '1000000000', RATE_LIMIT_PER_ACCOUNT: '1000000000' },
      }),
    ),
  );
  for (const c of [...workers, ...apis.map((a) => a.api)]) logs.watch(c);
  for (const { api, port } of apis) await untilLive(port, api);
  await untilWorkersListen(q, Number(workersBefore!.n), setup.workers, workers);
  const ports = apis.map((a) => a.port);
  const portals = Array.from({ length: PORTALS }, (_, p) => ['A', 'B'].map((s) => `/webhooks/${ingressCode(p, s)}`));
  const load = (seconds: number, runTag: string) => ({
    ingress: { ports, portals, rate: RATE, seconds, connections: CONNECTIONS, tag: runTag, campaignLeads: CAMPAIGN_LEADS } satisfies IngressSpec,
    reads: { ports, key: API_KEY, rate: READ_RATE, seconds } satisfies ReadsSpec,
  });

  // Warm-up: the same load for WARMUP s (V8 settles, connections open), then the backlog drained.
  log(`${label}: warm-up, ${WARMUP} s`);
  const warm = load(WARMUP, `w${tag}`);
  await Promise.all([ask<IngressResult>(rig.ingress, warm.ingress), ask<ReadsResult>(rig.reads, warm.reads)]);
  await untilDrained(q, DRAIN_MS);
  await q('CHECKPOINT');
  const quiet = await untilQuiet(label);

  // The window.
  const [before] = await q<{ id: string; commits: string; rollbacks: string; deadlocks: string; lsn: string }>(
    `SELECT (SELECT coalesce(max(id), 0) FROM requests) AS id, xact_commit AS commits, xact_rollback AS rollbacks, deadlocks, pg_current_wal_lsn()::text AS lsn
       FROM pg_stat_database WHERE datname = current_database()`,
  );
  const crmFrom = rig.hubspot.requests.length;
  const cpuOfPostgres = postgresMeter(rig.postmaster);
  const cpuOfOurs = cpuMeter({
    api: () => apis.map((a) => a.api.proc.pid!),
    worker: () => workers.map((w) => w.proc.pid!),
    load: () => [rig.ingress.proc.pid!, rig.reads.proc.pid!],
    'bench+emulators': () => [process.pid],
  });
  const cpu = (): Record<string, number> => {
    const used = cpuOfOurs();
    const postgres = cpuOfPostgres();
    // cpuMeter left PostgreSQL out: its share comes out of `others`.
    const { api, worker, load, machine, steal, others } = used;
    return {
      api: api!,
      worker: worker!,
      postgres,
      load: load!,
      'bench+emulators': used['bench+emulators']!,
      machine: machine!,
      steal: steal!,
      others: Math.max(0, others! - postgres),
    };
  };
  const cpuEach = cpuMeter(Object.fromEntries([...apis.map((a) => a.api), ...workers].map((c) => [c.name, () => [c.proc.pid!]])));
  if (STATEMENTS) await q('SELECT pg_stat_statements_reset()');
  const sampler = activitySampler(rig.dbUrl);
  const progress = progressLog(q, before!.id);
  log(`${label}: ${DURATION} s of mixed load`);
  const spec = load(DURATION, tag);
  const [ingressResult, readsResult] = await Promise.all([ask<IngressResult>(rig.ingress, spec.ingress), ask<ReadsResult>(rig.reads, spec.reads)]);
  const used = cpu();
  const usedEach = cpuEach();
  const windowEnd = Date.now();
  const windowSeconds = (windowEnd - ingressResult.startedAt) / 1000;
  const [at] = await q<{
    accepted: string;
    synced: string;
    forwarded: string;
    waiting_syncs: string;
    waiting_deliveries: string;
    commits: string;
    rollbacks: string;
    deadlocks: string;
    wal: string;
  }>(
    `SELECT (SELECT count(*) FROM requests WHERE id > $1) AS accepted,
            (SELECT count(*) FROM syncs WHERE request_id > $1 AND status IS NOT NULL) AS synced,
            (SELECT count(DISTINCT request_id) FROM deliveries WHERE request_id > $1 AND status = 'success') AS forwarded,
            (SELECT count(*) FROM pending_syncs) AS waiting_syncs,
            (SELECT count(*) FROM pending_deliveries) AS waiting_deliveries,
            d.xact_commit - $2 AS commits, d.xact_rollback - $3 AS rollbacks, d.deadlocks - $4 AS deadlocks,
            pg_wal_lsn_diff(pg_current_wal_lsn(), $5::pg_lsn) AS wal
       FROM pg_stat_database d WHERE d.datname = current_database()`,
    [before!.id, before!.commits, before!.rollbacks, before!.deadlocks, before!.lsn],
  );
  const activity = await sampler.stop();
  const statements = STATEMENTS
    ? await q<{ calls: string; total: number; share: number; mean: number; query: string }>(
        `SELECT calls, total_exec_time AS total, total_exec_time / sum(total_exec_time) OVER () AS share, mean_exec_time AS mean,
                left(regexp_replace(query, '\\s+', ' ', 'g'), 120) AS query
           FROM pg_stat_statements ORDER BY total_exec_time DESC LIMIT 12`,
      )
    : [];
  progress.stop();
  const crmCalls = rig.hubspot.requests.slice(crmFrom);
  const crm = {
    calls: crmCalls.length,
    refused: crmCalls.filter((c) => c.status === 429).length,
    busiest: Array.from({ length: PORTALS }, (_, p) => busiestTenSeconds(crmCalls, token(p))),
  };

  // Drained: how long the backlog left by the window takes.
  log(`${label}: draining the backlog`);
  const drainStarted = Date.now();
  const left = await untilDrained(q, DRAIN_MS);
  const drain = { ms: Date.now() - drainStarted, done: left.syncs === 0 && left.deliveries === 0, syncsLeft: left.syncs, deliveriesLeft: left.deliveries };

  const delays = async (sqlText: string): Promise<Delays> => {
    const [d] = await q<{ n: string; p50: number | null; p95: number | null; p99: number | null }>(sqlText, [before!.id, windowEnd]);
    return { n: Number(d!.n), p50: d!.p50 ?? Number.NaN, p95: d!.p95 ?? Number.NaN, p99: d!.p99 ?? Number.NaN };
  };
  // Of the requests accepted in the window: acceptance to the sync's outcome, and to the first successful delivery (the drain's included).
  const syncDelay = await delays(
    `SELECT count(*) AS n, ${PERCENTILES('ms')} FROM (
       SELECT extract(epoch FROM s.updated_at - r.created_at) * 1000 AS ms FROM requests r JOIN syncs s ON s.request_id = r.id AND s.status IS NOT NULL
        WHERE r.id > $1 AND r.created_at <= to_timestamp($2 / 1000.0)) x`,
  );
  const forwardDelay = await delays(
    `SELECT count(*) AS n, ${PERCENTILES('ms')} FROM (
       SELECT extract(epoch FROM min(d.created_at) - r.created_at) * 1000 AS ms FROM requests r JOIN deliveries d ON d.request_id = r.id AND d.status = 'success'
        WHERE r.id > $1 AND r.created_at <= to_timestamp($2 / 1000.0) GROUP BY r.id, r.created_at) x`,
  );
  const statuses = await q<{ status: string; n: string }>(
    "SELECT coalesce(status::text, 'none yet') AS status, count(*) AS n FROM syncs WHERE request_id > $1 GROUP BY 1 ORDER BY 1",
    [before!.id],
  );
  await Promise.all([...apis.map((a) => a.api), ...workers].map((c) => c.stop()));

  const result: SetupResult = {
    label,
    ingress: ingressResult,
    reads: readsResult,
    window: windowSeconds,
    accepted: Number(at!.accepted),
    synced: Number(at!.synced),
    forwarded: Number(at!.forwarded),
    waitingSyncs: Number(at!.waiting_syncs),
    waitingDeliveries: Number(at!.waiting_deliveries),
    statuses: statuses.map((s) => `${s.status} ${fmt(Number(s.n))}`).join(', '),
    syncDelay,
    forwardDelay,
    cpu: used,
    perProcess: usedEach,
    pg: {
      commits: Number(at!.commits),
      rollbacks: Number(at!.rollbacks),
      deadlocks: Number(at!.deadlocks),
      walBytes: Number(at!.wal),
      ...activity,
    },
    crm,
    drain,
    logs,
    quiet,
    statements,
  };
  report(result);
  return result;
}

const PERCENTILES = (column: string) =>
  `percentile_cont(0.5) WITHIN GROUP (ORDER BY ${column}) AS p50, percentile_cont(0.95) WITHIN GROUP (ORDER BY ${column}) AS p95, percentile_cont(0.99) WITHIN GROUP (ORDER BY ${column}) AS p99`;

function report(r: SetupResult): void {
  const i = r.ingress;
  const lat = (l: Latencies, p95 = false) => `p50 ${ms(l.p50)} ms${p95 ? `, p95 ${ms(l.p95)} ms` : ''}, p99 ${ms(l.p99)} ms, max ${ms(l.max)} ms`;
  out(
    `ingress: ${fmt(i.sent)} POSTs in ${i.seconds.toFixed(1)} s, ${fmt(i.ok)} x 2xx = ${fmt(Math.round(i.ok / i.seconds))} req/s, ${lat(i.all)}; not 2xx ${fmt(i.all.failed)}`,
  );
  i.byPort.forEach((p, k) => out(`  api${k + 1}: ${fmt(p.n)} x 2xx, ${lat(p)}${p.failed ? `, not 2xx ${fmt(p.failed)}` : ''}`));
  for (const e of i.all.errors) out(`  not 2xx: ${e}`);
  out(`REST reads: ${fmt(r.reads.all.n)} x 200 in ${r.reads.seconds.toFixed(1)} s, ${lat(r.reads.all, true)}; not 200 ${fmt(r.reads.all.failed)}`);
  for (const [path, l] of Object.entries(r.reads.byPath)) out(`  ${path.padEnd(22)} ${fmt(l.n).padStart(6)} x 200, ${lat(l, true)}`);
  for (const e of r.reads.all.errors) out(`  not 200: ${e}`);
  out(
    `when the load stopped (${r.window.toFixed(1)} s): ${fmt(r.accepted)} requests accepted, ${fmt(r.synced)} synced (${fmt(Math.round(r.synced / r.window))}/s), ${fmt(r.forwarded)} forwarded (${fmt(Math.round(r.forwarded / r.window))}/s); backlog: ${fmt(r.waitingSyncs)} syncs and ${fmt(r.waitingDeliveries)} deliveries waiting`,
  );
  out(
    `  acceptance to sync outcome p50/p95/p99: ${ms(r.syncDelay.p50)} / ${ms(r.syncDelay.p95)} / ${ms(r.syncDelay.p99)} ms; to delivery: ${ms(r.forwardDelay.p50)} / ${ms(r.forwardDelay.p95)} / ${ms(r.forwardDelay.p99)} ms (the drain's included)`,
  );
  out(
    `  then drained in ${(r.drain.ms / 1000).toFixed(1)} s${r.drain.done ? '' : ` (gave up: ${fmt(r.drain.syncsLeft)} syncs and ${fmt(r.drain.deliveriesLeft)} deliveries still waiting)`}; sync outcomes: ${r.statuses}`,
  );
  out(`cpu cores used, by group: ${cores(r.cpu)} (busy before the window, ours idle: ${r.quiet.toFixed(2)})`);
  out(`  by process: ${cores(r.perProcess)}`);
  out(
    `PostgreSQL: ${fmt(Math.round(r.pg.commits / r.window))} commits/s (${(r.pg.commits / Math.max(1, r.accepted)).toFixed(2)} per request), ${fmt(r.pg.rollbacks)} rollbacks, ${fmt(r.pg.deadlocks)} deadlocks, WAL ${(r.pg.walBytes / r.window / 1e6).toFixed(1)} MB/s`,
  );
  out(
    `  client connections: at most ${r.pg.maxClients} (of them worker pools' ${r.pg.maxWorkerClients}), active on average ${r.pg.meanActive.toFixed(1)}; active backends waiting on: ${r.pg.waits.map(([w, s]) => `${w} ${(100 * s).toFixed(0)} %`).join(', ')}`,
  );
  out(
    `HubSpot: ${fmt(r.crm.calls)} calls (${(r.crm.calls / Math.max(1, r.synced)).toFixed(3)} per sync), ${fmt(r.crm.refused)} answered 429; busiest 10 s per portal (outside searches): ${r.crm.busiest.join(', ')} (limit ${PER_10S})`,
  );
  if (r.statements.length > 0) {
    out('  pg_stat_statements, the top statements by execution time:   calls   total ms  share  mean ms  statement');
    for (const t of r.statements)
      out(
        `  ${''.padEnd(58)}${fmt(Number(t.calls)).padStart(8)} ${fmt(Math.round(t.total)).padStart(10)} ${`${(100 * t.share).toFixed(0)} %`.padStart(6)} ${ms(t.mean).padStart(8)}  ${t.query}`,
      );
  }
  out(`service logs: ${r.logs.warn} warnings, ${r.logs.error} errors, ${r.logs.stderr} stderr lines${r.logs.samples.length ? ':' : ''}`);
  for (const s of r.logs.samples) out(`  ${s.trim()}`);
}

/** Every figure side by side, with each setup's ratio to the first. */
function compare(results: SetupResult[]): void {
  if (results.length < 2) return;
  const base = results[0]!;
  const rows: [string, (r: SetupResult) => number, (v: number) => string][] = [
    ['ingress req/s (2xx)', (r) => r.ingress.ok / r.ingress.seconds, (v) => fmt(Math.round(v))],
    ['ingress p50 ms', (r) => r.ingress.all.p50, ms],
    ['ingress p99 ms', (r) => r.ingress.all.p99, ms],
    ...READ_PATHS.flatMap((path): [string, (r: SetupResult) => number, (v: number) => string][] => [
      [`GET ${path.replace('/api/v1', '')} p50 ms`, (r) => r.reads.byPath[path]!.p50, ms],
      [`GET ${path.replace('/api/v1', '')} p95 ms`, (r) => r.reads.byPath[path]!.p95, ms],
      [`GET ${path.replace('/api/v1', '')} p99 ms`, (r) => r.reads.byPath[path]!.p99, ms],
    ]),
    ['syncs completed/s', (r) => r.synced / r.window, (v) => fmt(Math.round(v))],
    ['deliveries completed/s', (r) => r.forwarded / r.window, (v) => fmt(Math.round(v))],
    ['syncs waiting at the end', (r) => r.waitingSyncs, fmt],
    ['deliveries waiting at the end', (r) => r.waitingDeliveries, fmt],
    ['acceptance to sync p50 ms', (r) => r.syncDelay.p50, ms],
    ['acceptance to sync p95 ms', (r) => r.syncDelay.p95, ms],
    ['acceptance to delivery p95 ms', (r) => r.forwardDelay.p95, ms],
    ['cpu api (cores)', (r) => r.cpu.api!, (v) => v.toFixed(2)],
    ['cpu worker (cores)', (r) => r.cpu.worker!, (v) => v.toFixed(2)],
    ['cpu postgres (cores)', (r) => r.cpu.postgres!, (v) => v.toFixed(2)],
    ['cpu load generators (cores)', (r) => r.cpu.load!, (v) => v.toFixed(2)],
    ['cpu bench + emulators (cores)', (r) => r.cpu['bench+emulators']!, (v) => v.toFixed(2)],
    ['cpu machine (cores)', (r) => r.cpu.machine!, (v) => v.toFixed(2)],
    ['cpu others, not this run (cores)', (r) => r.cpu.others!, (v) => v.toFixed(2)],
    ['PostgreSQL commits/s', (r) => r.pg.commits / r.window, (v) => fmt(Math.round(v))],
    ['PostgreSQL WAL MB/s', (r) => r.pg.walBytes / r.window / 1e6, (v) => v.toFixed(1)],
    ['client connections, most', (r) => r.pg.maxClients, fmt],
    ['active backends, mean', (r) => r.pg.meanActive, (v) => v.toFixed(1)],
    ['HubSpot calls per sync', (r) => r.crm.calls / Math.max(1, r.synced), (v) => v.toFixed(3)],
    ['HubSpot 429s', (r) => r.crm.refused, fmt],
  ];
  out('');
  out(`side by side (the same load; ratio = each setup / ${base.label}):`);
  const width = 34;
  out(
    `${''.padEnd(width)}${results.map((r) => r.label.padStart(20)).join('')}${results
      .slice(1)
      .map(() => 'ratio'.padStart(9))
      .join('')}`,
  );
  for (const [name, value, show] of rows) {
    const values = results.map(value);
    const ratios = values.slice(1).map((v) => (values[0]! === 0 ? (v === 0 ? '-' : 'inf') : `${(v / values[0]!).toFixed(2)}x`));
    out(`${name.padEnd(width)}${values.map((v) => show(v).padStart(20)).join('')}${ratios.map((x) => x.padStart(9)).join('')}`);
  }
}

function busiestTenSeconds(calls: { token: string; path: string; at: number }[], which: string): number {
  const times = calls.filter((c) => c.token === which && !c.path.endsWith('/search')).map((c) => c.at);
  let best = 0;
  for (let i = 0, j = 0; i < times.length; i += 1) {
    while (times[i]! - times[j]! >= 10_000) j += 1;
    best = Math.max(best, i - j + 1);
  }
  return best;
}

/** Waits until graphile-worker's runners of every new worker process hold their LISTEN connections (one per lane). */
async function untilWorkersListen(q: Q, before: number, workers: number, children: Child[]): Promise<void> {
  const deadline = Date.now() + 60_000;
  for (;;) {
    const [now] = await q<{ n: string }>("SELECT count(*) AS n FROM pg_stat_activity WHERE application_name = $1 AND query ILIKE 'LISTEN%'", [
      WORKER_APPLICATION_NAME,
    ]);
    if (Number(now!.n) >= workers * 3) return;
    for (const c of children) if (c.proc.exitCode !== null) throw new Error(`${c.name} exited (${c.proc.exitCode})`);
    if (Date.now() > deadline) {
      log(`  workers: ${now!.n} LISTEN connections after 60 s (expected ${workers * 3}; ${before} worker connections before): going on`);
      return;
    }
    await sleep(250);
  }
}

/** utime + stime and cutime + cstime (children it reaped) of a process, in clock ticks (10 ms); undefined once it is gone. */
function ticksOf(pid: number): { own: number; reaped: number } | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return { own: Number(f[11]) + Number(f[12]), reaped: Number(f[13]) + Number(f[14]) };
  } catch {
    return undefined;
  }
}

/**
 * PostgreSQL's cores between the call and the returned function's call: its live processes' time, plus the
 * time of those that ended meanwhile (parallel query workers, autovacuum workers, closed backends), which the
 * postmaster reaps into its children's time (cpuMeter sees only the processes alive at its two samples).
 */
function postgresMeter(postmaster: number): () => number {
  const sample = () => ({
    at: performance.now(),
    live: new Map(postgresPids(postmaster).map((pid) => [pid, ticksOf(pid)?.own ?? 0])),
    reaped: ticksOf(postmaster)?.reaped ?? 0,
  });
  const start = sample();
  return () => {
    const end = sample();
    let ticks = end.reaped - start.reaped;
    for (const [pid, t] of end.live) ticks += t - (start.live.get(pid) ?? 0);
    // Ended meanwhile: their whole life is in `reaped`, and the part before the start was counted at the start.
    for (const [pid, t] of start.live) if (!end.live.has(pid)) ticks -= t;
    return ticks / 100 / ((end.at - start.at) / 1000);
  };
}

/**
 * Waits (up to BENCH_QUIET_WAIT_S) until the machine is quiet with the service processes idle: under
 * QUIET_CORES busy over 3 s. Other people's work on a shared machine takes cores from the run (`others`
 * in the CPU figures); this keeps it out of the window when it can. The busy cores last measured.
 */
async function untilQuiet(label: string): Promise<number> {
  const deadline = Date.now() + QUIET_WAIT_MS;
  for (;;) {
    const meter = cpuMeter({});
    await sleep(3_000);
    const busy = meter().machine!;
    if (busy < QUIET_CORES || Date.now() > deadline) {
      if (busy >= QUIET_CORES) log(`${label}: the machine is still busy (${busy.toFixed(2)} cores with ours idle): measuring anyway`);
      return busy;
    }
    log(`${label}: the machine is busy (${busy.toFixed(2)} cores with ours idle): waiting`);
  }
}

/** Waits until no sync or delivery is waiting (or `limitMs` passed); what is still waiting. */
async function untilDrained(q: Q, limitMs: number): Promise<{ syncs: number; deliveries: number }> {
  const deadline = Date.now() + limitMs;
  let lastLog = Date.now();
  for (;;) {
    const [now] = await q<{ syncs: string; deliveries: string }>(
      'SELECT (SELECT count(*) FROM pending_syncs) AS syncs, (SELECT count(*) FROM pending_deliveries) AS deliveries',
    );
    const left = { syncs: Number(now!.syncs), deliveries: Number(now!.deliveries) };
    if ((left.syncs === 0 && left.deliveries === 0) || Date.now() > deadline) return left;
    if (Date.now() - lastLog > 5_000) {
      lastLog = Date.now();
      log(`  waiting: ${fmt(left.syncs)} syncs, ${fmt(left.deliveries)} deliveries`);
    }
    await sleep(500);
  }
}

/** Logs accepted, synced and waiting every 5 s of the window. */
function progressLog(q: Q, fromId: string): { stop(): void } {
  const timer = setInterval(() => {
    void q<{ accepted: string; synced: string; waiting: string }>(
      `SELECT (SELECT count(*) FROM requests WHERE id > $1) AS accepted, (SELECT count(*) FROM syncs WHERE request_id > $1 AND status IS NOT NULL) AS synced,
              (SELECT count(*) FROM pending_syncs) AS waiting`,
      [fromId],
    ).then(
      ([n]) => log(`  accepted ${fmt(Number(n!.accepted))}, synced ${fmt(Number(n!.synced))}, syncs waiting ${fmt(Number(n!.waiting))}`),
      () => {},
    );
  }, 5_000);
  return { stop: () => clearInterval(timer) };
}

/**
 * Samples pg_stat_activity every 250 ms on a connection of its own: client backends, those of the worker
 * pools, the active ones (this one left out) and what each active one waits on (`CPU` when it waits on nothing).
 */
function activitySampler(url: string): { stop(): Promise<{ maxClients: number; maxWorkerClients: number; meanActive: number; waits: [string, number][] }> } {
  let running = true;
  const waits = new Map<string, number>();
  let [samples, maxClients, maxWorkerClients, active] = [0, 0, 0, 0];
  const sampling = (async () => {
    const client = new pg.Client({ connectionString: url, application_name: 'bench-sampler' });
    await client.connect();
    while (running) {
      const { rows } = await client.query<{ app: string; state: string | null; wait: string | null }>(
        `SELECT application_name AS app, state, wait_event_type || ':' || wait_event AS wait FROM pg_stat_activity
          WHERE backend_type = 'client backend' AND pid <> pg_backend_pid()`,
      );
      samples += 1;
      maxClients = Math.max(maxClients, rows.length);
      maxWorkerClients = Math.max(maxWorkerClients, rows.filter((r) => r.app === WORKER_APPLICATION_NAME).length);
      for (const r of rows.filter((row) => row.state === 'active')) {
        active += 1;
        const wait = r.wait ?? 'CPU';
        waits.set(wait, (waits.get(wait) ?? 0) + 1);
      }
      await sleep(250);
    }
    await client.end();
  })();
  return {
    async stop() {
      running = false;
      await sampling;
      const top = [...waits]
        .sort((a, b) => b[1] - a[1])
        .slice(0, 6)
        .map(([w, n]): [string, number] => [w, n / Math.max(1, active)]);
      return { maxClients, maxWorkerClients, meanActive: active / Math.max(1, samples), waits: top };
    },
  };
}

function fixture(destinationUrls: string[]) {
  return {
    accounts: [
      {
        ref: 'bench',
        email: 'owner@bench.example',
        apiKeys: [{ ref: 'read', name: 'bench reader', key: API_KEY, scopes: ['read'] }],
        connections: destinationUrls.map((url, p) => ({
          ref: `p${p}`,
          crm: 'HUBSPOT',
          credentials: { accessToken: token(p) },
          crmRateLimit: { requestsPer10s: PER_10S },
          destinations: [{ ref: `d${p}`, url, description: 'answers 200 at once' }],
          sources: ['A', 'B'].map((s) => ({
            ref: `p${p}${s}`,
            platform: 'smartlead',
            ingressCode: ingressCode(p, s),
            config: EVERY_OPTION,
            destinations: [{ destination: `d${p}`, eventTypes: [], isDelayed: false }],
          })),
        })),
      },
    ],
  };
}

switch (process.argv[2]) {
  case '--ingress':
    await serve(ingressRun);
    break;
  case '--reads':
    await serve(readsRun);
    break;
  default:
    log('bench:processes');
    await runBench('bench:processes', run);
}
