/**
 * `npm run bench:webhooks`: how fast platform events reach customers' webhook endpoints, signed, over
 * loopback HTTPS, while some endpoints fail.
 *
 * On a throwaway embedded PostgreSQL with PRODUCTION durability (fsync and synchronous_commit on): one
 * account with BENCH_ENDPOINTS (50) endpoints, BENCH_FAILING (5) of which answer 500 to everything. All
 * endpoints are paths of one HTTPS destination emulator (src/emulators/destination.ts) in this process,
 * serving a certificate made for the run, which the worker trusts through NODE_EXTRA_CA_CERTS (verification
 * on). The worker is one process wired as `src/main.ts worker` wires one (startWorker, WEBHOOK_* read as
 * the service reads them). This process emits BENCH_EVENTS (2,000) events at BENCH_EVENTS_PER_S (50) per
 * second through the production fan-out SQL (src/jobs/webhook-outbox.ts: the statement that
 * stores an event writes its deliveries and queues the endpoints' loops), so 2,000 events make 100,000
 * deliveries, and waits until every healthy delivery SUCCEEDED (or nothing moved for BENCH_STALL_S).
 *
 * Figures: successful deliveries per second (from the first event's created_at to the last success's
 * attempt), the healthy endpoints' delay from event to receipt (emulator clock) and to the attempt (db),
 * and every delivery accounted for: SUCCEEDED for healthy endpoints, PENDING or DEAD for failing ones.
 * For comparison, the same run's emission rate is printed: the baseline the delivery rate is held to.
 *
 * A warm-up of BENCH_WARMUP_EVENTS (100) goes through first (connections and their TLS handshakes are
 * made, as a running service has them); only the events after it are measured.
 *
 * Environment: BENCH_EVENTS, BENCH_EVENTS_PER_S, BENCH_WARMUP_EVENTS, BENCH_ENDPOINTS, BENCH_FAILING, BENCH_STALL_S (60); the
 * service's own WEBHOOK_CONCURRENCY, WEBHOOK_MAX_IN_FLIGHT and WEBHOOK_RETRY_SCHEDULE.
 */
import { randomBytes } from 'node:crypto';
import { mkdtemp } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { loadConfig } from '../src/config.js';
import { installJobSchema } from '../src/db/job-schema.js';
import { query, sql } from '../src/db/sql.js';
import { PREFIX, randomToken, sealSecret } from '../src/domain/secrets.js';
import { newWebhookSecret } from '../src/domain/webhook-signature.js';
import { WEBHOOK_HEADERS } from '../src/jobs/webhook_deliveries__send.js';
import { fanOutSql, queueWebhookSendingSql } from '../src/jobs/webhook-outbox.js';
import { startDestinationEmulator } from '../src/emulators/destination.js';
import { makeTestCertificate } from '../test/support/tls.js';
import { childSpec, cores, cpuMeter, postgresPids, startChild, workerRole, type WorkerSpec } from './processes.js';
import { cleanups, envNumber, fmt, log, maxOf, minOf, ms, out, pct, runBench, throwawayDatabase } from './support.js';
import { readFileSync } from 'node:fs';

const EVENTS = Math.round(envNumber('BENCH_EVENTS', 2_000));
const EVENTS_PER_S = envNumber('BENCH_EVENTS_PER_S', 50);
const WARMUP_EVENTS = Math.round(Number(process.env.BENCH_WARMUP_EVENTS ?? 100));
const ENDPOINTS = Math.round(envNumber('BENCH_ENDPOINTS', 50));
const FAILING = Math.round(envNumber('BENCH_FAILING', 5));
const STALL_MS = envNumber('BENCH_STALL_S', 60) * 1000;
const TARGET = { perSecond: 2_000, p99Ms: 1_000 };
const SELF = fileURLToPath(import.meta.url);
const SPEC_ENV = 'BENCH_WEBHOOKS_CHILD';
/** Events emitted per statement: one statement every 1/EMIT_HZ s. */
const EMIT_HZ = 10;

const SERVICE_ENV = Object.fromEntries(
  Object.entries(process.env).filter((e): e is [string, string] => e[1] !== undefined && /^(WORKER_CONCURRENCY|WEBHOOK_[A-Z_]+)$/.test(e[0])),
);

