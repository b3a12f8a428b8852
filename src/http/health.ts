import type { Express, Response } from 'express';
import { healthHttpStatus, HEALTH_SCHEMA_VERSION, rollUpHealth, type CheckStatus } from '../domain/health.js';
import type { PrismaClient } from '../db/prisma.js';
import { SYNC_TASK } from '../ingress/accept.js';
import { WORKER_APPLICATION_NAME } from '../worker.js';

/** A sync job ready to run but waiting longer than this means the worker is not keeping up. */
const MAX_QUEUE_LAG_SECONDS = 300;

/**
 * GET /health/live, /health/ready and /health (spec: Platform health). No key; never cached.
 * Local deployments report only `sources` (inbound ingestion, which needs the database); with
 * WORKER_MONITORING, `destinations_activities` (CRM writes) too: operational while a worker is connected
 * and no sync job has waited past {@link MAX_QUEUE_LAG_SECONDS}.
 */
export function installHealth(app: Express, deps: { prisma: PrismaClient; config: { workerMonitoring: boolean } }): void {
  app.get('/health/live', (_req, res) => {
    noStore(res).json({ schema_version: HEALTH_SCHEMA_VERSION, status: 'operational' });
  });
  const ready = async (_req: unknown, res: Response) => {
    const [sources, activities] = await Promise.all([
      databaseCheck(deps.prisma),
      deps.config.workerMonitoring ? workerCheck(deps.prisma) : Promise.resolve(undefined),
    ]);
    const report = rollUpHealth(activities === undefined ? { sources } : { sources, destinations_activities: activities });
    noStore(res).status(healthHttpStatus(report)).json(report);
  };
  app.get('/health/ready', ready);
  app.get('/health', ready);
}

async function databaseCheck(prisma: PrismaClient): Promise<CheckStatus> {
  try {
    await withTimeout(prisma.$queryRaw`SELECT 1`, 2_000);
    return 'operational';
  } catch {
    return 'outage';
  }
}

/**
 * A worker holds a connection named {@link WORKER_APPLICATION_NAME} for as long as it runs (graphile-worker
 * keeps one open to LISTEN for jobs), so a live connection is its heartbeat; the lag is the age of the
 * oldest sync job that could run now and has not started.
 */
async function workerCheck(prisma: PrismaClient): Promise<CheckStatus> {
  try {
    const [row] = await withTimeout(
      prisma.$queryRaw<{ workers: number; lag: number | null }[]>`
        SELECT (SELECT count(*)::int FROM pg_stat_activity WHERE application_name = ${WORKER_APPLICATION_NAME} AND datname = current_database()) AS workers,
               (SELECT extract(epoch FROM now() - min(j.run_at))::float8
                  FROM graphile_worker._private_jobs j JOIN graphile_worker._private_tasks t ON t.id = j.task_id
                 WHERE t.identifier = ${SYNC_TASK} AND j.locked_at IS NULL AND j.run_at <= now() AND j.attempts < j.max_attempts) AS lag`,
      2_000,
    );
    return row && row.workers > 0 && (row.lag ?? 0) <= MAX_QUEUE_LAG_SECONDS ? 'operational' : 'outage';
  } catch {
    return 'outage';
  }
}

function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error('timed out')), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

function noStore(res: Response): Response {
  return res.set('Cache-Control', 'no-store');
}
