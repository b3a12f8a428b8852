/**
 * What the benches that run the service as separate processes share: child processes (this bench's own
 * roles, or src/main.ts), the worker role, CPU per process group from /proc, and the load's bodies.
 */
import { CRM_KINDS, type CrmKind } from '../src/connectors/crm/kinds.js';
import type { Result } from 'autocannon';
import { spawn, type ChildProcess } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import os from 'node:os';
import readline from 'node:readline';
import pg from 'pg';
import type { BlocklistConfig, ForwardingConfig, WebhookConfig } from '../src/config.js';
import { parseInbound } from '../src/connectors/sequencers/index.js';
import { freePort } from '../src/db/embedded.js';
import { createLogger } from '../src/logger.js';
import { startWorker, WORKER_APPLICATION_NAME, workerPoolSize, workerSettings } from '../src/worker.js';
import { cleanups, fmt, log, pct } from './support.js';

export interface LoadSpec {
  port: number;
  requests: { path: string; body: string }[];
  /** Replace `[<id>]` in bodies with a unique id per request. */
  idReplacement?: boolean;
  duration?: number;
  amount?: number;
}

export interface LoadResult {
  startedAt: number;
  seconds: number;
  ok: number;
  non2xx: number;
  errors: number;
  timeouts: number;
  rps: number;
  p50: number;
  p99: number;
}

export interface WorkerSpec {
  url: string;
  concurrency: number;
  /** Each CRM's base URL (HUBSPOT_BASE_URL, SALESFORCE_LOGIN_URL, ...), by kind; a CRM left out: nowhere (none of its connections is synced). */
  crmUrls: Partial<Record<CrmKind, string>>;
  forwarding?: ForwardingConfig;
  webhooks?: WebhookConfig;
  /** Where block lists are pushed (SMARTLEAD_BASE_URL, INSTANTLY_BASE_URL, ... by platform) and BLOCKLIST_REFRESH_MINUTES; unset: the vendors' APIs. */
  blocklists?: BlocklistConfig;
  /** The CRM budgets of connections that name none (HUBSPOT_REQUESTS_PER_10S, SALESFORCE_MAX_CONCURRENCY); unset: the defaults. */
  crmBudgets?: Record<CrmKind, number>;
}

/**
 * Starts `node --import tsx <args>` as a child named `name`; with `profile` (a folder), with a CPU profile
 * written below it. Stopped by the bench's cleanups.
 */
export function startChild(name: string, args: string[], env: Record<string, string>, options: { echo?: boolean; profile?: string } = {}): Child {
  const profile = options.profile ? ['--cpu-prof', `--cpu-prof-dir=${options.profile}/${name}`] : [];
  const proc = spawn(process.execPath, [...profile, '--import', 'tsx', ...args], { env: { ...process.env, ...env }, stdio: ['pipe', 'pipe', 'pipe'] });
  const child = new Child(name, proc, options.echo ?? true);
  cleanups.push(() => child.stop());
  return child;
}

/**
 * `src/main.ts api` in its own process on a free loopback port, as production runs the API: the
 * benches' ingress and REST under test. `env` adds to (or overrides) the service's settings; `name`
 * labels its log lines (default `api`).
 */
export async function startApiChild(
  databaseUrl: string,
  encryptionKey: Buffer,
  options: { env?: Record<string, string>; profile?: string | undefined; name?: string } = {},
): Promise<{ api: Child; port: number }> {
  const port = await freePort();
  const env = {
    DATABASE_URL: databaseUrl,
    ENCRYPTION_KEY: encryptionKey.toString('hex'),
    PORT: String(port),
    HOST: '127.0.0.1',
    BASE_URL: `http://127.0.0.1:${port}`,
    LOG_LEVEL: 'warn',
    ...options.env,
  };
  return { api: startChild(options.name ?? 'api', ['src/main.ts', 'api'], env, options.profile ? { profile: options.profile } : {}), port };
}

