import type { TaskList } from 'graphile-worker';
import type { WorkerCheck } from '../domain/health.js';
import { backfillsRun } from './backfills__run.js';
import { backfillsSchedule } from './backfills__schedule.js';
import { blocklistsFetch } from './blocklists__fetch.js';
import { blocklistsPush } from './blocklists__push.js';
import { blocklistsSchedule } from './blocklists__schedule.js';
import { deliveriesSend } from './deliveries__send.js';
import { historyMaintain } from './history__maintain.js';
import { relayExecutionsSend } from './relay_executions__send.js';
import { replyRelaysSchedule } from './reply_relays__schedule.js';
import { syncsBulkRetry } from './syncs__bulk_retry.js';
import { syncsDrain } from './syncs__drain.js';
import { syncsRun } from './syncs__run.js';
import { webhookDeliveriesSend } from './webhook_deliveries__send.js';
import type { Lane } from './lanes.js';
import { catalogEntry, type CatalogEntry, type JobEnvironment } from './task.js';

/**
 * Every background task, one module each (`src/jobs/<table>__<action>.ts`). The worker's task list and
 * the health checks' lag queries are built from this list; adding a job kind is adding its row.
 */
export const CATALOG: readonly CatalogEntry[] = [
  catalogEntry(syncsDrain),
  catalogEntry(deliveriesSend),
  catalogEntry(replyRelaysSchedule),
  catalogEntry(relayExecutionsSend),
  catalogEntry(webhookDeliveriesSend),
  catalogEntry(blocklistsSchedule),
  catalogEntry(blocklistsFetch),
  catalogEntry(blocklistsPush),
  catalogEntry(syncsBulkRetry),
  catalogEntry(historyMaintain),
  catalogEntry(backfillsSchedule),
  catalogEntry(backfillsRun),
  // An older release's job per event, moved into the sync outbox during a rolling deploy.
  catalogEntry(syncsRun),
];

/** graphile-worker's task list of one lane (one runner) of a worker process. */
export function createTaskList(env: JobEnvironment, lane: Lane): TaskList {
  return Object.fromEntries(CATALOG.filter((entry) => entry.lane === lane).map((entry) => [entry.identifier, entry.build(env)]));
}

/** The tasks (identifier and lane) each worker health check watches, for the checks some task names. */
export function tasksByHealthCheck(): Map<WorkerCheck, Array<{ identifier: string; lane: Lane }>> {
  const checks = new Map<WorkerCheck, Array<{ identifier: string; lane: Lane }>>();
  for (const { identifier, healthCheck, lane } of CATALOG) if (healthCheck) checks.set(healthCheck, [...(checks.get(healthCheck) ?? []), { identifier, lane }]);
  return checks;
}
