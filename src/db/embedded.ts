import { createHash, randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { chmod, chown, mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import net from 'node:net';
import path from 'node:path';
import pg from 'pg';
import { firstUnreachable, initCluster, isRoot, runAsIds, startServer, SUPERUSER } from './postgres-process.js';
import { query, sql } from './sql.js';

/** A running embedded PostgreSQL cluster, started by this process or by another one on the same data dir. */
export interface EmbeddedDatabase {
  /** Connection URL of the service's database on this cluster. */
  url: string;
  port: number;
  /** True when this process started the cluster (and so must stop it). */
  owned: boolean;
  /** Where the cluster's files are (see {@link clusterDirFor}). */
  clusterDir: string;
  stop(): Promise<void>;
}

export interface EmbeddedOptions {
  dataDir: string;
  /** Extra `postgres -c` settings, e.g. `fsync=off` for throwaway test clusters. */
  settings?: Record<string, string>;
  database?: string;
}

const DEFAULT_DATABASE = 'pipeline_sync';
const USER = SUPERUSER;

/**
 * Starts the embedded PostgreSQL under `dataDir/postgres` (creating the cluster on first use) and makes
 * sure the service database exists.
 * @throws when another process already runs a cluster on this data dir, or PostgreSQL cannot reach it.
 */
export async function startEmbeddedPostgres(options: EmbeddedOptions): Promise<EmbeddedDatabase> {
  const clusterDir = clusterDirFor(options.dataDir);
  const running = await findRunningCluster(options);
  if (running) {
    const isOurs = await isPostgresOf(running.pid, clusterDir);
    if (isOurs === false) {
      // The pid file is stale and its pid now belongs to an unrelated process: never signal it.
      await rm(path.join(clusterDir, 'postmaster.pid'), { force: true });
    } else if (isOurs === true && !(await ownerIsAlive(options.dataDir))) {
      // Left behind by a process that died without stopping it (SIGKILL, power loss of the parent).
      await stopOrphan(running.pid);
    } else {
      throw new Error(
        `An embedded PostgreSQL (pid ${running.pid}) already runs on ${clusterDir}: another "npm start" uses this DATA_DIR. ` +
          'Stop it first, or run "npm run api" / "npm run worker" to join it.',
      );
    }
  }
  const secrets = await readLocalSecrets(options.dataDir);
  await prepareDirectory(clusterDir);
  if (!existsSync(path.join(clusterDir, 'PG_VERSION'))) await initCluster(clusterDir, secrets.postgresPassword);
  const server = await startServer({
    clusterDir,
    port: await freePort(),
    password: secrets.postgresPassword,
    logFile: path.join(options.dataDir, 'postgres.log'),
    settings: {
      listen_addresses: '127.0.0.1',
      // No Unix socket: its default directory may not exist or be writable here.
      unix_socket_directories: '',
      ...options.settings,
    },
  });
  await writeFile(ownerFile(options.dataDir), String(process.pid));
  const port = server.port;
  const database = options.database ?? DEFAULT_DATABASE;
  await ensureDatabase(port, secrets.postgresPassword, database).catch(async (error: unknown) => {
    await server.stop();
    throw error;
  });
  return {
    url: connectionUrl(port, secrets.postgresPassword, database),
    port,
    owned: true,
    clusterDir,
    stop: () => server.stop(),
  };
}

/**
 * Joins the embedded cluster another process runs on `dataDir`, if there is one.
 * Its `stop()` does nothing: the cluster belongs to the other process.
 */
export async function attachEmbeddedPostgres(options: EmbeddedOptions): Promise<EmbeddedDatabase | undefined> {
  const running = await findRunningCluster(options);
  if (!running) return undefined;
  const secrets = await readLocalSecrets(options.dataDir);
  const database = options.database ?? DEFAULT_DATABASE;
  return {
    url: connectionUrl(running.port, secrets.postgresPassword, database),
    port: running.port,
    owned: false,
    clusterDir: clusterDirFor(options.dataDir),
    stop: async () => {},
  };
}

/** Joins a running embedded cluster on `dataDir`, or starts one (which the caller then stops). */
export async function attachOrStartEmbeddedPostgres(options: EmbeddedOptions): Promise<EmbeddedDatabase> {
  return (await attachEmbeddedPostgres(options)) ?? (await startEmbeddedPostgres(options));
}

/** Secrets the embedded default keeps under DATA_DIR: the cluster password and the encryption key. */
export interface LocalSecrets {
  postgresPassword: string;
  encryptionKey: Buffer;
}

/** Reads `DATA_DIR/local-secrets.json`, creating it (mode 0600) with fresh random values on first use. */
export async function readLocalSecrets(dataDir: string): Promise<LocalSecrets> {
  const file = path.join(dataDir, 'local-secrets.json');
  if (!existsSync(file)) {
    await mkdir(dataDir, { recursive: true });
    const fresh = { postgresPassword: randomBytes(24).toString('hex'), encryptionKey: randomBytes(32).toString('base64') };
    // `wx` fails if a concurrent first start wrote it meanwhile; then we read theirs below.
    await writeFile(file, JSON.stringify(fresh, null, 2), { mode: 0o600, flag: 'wx' }).catch((error: NodeJS.ErrnoException) => {
      if (error.code !== 'EEXIST') throw error;
    });
  }
  const stored = JSON.parse(await readFile(file, 'utf8')) as { postgresPassword: string; encryptionKey: string };
  return { postgresPassword: stored.postgresPassword, encryptionKey: Buffer.from(stored.encryptionKey, 'base64') };
}

async function findRunningCluster(options: EmbeddedOptions): Promise<{ pid: number; port: number } | undefined> {
  const pidFile = path.join(clusterDirFor(options.dataDir), 'postmaster.pid');
  if (!existsSync(pidFile)) return undefined;
  // postmaster.pid: line 1 the pid, line 4 the port (PostgreSQL's documented layout).
  const lines = (await readFile(pidFile, 'utf8')).split('\n');
  const pid = Number(lines[0]);
  const port = Number(lines[3]);
  if (!Number.isInteger(pid) || !Number.isInteger(port) || !isAlive(pid)) return undefined;
  return { pid, port };
}

function ownerFile(dataDir: string): string {
  return path.join(dataDir, 'postgres.owner');
}

/** Whether the process that started the running cluster still exists. */
async function ownerIsAlive(dataDir: string): Promise<boolean> {
  const owner = Number(await readFile(ownerFile(dataDir), 'utf8').catch(() => ''));
  return Number.isInteger(owner) && owner > 0 && owner !== process.pid && isAlive(owner);
}

/**
 * Whether `pid` really is the postmaster of `clusterDir` (undefined where that cannot be told): a stale
 * postmaster.pid can name any process by now, and we must never signal a stranger.
 */
async function isPostgresOf(pid: number, clusterDir: string): Promise<boolean | undefined> {
  if (!existsSync('/proc/self/cmdline')) return undefined; // cannot tell without /proc: assume it may be
  const cmdline = await readFile(`/proc/${pid}/cmdline`, 'utf8').catch(() => '');
  const argv = cmdline.split('\0');
  const dataDirArg = argv.indexOf('-D');
  return path.basename(argv[0] ?? '') === 'postgres' && dataDirArg > 0 && path.resolve(argv[dataDirArg + 1] ?? '') === path.resolve(clusterDir);
}

async function stopOrphan(pid: number): Promise<void> {
  signal(pid, 'SIGINT'); // PostgreSQL's "fast" shutdown: roll back open transactions, checkpoint, exit.
  for (let waited = 0; isAlive(pid); waited += 100) {
    if (waited > 30_000) throw new Error(`A PostgreSQL left running on this DATA_DIR (pid ${pid}) did not stop`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

function signal(pid: number, name: NodeJS.Signals): void {
  try {
    process.kill(pid, name);
  } catch {
    // Already gone.
  }
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * Where the cluster of `dataDir` lives: `dataDir/postgres`, except as root when the `postgres` user cannot
 * reach `dataDir` (a checkout under /root or a `mktemp -d` folder): then under /var/lib/pipeline-sync, in
 * a folder named after `dataDir`, so that `npm start` still just works and each DATA_DIR keeps its own.
 */
export function clusterDirFor(dataDir: string): string {
  const resolved = path.resolve(dataDir);
  if (!isRoot() || !firstUnreachable(resolved)) return path.join(resolved, 'postgres');
  const id = createHash('sha256').update(resolved).digest('hex').slice(0, 16);
  return path.join(RELOCATED_ROOT, id, 'postgres');
}

/** Root's home for clusters whose DATA_DIR the postgres user cannot reach. */
const RELOCATED_ROOT = '/var/lib/pipeline-sync';

/**
 * As root, PostgreSQL runs as `postgres`, which must reach the cluster directory through every parent:
 * say so plainly instead of letting initdb fail obscurely.
 */
async function prepareDirectory(clusterDir: string): Promise<void> {
  // Parents (DATA_DIR itself, or the relocated folder) stay searchable; the cluster itself is private.
  await mkdir(path.dirname(clusterDir), { recursive: true, mode: 0o755 });
  await mkdir(clusterDir, { recursive: true, mode: 0o700 });
  if (!isRoot()) return;
  const blocked = firstUnreachable(path.dirname(clusterDir));
  if (blocked) {
    throw new Error(
      `PostgreSQL runs as the "${USER}" user and cannot reach ${clusterDir}: ${blocked} is not searchable by other users. ` +
        `Set DATA_DIR to a directory it can reach, or run: chmod o+x ${blocked}`,
    );
  }
  const ids = await runAsIds();
  if (ids) {
    await chown(clusterDir, ids.uid, ids.gid);
    await chmod(clusterDir, 0o700);
  }
}

async function ensureDatabase(port: number, password: string, database: string): Promise<void> {
  const client = new pg.Client({ host: '127.0.0.1', port, user: USER, password, database: 'postgres' });
  await client.connect();
  try {
    const { rowCount } = await query(client, sql`SELECT 1 FROM pg_database WHERE datname = ${database}`);
    if (rowCount === 0) {
      await client.query(`CREATE DATABASE ${pg.escapeIdentifier(database)}`).catch((error: { code?: string }) => {
        if (error.code !== '42P04') throw error; // created meanwhile by a concurrent start
      });
    }
  } finally {
    await client.end();
  }
}

function connectionUrl(port: number, password: string, database: string): string {
  return `postgres://${USER}:${encodeURIComponent(password)}@127.0.0.1:${port}/${encodeURIComponent(database)}`;
}

/** A port nothing listens on right now, on loopback. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.unref();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });
}
