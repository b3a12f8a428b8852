import { createHash, randomUUID } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, readdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { diffSchemas } from './schema-engine.js';
import { query, sql } from './sql.js';

/** Where the schema and Prisma's migration folders live. */
const PRISMA_DIR = fileURLToPath(new URL('../../prisma/', import.meta.url));
export const SCHEMA_FILE = path.join(PRISMA_DIR, 'schema.prisma');
export const MIGRATIONS_DIR = path.join(PRISMA_DIR, 'migrations');
/** The schema the committed migrations produce; `db:migration` diffs `schema.prisma` against it. */
export const SNAPSHOT_FILE = path.join(MIGRATIONS_DIR, 'schema.snapshot.prisma');

export interface Migration {
  name: string;
  sql: string;
  checksum: string;
}

/** Reads every migration folder (`<timestamp>_<name>/migration.sql`), oldest first. */
export async function readMigrations(dir = MIGRATIONS_DIR): Promise<Migration[]> {
  if (!existsSync(dir)) return [];
  const entries = await readdir(dir, { withFileTypes: true });
  const names = entries
    .filter((e) => e.isDirectory() && /^\d{14}_/.test(e.name))
    .map((e) => e.name)
    .sort();
  return Promise.all(
    names.map(async (name) => {
      const sql = await readFile(path.join(dir, name, 'migration.sql'), 'utf8');
      return { name, sql, checksum: createHash('sha256').update(sql).digest('hex') };
    }),
  );
}

/**
 * Applies pending migrations, each in its own transaction, under an advisory lock so that several
 * processes starting at once apply each migration exactly once. Rows go into `_prisma_migrations`
 * with Prisma's columns and checksums, so `prisma migrate deploy` stays compatible.
 * @returns the names of the migrations this call applied.
 * @throws when an applied migration's file was edited afterwards (its checksum changed).
 */
export async function applyMigrations(databaseUrl: string, dir = MIGRATIONS_DIR): Promise<string[]> {
  const migrations = await readMigrations(dir);
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    await query(client, sql`SELECT pg_advisory_lock(${MIGRATION_LOCK_KEY})`);
    await client.query(MIGRATIONS_TABLE_DDL);
    const { rows } = await client.query<{ migration_name: string; checksum: string }>(
      'SELECT migration_name, checksum FROM _prisma_migrations WHERE finished_at IS NOT NULL AND rolled_back_at IS NULL',
    );
    const applied = new Map(rows.map((r) => [r.migration_name, r.checksum]));
    const done: string[] = [];
    for (const migration of migrations) {
      const checksum = applied.get(migration.name);
      if (checksum !== undefined) {
        if (checksum !== migration.checksum) {
          throw new Error(`Migration ${migration.name} was edited after it was applied; committed migrations are never edited`);
        }
        continue;
      }
      await applyOne(client, migration);
      done.push(migration.name);
    }
    return done;
  } finally {
    await query(client, sql`SELECT pg_advisory_unlock(${MIGRATION_LOCK_KEY})`).catch(() => {});
    await client.end();
  }
}

/**
 * Writes a new migration folder with the SQL that takes the snapshot (what the committed migrations
 * produce) to `schema.prisma`, then moves the snapshot forward.
 * @returns the folder name, or undefined when the schema has not changed.
 */
export async function createMigration(name: string, databaseUrl: string, now = new Date()): Promise<string | undefined> {
  if (!/^[a-z0-9_]+$/.test(name)) throw new Error('A migration name uses only lowercase letters, digits and underscores');
  const schema = await readFile(SCHEMA_FILE, 'utf8');
  const snapshot = existsSync(SNAPSHOT_FILE) ? await readFile(SNAPSHOT_FILE, 'utf8') : null;
  const diff = await diffSchemas(snapshot, schema, databaseUrl);
  if (!diff.changed) return undefined;
  const folder = `${now.toISOString().replace(/\D/g, '').slice(0, 14)}_${name}`;
  await mkdir(path.join(MIGRATIONS_DIR, folder), { recursive: true });
  await writeFile(path.join(MIGRATIONS_DIR, folder, 'migration.sql'), diff.sql);
  await writeFile(path.join(MIGRATIONS_DIR, 'migration_lock.toml'), MIGRATION_LOCK_TOML);
  await writeFile(SNAPSHOT_FILE, schema);
  return folder;
}

async function applyOne(client: pg.Client, migration: Migration): Promise<void> {
  const id = randomUUID();
  await client.query('BEGIN');
  try {
    await client.query(migration.sql);
    await query(
      client,
      sql`INSERT INTO _prisma_migrations (id, checksum, migration_name, started_at, finished_at, applied_steps_count)
          VALUES (${id}, ${migration.checksum}, ${migration.name}, now(), now(), 1)`,
    );
    await client.query('COMMIT');
  } catch (error) {
    await client.query('ROLLBACK');
    throw new Error(`Migration ${migration.name} failed: ${error instanceof Error ? error.message : String(error)}`, { cause: error });
  }
}

/** Any constant shared by every process of the service; it names "the migration lock". */
const MIGRATION_LOCK_KEY = 7_302_114_519;

// Prisma's own definition of its bookkeeping table.
const MIGRATIONS_TABLE_DDL = `
CREATE TABLE IF NOT EXISTS _prisma_migrations (
  id                  VARCHAR(36) PRIMARY KEY NOT NULL,
  checksum            VARCHAR(64) NOT NULL,
  finished_at         TIMESTAMPTZ,
  migration_name      VARCHAR(255) NOT NULL,
  logs                TEXT,
  rolled_back_at      TIMESTAMPTZ,
  started_at          TIMESTAMPTZ NOT NULL DEFAULT now(),
  applied_steps_count INTEGER NOT NULL DEFAULT 0
)`;

const MIGRATION_LOCK_TOML = `# Please do not edit this file manually
# It should be added in your version-control system (e.g., Git)
provider = "postgresql"
`;
