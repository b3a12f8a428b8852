import type pg from 'pg';
import { conversionRanges, CREATE_AHEAD_DAYS, missingRanges, partitionName } from '../../domain/partitions.js';
import { query, raw, sql } from '../sql.js';
import { inTransaction } from '../transaction.js';
import { bounds, DDL_LOCK_TIMEOUT, dropStandalone, ident, isPartitioned, listPartitions } from './catalog.js';
import { HISTORY_TABLE_NAMES, type HistoryTable } from './tables.js';

export interface ConversionOptions {
  /** Rows copied per statement (each its own transaction). */
  batchSize: number;
  /** Bodies of requests older than this are past RAW_BODY_RETENTION_DAYS: the conversion does not carry them over. */
  bodyHorizon: Date;
  now: Date;
  /** Stops after this many batches (the rest is the next round's); unlimited when absent. */
  maxBatches?: number;
  onProgress?: (progress: { table: string; copiedThrough: string; copyUntil: string }) => void;
}

export type ConversionResult = 'converted' | 'copying' | 'already';

/**
 * Moves `table` (a plain table, as Prisma's migrations create it) onto time partitions while the service
 * keeps reading and writing it:
 *
 * 1. prepare (one short transaction): a partitioned twin `<table>__partitioned` with the same columns,
 *    the primary key and unique indexes widened by `created_at`, the same indexes and foreign keys, and
 *    partitions from the oldest row's month to {@link CREATE_AHEAD_DAYS} ahead; a trigger that repeats
 *    every insert, update and delete of the table on the twin; the copy's bookkeeping row.
 * 2. copy: the rows present when copying began, in `key` order, `batchSize` per transaction, each batch
 *    recording how far it got (a crash resumes there; a row the trigger already wrote is left as is).
 * 3. swap (one transaction, a lock of milliseconds): the old table goes, the twin takes its name, its
 *    indexes' and primary key's names, and its sequence. Ids never change.
 *
 * Foreign keys naming a history table are dropped first (PostgreSQL cannot point one at a partitioned
 * table by id alone); the service keeps those references itself (see docs/decisions.md).
 */
export async function convertTable(client: pg.ClientBase, table: HistoryTable, options: ConversionOptions): Promise<ConversionResult> {
  if (await isPartitioned(client, table.name)) return 'already';
  await dropForeignKeysToHistory(client);
  if (!(await progressOf(client, table.name))) await prepare(client, table, options.now);
  for (let batches = 0; options.maxBatches === undefined || batches < options.maxBatches; batches++) {
    const progress = await progressOf(client, table.name);
    if (!progress) throw new Error(`the conversion of ${table.name} lost its bookkeeping row`);
    options.onProgress?.({ table: table.name, ...progress });
    if (BigInt(progress.copiedThrough) >= BigInt(progress.copyUntil)) {
      await swap(client, table);
      return 'converted';
    }
    await copyBatch(client, table, options);
  }
  return 'copying';
}

const shadowOf = (table: string) => `${table}__partitioned`;
const mirrorOf = (table: string) => `${table}__mirror`;
const shadowPkeyOf = (table: string) => `${table}__p_pkey`;
const replacedOf = (table: string) => `${table}__unpartitioned`;
const shadowIndexOf = (table: string, i: number) => `${table}__p${i}`;

async function progressOf(client: pg.ClientBase, table: string): Promise<{ copiedThrough: string; copyUntil: string } | undefined> {
  const { rows } = await query<{ copiedThrough: string; copyUntil: string }>(
    client,
    sql`SELECT copied_through::text AS "copiedThrough", copy_until::text AS "copyUntil" FROM history_conversions WHERE table_name = ${table}`,
  );
  return rows[0];
}

/**
 * Foreign keys whose referenced table is a history table, from any table: each in a transaction that
 * locks the referenced table first, in the order the ingress takes them (it writes requests, then the
 * outboxes), so the two never deadlock.
 */
