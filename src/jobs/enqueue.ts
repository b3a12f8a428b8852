import type pg from 'pg';
import type { z } from 'zod';
import { join, query, raw, sql, type Sql } from '../db/sql.js';
import { LANE_SCHEMA, laneOf } from './lanes.js';
import type { TaskDefinition } from './task.js';

/** A job as queued: what its caller may want to know of it. */
export interface QueuedJob {
  id: string;
  key: string | null;
  maxAttempts: number;
  runAt: Date;
}

/** Where a job is queued from TypeScript: a job's `helpers`, or graphile-worker's `WorkerUtils`. */
interface JobDatabase {
  withPgClient<T>(work: (client: pg.PoolClient) => Promise<T>): Promise<T>;
}

/**
 * Queues one job of `task` from TypeScript, in its lane's job table. The payload is type-checked against
 * the task's schema and checked again here, so a bad payload fails its caller rather than a job later.
 * The task's defaults (queue, attempts, job key) apply unless `options` names its own.
 */
export async function enqueue<S extends z.ZodType>(
  db: JobDatabase,
  task: TaskDefinition<S>,
  payload: z.input<S>,
  options: { runAt?: Date; jobKey?: string; maxAttempts?: number; queueName?: string } = {},
): Promise<QueuedJob> {
  const checked = task.payload.parse(payload);
  const { defaults } = task;
  const queueName = options.queueName ?? defaults.queueName?.(checked) ?? null;
  const jobKey = options.jobKey ?? defaults.jobKey?.(checked) ?? null;
  const maxAttempts = options.maxAttempts ?? defaults.maxAttempts ?? null;
  const schema = raw(LANE_SCHEMA[laneOf(task)]);
  const { rows } = await db.withPgClient((client) =>
    query<QueuedJob>(
      client,
      sql`SELECT id::text, key, max_attempts AS "maxAttempts", run_at AS "runAt"
            FROM ${schema}.add_job(identifier => ${task.identifier}::text, payload => ${JSON.stringify(checked)}::json, queue_name => ${queueName}::text,
                                   run_at => ${options.runAt ?? null}::timestamptz, max_attempts => ${maxAttempts}::int, job_key => ${jobKey}::text)`,
    ),
  );
  return rows[0]!;
}

/** A payload field written as SQL: each key of the task's payload, as an expression over the rows queued. */
export type PayloadSql<S extends z.ZodType> = { [K in keyof z.input<S>]: Sql };

/**
 * SQL that queues one job of `task` for each row of `from` (its lane's `add_jobs`, one statement and
 * one notification for all of them), for statements that write work and queue its jobs in the same
 * commit. `from` is what follows `FROM` (it may end in `WHERE` or `ORDER BY`); `payload` spells each
 * payload field as an expression over those rows, its keys type-checked against the task's schema (the
 * values are checked when the job runs). The task's attempts apply; a job key and a queue are given as
 * expressions, since the task's rules for them are written for TypeScript payloads.
 */
export function addJobsSql<S extends z.ZodType>(
  task: TaskDefinition<S>,
  jobs: {
    from: Sql;
    payload: PayloadSql<S>;
    jobKey?: Sql;
    runAt?: Sql;
    queueName?: Sql;
    /** A job replacing a waiting one of its key keeps that one's run time (graphile-worker's `job_key_preserve_run_at`). */
    preserveRunAt?: boolean;
  },
): Sql {
  const fields = Object.entries(jobs.payload as Record<string, Sql>).map(([name, value]) => sql`${name}::text, ${value}`);
  const payload = fields.length > 0 ? sql`json_build_object(${join(fields, ', ')})` : sql`'{}'::json`;
  const schema = raw(LANE_SCHEMA[laneOf(task)]);
  return sql`${schema}.add_jobs(ARRAY(
    SELECT ROW(${task.identifier}::text, ${payload}, ${jobs.queueName ?? sql`NULL`}::text, ${jobs.runAt ?? sql`NULL`}::timestamptz,
               ${task.defaults.maxAttempts ?? null}::int, ${jobs.jobKey ?? sql`NULL`}::text, NULL::int, NULL::text[])::${schema}.job_spec
      FROM ${jobs.from}), ${jobs.preserveRunAt === true}::boolean)`;
}
