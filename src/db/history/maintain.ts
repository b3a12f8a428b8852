import pg from 'pg';
import { CREATE_AHEAD_DAYS, expiredPartitions, missingRanges } from '../../domain/partitions.js';
import { query, rows, sql } from '../sql.js';
import { inTransaction } from '../transaction.js';
import {
  createPartition,
  detach,
  dropStandalone,
  identSql,
  isPartitioned,
  listPartitions,
  reattach,
  strayPartitions,
  type AttachedPartition,
} from './catalog.js';
import { convertTable, dropReplaced, type ConversionResult } from './convert.js';
import { pruneExpired } from './prune.js';
import { HISTORY_TABLES, type HistoryTable, type RetentionClass } from './tables.js';

/** How long each kind of history is kept, in days (RETENTION_DAYS, RAW_BODY_RETENTION_DAYS, AUDIT_RETENTION_DAYS). */
export type RetentionDays = Record<RetentionClass, number>;

export interface RoundOptions {
  retention: RetentionDays;
  now?: Date;
  /** Rows a conversion copies per transaction. */
  batchSize?: number;
  /** Batches a conversion copies in this round (the next round goes on); unlimited when absent. */
  maxBatches?: number;
  log?: (message: string, fields?: Record<string, unknown>) => void;
}

/** A partition past retention kept for now, and why. */
interface Hold {
  partition: string;
  table: string;
  reason: string;
}

export interface RoundReport {
  /** Tables moved onto partitions this round, or still being copied. */
  conversions: Record<string, ConversionResult>;
  created: string[];
  dropped: string[];
  held: Hold[];
  /** Rows deleted past retention from the tables outside the partitions that grow with traffic (src/db/history/prune.ts), per table. */
  pruned: Record<string, number>;
  /** Tables whose upkeep failed this round (a lock not granted in time, most often), with why: the next round tries again. */
  failures: string[];
  /** Set when another process held the round's lock: this one did nothing. */
  skipped?: true;
}

/** One round at a time across every process of the service (any constant shared by them). */
const ROUND_LOCK_KEY = 7_302_114_531;
const DAY_MS = 86_400_000;

/**
 * One round of history upkeep (issue 31), run by `history__maintain` every hour and once before a
 * process serves: tables not yet partitioned are converted (src/db/history/convert.ts), each table gets
 * its partitions {@link CREATE_AHEAD_DAYS} ahead, and partitions wholly past their retention are detached
 * concurrently and dropped, unless unfinished work still needs their rows: those are kept and the reason
 * recorded (`history_holds`, which /health/ready reports). No row is ever deleted from a history table.
 * Interrupted anywhere (a crash), the next round finishes what this one began.
 */
export async function maintainHistory(pool: pg.Pool, options: RoundOptions): Promise<RoundReport> {
  const client = await pool.connect();
  try {
    const { rows: locked } = await query<{ locked: boolean }>(client, sql`SELECT pg_try_advisory_lock(${ROUND_LOCK_KEY}) AS locked`);
    if (!locked[0]?.locked) return { conversions: {}, created: [], dropped: [], held: [], pruned: {}, failures: [], skipped: true };
    // The round's commits do not wait for the disk: one lost in a crash is redone by the next round
    // (every step is idempotent), a later flushed commit carries it anyway (the WAL is one sequence), and
    // PostgreSQL flushes a transaction that drops files before unlinking them whatever this says.
    await client.query('SET synchronous_commit = off');
    try {
      return await round(client, options);
    } finally {
      await client.query('RESET synchronous_commit');
      await query(client, sql`SELECT pg_advisory_unlock(${ROUND_LOCK_KEY})`);
    }
  } finally {
    client.release();
  }
}

/**
 * The round a process runs before it serves (main.ts, the test template): a fresh database's tables are
 * partitioned at once; a large one's copy gets {@link BOOT_BATCHES} batches here and goes on in the
 * worker's rounds while the service runs.
 */
export async function prepareHistory(databaseUrl: string, options: RoundOptions): Promise<RoundReport> {
  const pool = new pg.Pool({ connectionString: databaseUrl, max: 1, application_name: 'pipeline-sync-history' });
  try {
    return await maintainHistory(pool, { maxBatches: BOOT_BATCHES, ...options });
  } finally {
    await pool.end();
  }
}

/** Copy batches (of 10,000 rows) a start spends on a conversion before serving: a few seconds. */
const BOOT_BATCHES = 20;