async function dropForeignKeysToHistory(client: pg.ClientBase): Promise<void> {
  const { rows } = await query<{ owner: string; name: string; referenced: string }>(
    client,
    sql`SELECT conrelid::regclass::text AS owner, conname AS name, confrelid::regclass::text AS referenced FROM pg_constraint
         WHERE contype = 'f' AND confrelid::regclass::text = ANY(${[...HISTORY_TABLE_NAMES]}::text[])`,
  );
  for (const fk of rows) {
    await inTransaction(
      client,
      async () => {
        await client.query(`LOCK TABLE ${ident(fk.referenced)} IN SHARE ROW EXCLUSIVE MODE`);
        await client.query(`ALTER TABLE ${ident(fk.owner)} DROP CONSTRAINT ${ident(fk.name)}`);
      },
      DDL_LOCK_TIMEOUT,
    );
  }
}

async function prepare(client: pg.ClientBase, table: HistoryTable, now: Date): Promise<void> {
  const name = table.name;
  const shadow = shadowOf(name);
  // Read before any transaction (a scan on a large table; no lock held meanwhile). Rows written later
  // have today's time, or their request's, which is never older than the oldest request.
  const { rows: oldestRows } = await query<{ oldest: Date | null }>(
    client,
    sql`SELECT LEAST((SELECT min(created_at) FROM ${raw(ident(name))}), (SELECT min(created_at) FROM requests)) AS oldest`,
  );
  const oldest = oldestRows[0]?.oldest ?? now;
  const indexes = await indexesOf(client, name);
  const foreignKeys = await foreignKeysOf(client, name);
  const old = conversionRanges(table.span, oldest, now);
  const ranges = [...old, ...missingRanges(table.span, old, now, new Date(now.getTime() + CREATE_AHEAD_DAYS * 86_400_000))];
  const columns = await columnsOf(client, name);

  // The twin first, in a transaction that locks only the tables its foreign keys name (briefly), never the
  // table itself: taking both in one transaction would deadlock with the ingress, which writes both. A twin
  // left by a crash before its trigger holds no row yet: it is made again.
  await inTransaction(
    client,
    async () => {
      await client.query(`DROP TABLE IF EXISTS ${ident(shadow)}`);
      await client.query(`CREATE TABLE ${ident(shadow)} (LIKE ${ident(name)} INCLUDING DEFAULTS) PARTITION BY RANGE (created_at)`);
      await client.query(`ALTER TABLE ${ident(shadow)} ADD CONSTRAINT ${ident(shadowPkeyOf(name))} PRIMARY KEY (${ident(table.key)}, created_at)`);
      for (const [i, index] of indexes.entries()) await client.query(partitionedIndex(index, shadowIndexOf(name, i), shadow));
      for (const fk of foreignKeys) await client.query(`ALTER TABLE ${ident(shadow)} ADD CONSTRAINT ${ident(fk.name)} ${fk.definition}`);
      for (const range of ranges) {
        await client.query(`CREATE TABLE ${ident(partitionName(name, range.from))} PARTITION OF ${ident(shadow)} FOR VALUES ${bounds(range)}`);
      }
    },
    DDL_LOCK_TIMEOUT,
  );
  // Then the trigger, locking the table alone: the twin follows every write from here on (an update is a
  // delete and an insert: its time may move), and the copy's end is read under the same lock, so every row
  // with a larger key arrives through the trigger.
  const key = ident(table.key);
  await inTransaction(
    client,
    async () => {
      await client.query(`LOCK TABLE ${ident(name)} IN SHARE ROW EXCLUSIVE MODE`);
      await client.query(`
        CREATE OR REPLACE FUNCTION ${ident(mirrorOf(name))}() RETURNS trigger LANGUAGE plpgsql AS $mirror$
        BEGIN
          IF TG_OP IN ('UPDATE', 'DELETE') THEN
            DELETE FROM ${ident(shadow)} WHERE ${key} = OLD.${key} AND created_at = OLD.created_at;
          END IF;
          IF TG_OP IN ('INSERT', 'UPDATE') THEN
            INSERT INTO ${ident(shadow)} (${columns.map(ident).join(', ')}) VALUES (${columns.map((c) => `NEW.${ident(c)}`).join(', ')});
          END IF;
          RETURN NULL;
        END $mirror$`);
      await client.query(
        `CREATE TRIGGER ${ident(mirrorOf(name))} AFTER INSERT OR UPDATE OR DELETE ON ${ident(name)} FOR EACH ROW EXECUTE FUNCTION ${ident(mirrorOf(name))}()`,
      );
      await query(
        client,
        sql`INSERT INTO history_conversions (table_name, copy_until)
            SELECT ${name}, COALESCE(max(${raw(key)}), 0) FROM ${raw(ident(name))}`,
      );
    },
    DDL_LOCK_TIMEOUT,
  );
}

