import type { JobHelpers, Task } from 'graphile-worker';
import type pg from 'pg';
import type { z } from 'zod';
import type { BackfillConfig, BlocklistConfig, ForwardingConfig, RelayConfig, WebhookConfig } from '../config.js';
import type { CrmConfig } from '../connectors/crm/index.js';
import type { WorkerCheck } from '../domain/health.js';
import type { RetentionDays } from '../db/history/maintain.js';
import { query, raw, sql } from '../db/sql.js';
import { failureMessage, isTransientFailure, UNRECOVERABLE_AFTER } from '../domain/job-failure.js';
import { LANE_SCHEMA, laneOf, type Lane } from './lanes.js';
import type { Logger } from '../logger.js';

/**
 * A background job kind: one graphile-worker task, defined in its own module `src/jobs/<table>__<action>.ts`
 * with {@link defineTask} and listed in `src/jobs/catalog.ts`. Everything about the task lives in that one
 * definition: its identifier, the zod schema of its payload (checked again when each job runs: jobs
 * queued by SQL or by an older release exist), its defaults and its handler. Jobs are queued with
 * `enqueue()` from TypeScript or `addJobsSql()` inside a statement (`src/jobs/enqueue.ts`), never by
 * spelling the identifier.
 */
export interface TaskDefinition<S extends z.ZodType> {
  /** graphile-worker's task identifier, `<table>__<action>`. */
  identifier: string;
  payload: S;
  defaults: TaskDefaults<z.output<S>>;
  /** The `/health/ready` check whose queue lag this task's waiting jobs count in (with WORKER_MONITORING). */
  healthCheck?: WorkerCheck;
  /** The worker's lane that runs it (src/jobs/lanes.ts): `jobs` unless said. */
  lane?: Lane;
  /** Builds the handler once per worker process; it receives payloads that passed `payload`. */
  handler(env: JobEnvironment): TaskHandler<z.output<S>>;
  /**
   * Builds, once per worker process, what a job records as its outcome when it has failed
   * {@link UNRECOVERABLE_AFTER} times for a reason no retry changes (issue 20): the failure its readers
   * see (a sync's error, a relay's failed row, a list's last error) instead of the queue's remaining
   * attempts spent in silence. Transient failures keep graphile-worker's schedule. Every task decides:
   * `null` says its failures are bounded another way (the outbox loops set a failing item aside and record
   * it themselves; the minute's schedule runs once, with one attempt).
   */
  recordUnrecoverable: ((env: JobEnvironment) => (payload: z.output<S>, message: string) => Promise<void>) | null;
}

type TaskHandler<P> = (payload: P, helpers: JobHelpers) => Promise<void>;

/** What a job gets when the caller names nothing else. */
interface TaskDefaults<P> {
  /** The named queue a job queued from TypeScript joins (jobs of one queue run one at a time); none: side by side. */
  queueName?: (payload: P) => string;
  /** Runs before graphile-worker gives a job up (its own default is 25). */
  maxAttempts?: number;
  /** The key a job queued from TypeScript gets (a new job with the key of a waiting one replaces it); none: no key. */
  jobKey?: (payload: P) => string;
  // SQL callers of addJobsSql() spell the queue and key as expressions, beside these rules in the task's module.
}

/** What every handler may use, given once per worker process. */
export interface JobDeps {
  crm: CrmConfig;
  /** OUTBOUND_ALLOW_PRIVATE: outbound HTTP may reach private and loopback addresses (tests, local demos). */
  outboundAllowPrivate: boolean;
  /** SANDBOX: the service's own origin, whose sandbox systems outbound HTTP may reach on loopback (and over http, for webhooks). */
  sandboxOrigin?: string;
  /** Forwarding settings (FORWARDING_*); the documented defaults where absent. `attemptTimeoutMs` (10 s) is for tests. */
  forwarding?: Partial<ForwardingConfig> & { attemptTimeoutMs?: number };
  /** Reply relay settings (SMTP_URL, SMTP_FROM, REPLY_RELAY_RETRY_SCHEDULE); without them, no SMTP and the documented schedule. */
  relays?: Partial<RelayConfig>;
  /** Platform webhook settings (WEBHOOK_*); the documented defaults where absent. `attemptTimeoutMs` (15 s) is for tests. */
  webhooks?: Partial<WebhookConfig> & { attemptTimeoutMs?: number };
  /** Block list settings (each push sequencer's base URL, e.g. SMARTLEAD_BASE_URL; BLOCKLIST_REFRESH_MINUTES); DEFAULT_BLOCKLISTS where absent. */
  blocklists?: Partial<BlocklistConfig>;
  /** Backfill settings (BACKFILL_*, each history sequencer's base URL and budget); DEFAULT_BACKFILL where absent. */
  backfill?: Partial<BackfillConfig>;
  /** Days each kind of history is kept (RETENTION_DAYS, ...); DEFAULT_RETENTION where absent. */
  retention?: RetentionDays;
  /** Opens and seals connection credentials. */
  encryptionKey: Buffer;
  /** Reschedules of a CRM that keeps answering 429/5xx before the sync records an error. */
  maxReschedules?: number;
}