async function run(): Promise<number> {
  const db = await throwawayDatabase({ max_connections: '200' });
  const encryptionKey = randomBytes(32);
  const config = loadConfig({ DATABASE_URL: db.url, ENCRYPTION_KEY: encryptionKey.toString('hex'), OUTBOUND_ALLOW_PRIVATE: 'true', ...SERVICE_ENV });
  await installJobSchema(db.url);
  const certificate = await makeTestCertificate(await mkdtemp(path.join(os.tmpdir(), 'pss-bench-tls-')));
  const receiver = await startDestinationEmulator({ tls: certificate });
  cleanups.push(() => receiver.close());
  for (let i = 0; i < FAILING; i += 1) receiver.answerAlways({ status: 500, body: 'failing on purpose' }, `/failing-${i}/`);

  const pool = new pg.Pool({ connectionString: db.url, max: 2 });
  pool.on('error', (error) => log(`bench connection: ${error.message}`));
  cleanups.push(() => pool.end());
  const q = async <T extends pg.QueryResultRow>(text: string, values: unknown[] = []) => (await pool.query<T>(text, values)).rows;
  const [account] = await q<{ id: number }>('INSERT INTO accounts (email) VALUES ($1) RETURNING id', ['owner@bench.example']);
  const paths = Array.from({ length: ENDPOINTS }, (_, i) => (i < FAILING ? `/failing-${i}/` : `/healthy-${i}/`));
  const endpoints = [];
  for (const p of paths) {
    const [row] = await q<{ id: number }>('INSERT INTO webhook_endpoints (public_id, account_id, url, secret_encrypted) VALUES ($1, $2, $3, $4) RETURNING id', [
      randomToken(PREFIX.webhookEndpoint, 24),
      account!.id,
      `${receiver.url}${p}`,
      sealSecret(encryptionKey, newWebhookSecret()),
    ]);
    endpoints.push({ id: row!.id, failing: p.startsWith('/failing') });
  }
  const failingIds = endpoints.filter((e) => e.failing).map((e) => e.id);
  const postmaster = Number(readFileSync(`${db.clusterDir}/postmaster.pid`, 'utf8').split('\n')[0]);

  const workerSpec: WorkerSpec = { url: db.url, concurrency: config.workerConcurrency, crmUrls: {}, webhooks: config.webhooks };
  const worker = startChild('worker', [SELF, '--worker'], {
    [SPEC_ENV]: JSON.stringify(workerSpec),
    ENCRYPTION_KEY: encryptionKey.toString('hex'),
    NODE_EXTRA_CA_CERTS: certificate.certPath,
  });
  await worker.next(/^ready$/);

  out(`bench:webhooks  (${os.cpus().length} CPUs, Node ${process.version})`);
  out('PostgreSQL: production durability (fsync on, synchronous_commit on)');
  out(
    `endpoints: ${ENDPOINTS} of one account on one HTTPS emulator in this process (certificate made for the run, trusted through NODE_EXTRA_CA_CERTS), ${FAILING} answering 500`,
  );
  out(
    `events: ${fmt(EVENTS)} emitted at ${EVENTS_PER_S}/s through the production fan-out SQL (${fmt(EVENTS * ENDPOINTS)} deliveries), after ${fmt(WARMUP_EVENTS)} warm-up events through the whole path`,
  );
  out(
    `webhooks: WEBHOOK_CONCURRENCY=${config.webhooks.concurrency}, WEBHOOK_MAX_IN_FLIGHT=${config.webhooks.maxInFlight}, WEBHOOK_RETRY_SCHEDULE=${config.webhooks.retrySchedule.join(',')} s`,
  );
  out('');

  // Receipts: the first arrival of each (event, endpoint path), compacted as they come.
  const received = new Map<string, number>();
  let requests = 0;
  const collect = () => {
    for (const r of receiver.received.splice(0)) {
      requests += 1;
      const key = `${String(r.headers[WEBHOOK_HEADERS.eventId])} ${r.path}`;
      if (!received.has(key)) received.set(key, r.at);
      if (typeof r.headers[WEBHOOK_HEADERS.signature] !== 'string') throw new Error('a delivery came without its signature');
    }
  };
  const collector = setInterval(collect, 100);
  cleanups.push(() => Promise.resolve(clearInterval(collector)));

  /** Waits until the healthy endpoints' deliveries of events after `afterEventId` all SUCCEEDED (or nothing moved for STALL_MS). */
  const drained = async (afterEventId: string, events: number) => {
    const total = events * (ENDPOINTS - FAILING);
    let [last, lastChange] = [-1, Date.now()];
    for (;;) {
      await new Promise((r) => setTimeout(r, 1_000));
      const [row] = await q<{ n: string }>(
        "SELECT count(*) AS n FROM webhook_deliveries WHERE status = 'SUCCEEDED' AND event_id > $2 AND NOT (endpoint_id = ANY($1::int[]))",
        [failingIds, afterEventId],
      );
      const done = Number(row!.n);
      log(`  ${fmt(done)} of ${fmt(total)} healthy deliveries SUCCEEDED`);
      if (done >= total) return;
      if (done !== last) [last, lastChange] = [done, Date.now()];
      if (Date.now() - lastChange > STALL_MS) {
        log(`  nothing moved for ${STALL_MS / 1000} s: giving up`);
        return;
      }
    }
  };
  const lastEventId = async () => (await q<{ id: string }>('SELECT coalesce(max(id), 0)::text AS id FROM platform_events'))[0]!.id;

  // A warm-up through the whole path first: connections (TLS handshakes) and plans, as a running service has them.
  if (WARMUP_EVENTS > 0) {
    log(`warm-up: ${fmt(WARMUP_EVENTS)} events`);
    const before = await lastEventId();
    await emit(pool, account!.id, WARMUP_EVENTS, EVENTS_PER_S);
    await drained(before, WARMUP_EVENTS);
  }
  const fromEventId = await lastEventId();
  collect();
  received.clear();
  requests = 0;

  const cpu = cpuMeter({ worker: () => [worker.proc.pid!], 'bench+receiver': () => [process.pid], postgres: () => postgresPids(postmaster) });
  const started = Date.now();
  const emitted = await emit(pool, account!.id, EVENTS, EVENTS_PER_S);
  const emittedSeconds = (Date.now() - started) / 1000;
  log(`emitted ${fmt(emitted)} events in ${emittedSeconds.toFixed(1)} s; waiting for the healthy deliveries`);
  await drained(fromEventId, EVENTS);
  clearInterval(collector);
  collect();
  const used = cpu();
  await worker.stop();

  const rows = await q<{ endpoint_id: number; event: string; status: string; at: string; attempted: string | null; path: string }>(
    `SELECT d.endpoint_id, ev.public_id AS event, d.status::text AS status, extract(epoch FROM ev.created_at) * 1000 AS at,
            extract(epoch FROM d.last_attempt_at) * 1000 AS attempted, substring(e.url FROM '^https://[^/]+(/.*)$') AS path
       FROM webhook_deliveries d JOIN platform_events ev ON ev.id = d.event_id JOIN webhook_endpoints e ON e.id = d.endpoint_id
      WHERE d.event_id > $1`,
    [fromEventId],
  );
  const failingErrors = await q<{ status: string; error: string | null; attempts: number; n: string }>(
    `SELECT status::text AS status, last_error AS error, attempts, count(*) AS n FROM webhook_deliveries
      WHERE event_id > $1 AND endpoint_id = ANY($2::int[]) GROUP BY 1, 2, 3 ORDER BY 4 DESC LIMIT 5`,
    [fromEventId, failingIds],
  );
  const failing = new Set(failingIds);
  const healthy = rows.filter((r) => !failing.has(r.endpoint_id));
  const succeeded = healthy.filter((r) => r.status === 'SUCCEEDED');
  const first = minOf(rows.map((r) => Number(r.at)));
  const lastSuccess = maxOf(succeeded.map((r) => Number(r.attempted)));
  const rate = succeeded.length / Math.max((lastSuccess - first) / 1000, 0.001);
  const attemptDelays = succeeded.map((r) => Number(r.attempted) - Number(r.at));
  const receiptDelays = succeeded.map((r) => (received.get(`${r.event} ${r.path}`) ?? Number.NaN) - Number(r.at)).filter((d) => !Number.isNaN(d));
  const byStatus = (set: typeof rows) => [...new Set(set.map((r) => r.status))].map((s) => `${s} ${fmt(set.filter((r) => r.status === s).length)}`).join(', ');
  const failingRows = rows.filter((r) => failing.has(r.endpoint_id));

  out(
    `emission (baseline): ${fmt(emitted)} events in ${emittedSeconds.toFixed(1)} s = ${fmt(Math.round(emitted / emittedSeconds))} events/s, ${fmt(Math.round((emitted * (ENDPOINTS - FAILING)) / emittedSeconds))} healthy deliveries/s offered`,
  );
  out(
    `delivery rows: ${fmt(rows.length)} (expected ${fmt(EVENTS * ENDPOINTS)}); healthy endpoints: ${byStatus(healthy)}; failing endpoints: ${byStatus(failingRows)}`,
  );
  out(
    `failing endpoints' deliveries: ${failingErrors.map((f) => `${f.status} after ${f.attempts} attempt(s) (${f.error ?? '-'}) x ${fmt(Number(f.n))}`).join('; ')}`,
  );
  out(`requests received by the emulator: ${fmt(requests)} (first receipts of healthy deliveries: ${fmt(receiptDelays.length)})`);
  out(
    `healthy delay from event: received p50 ${ms(pct(receiptDelays, 0.5))} ms, p99 ${ms(pct(receiptDelays, 0.99))} ms; attempt started p50 ${ms(pct(attemptDelays, 0.5))} ms, p99 ${ms(pct(attemptDelays, 0.99))} ms, max ${ms(maxOf(attemptDelays))} ms`,
  );
  out(`cpu cores used: ${cores(used)}`);
  out(`delivery rate / offered rate: ${(rate / ((emitted * (ENDPOINTS - FAILING)) / emittedSeconds)).toFixed(2)}`);

  const accounted =
    rows.length === EVENTS * ENDPOINTS &&
    healthy.every((r) => r.status === 'SUCCEEDED') &&
    failingRows.every((r) => r.status === 'PENDING' || r.status === 'DEAD');
  const p99 = Math.max(pct(receiptDelays, 0.99), pct(attemptDelays, 0.99));
  const verdict = (ok: boolean) => (ok ? 'PASS' : 'FAIL');
  out('');
  out(`successful deliveries: ${fmt(Math.round(rate))}/s (target >= ${fmt(TARGET.perSecond)}): ${verdict(rate >= TARGET.perSecond)}`);
  out(`healthy endpoints' p99 delay from event to delivery: ${ms(p99)} ms (target < ${fmt(TARGET.p99Ms)} ms): ${verdict(p99 < TARGET.p99Ms)}`);
  out(`every delivery accounted for (SUCCEEDED, or PENDING/DEAD for failing endpoints): ${verdict(accounted)}`);
  return rate >= TARGET.perSecond && p99 < TARGET.p99Ms && accounted ? 0 : 1;
}