/** One batch of the copy, in its own transaction; a row older than every partition gets its month's partition first. */
async function copyBatch(client: pg.ClientBase, table: HistoryTable, options: ConversionOptions): Promise<void> {
  const name = table.name;
  const key = raw(ident(table.key));
  const columns = await columnsOf(client, name);
  const selected = columns.map((c) => (name === 'requests' && c === 'body' ? 'NULL' : ident(c))).join(', ');
  // Request bodies move to request_bodies on the way (those still within RAW_BODY_RETENTION_DAYS).
  const bodies =
    name === 'requests'
      ? sql`, bodies AS (
          INSERT INTO request_bodies (request_id, created_at, body)
          SELECT id, created_at, body FROM batch WHERE body IS NOT NULL AND created_at >= ${options.bodyHorizon}
          ON CONFLICT DO NOTHING)`
      : sql``;
  const statement = sql`
    WITH progress AS (SELECT copied_through, copy_until FROM history_conversions WHERE table_name = ${name} FOR UPDATE),
    batch AS (
      SELECT t.* FROM ${raw(ident(name))} t, progress
       WHERE t.${key} > progress.copied_through AND t.${key} <= progress.copy_until
       ORDER BY t.${key} LIMIT ${options.batchSize}
    ),
    copied AS (
      INSERT INTO ${raw(ident(shadowOf(name)))} (${raw(columns.map(ident).join(', '))})
      SELECT ${raw(selected)} FROM batch ON CONFLICT DO NOTHING
    )${bodies}
    UPDATE history_conversions SET copied_through = COALESCE((SELECT max(${key}) FROM batch), copy_until), updated_at = now()
     WHERE table_name = ${name}`;
  try {
    await query(client, statement);
  } catch (error) {
    if (!isMissingPartition(error)) throw error;
    await addOlderPartitions(client, table);
    await query(client, statement);
  }
}

/** A row older than the twin's oldest partition (written after the conversion looked): its months get partitions. */
async function addOlderPartitions(client: pg.ClientBase, table: HistoryTable): Promise<void> {
  const { rows } = await query<{ oldest: Date | null }>(client, sql`SELECT min(created_at) AS oldest FROM ${raw(ident(table.name))}`);
  const existing = await listPartitions(client, shadowOf(table.name));
  const first = existing[0];
  if (!rows[0]?.oldest || !first) return;
  for (const range of missingRanges('month', existing, rows[0].oldest, first.from)) {
    await client.query(`CREATE TABLE ${ident(partitionName(table.name, range.from))} PARTITION OF ${ident(shadowOf(table.name))} FOR VALUES ${bounds(range)}`);
  }
}

/**
 * The twin takes the table's place in one transaction holding the table's lock alone (for milliseconds:
 * nothing is copied here): the trigger goes, the table steps aside under another name, and the twin takes
 * its name, its primary key's and indexes' names and its id sequence. The old table is dropped after, on
 * its own ({@link dropReplaced}): dropping it here would also lock the tables its foreign keys name, which
 * the ingress reads before it writes this one, a deadlock.
 */
