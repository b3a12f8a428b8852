import type { PartitionSpan } from '../../domain/partitions.js';
import { raw, sql, type Sql } from '../sql.js';

/** Which retention setting a history table follows (HISTORY_RETENTION in config.ts). */
export type RetentionClass = 'history' | 'body' | 'audit';

/**
 * A table partitioned by time (issue 31). Its partition key is `created_at`; its primary key is its
 * `key` column and `created_at`, and each unique index of its Prisma model gains `created_at` as well
 * (PostgreSQL requires the partition key in them). Rows whose time is their request's (a sync, a request
 * body, a relay execution) keep "one per request" exact through that.
 */
export interface HistoryTable {
  name: string;
  span: PartitionSpan;
  retention: RetentionClass;
  /** The column a conversion copies in order (the id; a request body's request id). */
  key: string;
  /**
   * Unfinished work that still needs rows of `partition` (a partition of this table), as a statement
   * giving `{what, n}` rows: the partition is kept, and the reason recorded, while any n is above 0.
   * Absent: nothing waits on this table's rows.
   */
  unfinished?: (partition: Sql) => Sql;
}

/**
 * Rows of the queue `queue` (its column `column`, indexed) that name a row of `partition` (its column
 * `key`, indexed), counted without scanning the partition: the queue is narrowed to the partition's key
 * range (its index's two ends), then each remaining row probes the partition's index. A month's partition
 * holds millions of rows; the rows still queued for it are few.
 */
const queuedFor = (partition: Sql, key: string, queue: Sql, column: string, also: Sql = sql`TRUE`): Sql => sql`
  (SELECT count(*)::int FROM (SELECT min(${raw(key)}) AS lo, max(${raw(key)}) AS hi FROM ${partition}) b, ${queue} q
    WHERE q.${raw(column)} BETWEEN b.lo AND b.hi AND ${also}
      AND EXISTS (SELECT 1 FROM ${partition} r WHERE r.${raw(key)} = q.${raw(column)}))`;

/** The work a request's rows (itself, its body) are still needed for: a sync to run, a forwarding attempt, a reply relay's email. */
const requestWork = (partition: Sql, key: string): Sql => sql`
  SELECT 'syncs waiting to run' AS what, ${queuedFor(partition, key, sql`pending_syncs`, 'request_id')} AS n
  UNION ALL
  SELECT 'forwarding attempts waiting', ${queuedFor(partition, key, sql`pending_deliveries`, 'request_id')}
  UNION ALL
  SELECT 'reply relay emails not sent yet',
         ${queuedFor(partition, key, sql`relay_executions`, 'request_id', sql`(q.status = 'scheduled' OR q.next_attempt_at IS NOT NULL)`)}`;

/** Every history table, in the order conversions run. */
export const HISTORY_TABLES: readonly HistoryTable[] = [
  // A body is what a waiting sync, forwarding attempt or relay email still reads. First: converting
  // requests moves their bodies into it.
  { name: 'request_bodies', span: 'day', retention: 'body', key: 'request_id', unfinished: (p) => requestWork(p, 'request_id') },
  { name: 'requests', span: 'month', retention: 'history', key: 'id', unfinished: (p) => requestWork(p, 'id') },
  {
    name: 'syncs',
    span: 'month',
    retention: 'history',
    key: 'id',
    unfinished: (p) => sql`
      SELECT 'syncs waiting to run' AS what, ${queuedFor(p, 'request_id', sql`pending_syncs`, 'request_id')} AS n
      UNION ALL
      SELECT 'syncs a bulk re-sync has yet to queue', ${queuedFor(p, 'id', sql`bulk_retry_items`, 'sync_id', sql`q.queued_at IS NULL`)}`,
  },
  {
    name: 'deliveries',
    span: 'month',
    retention: 'history',
    key: 'id',
    unfinished: (p) => sql`SELECT 'replays waiting to be sent' AS what, ${queuedFor(p, 'id', sql`pending_deliveries`, 'replay_of_delivery_id')} AS n`,
  },
  {
    name: 'platform_events',
    span: 'month',
    retention: 'history',
    key: 'id',
    unfinished: (p) =>
      sql`SELECT 'webhook deliveries still pending' AS what, count(*)::int AS n FROM webhook_deliveries w JOIN ${p} e ON e.id = w.event_id WHERE w.status = 'PENDING'`,
  },
  {
    name: 'webhook_deliveries',
    span: 'month',
    retention: 'history',
    key: 'id',
    unfinished: (p) => sql`SELECT 'webhook deliveries still pending' AS what, count(*)::int AS n FROM ${p} WHERE status = 'PENDING'`,
  },
  {
    name: 'relay_executions',
    span: 'month',
    retention: 'history',
    key: 'id',
    unfinished: (p) =>
      sql`SELECT 'reply relay emails not sent yet' AS what, count(*)::int AS n FROM ${p} WHERE status = 'scheduled' OR next_attempt_at IS NOT NULL`,
  },
  { name: 'audit_log', span: 'month', retention: 'audit', key: 'id' },
  { name: 'sandbox_requests', span: 'month', retention: 'history', key: 'id' },
];

export const HISTORY_TABLE_NAMES: readonly string[] = HISTORY_TABLES.map((t) => t.name);
