import type { TaskList } from 'graphile-worker';
import type { WorkerCheck } from '../domain/health.js';
import { syncsRun } from './syncs__run.js';
import { catalogEntry, type CatalogEntry, type JobEnvironment } from './task.js';

/**
 * Every background task, one module each (`src/jobs/<table>__<action>.ts`). The worker's task list and
 * the health checks' lag queries are built from this list; adding a job kind is adding its row.
 */
export const CATALOG: readonly CatalogEntry[] = [catalogEntry(syncsRun)];

/** graphile-worker's task list for one worker process. */
export function createTaskList(env: JobEnvironment): TaskList {
  return Object.fromEntries(CATALOG.map((entry) => [entry.identifier, entry.build(env)]));
}

/** The task identifiers each worker health check watches, for the checks some task names. */
export function tasksByHealthCheck(): Map<WorkerCheck, string[]> {
  const checks = new Map<WorkerCheck, string[]>();
  for (const { identifier, healthCheck } of CATALOG) if (healthCheck) checks.set(healthCheck, [...(checks.get(healthCheck) ?? []), identifier]);
  return checks;
}