async function round(client: pg.PoolClient, options: RoundOptions): Promise<RoundReport> {
  const now = options.now ?? new Date();
  const log = options.log ?? (() => {});
  const report: RoundReport = { conversions: {}, created: [], dropped: [], held: [], pruned: {}, failures: [] };
  for (const table of HISTORY_TABLES) {
    try {
      await upkeep(client, table, now, options, report);
    } catch (error) {
      report.failures.push(`${table.name}: ${(error as Error).message}`);
      log("history: a table's upkeep failed; the next round tries again", { table: table.name, error: (error as Error).message });
    }
  }
  try {
    report.pruned = await pruneExpired(client, new Date(now.getTime() - options.retention.history * DAY_MS));
  } catch (error) {
    report.failures.push(`pruning: ${(error as Error).message}`);
    log('history: pruning failed; the next round tries again', { error: (error as Error).message });
  }
  if (Object.keys(report.pruned).length) log('history: rows past retention deleted', { pruned: report.pruned });
  await recordHolds(client, report.held);
  for (const hold of report.held) log('history: partition past retention kept', { ...hold });
  // Created partitions are routine (hundreds on a fresh database): counted; a dropped one is named.
  if (report.created.length || report.dropped.length) log('history: partitions changed', { created: report.created.length, dropped: report.dropped });
  return report;
}

/** One table's part of a round: its conversion while it is not partitioned, then its partitions ahead and past retention. */
async function upkeep(client: pg.PoolClient, table: HistoryTable, now: Date, options: RoundOptions, report: RoundReport): Promise<void> {
  const log = options.log ?? (() => {});
  if (!(await isPartitioned(client, table.name))) {
    const result = await convertTable(client, table, {
      batchSize: options.batchSize ?? 10_000,
      bodyHorizon: new Date(now.getTime() - options.retention.body * DAY_MS),
      now,
      ...(options.maxBatches !== undefined ? { maxBatches: options.maxBatches } : {}),
      onProgress: (progress) => {
        if (progress.copyUntil !== '0') log('history: copying a table onto partitions', progress);
      },
    });
    report.conversions[table.name] = result;
    if (result !== 'converted') return;
    log('history: table moved onto partitions', { table: table.name });
  }
  await dropReplaced(client, table);
  // The catalog is read once per table and round: a daily table holds hundreds of partitions.
  const attached = await finishInterruptedDetaches(client, table, await listPartitions(client, table.name), report);
  const retentionDays = options.retention[table.retention];
  const created = await createAhead(client, table, attached, new Date(now.getTime() - retentionDays * DAY_MS), now, retentionDays, report);
  await dropExpired(client, table, [...attached, ...created], now, retentionDays, report);
}

/**
 * A detach a crash interrupted (pending in the catalog) is finished and its table dropped; a detached
 * table left undropped is dropped (or attached back if work came for it). Answers the partitions still
 * attached.
 */
async function finishInterruptedDetaches(
  client: pg.PoolClient,
  table: HistoryTable,
  partitions: AttachedPartition[],
  report: RoundReport,
): Promise<AttachedPartition[]> {
  for (const partition of partitions) {
    if (!partition.detaching) continue;
    await detach(client, table.name, partition);
    await dropDetached(client, table, partition.name, report);
  }
  for (const stray of await strayPartitions(client, table.name)) await dropDetached(client, table, stray, report);
  return partitions.filter((p) => !p.detaching);
}

/**
 * Every partition from `from` to {@link CREATE_AHEAD_DAYS} ahead: spans of the table's own size within
 * its retention, whole months before (rows written with an older time: a seed, generated history).
 * Answers the partitions it created.
 */
async function createAhead(
  client: pg.PoolClient,
  table: HistoryTable,
  existing: readonly AttachedPartition[],
  from: Date,
  now: Date,
  retentionDays: number,
  report: RoundReport,
): Promise<AttachedPartition[]> {
  const horizon = new Date(now.getTime() - retentionDays * DAY_MS);
  const older = from < horizon ? missingRanges('month', existing, from, horizon) : [];
  const ranges = [
    ...older,
    ...missingRanges(table.span, [...existing, ...older], from < horizon ? horizon : from, new Date(now.getTime() + CREATE_AHEAD_DAYS * DAY_MS)),
  ];
  const created: AttachedPartition[] = [];
  for (const range of ranges) {
    const name = await createPartition(client, table.name, range);
    created.push({ ...range, name, detaching: false });
    report.created.push(name);
  }
  return created;
}

