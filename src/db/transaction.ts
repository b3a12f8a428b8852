import type pg from 'pg';

/** Runs `work` in one transaction on a client of `pool`: committed when it resolves, rolled back when it throws. */
export async function withTransaction<T>(pool: pg.Pool, work: (client: pg.PoolClient) => Promise<T>): Promise<T> {
  const client = await pool.connect();
  try {
    await client.query('BEGIN');
    const result = await work(client);
    await client.query('COMMIT');
    return result;
  } catch (error) {
    await client.query('ROLLBACK').catch(() => {});
    throw error;
  } finally {
    client.release();
  }
}

/**
 * Runs `work` in one transaction on `client` (a client of its own, for DDL that must not wait long for
 * its locks: `lockTimeout` applies to this transaction only), committed when it resolves.
 */
export async function inTransaction<T>(client: pg.ClientBase, work: () => Promise<T>, lockTimeout?: string): Promise<T> {
  await client.query('BEGIN');
  try {
    if (lockTimeout !== undefined) await client.query(`SET LOCAL lock_timeout = '${lockTimeout}'`);
    const result = await work();
    await client.query('COMMIT');
    return result;
  } catch (error) {
    await client.query('ROLLBACK').catch(() => {});
    throw error;
  }
}
