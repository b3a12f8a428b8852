import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { inject } from 'vitest';
import { createPrisma, type PrismaClient } from '../../src/db/prisma.js';

/** A fresh, migrated database for one test file, cloned from the run's template. */
export interface TestDatabase {
  url: string;
  name: string;
  prisma: PrismaClient;
  /** Runs one SQL statement on a short-lived connection (for assertions below Prisma). */
  query<T extends pg.QueryResultRow = pg.QueryResultRow>(sql: string, params?: unknown[]): Promise<T[]>;
  drop(): Promise<void>;
}

export const TEST_ENCRYPTION_KEY = Buffer.alloc(32, 7);

/** Creates a database cloned from the migrated template (or, with `empty`, an empty one). */
export async function createTestDatabase(options: { empty?: boolean } = {}): Promise<TestDatabase> {
  const adminUrl = inject('postgresAdminUrl');
  const name = `test_${randomBytes(6).toString('hex')}`;
  await adminQuery(adminUrl, `CREATE DATABASE ${name}${options.empty ? '' : ` TEMPLATE ${inject('templateDatabase')}`}`);
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  const prisma = createPrisma(url.toString(), { max: 4 });
  return {
    url: url.toString(),
    name,
    prisma,
    async query(sql, params) {
      const client = new pg.Client({ connectionString: url.toString() });
      await client.connect();
      try {
        return (await client.query(sql, params)).rows;
      } finally {
        await client.end();
      }
    },
    async drop() {
      await prisma.$disconnect();
      await adminQuery(adminUrl, `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    },
  };
}

async function adminQuery(adminUrl: string, sql: string): Promise<void> {
  const client = new pg.Client({ connectionString: adminUrl });
  await client.connect();
  try {
    await client.query(sql);
  } finally {
    await client.end();
  }
}
