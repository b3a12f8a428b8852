/**
 * Child processes of the service (npm start, the admin CLI) as a user runs them: real processes,
 * TypeScript through tsx, environment without what the test runner itself injects.
 */

/** `node --import tsx <script> ...args`: what `npm start` / `npm run admin` run, minus npm. */
export function tsxCommand(script: string, ...args: string[]): [string, string[]] {
  return [process.execPath, ['--import', 'tsx', script, ...args]];
}

/** The parent's environment without Vite's injected variables (BASE_URL, MODE, ...) and with `extra`. */
export function childEnv(extra: Record<string, string>): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env };
  for (const name of ['BASE_URL', 'MODE', 'DEV', 'PROD', 'SSR', 'VITEST', 'VITEST_POOL_ID', 'VITEST_WORKER_ID', 'TEST', 'NODE_ENV']) delete env[name];
  return { ...env, ...extra };
}
