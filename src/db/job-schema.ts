import { Logger as WorkerLogger, runMigrations } from 'graphile-worker';
import { LANE_SCHEMA, LANES } from '../jobs/lanes.js';

/**
 * Installs or upgrades graphile-worker's schema, one per lane of the worker (src/jobs/lanes.ts). The
 * ingress queues jobs with their `add_jobs` SQL function in the same transaction as the request row, so
 * every process that accepts requests needs the schemas, not only the ones that run the worker.
 * Idempotent; graphile-worker serialises concurrent runs.
 */
export async function installJobSchema(databaseUrl: string): Promise<void> {
  for (const lane of LANES) {
    await runMigrations({ connectionString: databaseUrl, schema: LANE_SCHEMA[lane], logger: new WorkerLogger(() => () => {}) });
  }
}