/**
 * Emits `count` test-shaped events at `perSecond`, EMIT_HZ statements a second, each through the
 * production fan-out: the events, their deliveries to every endpoint that takes them, and the loops.
 */
async function emit(pool: pg.Pool, accountId: number, count: number, perSecond: number): Promise<number> {
  const perTick = Math.max(1, Math.round(perSecond / EMIT_HZ));
  const start = Date.now();
  let done = 0;
  for (let tick = 0; done < count; tick += 1) {
    const wait = start + (tick * 1000) / EMIT_HZ - Date.now();
    if (wait > 0) await new Promise((r) => setTimeout(r, wait));
    const n = Math.min(perTick, count - done);
    await query(
      pool,
      sql`WITH emitted AS (
            INSERT INTO platform_events (public_id, account_id, type, summary, data)
            SELECT 'svcevt_' || replace(gen_random_uuid()::text, '-', ''), ${accountId}, 'sync.failed', 'Bench event ' || i,
                   jsonb_build_object('connectionId', 1, 'crm', 'HUBSPOT', 'sourceId', 1, 'sourcePlatform', 'smartlead', 'reason', 'crm_unavailable', 'bench', i)
              FROM generate_series(1, ${n}::int) AS i
            RETURNING id, account_id, type
          ),
          fanned AS (${fanOutSql(sql`emitted`)}),
          sending AS (SELECT (${queueWebhookSendingSql(sql`fanned`)}) AS n)
          SELECT (SELECT n FROM sending) AS queued`,
    );
    done += n;
  }
  return done;
}

if (process.argv.includes('--worker')) void workerRole(childSpec<WorkerSpec>(SPEC_ENV));
else void runBench('bench:webhooks', run);
