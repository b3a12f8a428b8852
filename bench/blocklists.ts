/**
 * `npm run bench:blocklists`: a 100,000-entry HubSpot list pushed to Instantly by the block list sync
 * (issue 16), while the API keeps answering.
 *
 * On a throwaway embedded PostgreSQL with PRODUCTION durability (fsync and synchronous_commit on): one
 * account with one HubSpot connection, an ADDRESS block list on a HubSpot contacts list of BENCH_ENTRIES
 * (100,000) distinct valid addresses plus a few messy members (the same addresses in other case, with
 * spaces, `mailto:` or a display name; invalid values; a contact without an email), pushed to Instantly,
 * and a read key. The HubSpot and sequencer emulators (src/emulators, real HTTP) answer at once from this
 * process. The worker is its own process wired as `src/main.ts worker` wires one (startWorker, production
 * settings, the connection's CRM budget off: HUBSPOT_REQUESTS_PER_10S=0, as bench:ingress (c) runs); the
 * API is `node --import tsx src/main.ts api`; a probe process GETs /api/v1/blocklists with the read key
 * BENCH_API_PER_S (10) times a second, one request at a time over one keep-alive connection.
 *
 * After the probe's warm-up, BENCH_BASELINE_S (15) of it with the worker idle give the baseline; then a
 * `full` round is queued with the schedule's own SQL (queueFetchSql; the every-minute schedule is kept off
 * the list) and timed until the list is SYNCED with nothing pending (blocklists.updated_at); the probe's
 * samples of that time are the figures, and BENCH_AFTER_S (10) more with the list synced and the worker
 * idle are printed beside. Also printed: where the round's time went (from the emulators' request logs and
 * the list's timestamps), the CRM calls by path and what as many would take at HubSpot's documented 190
 * requests per 10 s, what the sequencer received (distinct values, duplicates), the entries in the
 * database, and CPU per process.
 *
 * Targets (issue): SYNCED within 60 s; exactly BENCH_ENTRIES distinct values received, none twice; the
 * API's p95 under 15 ms during the round. The exit status is 1 when one is missed.
 *
 * Environment: BENCH_ENTRIES (100000), BENCH_API_PER_S (10), BENCH_BASELINE_S (15), BENCH_AFTER_S (10),
 * BENCH_API_WARMUP (requests before any timing, 500), BENCH_STALL_S (60), BENCH_HUBSPOT_PER_10S (0: no
 * CRM budget; else the connection's budget and the emulator's limit), BENCH_PROFILE (a folder: CPU profiles
 * of the worker and api processes, and pg_stat_statements' top statements); the service's own
 * WORKER_CONCURRENCY, FORWARDING_*, WEBHOOK_* and BLOCKLIST_REFRESH_MINUTES.
 */
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import os from 'node:os';
import readline from 'node:readline';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { seedFixture } from '../src/admin/seed.js';
import { loadConfig } from '../src/config.js';
import { installJobSchema } from '../src/db/job-schema.js';
import { createPrisma } from '../src/db/prisma.js';
import { query, sql } from '../src/db/sql.js';
import { queueFetchSql } from '../src/jobs/blocklist-rounds.js';
import { startHubspotEmulator } from '../src/emulators/hubspot.js';
import { startSequencerEmulator } from '../src/emulators/sequencer.js';
import { childSpec, cores, cpuMeter, postgresPids, startApiChild, startChild, untilLive, workerRole, type WorkerSpec } from './processes.js';
import { ApiClient, cleanups, envNumber, fmt, log, maxOf, minOf, ms, out, pct, ratio, runBench, throwawayDatabase } from './support.js';