/**
 * Partitions for rows written with times from `from` on, in every history table (partitioned already):
 * for a seed or a generator that writes past times. Holds the round's lock, so no round drops them
 * meanwhile; they go with the next round once past retention.
 */
export async function ensureHistoryPartitions(pool: pg.Pool, from: Date, retention: RetentionDays, now = new Date()): Promise<string[]> {
  const client = await pool.connect();
  try {
    await query(client, sql`SELECT pg_advisory_lock(${ROUND_LOCK_KEY})`);
    try {
      const report: RoundReport = { conversions: {}, created: [], dropped: [], held: [], pruned: {}, failures: [] };
      for (const table of HISTORY_TABLES) {
        if (await isPartitioned(client, table.name)) {
          await createAhead(client, table, await listPartitions(client, table.name), from, now, retention[table.retention], report);
        }
      }
      return report.created;
    } finally {
      await query(client, sql`SELECT pg_advisory_unlock(${ROUND_LOCK_KEY})`);
    }
  } finally {
    client.release();
  }
}

async function dropExpired(
  client: pg.PoolClient,
  table: HistoryTable,
  partitions: readonly AttachedPartition[],
  now: Date,
  retentionDays: number,
  report: RoundReport,
): Promise<void> {
  for (const partition of expiredPartitions(partitions, now, retentionDays)) {
    await dropOne(client, table, partition, report);
  }
}

/** `partition`'s drop, unless unfinished work still needs it or its lock is not granted in time: then a hold says why. */
async function dropOne(client: pg.PoolClient, table: HistoryTable, partition: AttachedPartition, report: RoundReport): Promise<void> {
  const reason = await unfinishedWork(client, table, partition.name);
  if (reason) {
    report.held.push({ partition: partition.name, table: table.name, reason });
    return;
  }
  try {
    await detach(client, table.name, partition);
    await dropDetached(client, table, partition.name, report);
  } catch (error) {
    // A lock not granted within DDL_LOCK_TIMEOUT (a long transaction reading the table): the detach, if
    // begun, is left pending and the next round finishes it; the other partitions and tables go on.
    report.held.push({ partition: partition.name, table: table.name, reason: `past its retention, not dropped this round: ${(error as Error).message}` });
  }
}

/**
 * Drops a detached partition, unless work was queued for its rows between the check before the detach
 * and the detach's end (a staff retry of a sync in it): the detach waited for every transaction that
 * could still see those rows, so this second check misses none. Such a table is attached back and held.
 */
async function dropDetached(client: pg.PoolClient, table: HistoryTable, name: string, report: RoundReport): Promise<void> {
  const reason = await unfinishedWork(client, table, name);
  if (reason) {
    // Without its detach's constraint (never the case for ours) it stays detached, kept until the work is done.
    const back = await reattach(client, table.name, name);
    report.held.push({ partition: name, table: table.name, reason: back ? reason : `${reason} (left detached)` });
    return;
  }
  await dropStandalone(client, name);
  report.dropped.push(name);
}

/** Why the partition's rows are still needed, or undefined when nothing waits on them. */
async function unfinishedWork(client: pg.PoolClient, table: HistoryTable, partition: string): Promise<string | undefined> {
  if (!table.unfinished) return undefined;
  const { rows: work } = await query<{ what: string; n: number }>(client, table.unfinished(identSql(partition)));
  const waiting = work.filter((w) => w.n > 0);
  if (!waiting.length) return undefined;
  return `past its retention but kept: ${waiting.map((w) => `${w.n} ${w.what}`).join(', ')}; dropped by the first round after that work is done`;
}

/** The holds of this round replace the last round's (a small table of its own, not history). */
async function recordHolds(client: pg.PoolClient, held: Hold[]): Promise<void> {
  const input = rows(
    'h',
    { partition: 'text', tableName: 'text', reason: 'text' },
    held.map((h) => ({ partition: h.partition, tableName: h.table, reason: h.reason })),
  );
  await inTransaction(client, async () => {
    await client.query('DELETE FROM history_holds');
    await query(client, sql`INSERT INTO history_holds (partition, table_name, reason) SELECT partition, table_name, reason FROM ${input}`);
  });
}