/** Sends one command line (JSON) to a role reading stdin and reads its one-line JSON answer. */
export async function ask<T>(child: Child, command: unknown): Promise<T> {
  child.proc.stdin!.write(`${JSON.stringify(command)}\n`);
  return JSON.parse(await child.next(/^\{/)) as T;
}

/** `--load`: one autocannon run per line of stdin, its result as one JSON line (an `ask` answers it). */
export async function loadRole(connections: number): Promise<void> {
  const { default: autocannon } = await import('autocannon');
  for await (const line of readline.createInterface({ input: process.stdin })) {
    const spec = JSON.parse(line) as LoadSpec;
    const latencies: number[] = [];
    const startedAt = Date.now();
    const result = await new Promise<Result>((resolve, reject) => {
      const run = autocannon(
        {
          url: `http://127.0.0.1:${spec.port}`,
          connections,
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          requests: spec.requests.map((r) => ({ method: 'POST', path: r.path, body: r.body })),
          ...(spec.amount ? { amount: spec.amount } : { duration: spec.duration }),
          idReplacement: spec.idReplacement === true,
          timeout: 60,
        },
        (error, done) => (error ? reject(error as Error) : resolve(done)),
      );
      run.on('response', (_client, status, _bytes, took) => {
        if (status >= 200 && status < 300) latencies.push(took);
      });
    });
    const seconds = (Date.now() - startedAt) / 1000;
    const answer: LoadResult = {
      startedAt,
      seconds,
      ok: result['2xx'],
      non2xx: result.non2xx,
      errors: result.errors,
      timeouts: result.timeouts,
      rps: result['2xx'] / seconds,
      p50: pct(latencies, 0.5),
      p99: pct(latencies, 0.99),
    };
    process.stdout.write(`${JSON.stringify(answer)}\n`);
  }
}

/** The spec the parent process passed to this child role (JSON in the environment variable `name`). */
export const childSpec = <T>(name: string): T => JSON.parse(process.env[name] ?? '{}') as T;

export class Child {
  private readonly lines: string[] = [];
  private wake: () => void = () => {};
  readonly exited: Promise<number | null>;

  constructor(
    readonly name: string,
    readonly proc: ChildProcess,
    echo: boolean,
  ) {
    readline.createInterface({ input: proc.stdout! }).on('line', (line) => {
      if (echo) log(`[${name}] ${line}`);
      this.lines.push(line);
      this.wake();
    });
    proc.stderr!.on('data', (chunk: Buffer) => process.stderr.write(`[${name}] ${chunk.toString()}`));
    this.exited = new Promise((resolve) => proc.on('exit', (code) => (resolve(code), this.wake())));
  }

  /** The next line of stdout (earlier lines not matching `pattern` are skipped). */
  async next(pattern = /.*/): Promise<string> {
    for (;;) {
      const line = this.lines.shift();
      if (line !== undefined && pattern.test(line)) return line;
      if (line !== undefined) continue;
      if (this.proc.exitCode !== null || this.proc.signalCode !== null) throw new Error(`${this.name} exited (${this.proc.exitCode ?? this.proc.signalCode})`);
      await new Promise<void>((resolve) => (this.wake = resolve));
    }
  }

  async stop(): Promise<void> {
    if (this.proc.exitCode === null && this.proc.signalCode === null) this.proc.kill('SIGTERM');
    await this.exited;
  }
}

/** `--worker`: the real worker, wired as src/main.ts wires it (its pool, startWorker with its runners). */
export async function workerRole(spec: WorkerSpec): Promise<void> {
  const settings = workerSettings(spec.concurrency);
  const pool = new pg.Pool({ connectionString: spec.url, max: workerPoolSize(settings), application_name: WORKER_APPLICATION_NAME });
  const logger = createLogger('warn', process.stderr);
  pool.on('error', (error) => logger.warn({ err: error }, 'idle worker connection failed'));
  pool.on('connect', (client) => client.on('error', (error) => logger.warn({ err: error }, 'worker connection failed')));
  const crm = {
    urls: Object.fromEntries(CRM_KINDS.map((kind) => [kind, spec.crmUrls[kind] ?? 'http://127.0.0.1:9'])) as Record<CrmKind, string>,
    outboundAllowPrivate: true,
    ...(spec.crmBudgets ? { budgets: spec.crmBudgets } : {}),
  };
  const runner = await startWorker(
    pool,
    logger,
    {
      crm,
      outboundAllowPrivate: true,
      ...(spec.forwarding ? { forwarding: spec.forwarding } : {}),
      ...(spec.webhooks ? { webhooks: spec.webhooks } : {}),
      ...(spec.blocklists ? { blocklists: spec.blocklists } : {}),
      encryptionKey: Buffer.from(process.env.ENCRYPTION_KEY ?? '', 'hex'),
    },
    settings,
  );
  process.on(
    'SIGTERM',
    () =>
      void runner
        .stop()
        .then(() => pool.end())
        .then(() => process.exit(0)),
  );
  process.stdout.write('ready\n');
}

export async function untilLive(port: number, child: Child): Promise<void> {
  const deadline = Date.now() + 60_000;
  for (;;) {
    const status = await fetch(`http://127.0.0.1:${port}/health/live`).then(
      (r) => r.status,
      () => 0,
    );
    if (status === 200) return;
    if (child.proc.exitCode !== null || Date.now() > deadline) throw new Error(`${child.name} did not come up on port ${port}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

/** The sample with its lead's email (the parsed identity, in any case) turned into a per-request unique one. */
export function withUniqueLead(body: string): string {
  const parsed = parseInbound('smartlead', body);
  const email = parsed.ok ? parsed.event.contact.email : null;
  if (!email) throw new Error('every Smartlead sample names its lead by email');
  return body.replace(new RegExp(email.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'), 'gi'), 'lead-[<id>]@prospect.test');
}

// ------------------------------------------------------------------------------------------------
// CPU per process group, from /proc (clock ticks of 10 ms).

function procTicks(pid: number): { ticks: number; ppid: number } | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return { ticks: Number(f[11]) + Number(f[12]), ppid: Number(f[1]) };
  } catch {
    return undefined;
  }
}

/** user nice system idle iowait irq softirq steal: busy excludes idle, iowait and steal (time the VM's host took). */
function machineTicks(): { busy: number; steal: number; total: number } {
  const f = readFileSync('/proc/stat', 'utf8').split('\n')[0]!.trim().split(/\s+/).slice(1, 9).map(Number);
  const total = f.reduce((a, b) => a + b, 0);
  return { busy: total - f[3]! - f[4]! - f[7]!, steal: f[7]!, total };
}

export type Groups = Record<string, () => number[]>;

/** Cores used per group (and by the whole machine) between start() and the returned stop(). */
export function cpuMeter(groups: Groups): () => Record<string, number> {
  const sample = () => Object.fromEntries(Object.entries(groups).map(([name, pids]) => [name, new Map(pids().map((p) => [p, procTicks(p)?.ticks ?? 0]))]));
  const [start, machine, at] = [sample(), machineTicks(), performance.now()];
  return () => {
    const end = sample();
    const seconds = (performance.now() - at) / 1000;
    const used: Record<string, number> = {};
    for (const [name, pids] of Object.entries(end)) {
      let ticks = 0;
      for (const [pid, t] of pids) ticks += t - (start[name]?.get(pid) ?? 0);
      used[name] = ticks / 100 / seconds;
    }
    const ours = Object.values(used).reduce((sum, v) => sum + v, 0);
    const m = machineTicks();
    used.machine = ((m.busy - machine.busy) / (m.total - machine.total)) * os.cpus().length;
    used.steal = ((m.steal - machine.steal) / (m.total - machine.total)) * os.cpus().length;
    // Everything else on the machine (other people's work, the kernel): this run competed with it.
    used.others = Math.max(0, used.machine - ours);
    return used;
  };
}

export function postgresPids(postmaster: number): number[] {
  const pids = readdirSync('/proc')
    .filter((d) => /^\d+$/.test(d))
    .map(Number);
  return [postmaster, ...pids.filter((p) => procTicks(p)?.ppid === postmaster)];
}

export const cores = (used: Record<string, number>) =>
  Object.entries(used)
    .map(([k, v]) => `${k} ${v.toFixed(2)}`)
    .join(', ');

/**
 * Polls `counts` once a second (the figures themselves come from the rows' times) until the load is
 * `pushed` and every accepted event is recorded, logging progress every 5 s; gives up when nothing was
 * recorded for `stallMs`, saying why with `stalled()`. `onPoll` sees each count (what was recorded when
 * the push ended, say).
 */
export async function untilRecorded(options: {
  counts: () => Promise<{ accepted: number; recorded: number }>;
  pushed: () => boolean;
  stallMs: number;
  stalled?: () => Promise<string>;
  onPoll?: (recorded: number) => void;
}): Promise<void> {
  let [done, lastChange, lastLog] = [-1, Date.now(), Date.now()];
  for (;;) {
    await new Promise((r) => setTimeout(r, 1_000));
    const { accepted, recorded } = await options.counts();
    options.onPoll?.(recorded);
    if (recorded !== done) [done, lastChange] = [recorded, Date.now()];
    if (Date.now() - lastLog > 5_000) {
      lastLog = Date.now();
      log(`  accepted ${fmt(accepted)}, recorded ${fmt(recorded)}`);
    }
    if (options.pushed() && recorded >= accepted) return;
    if (Date.now() - lastChange > options.stallMs) {
      log(`  no sync recorded for ${options.stallMs / 1000} s: giving up${options.stalled ? ` (${await options.stalled()})` : ''}`);
      return;
    }
  }
}
