import { execFile, spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEMO_FIXTURE } from '../../src/admin/demo.js';
import { parseFixture } from '../../src/admin/fixture.js';
import { clusterDirFor } from '../../src/db/embedded.js';
import { createTestDatabase, TEST_ENCRYPTION_KEY, type TestDatabase } from '../support/database.js';
import { apiFetch } from '../support/openapi.js';
import { childEnv, tsxCommand } from '../support/processes.js';
import { freePort, reachableTempDir, startService } from '../support/service-process.js';

const run = promisify(execFile);

/**
 * What the first `npm start` loads and announces. Read here rather than copied, so the demo can change
 * without breaking these tests. The banner shows the first account's first written, unrevoked key and
 * its first connection's first source (src/admin/demo.ts).
 */
const demo = parseFixture(JSON.parse(readFileSync(DEMO_FIXTURE, 'utf8')));
const demoKey = demo.accounts[0]?.apiKeys.find((k) => k.key !== undefined && !k.revoked)?.key;
const demoIngressCode = demo.accounts[0]?.connections[0]?.sources[0]?.ingressCode;

function admin(env: Record<string, string>, ...args: string[]) {
  const [command, argv] = tsxCommand('src/admin/cli.ts', ...args);
  return run(command, argv, { env: childEnv(env) });
}