export interface JobEnvironment extends JobDeps {
  /** The worker's pool, for statements of the task's own (grouped across its jobs where it pays). */
  pool: pg.Pool;
  logger: Logger;
}

/** A catalog row: a task with its payload type erased, as graphile-worker's task list takes it. */
export interface CatalogEntry {
  identifier: string;
  healthCheck?: WorkerCheck;
  lane: Lane;
  /** The graphile-worker task: checks each payload, then runs the handler. */
  build(env: JobEnvironment): Task;
}

/** Types a task's definition; the catalog erases it with {@link catalogEntry}. */
export function defineTask<S extends z.ZodType>(definition: TaskDefinition<S>): TaskDefinition<S> {
  return definition;
}

/**
 * The catalog row of `task`. A payload that fails the schema fails its job for good, on its first run:
 * retrying cannot change the payload. The job stays in graphile-worker's table with the reason
 * (attempts = max_attempts) and graphile-worker logs one line naming the task, the job id and the
 * failing paths, never the payload's values.
 */
export function catalogEntry<S extends z.ZodType>(task: TaskDefinition<S>): CatalogEntry {
  return {
    identifier: task.identifier,
    ...(task.healthCheck ? { healthCheck: task.healthCheck } : {}),
    lane: laneOf(task),
    build(env) {
      const handler = boundedAttempts(task, env);
      return async (payload, helpers) => {
        const parsed = task.payload.safeParse(payload);
        if (parsed.success) return handler(parsed.data, helpers);
        await helpers.withPgClient((client) =>
          query(client, sql`UPDATE ${raw(LANE_SCHEMA[laneOf(task)])}._private_jobs SET max_attempts = attempts WHERE id = ${helpers.job.id}::bigint`),
        );
        // graphile-worker reads its own copy to log the attempt ("1 of 1") and to announce job:failed.
        helpers.job.max_attempts = helpers.job.attempts;
        throw new InvalidPayloadError(task.identifier, parsed.error.issues);
      };
    },
  };
}

/**
 * The task's handler under the rule for failures no retry changes: a non-transient failure is thrown
 * (graphile-worker runs the job again, with its backoff) until the job's {@link UNRECOVERABLE_AFTER}th
 * run, which records it as the job's outcome instead, logged at error with the job's identity.
 */
function boundedAttempts<S extends z.ZodType>(task: TaskDefinition<S>, env: JobEnvironment): TaskHandler<z.output<S>> {
  const handler = task.handler(env);
  const record = task.recordUnrecoverable?.(env);
  if (!record) return handler;
  return async (payload, helpers) => {
    try {
      await handler(payload, helpers);
    } catch (error) {
      if (isTransientFailure(error) || helpers.job.attempts < UNRECOVERABLE_AFTER) throw error;
      env.logger.error(
        { err: error, task: task.identifier, jobId: helpers.job.id, attempts: helpers.job.attempts },
        'job failed on our side, for a reason no retry changes: recorded as its outcome',
      );
      await record(payload, failureMessage(error));
    }
  };
}

/** A job whose payload does not match its task's schema; its message names paths and issue codes only. */
class InvalidPayloadError extends Error {
  constructor(identifier: string, issues: readonly z.core.$ZodIssue[]) {
    const problems = issues.map((issue) => `${issue.path.map(String).join('.') || '(payload)'}: ${issue.code}`).join('; ');
    super(`the payload does not match the ${identifier} schema (${problems}): failed without retry`);
    this.name = 'InvalidPayloadError';
    // graphile-worker prints a stack under its failure line; this failure is the payload's, not the code's.
    this.stack = '';
  }
}
