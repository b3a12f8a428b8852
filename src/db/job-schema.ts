import { Logger as WorkerLogger, runMigrations } from 'graphile-worker';

/**
 * Installs or upgrades graphile-worker's schema. The ingress queues jobs with its `add_jobs` SQL
 * function in the same transaction as the request row, so every process that accepts requests needs the
 * schema, not only the ones that run the worker. Idempotent; graphile-worker serialises concurrent runs.
 */
export async function installJobSchema(databaseUrl: string): Promise<void> {
  await runMigrations({ connectionString: databaseUrl, logger: new WorkerLogger(() => () => {}) });
}
