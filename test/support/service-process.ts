import { type ChildProcess, spawn } from 'node:child_process';
import { chmod, mkdtemp } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { childEnv, tsxCommand } from './processes.js';

/** A service process (src/main.ts) started as `npm start` would, with its output captured. */
export interface ServiceProcess {
  child: ChildProcess;
  stdout(): string;
  stderr(): string;
  /** Resolves once stdout or stderr contains `text`; rejects if the process exits first or after `ms`. */
  waitFor(text: string | RegExp, ms?: number): Promise<void>;
  /** Sends `signal` and resolves with the exit code. */
  stop(signal?: NodeJS.Signals): Promise<number | null>;
  exited: Promise<number | null>;
}

/**
 * Starts `src/main.ts <role>` as `npm start` does. The sandbox (on by default with the embedded database)
 * listens for SMTP on a fixed port, so services started side by side by the suite run without it unless
 * the test names its SANDBOX_SMTP_PORT (the sandbox tests) or SANDBOX.
 */
export function startService(role: 'all' | 'api' | 'worker', env: Record<string, string>): ServiceProcess {
  const [command, args] = tsxCommand('src/main.ts', role);
  const sandbox: Record<string, string> = env.SANDBOX === undefined && env.SANDBOX_SMTP_PORT === undefined ? { SANDBOX: 'false' } : {};
  const child = spawn(command, args, { env: childEnv({ ...sandbox, ...env }), stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  const listeners = new Set<() => void>();
  child.stdout.on('data', (chunk: Buffer) => {
    out += chunk.toString();
    listeners.forEach((l) => l());
  });
  child.stderr.on('data', (chunk: Buffer) => {
    err += chunk.toString();
    listeners.forEach((l) => l());
  });
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  return {
    child,
    stdout: () => out,
    stderr: () => err,
    exited,
    waitFor(text, ms = 45_000) {
      const seen = () => (typeof text === 'string' ? (out + err).includes(text) : text.test(out + err));
      return new Promise((resolve, reject) => {
        if (seen()) return resolve();
        const timer = setTimeout(() => done(new Error(`timed out waiting for ${String(text)}\nstdout:\n${out}\nstderr:\n${err}`)), ms);
        const check = () => seen() && done();
        const done = (error?: Error) => {
          clearTimeout(timer);
          listeners.delete(check);
          if (error) reject(error);
          else resolve();
        };
        listeners.add(check);
        void exited.then((code) => done(seen() ? undefined : new Error(`exited (${code}) before ${String(text)}\nstdout:\n${out}\nstderr:\n${err}`)));
      });
    },
    async stop(signal = 'SIGTERM') {
      if (child.exitCode === null) child.kill(signal);
      return exited;
    },
  };
}

/** A DATA_DIR the embedded PostgreSQL (running as `postgres` when we are root) can reach. */
export async function reachableTempDir(prefix: string): Promise<string> {
  const dir = await mkdtemp(path.join(os.tmpdir(), prefix));
  await chmod(dir, 0o755);
  return dir;
}

export { freePort } from '../../src/db/embedded.js';