const ENTRIES = Math.round(envNumber('BENCH_ENTRIES', 100_000));
const API_PER_S = envNumber('BENCH_API_PER_S', 10);
const BASELINE_S = envNumber('BENCH_BASELINE_S', 15);
const AFTER_S = envNumber('BENCH_AFTER_S', 10);
const API_WARMUP = Math.round(envNumber('BENCH_API_WARMUP', 500));
const STALL_MS = envNumber('BENCH_STALL_S', 60) * 1000;
const HUBSPOT_PER_10S = Math.round(Number(process.env.BENCH_HUBSPOT_PER_10S || 0));
const PROFILE = process.env.BENCH_PROFILE || undefined;
const TARGET = { seconds: 60, apiP95Ms: 15 };
/** HubSpot's documented limit for a Professional private app, for the informative line. */
const HUBSPOT_DOCUMENTED_PER_10S = 190;
const TOKEN = 'bench-hubspot-token';
const INSTANTLY_KEY = 'bench-instantly-key';
const API_KEY = 'svcapi_benchBlocklistsRead00000001';
const API_PATH = '/api/v1/blocklists';
const SELF = fileURLToPath(import.meta.url);
const SPEC_ENV = 'BENCH_BLOCKLISTS_CHILD';

const SERVICE_ENV = Object.fromEntries(
  Object.entries(process.env).filter(
    (e): e is [string, string] => e[1] !== undefined && /^(WORKER_CONCURRENCY|FORWARDING_[A-Z_]+|WEBHOOK_[A-Z_]+|BLOCKLIST_REFRESH_MINUTES)$/.test(e[0]),
  ),
);

/** The i-th address of the list: distinct, valid, already normalised. */
const address = (i: number) => `lead${String(i).padStart(6, '0')}@company${i % 5_000}.test`;

/** Members the sync must normalise away: addresses of the list written otherwise, invalid values, a contact without an email. */
const MESSY = [
  ` ${address(1).toUpperCase()} `,
  `Lead Two <${address(2)}>`,
  `mailto:${address(3)}`,
  address(4).replace('lead', 'LEAD'),
  `\t${address(5)}\n`,
  'nobody',
  'lead@',
  '@company1.test',
  'two@@company2.test',
  'has space@company3.test',
  'lead@localhost',
  '',
];

// ------------------------------------------------------------------------------------------------
// The probe: its own process, so that the emulators' work in this one does not delay its timings.

interface ProbeSpec {
  port: number;
  key: string;
  perSecond: number;
}
type ProbeCommand = { warmup: number } | { start: true } | { take: true };
interface ProbeAnswer {
  samples: number[];
  errors: string[];
}

/** `--probe`: GETs API_PATH one at a time; `warmup` n back to back, `start` paced, `take` the samples since the last take. */
async function probeRole(spec: ProbeSpec): Promise<void> {
  const client = new ApiClient(spec.port, spec.key);
  let taken: ProbeAnswer = { samples: [], errors: [] };
  const once = async () => {
    const at = performance.now();
    try {
      await client.get(API_PATH);
      taken.samples.push(performance.now() - at);
    } catch (error) {
      taken.errors.push(error instanceof Error ? error.message : String(error));
    }
  };
  const paced = async () => {
    const interval = 1000 / spec.perSecond;
    let next = performance.now();
    for (;;) {
      await once();
      next += interval;
      const wait = next - performance.now();
      if (wait > 0) await new Promise((r) => setTimeout(r, wait));
      else next = performance.now();
    }
  };
  const answer = (a: ProbeAnswer) => process.stdout.write(`${JSON.stringify(a)}\n`);
  for await (const line of readline.createInterface({ input: process.stdin })) {
    const command = JSON.parse(line) as ProbeCommand;
    if ('warmup' in command) {
      for (let i = 0; i < command.warmup; i += 1) await once();
      answer({ samples: [], errors: taken.errors });
      taken = { samples: [], errors: [] };
    } else if ('start' in command) {
      void paced();
      answer({ samples: [], errors: [] });
    } else {
      answer(taken);
      taken = { samples: [], errors: [] };
    }
  }
}

// ------------------------------------------------------------------------------------------------

