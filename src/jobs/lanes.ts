/**
 * The worker's lanes. Each lane is a graphile-worker runner of its own with a job table of its own (a
 * PostgreSQL schema each): `jobs`, for jobs that end in moments (WORKER_CONCURRENCY slots); `loops`,
 * for jobs that work through an outbox for as long as it holds work, one per forwarding destination
 * (FORWARDING_CONCURRENCY slots); `webhooks`, the same for platform webhook endpoints
 * (WEBHOOK_CONCURRENCY slots). Apart, a loop never holds a job's slot, busy destinations never delay
 * a customer's webhooks, and no runner's fetch walks past another lane's backlog (every batch of new
 * jobs wakes every runner).
 */
export type Lane = 'jobs' | 'loops' | 'webhooks';

export const LANES: readonly Lane[] = ['jobs', 'loops', 'webhooks'];

/** The lane of a task: `jobs` unless it names one. */
export function laneOf(task: { lane?: Lane | undefined }): Lane {
  return task.lane ?? 'jobs';
}

/** The PostgreSQL schema of each lane's graphile-worker tables and functions. */
export const LANE_SCHEMA: Readonly<Record<Lane, string>> = { jobs: 'graphile_worker', loops: 'graphile_worker_loops', webhooks: 'graphile_worker_webhooks' };
