/**
 * `npm run bench:ingress`: what the ingress (POST /webhooks/<code>) holds, next to a bare INSERT server in
 * the same run, and how fast accepted events come out as recorded syncs with the worker and a CRM answering.
 *
 * On a throwaway embedded PostgreSQL with PRODUCTION durability (fsync and synchronous_commit on: a 200
 * from the ingress promises the request and its job are on disk, so that is what is measured):
 * (a) a bare `node:http` server (its own process, pg.Pool of BENCH_BARE_POOL) doing one INSERT INTO requests per POST;
 * (b) the ingress as production runs it: `node --import tsx src/main.ts api`, its own process, ingress ahead of Express,
 *     grouped commits (multi-row INSERT of requests and their waiting syncs + one add_jobs per batch for their
 *     connections' drains, each caller answered after the commit).
 * The load comes from a separate process (autocannon, 50 keep-alive connections, the Smartlead EMAIL_SENT
 * sample as body); a and b alternate for BENCH_ROUNDS rounds, each run after a CHECKPOINT; then one more
 * pair with fsync and synchronous_commit off (a reload, no restart), for comparison. After every (b) run:
 * rows == waiting syncs, every new request row has its waiting sync, and rows >= the 200s answered.
 * (c) BENCH_EVENTS events through the same ingress (Smartlead samples rotated over BENCH_SOURCES sources of
 * one HubSpot connection, each event's lead email made unique by the load generator) with the HubSpot
 * emulator (src/emulators, real HTTP, in this process) answering and worker processes wired as
 * `src/main.ts worker` wires one (startWorker, pool of workerPoolSize()), for each value of
 * BENCH_WORKER_CONCURRENCY: events/s from the first POST until the last sync has a status.
 * CPU per process group (from /proc) and commits per event show where the time goes. (c) runs with no CRM
 * budget (HUBSPOT_REQUESTS_PER_10S=0): it measures our own speed.
 * (d) campaigns at the CRMs' documented limits, every source option on, each lead's five events repeated as
 * sequencers send them (bench/crm-limits.ts): a HubSpot portal at 190 and one at 30 requests per 10 s (with
 * a neighbour connection's latency measured meanwhile), a Salesforce org at 3 requests in flight.
 *
 * This file also runs as its own child processes: `--load` (autocannon, commands on stdin), `--burst` (a
 * campaign's events, bench/campaign.ts), `--bare` (server a) and `--worker`.
 *
 * Environment: BENCH_CASES (which of a,b,c,d run; all), BENCH_DURATION (s per run, 15), BENCH_WARMUP (s, 3), BENCH_ROUNDS (2), BENCH_CONNECTIONS
 * (50), BENCH_EVENTS (100000), BENCH_SOURCES (10), the (d) variables of bench/crm-limits.ts, BENCH_WORKER_CONCURRENCY (comma-separated, default
 * WORKER_SETTINGS.concurrency), BENCH_WORKERS (worker processes, 1), BENCH_BARE_POOL (10), BENCH_PROFILE (a
 * folder: CPU profiles of the api and worker processes, pg_stat_statements' top statements in (c)).
 * Quick: BENCH_DURATION=5 BENCH_EVENTS=5000.
 */
import type { CrmKind } from '../src/connectors/crm/kinds.js';
import { sampleFolder } from '../src/connectors/sequencers/samples.js';
import { randomBytes } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { startHubspotEmulator, type HubspotEmulator } from '../src/emulators/hubspot.js';
import { seedFixture } from '../src/admin/seed.js';
import { installJobSchema } from '../src/db/job-schema.js';
import { createPrisma } from '../src/db/prisma.js';
import { WORKER_SETTINGS } from '../src/worker.js';
import {
  ask,
  type Child,
  childSpec,
  cores,
  cpuMeter,
  type Groups,
  type LoadResult,
  loadRole,
  postgresPids,
  startApiChild,
  startChild,
  untilLive,
  untilRecorded,
  withUniqueLead,
  workerRole,
  type WorkerSpec,
} from './processes.js';
import { burstRole } from './campaign.js';
import { crmLimitCases } from './crm-limits.js';
import { cleanups, envNumber, fmt, log, ms, out, pct, runBench, throwawayDatabase } from './support.js';

