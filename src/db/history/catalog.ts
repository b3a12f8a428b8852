import type pg from 'pg';
import { partitionName, type Partition, type PartitionRange } from '../../domain/partitions.js';
import { query, raw, sql, type Sql } from '../sql.js';
import { inTransaction } from '../transaction.js';

/** A partition as the catalog holds it; `detaching` when a DETACH ... CONCURRENTLY was interrupted half way. */
export interface AttachedPartition extends Partition {
  detaching: boolean;
}

/** How long DDL of the history job waits for a lock before giving up (and trying again next round), so it never queues the ingress behind it. */
export const DDL_LOCK_TIMEOUT = '2s';

/** Whether `table` exists and is partitioned (undefined: no such table). */
export async function isPartitioned(client: pg.ClientBase | pg.Pool, table: string): Promise<boolean | undefined> {
  const { rows } = await query<{ partitioned: boolean }>(
    client,
    sql`SELECT c.relkind = 'p' AS partitioned FROM pg_class c WHERE c.oid = to_regclass(${`public.${table}`})`,
  );
  return rows[0]?.partitioned;
}

/** The partitions of `table`, oldest first, with their ranges read from the catalog. */
export async function listPartitions(client: pg.ClientBase | pg.Pool, table: string): Promise<AttachedPartition[]> {
  const { rows } = await query<{ name: string; from: Date; to: Date; detaching: boolean }>(
    client,
    sql`SELECT c.relname AS name, b.bounds[1]::timestamptz AS "from", b.bounds[2]::timestamptz AS "to", i.inhdetachpending AS detaching
          FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid ${boundsOf('c')}
         WHERE i.inhparent = to_regclass(${`public.${table}`})
         ORDER BY 2`,
  );
  return rows;
}

/**
 * `CROSS JOIN LATERAL ... b`: `b.bounds`, the `[from, to]` texts of the partition `c` (a pg_class alias)
 * read from its bound expression (`FOR VALUES FROM ('...') TO ('...')`).
 */
export function boundsOf(c: string): Sql {
  return sql`CROSS JOIN LATERAL (SELECT regexp_match(pg_get_expr(${raw(c)}.relpartbound, ${raw(c)}.oid), 'FROM \\(''([^'']+)''\\) TO \\(''([^'']+)''\\)') AS bounds) b`;
}

/**
 * Adds the partition of `range` to `parent`: created on its own, then attached, which locks the parent
 * only in SHARE UPDATE EXCLUSIVE mode (inserts and reads go on). One transaction: a crash leaves nothing
 * half made.
 */
export async function createPartition(client: pg.ClientBase, parent: string, range: PartitionRange, name = partitionName(parent, range.from)): Promise<string> {
  await inTransaction(
    client,
    async () => {
      await client.query(`CREATE TABLE ${ident(name)} (LIKE ${ident(parent)} INCLUDING DEFAULTS INCLUDING CONSTRAINTS)`);
      await client.query(`ALTER TABLE ${ident(parent)} ATTACH PARTITION ${ident(name)} FOR VALUES ${bounds(range)}`);
    },
    DDL_LOCK_TIMEOUT,
  );
  return name;
}

/** The `FOR VALUES` clause of a range (our own dates: spliced, as DDL takes no parameters). */
export function bounds(range: PartitionRange): string {
  return `FROM ('${range.from.toISOString()}') TO ('${range.to.toISOString()}')`;
}

/**
 * Detaches `partition` from `parent` without blocking reads or writes of the parent
 * (`DETACH PARTITION ... CONCURRENTLY`, two transactions of PostgreSQL's own; it cannot run in ours),
 * or finishes a detach a crash interrupted (`FINALIZE`). When it returns, every transaction that could
 * see the partition's rows through the parent has ended.
 */
export async function detach(client: pg.ClientBase, parent: string, partition: AttachedPartition): Promise<void> {
  await client.query(`SET lock_timeout = '${DDL_LOCK_TIMEOUT}'`);
  try {
    await client.query(`ALTER TABLE ${ident(parent)} DETACH PARTITION ${ident(partition.name)} ${partition.detaching ? 'FINALIZE' : 'CONCURRENTLY'}`);
  } finally {
    await client.query('RESET lock_timeout');
  }
}

/**
 * Attaches a table detached from `parent` back as its partition. The CHECK constraint a concurrent
 * detach leaves on it matches its bounds, so PostgreSQL skips the scan; the range is read from that
 * constraint. False when the table has no such constraint (nothing is changed then).
 */