async function swap(client: pg.ClientBase, table: HistoryTable): Promise<void> {
  const name = table.name;
  const shadow = shadowOf(name);
  const replaced = replacedOf(name);
  await inTransaction(
    client,
    async () => {
      await client.query(`LOCK TABLE ${ident(name)} IN ACCESS EXCLUSIVE MODE`);
      const indexes = await indexesOf(client, name);
      const { rows } = await query<{ sequence: string | null }>(client, sql`SELECT pg_get_serial_sequence(${name}, ${table.key}) AS sequence`);
      const sequence = rows[0]?.sequence;
      if (sequence) await client.query(`ALTER SEQUENCE ${sequence} OWNED BY ${ident(shadow)}.${ident(table.key)}`);
      await client.query(`DROP TRIGGER ${ident(mirrorOf(name))} ON ${ident(name)}`);
      await client.query(`DROP FUNCTION ${ident(mirrorOf(name))}()`);
      await client.query(`ALTER TABLE ${ident(name)} RENAME TO ${ident(replaced)}`);
      await client.query(`ALTER TABLE ${ident(replaced)} RENAME CONSTRAINT ${ident(`${name}_pkey`)} TO ${ident(`${replaced}_pkey`)}`);
      for (const [i, index] of indexes.entries()) await client.query(`ALTER INDEX ${ident(index.name)} RENAME TO ${ident(`${name}__u${i}`)}`);
      await client.query(`ALTER TABLE ${ident(shadow)} RENAME TO ${ident(name)}`);
      await client.query(`ALTER TABLE ${ident(name)} RENAME CONSTRAINT ${ident(shadowPkeyOf(name))} TO ${ident(`${name}_pkey`)}`);
      for (const [i, index] of indexes.entries()) await client.query(`ALTER INDEX ${ident(shadowIndexOf(name, i))} RENAME TO ${ident(index.name)}`);
      await query(client, sql`DELETE FROM history_conversions WHERE table_name = ${name}`);
    },
    DDL_LOCK_TIMEOUT,
  );
  await dropReplaced(client, table);
}

/**
 * Drops the table a conversion replaced, if one is left (its drop waited too long for the locks of the
 * tables its foreign keys name, or a crash came first).
 */
export async function dropReplaced(client: pg.ClientBase, table: HistoryTable): Promise<void> {
  if ((await isPartitioned(client, replacedOf(table.name))) !== undefined) await dropStandalone(client, replacedOf(table.name));
}

interface IndexDefinition {
  name: string;
  definition: string;
}

/** The table's indexes other than its primary key, by name. */
async function indexesOf(client: pg.ClientBase, table: string): Promise<IndexDefinition[]> {
  const { rows } = await query<IndexDefinition>(
    client,
    sql`SELECT indexname AS name, indexdef AS definition FROM pg_indexes
         WHERE schemaname = 'public' AND tablename = ${table} AND indexname <> ${`${table}_pkey`} ORDER BY indexname`,
  );
  return rows;
}

/** `index` rebuilt on the twin under `name`; a unique index gains `created_at` (a partitioned table's unique indexes must hold its partition key). */
function partitionedIndex(index: IndexDefinition, name: string, shadow: string): string {
  const match = /^CREATE (UNIQUE )?INDEX \S+ ON (?:public\.)?\S+ USING (\w+) \((.*)\)$/.exec(index.definition);
  if (!match) throw new Error(`the index ${index.name} has a form the conversion does not know: ${index.definition}`);
  const [, unique, method, columns] = match as unknown as [string, string | undefined, string, string];
  const widened = unique && !/\bcreated_at\b/.test(columns) ? `${columns}, created_at` : columns;
  return `CREATE ${unique ?? ''}INDEX ${ident(name)} ON ${ident(shadow)} USING ${method} (${widened})`;
}

/** The table's foreign keys (to tables that are not history tables: the others were dropped). */
async function foreignKeysOf(client: pg.ClientBase, table: string): Promise<IndexDefinition[]> {
  const { rows } = await query<IndexDefinition>(
    client,
    sql`SELECT conname AS name, pg_get_constraintdef(oid) AS definition FROM pg_constraint
         WHERE contype = 'f' AND conrelid = to_regclass(${`public.${table}`}) ORDER BY conname`,
  );
  return rows;
}

async function columnsOf(client: pg.ClientBase, table: string): Promise<string[]> {
  const { rows } = await query<{ name: string }>(
    client,
    sql`SELECT attname AS name FROM pg_attribute WHERE attrelid = to_regclass(${`public.${table}`}) AND attnum > 0 AND NOT attisdropped ORDER BY attnum`,
  );
  return rows.map((r) => r.name);
}

function isMissingPartition(error: unknown): boolean {
  // check_violation raised by tuple routing: "no partition of relation ... found for row".
  return (error as { code?: string }).code === '23514' && /no partition of relation/.test(String((error as Error).message));
}