const DURATION = envNumber('BENCH_DURATION', 15);
const WARMUP = envNumber('BENCH_WARMUP', 3);
const ROUNDS = Math.round(envNumber('BENCH_ROUNDS', 2));
const CONNECTIONS = Math.round(envNumber('BENCH_CONNECTIONS', 50));
const EVENTS = Math.round(envNumber('BENCH_EVENTS', 100_000));
const CASES = new Set((process.env.BENCH_CASES || 'a,b,c,d').split(',').map((c) => c.trim()));
const SOURCES = Math.round(envNumber('BENCH_SOURCES', 10));
const WORKERS = Math.round(envNumber('BENCH_WORKERS', 1));
const CONCURRENCIES = (process.env.BENCH_WORKER_CONCURRENCY || String(WORKER_SETTINGS.concurrency)).split(',').map((v) => Number(v.trim()));
if (!CONCURRENCIES.every((c) => Number.isInteger(c) && c > 0)) throw new Error('BENCH_WORKER_CONCURRENCY must be whole numbers above 0, comma-separated');
const BARE_POOL = Math.round(envNumber('BENCH_BARE_POOL', 10));
const TARGET = { ratio: 0.8, p99: 50, eventsPerSecond: 1_000 };
const STALL_MS = 60_000;
const TOKEN = 'bench-hubspot-token';
const PAYLOADS = sampleFolder('smartlead');
const BODY = readFileSync(new URL('EMAIL_SENT.json', PAYLOADS), 'utf8');
const SELF = fileURLToPath(import.meta.url);
const SPEC_ENV = 'BENCH_INGRESS_CHILD';
/** A folder: the api and worker processes write V8 CPU profiles there, and (c) prints pg_stat_statements' top statements. */
const PROFILE = process.env.BENCH_PROFILE || undefined;

// ------------------------------------------------------------------------------------------------
// Child processes: this file with a role, or src/main.ts.

/** Where a child's CPU profile goes (with BENCH_PROFILE; the load generator's is not wanted). */
const profiled = (name: string) => (PROFILE && !(name === 'load' || name === 'bare') ? PROFILE : undefined);

const role = (name: string, spec: unknown, extra: Record<string, string> = {}, echo = true) =>
  startChild(name, [SELF, `--${name}`], { [SPEC_ENV]: JSON.stringify(spec), ...extra }, { echo, profile: profiled(name) });

/** `--bare`: server (a), one INSERT per POST on its own pool; answers as the ingress does. */
function bareRole(spec: { url: string; row: [number, number, number, string] }): void {
  const pool = new pg.Pool({ connectionString: spec.url, max: BARE_POOL });
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const insert = {
        name: 'bare_insert',
        text: 'INSERT INTO requests (account_id, source_id, connection_id, path, body) VALUES ($1, $2, $3, $4, $5) RETURNING id',
        values: [...spec.row, Buffer.concat(chunks).toString('utf8')],
      };
      pool.query<{ id: string }>(insert).then(
        ({ rows }) => reply(res, 200, { received: true, requestId: Number(rows[0]!.id) }),
        () => reply(res, 503, { statusCode: 503 }),
      );
    });
  });
  server.listen(0, '127.0.0.1', () => process.stdout.write(`listening ${(server.address() as { port: number }).port}\n`));
}

function reply(res: http.ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(text) }).end(text);
}

// ------------------------------------------------------------------------------------------------

