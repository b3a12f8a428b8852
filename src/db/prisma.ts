import { PrismaPg } from '@prisma/adapter-pg';
import { PrismaClient } from '../generated/prisma/client.js';

export type { PrismaClient };

export interface PrismaOptions {
  /** Called with each SQL statement Prisma sends (the N+1 guards in tests count them). */
  onQuery?: (sql: string) => void;
  /** Pool size of the underlying `pg` pool. */
  max?: number;
  /** PostgreSQL's statement_timeout for every statement of this client: past it the server cancels the query. */
  statementTimeoutMs?: number;
}

/** A Prisma client over `pg` (Prisma 7's driver adapter: no engine binary involved). */
export function createPrisma(databaseUrl: string, options: PrismaOptions = {}): PrismaClient {
  const adapter = new PrismaPg({
    connectionString: databaseUrl,
    max: options.max ?? 10,
    ...(options.statementTimeoutMs ? { statement_timeout: options.statementTimeoutMs } : {}),
  });
  if (!options.onQuery) return new PrismaClient({ adapter });
  const client = new PrismaClient({ adapter, log: [{ emit: 'event', level: 'query' }] });
  const onQuery = options.onQuery;
  client.$on('query', (event) => onQuery(event.query));
  return client;
}

/** Whether `error` is PostgreSQL cancelling a statement (57014: statement_timeout or a cancel request). */
export function isQueryCanceled(error: unknown): boolean {
  const seen = new Set<unknown>();
  for (let e: unknown = error; e && typeof e === 'object' && !seen.has(e); e = (e as { cause?: unknown }).cause) {
    seen.add(e);
    const { code, meta, message } = e as { code?: unknown; meta?: { code?: unknown }; message?: unknown };
    if (code === '57014' || meta?.code === '57014' || (typeof message === 'string' && /canceling statement due to statement timeout/.test(message)))
      return true;
  }
  return false;
}
