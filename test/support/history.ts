import pg from 'pg';
import { DEFAULT_RETENTION } from '../../src/config.js';
import { ensureHistoryPartitions, prepareHistory } from '../../src/db/history/maintain.js';

/** Tests write history at fixed past times (the REST history tests' January 2025): their partitions go back to then. */
const TEST_HISTORY_FROM = new Date('2025-01-01T00:00:00Z');

/**
 * What a migrated test database gets before tests clone it: its history tables on time partitions (as a
 * process does before it serves) and partitions back to {@link TEST_HISTORY_FROM}.
 */
export async function prepareTestHistory(databaseUrl: string): Promise<void> {
  await prepareHistory(databaseUrl, { retention: DEFAULT_RETENTION });
  const pool = new pg.Pool({ connectionString: databaseUrl, max: 1 });
  try {
    await ensureHistoryPartitions(pool, TEST_HISTORY_FROM, DEFAULT_RETENTION);
  } finally {
    await pool.end();
  }
}