async function run(): Promise<number> {
  const db = await throwawayDatabase({ max_connections: '200', ...(PROFILE ? { shared_preload_libraries: 'pg_stat_statements' } : {}) });
  const encryptionKey = randomBytes(32);
  const config = loadConfig({ DATABASE_URL: db.url, ENCRYPTION_KEY: encryptionKey.toString('hex'), OUTBOUND_ALLOW_PRIVATE: 'true', ...SERVICE_ENV });
  await installJobSchema(db.url);
  const pool = new pg.Pool({ connectionString: db.url, max: 2 });
  pool.on('error', (error) => log(`bench connection: ${error.message}`));
  cleanups.push(() => pool.end());
  const q = async <T extends pg.QueryResultRow>(text: string, values: unknown[] = []) => (await pool.query<T>(text, values)).rows;
  const postmaster = Number(readFileSync(`${db.clusterDir}/postmaster.pid`, 'utf8').split('\n')[0]);
  if (PROFILE) await q('CREATE EXTENSION pg_stat_statements');

  // The CRM list: the valid addresses with the messy members spread among them.
  const hubspot = await startHubspotEmulator({ accessToken: TOKEN, ...(HUBSPOT_PER_10S > 0 ? { requestsPer10s: HUBSPOT_PER_10S } : {}) });
  cleanups.push(() => hubspot.close());
  const sequencer = await startSequencerEmulator({ instantlyKeys: [INSTANTLY_KEY] });
  cleanups.push(() => sequencer.close());
  const expected = Array.from({ length: ENTRIES }, (_, i) => address(i));
  const members: string[] = [];
  const every = Math.max(1, Math.floor(ENTRIES / MESSY.length));
  expected.forEach((value, i) => {
    members.push(value);
    if (i % every === every - 1 && i / every < MESSY.length) members.push(MESSY[Math.floor(i / every)]!);
  });
  const listId = hubspot.addList({ name: 'Do not contact', objectType: 'contacts', values: members });
  const crmMembers = hubspot.lists.get(listId)!.members.length;

  const prisma = createPrisma(db.url);
  cleanups.push(() => prisma.$disconnect());
  const seeded = await seedFixture(prisma, fixture(listId), encryptionKey);
  const blocklistId = seeded.blocklists.list!;
  // A seeded list is CREATED, which the every-minute schedule would start on its own: this round is the bench's.
  await q('UPDATE blocklists SET last_attempted_at = now() WHERE id = $1', [blocklistId]);

  const crmBudgets = { HUBSPOT: HUBSPOT_PER_10S, SALESFORCE: 0, CLOSE: 0, ATTIO: 0 };
  const workerSpec: WorkerSpec = {
    url: db.url,
    concurrency: config.workerConcurrency,
    crmUrls: { HUBSPOT: hubspot.url },
    forwarding: config.forwarding,
    webhooks: config.webhooks,
    blocklists: { pushUrls: { smartlead: sequencer.url, instantly: sequencer.url }, refreshMinutes: config.blocklistRefreshMinutes },
    crmBudgets,
  };
  const worker = startChild(
    'worker',
    [SELF, '--worker'],
    { [SPEC_ENV]: JSON.stringify(workerSpec), ENCRYPTION_KEY: encryptionKey.toString('hex') },
    { profile: PROFILE },
  );
  const { api, port: apiPort } = await startApiChild(db.url, encryptionKey, {
    // The limiters run (their cost is part of every request) with limits the probe never reaches.
    env: { RATE_LIMIT_PER_IP: '1000000000', RATE_LIMIT_PER_ACCOUNT: '1000000000' },
    profile: PROFILE,
  });
  await worker.next(/^ready$/);
  await untilLive(apiPort, api);
  const probeSpec: ProbeSpec = { port: apiPort, key: API_KEY, perSecond: API_PER_S };
  const probe = startChild('probe', [SELF, '--probe'], { [SPEC_ENV]: JSON.stringify(probeSpec) }, { echo: false });
  const ask = async (command: ProbeCommand): Promise<ProbeAnswer> => {
    probe.proc.stdin!.write(`${JSON.stringify(command)}\n`);
    return JSON.parse(await probe.next(/^\{/)) as ProbeAnswer;
  };

  out(
    `bench:blocklists  (${os.cpus().length} CPUs, Node ${process.version}, load average ${os
      .loadavg()
      .map((l) => l.toFixed(2))
      .join(' ')} at start)`,
  );
  out('PostgreSQL: production durability (fsync on, synchronous_commit on)');
  out(
    `HubSpot list ${listId} (contacts): ${fmt(crmMembers)} members = ${fmt(ENTRIES)} distinct valid addresses + ${MESSY.length} messy (${MESSY.length - 7} variants of listed addresses, 6 invalid, 1 contact without an email)`,
  );
  out(
    `ADDRESS block list ${blocklistId} -> Instantly; HubSpot and sequencer emulators in this process (real HTTP, answering at once${HUBSPOT_PER_10S > 0 ? `; HubSpot limited to ${HUBSPOT_PER_10S} requests per 10 s` : ''})`,
  );
  out(
    `worker: its own process wired as \`src/main.ts worker\` (startWorker, concurrency ${config.workerConcurrency}, FORWARDING_CONCURRENCY ${config.forwarding.concurrency}), CRM budget ${HUBSPOT_PER_10S > 0 ? `HUBSPOT_REQUESTS_PER_10S=${HUBSPOT_PER_10S}` : 'off (HUBSPOT_REQUESTS_PER_10S=0)'}`,
  );
  out(
    `api: \`node --import tsx src/main.ts api\`; probe: its own process, GET ${API_PATH} (read key) ${API_PER_S}/s, one at a time, keep-alive, after ${fmt(API_WARMUP)} warm-up requests`,
  );
  out('');

  log(`probe: ${fmt(API_WARMUP)} warm-up requests, then ${BASELINE_S} s of baseline`);
  const warm = await ask({ warmup: API_WARMUP });
  if (warm.errors.length > 0) throw new Error(`the API answered the warm-up with errors: ${warm.errors[0]}`);
  await ask({ start: true });
  await new Promise((r) => setTimeout(r, BASELINE_S * 1000));
  const baseline = await ask({ take: true });

  if (PROFILE) await q('SELECT pg_stat_statements_reset()');
  const cpu = cpuMeter({
    worker: () => [worker.proc.pid!],
    api: () => [api.proc.pid!],
    probe: () => [probe.proc.pid!],
    'bench+emulators': () => [process.pid],
    postgres: () => postgresPids(postmaster),
  });
  const pushed = sequencer.instantly(INSTANTLY_KEY);
  log(`queuing a full round of block list ${blocklistId}`);
  const queuedAt = Date.now();
  await query(pool, sql`SELECT count(*) FROM ${queueFetchSql(sql`(SELECT ${blocklistId}::int AS id, 'full'::text AS kind) AS due`)}`);

  type ListState = { status: string; error: string | null; updated: string; fetched: string | null; pending: string | null };
  let state: ListState | undefined;
  let [signature, lastChange, lastLog] = ['', Date.now(), Date.now()];
  for (;;) {
    await new Promise((r) => setTimeout(r, 200));
    [state] = await q<ListState>(
      `SELECT status::text AS status, last_error AS error, extract(epoch FROM updated_at) * 1000 AS updated,
              extract(epoch FROM last_fetched_at) * 1000 AS fetched,
              CASE WHEN status = 'SYNCED' THEN (SELECT count(*) FROM blocklist_entries
                     WHERE blocklist_id = b.id AND pushed_at IS NULL AND push_error IS NULL) END AS pending
         FROM blocklists b WHERE id = $1`,
      [blocklistId],
    );
    if (state!.error !== null || (state!.status === 'SYNCED' && state!.fetched !== null)) break;
    const now = `${state!.status} ${hubspot.requests.length} ${pushed.received.length}`;
    if (now !== signature) [signature, lastChange] = [now, Date.now()];
    if (Date.now() - lastLog > 5_000) {
      lastLog = Date.now();
      log(
        `  ${((Date.now() - queuedAt) / 1000).toFixed(0)} s: ${state!.status}, ${fmt(hubspot.requests.length)} HubSpot calls, ${fmt(pushed.distinct)} values at Instantly`,
      );
    }
    if (Date.now() - lastChange > STALL_MS) {
      log(`  nothing moved for ${STALL_MS / 1000} s: giving up`);
      break;
    }
  }
  const used = cpu();
  const during = await ask({ take: true });
  log(`round over (${state!.status}); ${AFTER_S} s more of the probe with the list synced`);
  await new Promise((r) => setTimeout(r, AFTER_S * 1000));
  const after = await ask({ take: true });
  await probe.stop();

  const synced = state!.status === 'SYNCED' && state!.error === null && Number(state!.pending) === 0;
  const seconds = (Number(state!.updated) - queuedAt) / 1000;
  const [entries] = await q<{ total: string; pushed: string; pending: string; refused: string }>(
    `SELECT count(*) AS total, count(pushed_at) AS pushed, count(*) FILTER (WHERE pushed_at IS NULL AND push_error IS NULL) AS pending,
            count(push_error) AS refused FROM blocklist_entries WHERE blocklist_id = $1`,
    [blocklistId],
  );
  const crmCalls = hubspot.requests.filter((r) => r.at >= queuedAt);
  const pushCalls = sequencer.requests.filter((r) => r.at >= queuedAt && r.method === 'POST');
  const byPath = new Map<string, number>();
  for (const c of crmCalls) {
    const key = `${c.method} ${c.path.replace(/\/\d+(?=\/|$)/g, '/:id')} ${c.status}`;
    byPath.set(key, (byPath.get(key) ?? 0) + 1);
  }
  const first = (calls: { at: number }[]) => minOf(calls.map((c) => c.at));
  const last = (calls: { at: number }[]) => maxOf(calls.map((c) => c.at));
  const s = (from: number, to: number) => `${((to - from) / 1000).toFixed(1)} s`;
  const missing = expected.filter((v) => !pushed.values.has(v)).length;
  const unexpected = pushed.values.size - (ENTRIES - missing);

  out(`round: queued -> ${state!.status}${state!.error ? ` (lastError: ${state!.error})` : ''} in ${seconds.toFixed(1)} s (blocklists.updated_at)`);
  if (crmCalls.length > 0 && pushCalls.length > 0) {
    out(`  queued -> first HubSpot call: ${s(queuedAt, first(crmCalls))}`);
    out(`  reading HubSpot: ${fmt(crmCalls.length)} calls in ${s(first(crmCalls), last(crmCalls))} (first to last call)`);
    if (state!.fetched !== null) out(`  last HubSpot call -> storing transaction begins (last_fetched_at): ${s(last(crmCalls), Number(state!.fetched))}`);
    out(
      `  ${state!.fetched !== null ? 'storing transaction begins' : 'last HubSpot call'} -> first push: ${s(state!.fetched !== null ? Number(state!.fetched) : last(crmCalls), first(pushCalls))} (entries stored, push queued and picked up)`,
    );
    out(`  pushing: ${fmt(pushCalls.length)} calls in ${s(first(pushCalls), last(pushCalls))} (first to last call)`);
    out(`  last push -> SYNCED: ${s(last(pushCalls), Number(state!.updated))}`);
  }
  out(
    `CRM calls: ${fmt(crmCalls.length)} (${[...byPath]
      .sort((a, b) => b[1] - a[1])
      .map(([path, n]) => `${path} x ${fmt(n)}`)
      .join(', ')})`,
  );
  out(
    `  at HubSpot's documented ${HUBSPOT_DOCUMENTED_PER_10S} requests per 10 s, ${fmt(crmCalls.length)} calls take at least ${((crmCalls.length / HUBSPOT_DOCUMENTED_PER_10S) * 10).toFixed(0)} s (informative; this run: budget ${HUBSPOT_PER_10S > 0 ? `${HUBSPOT_PER_10S} per 10 s` : 'off'})`,
  );
  out(
    `Instantly: ${fmt(pushCalls.length)} calls (${pushCalls.map((c) => c.status).every((st) => st === 200) ? 'all 200' : `statuses ${[...new Set(pushCalls.map((c) => c.status))].join(', ')}`}, at most ${fmt(Math.max(0, maxOf(pushCalls.map((c) => c.values))))} values each), ${fmt(pushed.received.length)} values received: ${fmt(pushed.distinct)} distinct, ${fmt(pushed.duplicates)} duplicates, ${fmt(pushed.rejected.length)} in refused calls; ${fmt(missing)} of the ${fmt(ENTRIES)} addresses missing, ${fmt(unexpected)} values not among them`,
  );
  out(
    `entries in the database: ${fmt(Number(entries!.total))} (pushed ${fmt(Number(entries!.pushed))}, pending ${fmt(Number(entries!.pending))}, refused ${fmt(Number(entries!.refused))})`,
  );
  out(`cpu cores used during the round: ${cores(used)}`);
  out('');
  const line = (label: string, a: ProbeAnswer) =>
    `  ${label.padEnd(38)} n ${fmt(a.samples.length).padStart(5)}   p50 ${ms(pct(a.samples, 0.5)).padStart(6)}   p95 ${ms(pct(a.samples, 0.95)).padStart(6)}   p99 ${ms(pct(a.samples, 0.99)).padStart(6)}   max ${ms(maxOf(a.samples)).padStart(6)}   errors ${a.errors.length}`;
  out(`GET ${API_PATH}, ms:`);
  out(line(`baseline (worker idle, list empty)`, baseline));
  out(line(`during the round`, during));
  out(line(`after (list synced, worker idle)`, after));
  const p95 = { baseline: pct(baseline.samples, 0.95), during: pct(during.samples, 0.95), after: pct(after.samples, 0.95) };
  out(`  p95 during / baseline: ${ratio(p95.during, p95.baseline)}; after / baseline: ${ratio(p95.after, p95.baseline)}`);
  for (const e of [...new Set([...during.errors, ...baseline.errors, ...after.errors])].slice(0, 3)) out(`  error: ${e}`);

  if (PROFILE) {
    const top = await q<{ calls: string; total: number; mean: number; query: string }>(
      "SELECT calls, total_exec_time AS total, mean_exec_time AS mean, regexp_replace(query, '\\s+', ' ', 'g') AS query FROM pg_stat_statements ORDER BY total_exec_time DESC LIMIT 12",
    );
    out('');
    out('pg_stat_statements (since the round was queued, to the end of the probe), top by total time:');
    out('      calls   total ms   mean ms  statement');
    for (const t of top)
      out(`  ${fmt(Number(t.calls)).padStart(9)} ${fmt(Math.round(t.total)).padStart(10)} ${ms(t.mean).padStart(9)}  ${t.query.slice(0, 140)}`);
  }

  const verdict = (ok: boolean) => (ok ? 'PASS' : 'FAIL');
  const inTime = synced && seconds < TARGET.seconds;
  const exact = pushed.distinct === ENTRIES && pushed.duplicates === 0 && missing === 0 && unexpected === 0;
  const responsive = p95.during < TARGET.apiP95Ms && during.errors.length === 0;
  out('');
  out(`SYNCED with nothing pending: ${seconds.toFixed(1)} s after queuing (target < ${TARGET.seconds} s): ${verdict(inTime)}`);
  out(
    `Instantly received ${fmt(pushed.distinct)} distinct values, ${fmt(pushed.duplicates)} duplicates (target exactly ${fmt(ENTRIES)}, 0): ${verdict(exact)}`,
  );
  out(
    `API p95 during the round: ${ms(p95.during)} ms over ${fmt(during.samples.length)} requests, ${during.errors.length} errors (target < ${TARGET.apiP95Ms} ms, none): ${verdict(responsive)}`,
  );
  return inTime && exact && responsive ? 0 : 1;
}

function fixture(listId: string) {
  return {
    accounts: [
      {
        ref: 'bench',
        email: 'owner@bench.example',
        capabilities: { canUseApi: true, canUserAccount: true, canBlockList: true, canUseWebhooks: true },
        connections: [
          {
            ref: 'hs',
            crm: 'HUBSPOT',
            organizationId: 'org',
            organizationDomain: 'bench.example',
            credentials: { accessToken: TOKEN },
            blocklists: [
              {
                ref: 'list',
                listName: 'Do not contact',
                platform: 'instantly',
                blockType: 'ADDRESS',
                crmSource: { listId },
                sequencer: { apiKey: INSTANTLY_KEY },
              },
            ],
          },
        ],
        apiKeys: [{ name: 'bench reader', key: API_KEY, scopes: ['read'] }],
      },
    ],
  };
}

switch (process.argv[2]) {
  case '--worker':
    await workerRole(childSpec<WorkerSpec>(SPEC_ENV));
    break;
  case '--probe':
    await probeRole(childSpec<ProbeSpec>(SPEC_ENV));
    break;
  default:
    await runBench('bench:blocklists', run);
}
