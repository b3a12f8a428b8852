import { cp, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { applyMigrations, MIGRATIONS_DIR, readMigrations, SCHEMA_FILE, SNAPSHOT_FILE } from '../../src/db/migrations.js';
import { diffSchemas } from '../../src/db/schema-engine.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';
import { prepareTestHistory } from '../support/history.js';

const cleanup: TestDatabase[] = [];
let migrated: TestDatabase;

beforeAll(async () => {
  migrated = await createTestDatabase();
  cleanup.push(migrated);
});
afterAll(async () => {
  await Promise.all(cleanup.map((db) => db.drop()));
});

async function emptyDatabase(): Promise<TestDatabase> {
  const db = await createTestDatabase({ empty: true });
  cleanup.push(db);
  return db;
}

describe('schema drift', () => {
  it('schema.prisma matches the schema the committed migrations produce (run npm run db:migration -- NAME)', async () => {
    const [schema, snapshot] = await Promise.all([readFile(SCHEMA_FILE, 'utf8'), readFile(SNAPSHOT_FILE, 'utf8')]);
    const diff = await diffSchemas(snapshot, schema, migrated.url);
    expect(diff.changed, `schema.prisma has changes no migration covers:\n${diff.sql}`).toBe(false);
  });

  it('a migrated database is identical to one built straight from schema.prisma', async () => {
    // Setup: a database built from diff(empty -> schema.prisma), beside the template built by the migrations
    const direct = await emptyDatabase();
    const { sql } = await diffSchemas(null, await readFile(SCHEMA_FILE, 'utf8'), direct.url);
    await direct.query(sql);
    // Both go through the same move onto time partitions as the template.
    await prepareTestHistory(direct.url);
    // Action
    const [fromMigrations, fromSchema] = await Promise.all([describeDatabase(migrated), describeDatabase(direct)]);
    // Assertions
    expect(fromMigrations.tables.length).toBeGreaterThan(15);
    expect(fromMigrations).toEqual(fromSchema);
  });
});

describe('applyMigrations', () => {
  it('applies each migration exactly once when several processes start at once', async () => {
    const db = await emptyDatabase();
    const expected = (await readMigrations()).map((m) => m.name);

    const results = await Promise.all([applyMigrations(db.url), applyMigrations(db.url), applyMigrations(db.url)]);

    expect(results.flat().sort()).toEqual(expected);
    const rows = await db.query<{ migration_name: string; checksum: string }>(
      'SELECT migration_name, checksum FROM _prisma_migrations ORDER BY migration_name',
    );
    expect(rows.map((r) => r.migration_name)).toEqual(expected);
    expect(rows.every((r) => /^[0-9a-f]{64}$/.test(r.checksum))).toBe(true);
    expect(await applyMigrations(db.url)).toEqual([]);
  });

  it('refuses to run when an applied migration was edited afterwards', async () => {
    // Setup: a copy of the migrations, applied, then one file edited
    const db = await emptyDatabase();
    const dir = await mkdtemp(path.join(os.tmpdir(), 'pss-migrations-'));
    try {
      await cp(MIGRATIONS_DIR, dir, { recursive: true });
      await applyMigrations(db.url, dir);
      const [first] = await readMigrations(dir);
      const file = path.join(dir, first!.name, 'migration.sql');
      await writeFile(file, `${await readFile(file, 'utf8')}\n-- edited\n`);
      // Action + Assertions
      await expect(applyMigrations(db.url, dir)).rejects.toThrow(`Migration ${first!.name} was edited after it was applied`);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('rolls back a failing migration whole and records nothing for it', async () => {
    const db = await emptyDatabase();
    const dir = await mkdtemp(path.join(os.tmpdir(), 'pss-migrations-'));
    try {
      await cp(MIGRATIONS_DIR, dir, { recursive: true });
      await cp(path.join(MIGRATIONS_DIR, (await readMigrations())[0]!.name), path.join(dir, '29991231000000_broken'), { recursive: true });
      await writeFile(path.join(dir, '29991231000000_broken', 'migration.sql'), 'CREATE TABLE half_done (id int);\nSELECT * FROM no_such_table;\n');

      await expect(applyMigrations(db.url, dir)).rejects.toThrow(/Migration 29991231000000_broken failed/);

      expect(await db.query("SELECT 1 FROM information_schema.tables WHERE table_name = 'half_done'")).toEqual([]);
      expect(await db.query("SELECT 1 FROM _prisma_migrations WHERE migration_name = '29991231000000_broken'")).toEqual([]);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});

/**
 * The parts of a schema that matter, in a stable order: tables and columns, indexes, constraints, enums,
 * and which partitions each partitioned table has (a partition's columns, indexes and constraints are its
 * parent's, so they are listed once, on the parent).
 */
async function describeDatabase(db: TestDatabase) {
  const notPartition = (column: string) => `${column} NOT IN (SELECT relname FROM pg_class WHERE relispartition)`;
  const tables = await db.query(
    `SELECT table_name::text, column_name::text, data_type, udt_name, is_nullable, column_default, character_maximum_length, datetime_precision
       FROM information_schema.columns WHERE table_schema = 'public' AND table_name <> '_prisma_migrations' AND ${notPartition('table_name')}
      ORDER BY table_name::text COLLATE "C", column_name::text COLLATE "C"`,
  );
  const indexes = await db.query(
    `SELECT tablename::text, indexname::text, indexdef FROM pg_indexes
      WHERE schemaname = 'public' AND tablename <> '_prisma_migrations' AND ${notPartition('tablename')} ORDER BY indexname::text COLLATE "C"`,
  );
  const constraints = await db.query(
    `SELECT conrelid::regclass::text AS table_name, conname::text, pg_get_constraintdef(oid) AS definition
       FROM pg_constraint WHERE connamespace = 'public'::regnamespace AND conrelid::regclass::text <> '_prisma_migrations'
        AND ${notPartition('conrelid::regclass::text')}
      ORDER BY conrelid::regclass::text COLLATE "C", conname::text COLLATE "C"`,
  );
  const partitions = await db.query(
    `SELECT inhparent::regclass::text AS parent, inhrelid::regclass::text AS partition, pg_get_expr(c.relpartbound, c.oid) AS bounds
       FROM pg_inherits JOIN pg_class c ON c.oid = inhrelid ORDER BY inhrelid::regclass::text COLLATE "C"`,
  );
  const enums = await db.query(
    `SELECT t.typname, string_agg(e.enumlabel, ',' ORDER BY e.enumsortorder) AS labels
       FROM pg_type t JOIN pg_enum e ON e.enumtypid = t.oid GROUP BY t.typname ORDER BY t.typname`,
  );
  return { tables, indexes, constraints, enums, partitions };
}
