/**
 * What every benchmark shares: a throwaway embedded PostgreSQL removed at the end (even on error or
 * Ctrl-C), a keep-alive HTTP client, percentiles and output. Results go to stdout, progress to stderr.
 */
import { chmod, mkdtemp, rm } from 'node:fs/promises';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { makeApp } from '../src/app.js';
import { DEFAULT_RETENTION, loadConfig } from '../src/config.js';
import { startEmbeddedPostgres, type EmbeddedDatabase } from '../src/db/embedded.js';
import { applyMigrations } from '../src/db/migrations.js';
import { prepareHistory } from '../src/db/history/maintain.js';
import { createPrisma, type PrismaOptions } from '../src/db/prisma.js';
import { RateLimitStore } from '../src/db/rate-limit-store.js';
import { createLogger } from '../src/logger.js';

/** PostgreSQL for a throwaway cluster: no durability, room for the working set, no autovacuum noise
 * (history generators end with VACUUM ANALYZE, so the tables are as a settled autovacuum leaves them). */
export const HISTORY_PG_SETTINGS: Record<string, string> = {
  fsync: 'off',
  synchronous_commit: 'off',
  full_page_writes: 'off',
  shared_buffers: '1GB',
  max_wal_size: '8GB',
  checkpoint_timeout: '1h',
  maintenance_work_mem: '512MB',
  autovacuum: 'off',
};
export const SHOWN_SETTINGS = [
  'server_version',
  'shared_buffers',
  'effective_cache_size',
  'work_mem',
  'max_parallel_workers_per_gather',
  'jit',
  'random_page_cost',
  'fsync',
  'synchronous_commit',
  'autovacuum',
];

/** Undone in reverse order at the end of the run, after a failure, or on SIGINT/SIGTERM. */
export const cleanups: (() => Promise<void>)[] = [];
let cleaning: Promise<void> | undefined;
let interrupted = false;

function cleanup(): Promise<void> {
  cleaning ??= (async () => {
    for (const step of cleanups.reverse()) await step().catch((error: unknown) => log(`cleanup: ${String(error)}`));
  })();
  return cleaning;
}

/** Runs a benchmark's body: its return value is the exit code; everything registered is cleaned up. */
export async function runBench(name: string, body: () => Promise<number>): Promise<void> {
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.on(signal, () => {
      interrupted = true;
      log(`${signal}: stopping PostgreSQL and removing the data directory`);
      void cleanup().then(() => process.exit(130));
    });
  }
  try {
    process.exitCode = await body();
  } catch (error) {
    // After a signal, whatever was in flight fails as the database goes away: not worth reporting.
    if (!interrupted) log(`${name} failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`);
    process.exitCode = 1;
  } finally {
    await cleanup();
  }
}

/** A migrated embedded PostgreSQL in a temp folder, stopped and removed by the cleanups. */
export async function throwawayDatabase(settings: Record<string, string> = {}): Promise<EmbeddedDatabase> {
  const dataDir = await mkdtemp(path.join(os.tmpdir(), 'pss-bench-'));
  cleanups.push(() => rm(dataDir, { recursive: true, force: true }));
  // As root PostgreSQL runs as `postgres`, which must reach the directory.
  await chmod(dataDir, 0o755);
  log(`starting a throwaway embedded PostgreSQL in ${dataDir}`);
  const db = await startEmbeddedPostgres({ dataDir, settings });
  cleanups.push(() => db.stop());
  await applyMigrations(db.url);
  // As a process does before it serves: the history tables on their time partitions (issue 31).
  await prepareHistory(db.url, { retention: DEFAULT_RETENTION });
  return db;
}

/** GETs over one keep-alive connection; anything but a 200 is an error. */
export interface BenchApp {
  port: number;
  close(): Promise<void>;
}

/**
 * The real app on 127.0.0.1:0, wired as src/main.ts wires it (heavy reads on their own pool, cancelled
 * by PostgreSQL past QUERY_TIMEOUT_MS; the rate limiters on their own pool), logging nothing. The
 * limiters run (their cost is part of every request) with limits no run reaches, unless `env` says else.
 */
