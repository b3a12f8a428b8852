/**
 * The service as `npm start` runs it with the sandbox on, in this process: the configuration read from
 * the environment a newcomer has (SANDBOX on, no CRM URL or app named, so every outside system is the
 * sandbox's default), the sandbox's emulators, the HTTP app on a free loopback port, the ingress and
 * the real worker wired with the configuration's URLs. For tests that need the sandbox's own defaults
 * rather than emulators they start themselves.
 */
import type { Server } from 'node:http';
import { seedDemoIfEmpty } from '../../src/admin/demo.js';
import { makeApp } from '../../src/app.js';
import { loadConfig, type Config } from '../../src/config.js';
import { freePort } from '../../src/db/embedded.js';
import { createPrisma } from '../../src/db/prisma.js';
import { RateLimitStore } from '../../src/db/rate-limit-store.js';
import { createHttpServer } from '../../src/http/server.js';
import { RequestAcceptor } from '../../src/ingress/accept.js';
import { ingressHandler } from '../../src/ingress/handler.js';
import { createLogger } from '../../src/logger.js';
import { Sandbox } from '../../src/sandbox/sandbox.js';
import { createTestDatabase, TEST_ENCRYPTION_KEY, type TestDatabase } from './database.js';
import { startTestWorker } from './worker.js';

export interface SandboxService {
  db: TestDatabase;
  config: Config;
  sandbox: Sandbox;
  /** `config.baseUrl`. */
  base: string;
  close(): Promise<void>;
}

/** Starts it on a new test database; `env` adds variables (`SUPPORT_TOKENS`, ...); `seedDemo` loads the demo fixture pointed at the sandbox. */
export async function startSandboxService(options: { env?: Record<string, string>; seedDemo?: boolean } = {}): Promise<SandboxService> {
  const db = await createTestDatabase();
  const port = await freePort();
  const config = loadConfig({
    DATABASE_URL: db.url,
    ENCRYPTION_KEY: TEST_ENCRYPTION_KEY.toString('hex'),
    SANDBOX: 'true',
    BASE_URL: `http://127.0.0.1:${port}`,
    SANDBOX_SMTP_PORT: String(await freePort()),
    LOG_LEVEL: 'silent',
    ...options.env,
  });
  const logger = createLogger('silent', process.stderr);
  const sandbox = await Sandbox.start({
    prisma: db.prisma,
    baseUrl: config.baseUrl,
    smtpPort: config.sandbox!.smtpPort,
    encryptionKey: TEST_ENCRYPTION_KEY,
    logger,
  });
  const heavyPrisma = createPrisma(db.url, { max: 2 });
  const rateLimits = new RateLimitStore(db.url);
  const acceptor = new RequestAcceptor(db.url);
  const app = makeApp({ config, prisma: db.prisma, heavyPrisma, rateLimits, logger, encryptionKey: TEST_ENCRYPTION_KEY, sandbox });
  const server: Server = createHttpServer(app, ingressHandler(acceptor, logger), logger);
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  if (options.seedDemo) await seedDemoIfEmpty(db.prisma, TEST_ENCRYPTION_KEY, `${config.baseUrl}/sandbox`);
  const worker = await startTestWorker(
    db.url,
    { urls: config.crmUrls, outboundAllowPrivate: config.outboundAllowPrivate, sandboxOrigin: config.sandbox!.origin },
    { blocklists: { pushUrls: config.blocklistPushUrls } },
  );
  return {
    db,
    config,
    sandbox,
    base: config.baseUrl,
    async close() {
      await worker.stop();
      await new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      });
      await sandbox.close();
      await heavyPrisma.$disconnect();
      await rateLimits.close();
      await acceptor.close();
      await db.drop();
    },
  };
}
