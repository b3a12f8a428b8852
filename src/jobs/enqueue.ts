import type { AddJobFunction, Job, TaskSpec } from 'graphile-worker';
import type { z } from 'zod';
import { join, sql, type Sql } from '../db/sql.js';
import type { TaskDefinition } from './task.js';

/**
 * Queues one job of `task` from TypeScript: inside a job through its `helpers`, elsewhere through
 * graphile-worker's `WorkerUtils`. The payload is type-checked against the task's schema and checked
 * again here, so a bad payload fails its caller rather than a job later. The task's defaults
 * (queue, attempts, job key) apply unless `options` names its own.
 */
export async function enqueue<S extends z.ZodType>(
  queue: { addJob: AddJobFunction },
  task: TaskDefinition<S>,
  payload: z.input<S>,
  options: TaskSpec = {},
): Promise<Job> {
  const checked = task.payload.parse(payload);
  const { queueName, maxAttempts, jobKey } = task.defaults;
  return queue.addJob(task.identifier, checked, {
    ...(queueName ? { queueName: queueName(checked) } : {}),
    ...(maxAttempts !== undefined ? { maxAttempts } : {}),
    ...(jobKey ? { jobKey: jobKey(checked) } : {}),
    ...options,
  });
}

/** A payload field written as SQL: each key of the task's payload, as an expression over the rows queued. */
export type PayloadSql<S extends z.ZodType> = { [K in keyof z.input<S>]: Sql };

/**
 * SQL that queues one job of `task` for each row of `from` (`graphile_worker.add_jobs`, one statement and
 * one notification for all of them), for statements that write work and queue its jobs in the same
 * commit. `from` is what follows `FROM` (it may end in `WHERE` or `ORDER BY`); `payload` spells each
 * payload field as an expression over those rows, its keys type-checked against the task's schema (the
 * values are checked when the job runs). The task's attempts apply; a job key and a queue are given as
 * expressions, since the task's rules for them are written for TypeScript payloads.
 */
export function addJobsSql<S extends z.ZodType>(
  task: TaskDefinition<S>,
  jobs: { from: Sql; payload: PayloadSql<S>; jobKey?: Sql; runAt?: Sql; queueName?: Sql },
): Sql {
  const fields = Object.entries(jobs.payload as Record<string, Sql>).map(([name, value]) => sql`${name}::text, ${value}`);
  const payload = fields.length > 0 ? sql`json_build_object(${join(fields, ', ')})` : sql`'{}'::json`;
  return sql`graphile_worker.add_jobs(ARRAY(
    SELECT ROW(${task.identifier}::text, ${payload}, ${jobs.queueName ?? sql`NULL`}::text, ${jobs.runAt ?? sql`NULL`}::timestamptz,
               ${task.defaults.maxAttempts ?? null}::int, ${jobs.jobKey ?? sql`NULL`}::text, NULL::int, NULL::text[])::graphile_worker.job_spec
      FROM ${jobs.from}))`;
}