async function run(): Promise<number> {
  const db = await throwawayDatabase({ max_connections: '200', ...(PROFILE ? { shared_preload_libraries: 'pg_stat_statements' } : {}) });
  const encryptionKey = randomBytes(32);
  await installJobSchema(db.url);
  const prisma = createPrisma(db.url);
  cleanups.push(() => prisma.$disconnect());
  const codes = Array.from({ length: SOURCES }, (_, i) => `benchIngressSource${String(i).padStart(3, '0')}`);
  const seeded = await seedFixture(prisma, fixture(codes), encryptionKey);
  const ids = { account: seeded.accounts.bench!, connection: seeded.connections.hs!, source: seeded.sources.s0! };
  const pool = new pg.Pool({ connectionString: db.url, max: 2 });
  cleanups.push(() => pool.end());
  const q = async <T extends pg.QueryResultRow>(text: string, values: unknown[] = []) => (await pool.query<T>(text, values)).rows;
  const postmaster = Number(readFileSync(`${db.clusterDir}/postmaster.pid`, 'utf8').split('\n')[0]);
  const settings = await q<{ name: string; setting: string; unit: string | null }>(
    "SELECT name, setting, unit FROM pg_settings WHERE name IN ('server_version', 'fsync', 'synchronous_commit', 'full_page_writes', 'wal_sync_method', 'shared_buffers', 'max_wal_size', 'max_connections', 'autovacuum') ORDER BY name",
  );
  const commitTimes = await serialCommits(q);
  if (PROFILE) await q('CREATE EXTENSION pg_stat_statements');

  // The servers, and the load generator, each in its own process.
  const load = role('load', {}, {}, false);
  const bare = role('bare', { url: db.url, row: [ids.account, ids.source, ids.connection, codes[0]!] });
  const barePort = Number((await bare.next(/^listening /)).split(' ')[1]);
  const { api, port: apiPort } = await startApiChild(db.url, encryptionKey, { profile: profiled('api') });
  await untilLive(apiPort, api);

  out(
    `bench:ingress  (${os.cpus().length} CPUs, Node ${process.version}, load average ${os
      .loadavg()
      .map((l) => l.toFixed(2))
      .join(' ')} at start)`,
  );
  out(`PostgreSQL: ${settings.map((s) => `${s.name}=${s.setting}${s.unit && s.unit !== 'ms' && s.unit !== 's' ? ` ${s.unit}` : ''}`).join(', ')}`);
  out('  production durability (fsync on, synchronous_commit on): every 200 answered is on disk.');
  out(
    `  one-row INSERT + COMMIT, one at a time on one connection: p50 ${ms(pct(commitTimes, 0.5))} ms, p99 ${ms(pct(commitTimes, 0.99))} ms (the disk's flush time)`,
  );
  out(
    `load: autocannon in its own process, ${CONNECTIONS} keep-alive connections to 127.0.0.1, POST of the Smartlead EMAIL_SENT sample (${Buffer.byteLength(BODY)} bytes)`,
  );
  out(`  ${DURATION} s per run after a ${WARMUP} s warm-up per server, a/b alternating for ${ROUNDS} round(s), CHECKPOINT before each run`);
  out(`(a) bare: node:http in its own process, pg.Pool(max ${BARE_POOL}), one INSERT INTO requests (account, source, connection, path, body) per POST`);
  out('(b) ingress: `node --import tsx src/main.ts api` in its own process (POST /webhooks/<code> ahead of Express; RequestAcceptor as main.ts builds it:');
  out("    grouped commits, multi-row INSERT of requests and their waiting syncs + one graphile_worker.add_jobs per batch for the connections' drains,");
  out('    each caller answered after its commit)');
  out('');

  let verdicts: boolean[] = [];
  if (CASES.has('a') || CASES.has('b')) {
    const target = { a: { port: barePort, path: `/webhooks/${codes[0]}` }, b: { port: apiPort, path: `/webhooks/${codes[0]}` } };
    for (const which of ['a', 'b'] as const)
      await ask<LoadResult>(load, { port: target[which].port, requests: [{ path: target[which].path, body: BODY }], duration: WARMUP });

    const groups = (server: Child): Groups => ({ server: () => [server.proc.pid!], load: () => [load.proc.pid!], postgres: () => postgresPids(postmaster) });
    const measure = async (which: 'a' | 'b') => {
      await q('CHECKPOINT');
      const [before] = await q<{ id: string; jobs: string }>(`SELECT (SELECT coalesce(max(id), 0) FROM requests) AS id, (${JOBS_SQL}) AS jobs`);
      const cpu = cpuMeter(groups(which === 'a' ? bare : api));
      const result = await ask<LoadResult>(load, { port: target[which].port, requests: [{ path: target[which].path, body: BODY }], duration: DURATION });
      const used = cpu();
      await new Promise((r) => setTimeout(r, 200)); // requests in flight when the load stopped
      const [after] = await q<{ rows: string; jobs: string; jobless: string }>(
        `SELECT (SELECT count(*) FROM requests WHERE id > $1) AS rows, (${JOBS_SQL}) - $2 AS jobs,
                (SELECT count(*) FROM requests r WHERE r.id > $1
                    AND NOT EXISTS (SELECT 1 FROM pending_syncs p WHERE p.request_id = r.id)) AS jobless`,
        [before!.id, before!.jobs],
      );
      return { which, result, used, rows: Number(after!.rows), jobs: Number(after!.jobs), jobless: Number(after!.jobless) };
    };
    type Run = Awaited<ReturnType<typeof measure>>;
    const header = 'run  server   req/s   p50 ms   p99 ms  non-2xx  errors   rows (waiting syncs)  cpu cores used';
    const line = (label: string, r: Run) =>
      `${label.padEnd(4)} ${r.which.padEnd(6)} ${fmt(Math.round(r.result.rps)).padStart(7)} ${ms(r.result.p50).padStart(8)} ${ms(r.result.p99).padStart(8)} ${fmt(r.result.non2xx).padStart(8)} ${fmt(r.result.errors + r.result.timeouts).padStart(7)}   ${`${fmt(r.rows)}${r.which === 'b' ? ` (${fmt(r.jobs)})` : ''}`.padEnd(20)}  ${cores(r.used)}`;

    out(header);
    const runs: Run[] = [];
    for (let round = 1; round <= ROUNDS; round += 1) {
      for (const which of round % 2 ? (['a', 'b'] as const) : (['b', 'a'] as const)) {
        log(`round ${round}: ${which}`);
        const r = await measure(which);
        runs.push(r);
        out(line(String(round), r));
      }
    }
    const mean = (which: 'a' | 'b') => runs.filter((r) => r.which === which).reduce((sum, r) => sum + r.result.rps, 0) / ROUNDS;
    const worstP99 = Math.max(...runs.filter((r) => r.which === 'b').map((r) => r.result.p99));
    const ratioBA = mean('b') / mean('a');
    const bRuns = runs.filter((r) => r.which === 'b');
    const intact = bRuns.every(
      (r) => r.rows === r.jobs && r.jobless === 0 && r.rows >= r.result.ok && r.result.non2xx + r.result.errors + r.result.timeouts === 0,
    );
    verdicts = [ratioBA >= TARGET.ratio, worstP99 < TARGET.p99, intact];
    out('');
    out(
      `mean req/s: a ${fmt(Math.round(mean('a')))}, b ${fmt(Math.round(mean('b')))}; b/a = ${ratioBA.toFixed(2)} (target >= ${TARGET.ratio}): ${verdicts[0] ? 'PASS' : 'FAIL'}`,
    );
    out(`ingress p99 (worst run): ${ms(worstP99)} ms (target < ${TARGET.p99} ms): ${verdicts[1] ? 'PASS' : 'FAIL'}`);
    out(
      `ingress zero lost: every (b) run rows == waiting syncs, no row without its waiting sync (pending_syncs), rows >= 200s answered, no non-2xx: ${verdicts[2] ? 'PASS' : 'FAIL'}`,
    );
    out(`  (rows may exceed the 200s counted by up to ${CONNECTIONS}: requests in flight when the load stopped are committed, their answers not counted)`);

    // For comparison only: the same pair with durability off (both settings reload without a restart).
    await q('ALTER SYSTEM SET fsync = off');
    await q('ALTER SYSTEM SET synchronous_commit = off');
    await q('SELECT pg_reload_conf()');
    await new Promise((r) => setTimeout(r, 500));
    out('');
    out('for comparison, fsync and synchronous_commit OFF (not what production promises):');
    const off = [await measure('a'), await measure('b')];
    for (const r of off) out(line('off', r));
    out(`  b/a = ${(off[1]!.result.rps / off[0]!.result.rps).toFixed(2)}`);
    await q('ALTER SYSTEM RESET fsync');
    await q('ALTER SYSTEM RESET synchronous_commit');
    await q('SELECT pg_reload_conf()');
  }
  await bare.stop();

  // (c) End to end.
  let ok = verdicts.every(Boolean);
  if (CASES.has('c')) {
    const hubspot = await startHubspotEmulator({ accessToken: TOKEN });
    cleanups.push(() => hubspot.close());
    const samples = readdirSync(PAYLOADS)
      .sort()
      .map((file) => readFileSync(new URL(file, PAYLOADS), 'utf8'));
    const bodies = samples.map(withUniqueLead);
    const requests = codes.flatMap((code) => bodies.map((body) => ({ path: `/webhooks/${code}`, body })));
    out('');
    out(
      `(c) end to end: ${fmt(EVENTS)} events through the ingress above (the ${samples.length} Smartlead samples over ${SOURCES} sources of one HubSpot connection,`,
    );
    out('    each event with a lead email of its own (autocannon `[<id>]` replacement): every sync writes a new contact),');
    out(`    ${CONNECTIONS} connections, as fast as the load generator goes), the HubSpot emulator answering (real HTTP, in the bench process),`);
    out(`    ${WORKERS} worker process(es) wired as \`src/main.ts worker\`; timed from the first POST to the last sync's status (syncs.updated_at)`);
    out(`graphile-worker settings: WORKER_SETTINGS = ${JSON.stringify(WORKER_SETTINGS)}; runs with concurrency ${CONCURRENCIES.join(', ')} per process`);
    const unlimited = {
      label: '(c)',
      events: EVENTS,
      hubspot,
      crmBudgets: { HUBSPOT: 0, SALESFORCE: 0, CLOSE: 0, ATTIO: 0 },
      target: TARGET.eventsPerSecond,
      requests,
    };
    for (const concurrency of CONCURRENCIES) ok = (await endToEnd(concurrency, unlimited)) && ok;
  }

  // (d) Campaigns at the CRMs' limits.
  if (CASES.has('d')) {
    const burst = role('burst', {}, {}, false);
    const rig = {
      q,
      prisma,
      encryptionKey,
      apiPort,
      api,
      postmaster,
      burst,
      async startWorkers(crmUrls: Partial<Record<CrmKind, string>>) {
        const workers = Array.from({ length: WORKERS }, () =>
          role('worker', { url: db.url, concurrency: WORKER_SETTINGS.concurrency, crmUrls }, { ENCRYPTION_KEY: encryptionKey.toString('hex') }, true),
        );
        for (const w of workers) await w.next(/^ready$/);
        return workers;
      },
    };
    ok = (await crmLimitCases(rig)) && ok;
  }
  return ok ? 0 : 1;

  async function endToEnd(
    concurrency: number,
    run: {
      label: string;
      events: number;
      hubspot: HubspotEmulator;
      crmBudgets: Record<CrmKind, number> | undefined;
      target: number;
      requests: { path: string; body: string }[];
    },
  ): Promise<boolean> {
    const { hubspot, events: EVENTS } = run;
    // The syncs (a) and (b) accepted with no worker running are not this run's: dropped, with their jobs.
    await q('DELETE FROM pending_syncs');
    await q('DELETE FROM graphile_worker._private_jobs');
    await q('VACUUM ANALYZE graphile_worker._private_jobs');
    await q('CHECKPOINT');
    const workers = Array.from({ length: WORKERS }, () =>
      role(
        'worker',
        { url: db.url, concurrency, crmUrls: { HUBSPOT: hubspot.url }, ...(run.crmBudgets ? { crmBudgets: run.crmBudgets } : {}) },
        { ENCRYPTION_KEY: encryptionKey.toString('hex') },
        true,
      ),
    );
    for (const w of workers) await w.next(/^ready$/);
    const [before] = await q<{ id: string; commits: string; updates: string; hot: string }>(
      `SELECT (SELECT coalesce(max(id), 0) FROM requests) AS id, ${COMMITS_SQL} AS commits, ${SYNC_UPDATES_SQL}`,
    );
    if (PROFILE) await q('SELECT pg_stat_statements_reset()');
    const crmBefore = { requests: hubspot.requests.length, activities: hubspot.emails.size + hubspot.notes.size };
    const cpu = cpuMeter({
      ingress: () => [api.proc.pid!],
      load: () => [load.proc.pid!],
      worker: () => workers.map((w) => w.proc.pid!),
      'bench+emulator': () => [process.pid],
      postgres: () => postgresPids(postmaster),
    });
    log(`${run.label} concurrency ${concurrency}: pushing ${fmt(EVENTS)} events`);
    let pushed: LoadResult | undefined;
    const pushing = ask<LoadResult>(load, { port: apiPort, requests: run.requests, amount: EVENTS, idReplacement: true }).then((r) => (pushed = r));
    let doneAtPushEnd: number | undefined;
    await untilRecorded({
      // Two index scans, a few ms.
      counts: async () => {
        const [now] = await q<{ accepted: string; done: string }>(
          'SELECT (SELECT count(*) FROM requests WHERE id > $1) AS accepted, (SELECT count(*) FROM syncs WHERE request_id > $1 AND status IS NOT NULL) AS done',
          [before!.id],
        );
        return { accepted: Number(now!.accepted), recorded: Number(now!.done) };
      },
      pushed: () => pushed !== undefined,
      onPoll: (recorded) => {
        if (pushed && doneAtPushEnd === undefined) doneAtPushEnd = recorded;
      },
      stallMs: STALL_MS,
      stalled: async () => {
        const [held] = await q<{ locked: string; due: string; waiting: string }>(
          `SELECT (SELECT count(*) FROM graphile_worker._private_jobs WHERE locked_at IS NOT NULL) AS locked,
                  (SELECT count(*) FROM graphile_worker._private_jobs WHERE locked_at IS NULL AND run_at <= now() AND attempts < max_attempts) AS due,
                  (SELECT count(*) FROM pending_syncs) AS waiting`,
        );
        return `jobs locked ${held!.locked}, due and free ${held!.due}, syncs waiting ${held!.waiting}`;
      },
    });
    await pushing;
    const used = cpu();
    await new Promise((r) => setTimeout(r, 1_000)); // statistics reach pg_stat_database within a second
    const [after] = await q<{ accepted: string; commits: string; first: string | null; last: string | null; updates: string; hot: string }>(
      `SELECT count(*) AS accepted, ${COMMITS_SQL} - $2 AS commits, ${SYNC_UPDATES_SQL}, extract(epoch FROM min(r.created_at)) * 1000 AS first,
              (SELECT extract(epoch FROM max(updated_at)) * 1000 FROM syncs WHERE request_id > $1) AS last
         FROM requests r WHERE r.id > $1`,
      [before!.id, before!.commits],
    );
    const statuses = await q<{ status: string; n: string }>(
      "SELECT coalesce(s.status::text, CASE WHEN s.id IS NULL THEN 'no sync row' ELSE 'no status' END) AS status, count(*) AS n FROM requests r LEFT JOIN syncs s ON s.request_id = r.id WHERE r.id > $1 GROUP BY 1 ORDER BY 1",
      [before!.id],
    );
    // What is left without an outcome, and why (their outbox rows: when they are due, their waits and failures on our side).
    const stuck = await q<{ n: string; attempts: number | null; due_at: string | null; waits: number | null; internal_failures: number | null }>(
      `SELECT count(*) AS n, s.attempts, min(p.due_at)::text AS due_at, p.waits, p.internal_failures
         FROM requests r LEFT JOIN syncs s ON s.request_id = r.id
         LEFT JOIN pending_syncs p ON p.request_id = r.id
        WHERE r.id > $1 AND (s.id IS NULL OR s.status IS NULL)
        GROUP BY 2, 4, 5 ORDER BY 1 DESC LIMIT 5`,
      [before!.id],
    );
    await Promise.all(workers.map((w) => w.stop()));
    const p = pushed!;
    const success = Number(statuses.find((s) => s.status === 'success')?.n ?? 0);
    const seconds = (Number(after!.last) - p.startedAt) / 1000;
    const rate = success / seconds;
    const lost = EVENTS - success;
    const calls = hubspot.requests.slice(crmBefore.requests);
    const crm = { requests: calls.length, activities: hubspot.emails.size + hubspot.notes.size - crmBefore.activities };
    const refused = calls.filter((c) => c.status === 429).length;
    const byPath = new Map<string, number>();
    for (const c of calls)
      byPath.set(
        `${c.method} ${c.path.replace(/\/\d+(?=\/|$)/g, '/:id')} ${c.status}`,
        (byPath.get(`${c.method} ${c.path.replace(/\/\d+(?=\/|$)/g, '/:id')} ${c.status}`) ?? 0) + 1,
      );
    const [lastAccepted] = await q<{ at: string }>('SELECT extract(epoch FROM max(created_at)) * 1000 AS at FROM requests WHERE id > $1', [before!.id]);
    out('');
    out(`concurrency ${concurrency} x ${WORKERS} process(es), pollInterval ${WORKER_SETTINGS.pollInterval} ms:`);
    out(
      `  ingress: ${fmt(p.ok)} x 200 in ${p.seconds.toFixed(1)} s (${fmt(Math.round(p.rps))} req/s, p50 ${ms(p.p50)} ms, p99 ${ms(p.p99)} ms), non-2xx ${p.non2xx}, errors ${p.errors + p.timeouts}; ${fmt(doneAtPushEnd ?? 0)} syncs recorded by then`,
    );
    out(`  syncs: ${statuses.map((s) => `${s.status} ${fmt(Number(s.n))}`).join(', ')} of ${fmt(Number(after!.accepted))} requests`);
    for (const t of stuck)
      out(
        `  without an outcome: ${fmt(Number(t.n))} (sync attempts ${t.attempts ?? '-'}, due ${t.due_at ?? 'not waiting'}, budget waits ${t.waits ?? '-'}, failures on our side ${t.internal_failures ?? '-'})`,
      );
    out(
      `  CRM emulator: ${fmt(crm.activities)} activities written, ${fmt(hubspot.contacts.size)} contacts in all, ${fmt(crm.requests)} API calls (${(crm.requests / Math.max(1, success)).toFixed(2)} per event)`,
    );
    out(`  database: ${(Number(after!.commits) / Math.max(1, success)).toFixed(1)} commits per event`);
    const updates = Number(after!.updates) - Number(before!.updates);
    out(
      `  syncs rows: ${(updates / Math.max(1, success)).toFixed(1)} updates per event, ${Math.round((100 * (Number(after!.hot) - Number(before!.hot))) / Math.max(1, updates))} % of them heap-only (HOT: no index entries)`,
    );
    out(`  cpu cores used: ${cores(used)}`);
    out(
      `  CRM calls by path: ${[...byPath]
        .sort((a, b) => b[1] - a[1])
        .map(([path, n]) => `${path} x ${fmt(n)}`)
        .join(', ')}`,
    );
    out(
      `  CRM calls answered 429: ${fmt(refused)} of ${fmt(crm.requests)} (${((100 * refused) / Math.max(1, crm.requests)).toFixed(2)} %); busiest 10 s: ${fmt(hubspot.busiestTenSeconds())} calls; from the last event accepted to the last sync written: ${((Number(after!.last) - Number(lastAccepted!.at)) / 1000).toFixed(1)} s`,
    );
    out(
      `  end to end: ${fmt(success)} events in ${seconds.toFixed(1)} s = ${fmt(Math.round(rate))} events/s (target >= ${fmt(run.target)}): ${rate >= run.target ? 'PASS' : 'FAIL'}`,
    );
    out(`  lost (not 200, or no successful sync): ${fmt(lost)}: ${lost === 0 ? 'PASS' : 'FAIL'}`);
    const duplicates = crm.activities - success;
    out(`  duplicate activities (activities written minus events synced): ${fmt(duplicates)}: ${duplicates === 0 ? 'PASS' : 'FAIL'}`);
    if (PROFILE) {
      const top = await q<{ calls: string; total: number; mean: number; query: string }>(
        "SELECT calls, total_exec_time AS total, mean_exec_time AS mean, regexp_replace(query, '\\s+', ' ', 'g') AS query FROM pg_stat_statements ORDER BY total_exec_time DESC LIMIT 12",
      );
      out('  pg_stat_statements, top by total time:     calls   total ms   mean ms  statement');
      for (const t of top)
        out(
          `  ${''.padEnd(40)}${fmt(Number(t.calls)).padStart(9)} ${fmt(Math.round(t.total)).padStart(10)} ${ms(t.mean).padStart(9)}  ${t.query.slice(0, 110)}`,
        );
    }
    return rate >= run.target && lost === 0 && duplicates === 0;
  }
}