export async function startBenchApp(
  databaseUrl: string,
  encryptionKey: Buffer,
  env: Record<string, string> = {},
  prismaOptions: PrismaOptions = {},
): Promise<BenchApp> {
  const config = loadConfig({
    DATABASE_URL: databaseUrl,
    ENCRYPTION_KEY: encryptionKey.toString('hex'),
    LOG_LEVEL: 'silent',
    BASE_URL: 'http://127.0.0.1',
    RATE_LIMIT_PER_IP: '1000000000',
    RATE_LIMIT_PER_ACCOUNT: '1000000000',
    RATE_LIMIT_OUTREACH: '1000000000',
    ...env,
  });
  const prisma = createPrisma(databaseUrl, prismaOptions);
  const heavyPrisma = createPrisma(databaseUrl, { ...prismaOptions, statementTimeoutMs: config.queryTimeoutMs, max: 5 });
  const rateLimits = new RateLimitStore(databaseUrl);
  const app = makeApp({ config, prisma, heavyPrisma, rateLimits, logger: createLogger('silent', process.stderr), encryptionKey });
  const server: http.Server = await new Promise((resolve, reject) => {
    const s = app.listen(0, '127.0.0.1', (error?: Error) => (error ? reject(error) : resolve(s)));
  });
  return {
    port: (server.address() as AddressInfo).port,
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await Promise.all([prisma.$disconnect(), heavyPrisma.$disconnect(), rateLimits.close()]);
    },
  };
}

/** GETs over one keep-alive connection; anything but a 200 is an error. */
export class ApiClient {
  private readonly agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  constructor(
    private readonly port: number,
    private readonly key: string,
  ) {}

  get(pathAndQuery: string): Promise<{ body: string }> {
    return new Promise((resolve, reject) => {
      const req = http.request(
        { host: '127.0.0.1', port: this.port, path: pathAndQuery, agent: this.agent, headers: { authorization: `Bearer ${this.key}` } },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (chunk: Buffer) => chunks.push(chunk));
          res.on('error', reject);
          res.on('end', () => {
            const body = Buffer.concat(chunks).toString('utf8');
            if (res.statusCode !== 200) reject(new Error(`GET ${pathAndQuery.split('?')[0]}: ${res.statusCode} ${body.slice(0, 300)}`));
            else resolve({ body });
          });
        },
      );
      req.on('error', reject);
      req.end();
    });
  }

  close(): void {
    this.agent.destroy();
  }
}

export async function withClient<T>(url: string, use: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return await use(client);
  } finally {
    await client.end();
  }
}

/**
 * `Math.min(...values)` for any number of values: spreading a large array into arguments overflows the
 * stack (a 150,000-row report did). Same answers: Infinity when empty, NaN if any value is NaN.
 */
export function minOf(values: Iterable<number>): number {
  let min = Number.POSITIVE_INFINITY;
  for (const v of values) min = Math.min(min, v);
  return min;
}

/** `Math.max(...values)` for any number of values (see {@link minOf}): -Infinity when empty, NaN if any value is NaN. */
export function maxOf(values: Iterable<number>): number {
  let max = Number.NEGATIVE_INFINITY;
  for (const v of values) max = Math.max(max, v);
  return max;
}

export function pct(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(p * sorted.length) - 1))] ?? Number.NaN;
}

export function ms(value: number): string {
  return value >= 100 ? value.toFixed(0) : value.toFixed(2);
}

export function ratio(a: number, b: number): string {
  return `${(a / b).toFixed(2)}x`;
}

export function fmt(n: number): string {
  return n.toLocaleString('en-US');
}

export function envNumber(name: string, fallback: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  const n = Number(raw);
  if (!Number.isFinite(n) || n <= 0) throw new Error(`${name} must be a number above 0`);
  return n;
}

/** Results on stdout; progress on stderr. */
export function out(line: string): void {
  process.stdout.write(`${line}\n`);
}

export function log(line: string): void {
  process.stderr.write(`${line}\n`);
}
