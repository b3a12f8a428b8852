import type { Express, Response } from 'express';
import { healthHttpStatus, HEALTH_SCHEMA_VERSION, rollUpHealth, type CheckStatus, type WorkerCheck } from '../domain/health.js';
import { historyWarnings } from '../db/history/status.js';
import type { PrismaClient } from '../db/prisma.js';
import { join, raw, sql } from '../db/sql.js';
import { tasksByHealthCheck } from '../jobs/catalog.js';
import { LANE_SCHEMA, LANES } from '../jobs/lanes.js';
import { WORKER_APPLICATION_NAME } from '../worker.js';

/** A job ready to run but waiting longer than this means the worker is not keeping up. */
const MAX_QUEUE_LAG_SECONDS = 300;

/**
 * GET /health/live, /health/ready and /health (spec: Platform health). No key; never cached.
 * Local deployments report only `sources` (inbound ingestion, which needs the database); with
 * WORKER_MONITORING, each worker check that a task of the job catalog names (`destinations_activities`
 * for CRM writes, ...) too: operational while a worker is connected and none of its tasks' jobs has
 * waited past {@link MAX_QUEUE_LAG_SECONDS}. `warnings` (present only when there is one) lists what the
 * operator should fix before it becomes an outage: history partitions not created ahead, partitions kept
 * past retention (src/db/history/status.ts).
 */
export function installHealth(app: Express, deps: { prisma: PrismaClient; config: { workerMonitoring: boolean } }): void {
  app.get('/health/live', (_req, res) => {
    noStore(res).json({ schema_version: HEALTH_SCHEMA_VERSION, status: 'operational' });
  });
  const ready = async (_req: unknown, res: Response) => {
    const [sources, worker, history] = await Promise.all([
      databaseCheck(deps.prisma),
      deps.config.workerMonitoring ? workerChecks(deps.prisma) : Promise.resolve({}),
      // A check that could not run is itself something to look at, never a silent "nothing to say".
      withTimeout(historyWarnings(deps.prisma), 2_000).catch((error: unknown) => [
        `history partitions could not be checked: ${error instanceof Error && error.message === 'timed out' ? 'timed out after 2 s' : 'the query failed'}`,
      ]),
    ]);
    const report = rollUpHealth({ sources, ...worker });
    // With the database unreachable the status says so already; the history check failing is no news then.
    const warnings = sources === 'operational' ? history : [];
    // Warnings never change the status: they tell the operator what to fix before it becomes an outage.
    noStore(res)
      .status(healthHttpStatus(report))
      .json(warnings.length ? { ...report, warnings } : report);
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
 * keeps one open to LISTEN for jobs), so a live connection is its heartbeat; a check's lag is the age of
 * the oldest job of its tasks that could run now and has not started (a job waiting behind the running job
 * of its named queue, such as a destination's sending loop, is that job's work, not the worker's lag).
 */
async function workerChecks(prisma: PrismaClient): Promise<Partial<Record<WorkerCheck, CheckStatus>>> {
  const checks = tasksByHealthCheck();
  const tasks = [...checks.values()].flat();
  // Each lane's job table, for the tasks that live there.
  const oldest = LANES.filter((lane) => tasks.some((t) => t.lane === lane)).map((lane) => {
    const schema = raw(LANE_SCHEMA[lane]);
    const identifiers = tasks.filter((t) => t.lane === lane).map((t) => t.identifier);
    return sql`SELECT t.identifier, extract(epoch FROM now() - min(j.run_at))::float8 AS lag
                 FROM ${schema}._private_jobs j JOIN ${schema}._private_tasks t ON t.id = j.task_id
                 LEFT JOIN ${schema}._private_job_queues q ON q.id = j.job_queue_id
                WHERE t.identifier = ANY(${identifiers}::text[]) AND j.locked_at IS NULL AND j.run_at <= now() AND j.attempts < j.max_attempts
                  AND (q.locked_at IS NULL OR q.id IS NULL)
                GROUP BY t.identifier`;
  });
  let workers = 0;
  let lags: Record<string, number> = {};
  try {
    const [row] = await withTimeout(
      prisma.$queryRaw<{ workers: number; lags: Record<string, number> }[]>`
        SELECT (SELECT count(*)::int FROM pg_stat_activity WHERE application_name = ${WORKER_APPLICATION_NAME} AND datname = current_database()) AS workers,
               (SELECT COALESCE(json_object_agg(identifier, lag), '{}') FROM (${join(oldest, ' UNION ALL ')}) AS oldest) AS lags`,
      2_000,
    );
    workers = row?.workers ?? 0;
    lags = row?.lags ?? {};
  } catch {
    // Unanswered: every worker check is in outage (workers stays 0).
  }
  return Object.fromEntries(
    [...checks].map(([check, watched]) => [
      check,
      workers > 0 && watched.every((task) => (lags[task.identifier] ?? 0) <= MAX_QUEUE_LAG_SECONDS) ? 'operational' : 'outage',
    ]),
  );
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
