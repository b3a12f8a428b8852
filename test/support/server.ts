import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { makeApp } from '../../src/app.js';
import { loadConfig, type Config, type LogLevel } from '../../src/config.js';
import { createPrisma, type PrismaClient } from '../../src/db/prisma.js';
import { RateLimitStore } from '../../src/db/rate-limit-store.js';
import { createHttpServer } from '../../src/http/server.js';
import { RequestAcceptor } from '../../src/ingress/accept.js';
import { ingressHandler } from '../../src/ingress/handler.js';
import { createLogger } from '../../src/logger.js';
import { afterAll, beforeAll } from 'vitest';
import { createTestDatabase, TEST_ENCRYPTION_KEY, type TestDatabase } from './database.js';

/** The real app on a loopback port, configured like production but for the given variables. */
export interface TestServer {
  baseUrl: string;
  config: Config;
  close(): Promise<void>;
}

export const SUPPORT_TOKEN = 'staff-token-0123456789abcdef';

/** Where the server's logger writes, and from which level (default: silent, to stderr). */
interface TestServerLogging {
  level: LogLevel;
  stream: NodeJS.WritableStream;
}

export async function startTestServer(
  db: { url: string; prisma: PrismaClient },
  env: Record<string, string> = {},
  logging?: TestServerLogging,
): Promise<TestServer> {
  const config = loadConfig({
    DATABASE_URL: db.url,
    ENCRYPTION_KEY: TEST_ENCRYPTION_KEY.toString('hex'),
    SUPPORT_TOKENS: SUPPORT_TOKEN,
    LOG_LEVEL: 'silent',
    BASE_URL: 'http://api.test.local',
    // The suite makes thousands of requests from 127.0.0.1; the rate-limit tests set the spec's values.
    RATE_LIMIT_PER_IP: '1000000',
    RATE_LIMIT_PER_ACCOUNT: '1000000',
    RATE_LIMIT_OUTREACH: '1000000',
    ...env,
  });
  const heavyPrisma = createPrisma(db.url, { statementTimeoutMs: config.queryTimeoutMs, max: 4 });
  const rateLimits = new RateLimitStore(db.url);
  const logger = createLogger(logging?.level ?? 'silent', logging?.stream ?? process.stderr);
  const acceptor = new RequestAcceptor(db.url);
  const app = makeApp({ config, prisma: db.prisma, heavyPrisma, rateLimits, logger, encryptionKey: TEST_ENCRYPTION_KEY });
  const server: Server = createHttpServer(app, ingressHandler(acceptor, logger), logger);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  const { port } = server.address() as AddressInfo;
  return {
    baseUrl: `http://127.0.0.1:${port}`,
    config,
    close: async () => {
      await new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      });
      await heavyPrisma.$disconnect();
      await rateLimits.close();
      await acceptor.close();
    },
  };
}

/**
 * Registers a fresh database and a server on it for the calling test file (beforeAll/afterAll);
 * read `ctx.db` and `ctx.server` inside tests.
 */
export function useTestServer(env: Record<string, string> = {}): { db: TestDatabase; server: TestServer } {
  const ctx = {} as { db: TestDatabase; server: TestServer };
  beforeAll(async () => {
    ctx.db = await createTestDatabase();
    ctx.server = await startTestServer(ctx.db, env);
  });
  afterAll(async () => {
    await ctx.server?.close();
    await ctx.db?.drop();
  });
  return ctx;
}