function postmasterPid(dataDir: string): Promise<number> {
  return readFile(path.join(dataDir, 'postgres', 'postmaster.pid'), 'utf8').then((text) => Number(text.split('\n')[0]));
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

describe('npm start on the embedded PostgreSQL', () => {
  let dataDir: string;
  let env: Record<string, string>;

  beforeAll(async () => {
    dataDir = await reachableTempDir('pss-start-');
    env = { DATA_DIR: dataDir, PORT: String(await freePort()), HOST: '127.0.0.1', LOG_LEVEL: 'warn' };
  });
  afterAll(async () => {
    await rm(dataDir, { recursive: true, force: true });
  });

  it('first start: migrates, loads the demo, prints the key, ingress URL and curl lines, serves, and stops in order on SIGTERM', async () => {
    const service = startService('all', { ...env, LOG_LEVEL: 'info' });
    try {
      await service.waitFor('curl -s');
      const base = `http://localhost:${env.PORT}`;
      expect(demoKey, 'fixtures/demo.json gives its first account a written key for the banner').toMatch(/^svcapi_/);
      expect(demoIngressCode, 'fixtures/demo.json gives its first source an ingress code for the banner').toEqual(expect.any(String));
      expect(service.stdout()).toContain(`Pipeline Sync Service is listening on ${base}`);
      expect(service.stdout()).toContain(`Demo API key:        ${demoKey}`);
      expect(service.stdout()).toContain(`Demo ingress URL:    ${base}/webhooks/${demoIngressCode}`);
      expect(service.stdout()).toContain(`curl -s ${base}/health`);
      expect(service.stdout()).toContain(`curl -s ${base}/api/v1/me -H "Authorization: Bearer ${demoKey}"`);
      // The printed API line works as printed.
      const me = await apiFetch(`http://127.0.0.1:${env.PORT}/api/v1/me`, { headers: { authorization: `Bearer ${demoKey}` } });
      expect(me.status).toBe(200);

      const health = await apiFetch(`http://127.0.0.1:${env.PORT}/health/ready`);
      expect(health.body).toMatchObject({ status: 'operational' });

      // The admin CLI joins the running cluster.
      const { stdout } = await admin(env, 'list-accounts');
      expect(JSON.parse(stdout).map((a: { email: string | null }) => a.email)).toEqual(demo.accounts.map((a) => a.email));
    } finally {
      const code = await service.stop('SIGTERM');
      expect(code).toBe(0);
    }
    expect(service.stderr()).not.toMatch(/\n\s+at /);
    expect(existsSync(path.join(dataDir, 'postgres', 'postmaster.pid'))).toBe(false);
    // In order: HTTP first, then the worker, then the database.
    const steps = [...service.stdout().matchAll(/"step":"([^"]+)","msg":"stopped"/g)].map((m) => m[1]);
    expect(steps).toEqual(['http', 'ingress pool', 'rate-limit pool', 'heavy-read prisma', 'worker', 'worker pool', 'prisma', 'database']);
  });

  it('Ctrl-C on `npm start` in a terminal (SIGINT to the whole group, relayed again by npm) stops cleanly', async () => {
    // Setup: `npm start` in its own process group, as a terminal runs it
    const child = spawn('npm', ['start'], { env: childEnv({ ...env, LOG_LEVEL: 'info' }), detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (out += chunk.toString()));
    // npm itself dies of the signal (as it should); the service is done when its output closes.
    const closed = new Promise<void>((resolve) => child.on('close', () => resolve()));
    for (let waited = 0; !out.includes('curl -s') && waited < 45_000; waited += 100) await new Promise((r) => setTimeout(r, 100));
    // Action
    process.kill(-child.pid!, 'SIGINT');
    // Assertions
    await closed;
    expect(out).not.toContain('second signal');
    expect(out).toMatch(/"msg":"stopped"}\s*$/);
    expect(out).toMatch(/"step":"database","msg":"stopped"/);
    expect(existsSync(path.join(dataDir, 'postgres', 'postmaster.pid'))).toBe(false);
  });

  it('second start: reuses the data, does not seed twice, never signals a stranger named by a stale postmaster.pid, refuses another start meanwhile; Ctrl-C (SIGINT) stops it', async () => {
    // Setup: a leftover postmaster.pid naming a live process that is not PostgreSQL
    const stranger = spawn('sleep', ['60']);
    await writeFile(path.join(dataDir, 'postgres', 'postmaster.pid'), `${stranger.pid}\n${dataDir}/postgres\n0\n5432\n`);
    try {
      // Action: the stale file is set aside and the service starts
      const service = startService('all', env);
      try {
        await service.waitFor('curl -s');
        expect(alive(stranger.pid!)).toBe(true);
        const { stdout } = await admin(env, 'list-accounts');
        expect(JSON.parse(stdout)).toHaveLength(demo.accounts.length);
        // Another npm start on the same DATA_DIR while this one runs is refused.
        const second = startService('all', { ...env, PORT: String(await freePort()) });
        expect(await second.exited).toBe(1);
        expect(second.stderr()).toContain('another "npm start" uses this DATA_DIR');
      } finally {
        expect(await service.stop('SIGINT')).toBe(0);
      }
      expect(service.stderr()).not.toMatch(/\n\s+at /);
      expect(alive(stranger.pid!)).toBe(true);
    } finally {
      stranger.kill();
    }
  });

  it('recovers the PostgreSQL a killed npm start left behind', async () => {
    const killed = startService('all', env);
    await killed.waitFor('curl -s');
    const orphan = await postmasterPid(dataDir);
    await killed.stop('SIGKILL');
    expect(alive(orphan)).toBe(true);

    const next = startService('all', env);
    try {
      await next.waitFor('curl -s');
      expect(alive(orphan)).toBe(false);
    } finally {
      expect(await next.stop()).toBe(0);
    }
  });

  it('the admin CLI starts the cluster briefly when nothing runs, and leaves none behind', async () => {
    const { stdout } = await admin(env, 'create-key', '--account', '1', '--name', 'ci', '--scopes', 'read,write');
    expect(JSON.parse(stdout)).toMatchObject({ accountId: 1, name: 'ci', scopes: ['read', 'write'], key: expect.stringMatching(/^svcapi_/) });
    expect(existsSync(path.join(dataDir, 'postgres', 'postmaster.pid'))).toBe(false);
  });
});

describe.runIf(process.getuid?.() === 0)('npm start as root with a DATA_DIR the postgres user cannot reach', () => {
  it('keeps the cluster under /var/lib/pipeline-sync and still starts', async () => {
    const privateDir = await mkdtemp(path.join(os.tmpdir(), 'pss-private-')); // mode 0700, like mktemp -d
    const dataDir = path.join(privateDir, '.data');
    const clusterDir = clusterDirFor(dataDir);
    const service = startService('all', { DATA_DIR: dataDir, PORT: String(await freePort()), HOST: '127.0.0.1', LOG_LEVEL: 'info' });
    try {
      await service.waitFor('curl -s');
      expect(clusterDir).toMatch(/^\/var\/lib\/pipeline-sync\/[0-9a-f]{16}\/postgres$/);
      expect(existsSync(path.join(clusterDir, 'PG_VERSION'))).toBe(true);
      expect(service.stdout()).toContain(`cluster in ${clusterDir}`);
    } finally {
      expect(await service.stop()).toBe(0);
      await rm(privateDir, { recursive: true, force: true });
      await rm(path.dirname(clusterDir), { recursive: true, force: true });
    }
  });
});

describe('start-up errors', () => {
  it('a bad variable stops the start with a clear message and no stack trace', async () => {
    const service = startService('all', { PORT: 'abc', LOG_LEVEL: 'loud', DATA_DIR: '/nonexistent' });
    expect(await service.exited).toBe(1);
    expect(service.stderr()).toContain('Could not start: Invalid configuration:');
    expect(service.stderr()).toContain('PORT: must be a whole number');
    expect(service.stderr()).toContain('LOG_LEVEL: must be one of fatal, error, warn, info, debug, trace, silent');
    expect(service.stderr()).not.toMatch(/\n\s+at /);
  });

  it('npm run api without DATABASE_URL and no running npm start says what to do', async () => {
    const dir = await reachableTempDir('pss-nothing-');
    try {
      const service = startService('api', { DATA_DIR: dir });
      expect(await service.exited).toBe(1);
      expect(service.stderr()).toContain('No embedded PostgreSQL is running');
      expect(service.stderr()).toContain('set DATABASE_URL');
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});

describe('npm run api and npm run worker against DATABASE_URL', () => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await createTestDatabase();
  });
  afterAll(async () => {
    await db.drop();
  });

  it('run as separate processes, two of each, sharing one database', async () => {
    const base = { DATABASE_URL: db.url, ENCRYPTION_KEY: TEST_ENCRYPTION_KEY.toString('hex'), HOST: '127.0.0.1', LOG_LEVEL: 'info' };
    const ports = [await freePort(), await freePort()];
    const services = [
      startService('api', { ...base, PORT: String(ports[0]) }),
      startService('api', { ...base, PORT: String(ports[1]) }),
      startService('worker', base),
      startService('worker', base),
    ];
    try {
      await Promise.all(services.map((s) => s.waitFor('"msg":"started"')));
      for (const port of ports) {
        const res = await apiFetch(`http://127.0.0.1:${port}/health/ready`);
        expect(res.status).toBe(200);
      }
      for (const worker of services.slice(2)) await worker.waitFor('Worker connected and looking for jobs');
      // Neither half seeds demo data: that is npm start's first-run job only.
      expect(await db.prisma.account.count()).toBe(0);
      // graphile-worker's schema exists in the shared database.
      expect(await db.query("SELECT 1 FROM information_schema.schemata WHERE schema_name = 'graphile_worker'")).toHaveLength(1);
    } finally {
      const codes = await Promise.all(services.map((s) => s.stop('SIGTERM')));
      expect(codes).toEqual([0, 0, 0, 0]);
    }
    for (const s of services) expect(s.stderr()).not.toMatch(/\n\s+at /);
    // The log never carries the database password.
    const password = new URL(db.url).password;
    for (const s of services) expect(s.stdout() + s.stderr()).not.toContain(password);
  });
});
