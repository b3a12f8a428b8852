import { coverageWarning } from '../../domain/partitions.js';
import type { PrismaClient } from '../prisma.js';
import { sql } from '../sql.js';
import { boundsOf } from './catalog.js';
import { HISTORY_TABLE_NAMES } from './tables.js';

/**
 * What /health/ready warns the operator of about history (issue 31), never an outage: a partitioned table
 * whose partitions end less than a week ahead (the hourly job has been failing: inserts fail when they
 * end), and partitions past retention that a round kept, with why.
 */
export async function historyWarnings(prisma: PrismaClient, now = new Date()): Promise<string[]> {
  const partitions = await prisma.$queryRaw<{ parent: string; from: Date; to: Date }[]>(sql`
    SELECT p.relname AS parent, b.bounds[1]::timestamptz AS "from", b.bounds[2]::timestamptz AS "to"
      FROM pg_class p JOIN pg_inherits i ON i.inhparent = p.oid JOIN pg_class c ON c.oid = i.inhrelid ${boundsOf('c')}
     WHERE p.relkind = 'p' AND p.relnamespace = 'public'::regnamespace AND p.relname = ANY(${[...HISTORY_TABLE_NAMES]}::text[])
       AND NOT i.inhdetachpending`);
  const partitioned = await prisma.$queryRaw<{ name: string }[]>(sql`
    SELECT relname AS name FROM pg_class WHERE relkind = 'p' AND relnamespace = 'public'::regnamespace AND relname = ANY(${[...HISTORY_TABLE_NAMES]}::text[])`);
  const holds = await prisma.$queryRaw<{ partition: string; reason: string }[]>(sql`SELECT partition, reason FROM history_holds ORDER BY partition`);
  const coverage = partitioned.flatMap(({ name }) => {
    const warning = coverageWarning(
      name,
      partitions.filter((p) => p.parent === name),
      now,
    );
    return warning ? [warning] : [];
  });
  return [...coverage, ...holds.map((h) => `${h.partition}: ${h.reason}`)];
}