export async function reattach(client: pg.ClientBase, parent: string, table: string): Promise<boolean> {
  const { rows } = await query<{ from: Date | null; to: Date | null }>(
    client,
    sql`SELECT (regexp_match(d.def, '>= ''([^'']+)'''))[1]::timestamptz AS "from", (regexp_match(d.def, ' < ''([^'']+)'''))[1]::timestamptz AS "to"
          FROM pg_constraint c CROSS JOIN LATERAL (SELECT pg_get_constraintdef(c.oid) AS def) d
         WHERE c.contype = 'c' AND c.conrelid = to_regclass(${`public.${table}`}) AND d.def LIKE '%created_at >= %'`,
  );
  const range = rows.find((r) => r.from && r.to);
  if (!range?.from || !range.to) return false;
  await inTransaction(
    client,
    () => client.query(`ALTER TABLE ${ident(parent)} ATTACH PARTITION ${ident(table)} FOR VALUES ${bounds({ from: range.from!, to: range.to! })}`),
    DDL_LOCK_TIMEOUT,
  );
  return true;
}

/**
 * Drops a table no one reads any more (a detached partition, a table a conversion replaced): its foreign
 * keys first, then its indexes, each in a transaction of its own, then the table.
 * - `DROP TABLE` alone would lock every table its foreign keys name, one after another, while the
 *   ingress holds one and waits for the next: a deadlock. One at a time, nothing the ingress needs is
 *   held while waiting for another.
 * - A drop's commit frees the files with one truncate each. Truncating a large file stalls other
 *   processes' fsync (bench:history measured 80 ms commits on a month's `syncs` partition, the ingress's
 *   WAL flushes waiting behind them); an index at a time cuts that into smaller stalls.
 */
export async function dropStandalone(client: pg.ClientBase, table: string): Promise<void> {
  const { rows: foreignKeys } = await query<{ name: string }>(
    client,
    sql`SELECT conname AS name FROM pg_constraint WHERE contype = 'f' AND conrelid = to_regclass(${`public.${table}`}) ORDER BY conname`,
  );
  for (const fk of foreignKeys) {
    await inTransaction(client, () => client.query(`ALTER TABLE ${ident(table)} DROP CONSTRAINT ${ident(fk.name)}`), DDL_LOCK_TIMEOUT);
  }
  // An index behind a primary key or unique constraint goes with its constraint. Names as the catalog
  // quotes them: a replaced table's indexes are named by its migrations.
  const { rows: indexes } = await query<{ index: string; constraint: string | null }>(
    client,
    sql`SELECT quote_ident(i.relname) AS index, quote_ident(c.conname) AS "constraint"
          FROM pg_index x JOIN pg_class i ON i.oid = x.indexrelid
          LEFT JOIN pg_constraint c ON c.conindid = x.indexrelid AND c.conrelid = x.indrelid AND c.contype IN ('p', 'u')
         WHERE x.indrelid = to_regclass(${`public.${table}`})
         ORDER BY pg_relation_size(x.indexrelid) DESC`,
  );
  for (const index of indexes) {
    const drop = index.constraint ? `ALTER TABLE ${ident(table)} DROP CONSTRAINT ${index.constraint}` : `DROP INDEX ${index.index}`;
    await inTransaction(client, () => client.query(drop), DDL_LOCK_TIMEOUT);
  }
  await inTransaction(client, () => client.query(`DROP TABLE IF EXISTS ${ident(table)}`), DDL_LOCK_TIMEOUT);
}

/** Tables named like partitions of `parent` that no table holds as a partition: detached by a round a crash stopped before its drop. */
export async function strayPartitions(client: pg.ClientBase, parent: string): Promise<string[]> {
  const { rows } = await query<{ name: string }>(
    client,
    sql`SELECT c.relname AS name FROM pg_class c
         WHERE c.relnamespace = 'public'::regnamespace AND c.relkind = 'r' AND c.relname ~ ${`^${parent}_p[0-9]{8}$`}
           AND NOT c.relispartition`,
  );
  return rows.map((r) => r.name);
}

/** A quoted identifier of ours (table and index names the code builds). */
export function ident(name: string): string {
  if (!/^[a-z_][a-z0-9_]*$/.test(name)) throw new Error(`not an identifier of ours: ${name}`);
  return `"${name}"`;
}

/** `ident` as a SQL fragment. */
export function identSql(name: string): Sql {
  return raw(ident(name));
}