/** The syncs waiting in the outbox: (b) runs without a worker, so each request accepted adds one. */
const JOBS_SQL = 'SELECT count(*) FROM pending_syncs';
const SYNC_UPDATES_SQL =
  "(SELECT n_tup_upd FROM pg_stat_user_tables WHERE relname = 'syncs') AS updates, (SELECT n_tup_hot_upd FROM pg_stat_user_tables WHERE relname = 'syncs') AS hot";
const COMMITS_SQL = '(SELECT xact_commit FROM pg_stat_database WHERE datname = current_database())';

/** Times 300 one-row INSERT + COMMIT on one connection: what one durable commit costs on this disk. */
async function serialCommits(q: (text: string) => Promise<unknown>): Promise<number[]> {
  await q('CREATE TABLE bench_commit_probe (id serial PRIMARY KEY, at timestamptz DEFAULT now())');
  const times: number[] = [];
  for (let i = 0; i < 330; i += 1) {
    const start = performance.now();
    await q('INSERT INTO bench_commit_probe DEFAULT VALUES');
    if (i >= 30) times.push(performance.now() - start);
  }
  await q('DROP TABLE bench_commit_probe');
  return times;
}

function fixture(codes: string[]) {
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
            sources: codes.map((code, i) => ({ ref: `s${i}`, platform: 'smartlead', ingressCode: code })),
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
  case '--bare':
    bareRole(childSpec<{ url: string; row: [number, number, number, string] }>(SPEC_ENV));
    break;
  case '--burst':
    await burstRole();
    break;
  case '--worker':
    await workerRole(childSpec<WorkerSpec>(SPEC_ENV));
    break;
  default:
    log('bench:ingress');
    await runBench('bench:ingress', run);
}
