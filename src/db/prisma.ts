import { PrismaPg } from '@prisma/adapter-pg';
import { PrismaClient } from '../generated/prisma/client.js';

export type { PrismaClient };

export interface PrismaOptions {
  /** Called with each SQL statement Prisma sends (the N+1 guards in tests count them). */
  onQuery?: (sql: string) => void;
  /** Pool size of the underlying `pg` pool. */
  max?: number;
}

/** A Prisma client over `pg` (Prisma 7's driver adapter: no engine binary involved). */
export function createPrisma(databaseUrl: string, options: PrismaOptions = {}): PrismaClient {
  const adapter = new PrismaPg({ connectionString: databaseUrl, max: options.max ?? 10 });
  if (!options.onQuery) return new PrismaClient({ adapter });
  const client = new PrismaClient({ adapter, log: [{ emit: 'event', level: 'query' }] });
  const onQuery = options.onQuery;
  client.$on('query', (event) => onQuery(event.query));
  return client;
}
