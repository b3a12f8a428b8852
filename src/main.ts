/**
 * Starts the service. `all` (npm start): embedded PostgreSQL unless DATABASE_URL, migrations, demo
 * data on first start, the HTTP server and the worker in one process. `api` and `worker` (npm run api /
 * npm run worker) run one half each, so several of each can share one PostgreSQL.
 */
import type { Server } from 'node:http';
import pg from 'pg';
import { demoBanner, seedDemoIfEmpty } from './admin/demo.js';
import { makeApp } from './app.js';
import { ConfigError, loadConfig, type Config } from './config.js';
import { Sandbox } from './sandbox/sandbox.js';
import { openDatabase, type Database } from './db/database.js';
import { applyMigrations } from './db/migrations.js';
import { createPrisma, type PrismaClient } from './db/prisma.js';
import { installJobSchema } from './db/job-schema.js';
import { prepareHistory } from './db/history/maintain.js';
import { RateLimitStore } from './db/rate-limit-store.js';
import { createHttpServer } from './http/server.js';
import { RequestAcceptor } from './ingress/accept.js';
import { ingressHandler } from './ingress/handler.js';
import { createLogger, type Logger } from './logger.js';
import { ShutdownStack } from './shutdown.js';
import { startWorker, WORKER_APPLICATION_NAME, workerPoolSize, workerSettings } from './worker.js';

type Role = 'all' | 'api' | 'worker';

const role = process.argv[2] as Role;
if (!['all', 'api', 'worker'].includes(role)) {
  process.stderr.write('usage: main.ts all | api | worker\n');
  process.exit(2);
}

const stack = new ShutdownStack();
await main(role, stack).catch(async (error: unknown) => {
  // Start-up problems are the operator's to fix: say what is wrong, without a stack trace,
  // and stop whatever had started (an embedded PostgreSQL must not outlive us).
  process.stderr.write(`Could not start: ${error instanceof ConfigError || error instanceof Error ? error.message : String(error)}\n`);
  await stack.run();
  process.exit(1);
});

async function main(role: Role, stack: ShutdownStack): Promise<void> {
  const config = loadConfig();
  const logger = createLogger(config.logLevel);
  stack.logger = logger;
  installSignalHandlers(stack, logger);

  const database = await openDatabase(config, role === 'all' ? 'own' : 'join');
  stack.push('database', () => database.release());
  const applied = await applyMigrations(database.url);
  if (applied.length > 0) logger.info({ migrations: applied }, 'applied migrations');
  // The ingress queues jobs in SQL: API processes need graphile-worker's schema as much as workers do.
  await installJobSchema(database.url);
  // History tables on time partitions, partitions ahead, retention: before serving (issue 31).
  await prepareHistory(database.url, { retention: config.retention, log: (message, fields) => logger.info(fields ?? {}, message) });

  const prisma = createPrisma(database.url);
  stack.push('prisma', () => prisma.$disconnect());

  // Demo data (with its public keys) only ever goes into the embedded database, never a real one.
  if (role === 'all' && config.databaseUrl === undefined) await seedDemo(prisma, database, config, logger);
  const settings = workerSettings(config.workerConcurrency);
  if (role !== 'api') {
    const pool = new pg.Pool({ connectionString: database.url, max: workerPoolSize(settings), application_name: WORKER_APPLICATION_NAME });
    // A dropped connection must not crash the process: log it, and the pool replaces it.
    // The error only: pg attaches its whole client (settings, buffers) to an idle connection's error.
    const brief = (error: Error & { code?: string }) => ({ err: { message: error.message, code: error.code } });
    pool.on('error', (error) => logger.warn(brief(error), 'idle worker connection failed'));
    pool.on('connect', (client) => client.on('error', (error) => logger.warn(brief(error), 'worker connection failed')));
    stack.push('worker pool', () => pool.end());
    const crm = {
      sandboxOrigin: config.sandbox?.origin,
      urls: config.crmUrls,
      outboundAllowPrivate: config.outboundAllowPrivate,
      budgets: config.crmBudgets,
    };
    const deps = {
      crm,
      outboundAllowPrivate: config.outboundAllowPrivate,
      sandboxOrigin: config.sandbox?.origin,
      forwarding: config.forwarding,
      relays: config.relays,
      webhooks: config.webhooks,
      blocklists: { pushUrls: config.blocklistPushUrls, refreshMinutes: config.blocklistRefreshMinutes },
      backfill: config.backfill,
      retention: config.retention,
      encryptionKey: database.encryptionKey,
    };
    // A runner that stopped on an error leaves the process without that lane: shut down (exit 1), to be restarted.
    const restart = () =>
      void stack.run().then(() => {
        logger.flush?.();
        process.exit(1);
      });
    const runner = await startWorker(pool, logger, deps, settings, restart);
    stack.push('worker', () => runner.stop());
  }
  // HTTP starts last so that it stops first: drained while the worker and the database still run.
  if (role !== 'worker') {
    const heavyPrisma = createPrisma(database.url, { statementTimeoutMs: config.queryTimeoutMs, max: 5 });
    stack.push('heavy-read prisma', () => heavyPrisma.$disconnect());
    const rateLimits = new RateLimitStore(database.url, (error) => logger.warn({ err: error }, 'idle rate-limit connection failed'));
    stack.push('rate-limit pool', () => rateLimits.close());
    const acceptor = new RequestAcceptor(database.url, {}, (error) => logger.warn({ err: error }, 'idle ingress connection failed'));
    stack.push('ingress pool', () => acceptor.close());
    let sandbox: Sandbox | undefined;
    if (config.sandbox) {
      sandbox = await Sandbox.start({ prisma, baseUrl: config.baseUrl, smtpPort: config.sandbox.smtpPort, encryptionKey: database.encryptionKey, logger });
      stack.push('sandbox', () => sandbox!.close());
    }
    const app = makeApp({ config, prisma, heavyPrisma, rateLimits, logger, encryptionKey: database.encryptionKey, sandbox });
    const server = await listen(createHttpServer(app, ingressHandler(acceptor, logger), logger), config.port, config.host);
    stack.push('http', () => closeServer(server));
  }

  logger.info({ role, database: database.description, worker: role === 'api' ? undefined : settings }, 'started');
  if (role === 'all') process.stdout.write(`\n${(await demoBanner(prisma, config)).join('\n')}\n\n`);
}

async function seedDemo(prisma: PrismaClient, database: Database, config: Config, logger: Logger): Promise<void> {
  // With the sandbox on, the demo's outside systems are the sandbox's (src/sandbox/demo.ts).
  const seeded = await seedDemoIfEmpty(prisma, database.encryptionKey, config.sandbox ? `${config.baseUrl}/sandbox` : undefined);
  if (seeded) logger.info({ accounts: seeded.accounts, sources: seeded.sources }, 'loaded fixtures/demo.json into the empty database');
}

function listen(server: Server, port: number, host: string): Promise<Server> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve(server);
    });
  });
}

/** Stops accepting connections, lets in-flight requests finish, then drops idle keep-alive sockets. */
function closeServer(server: Server): Promise<void> {
  return new Promise((resolve) => {
    server.close(() => resolve());
    server.closeIdleConnections();
    // In-flight requests get 10 s; after that their sockets are cut.
    setTimeout(() => server.closeAllConnections(), 10_000).unref();
  });
}

function installSignalHandlers(stack: ShutdownStack, logger: Logger): void {
  let stoppingSince: number | undefined;
  const stop = (signal: NodeJS.Signals) => {
    if (stoppingSince !== undefined) {
      // A terminal's Ctrl-C reaches every process of the group, and npm relays it once more:
      // the same keypress arrives twice within milliseconds. Only a later signal means "now".
      if (Date.now() - stoppingSince < 1_000) return;
      logger.warn({ signal }, 'second signal: exiting now');
      process.exit(1);
    }
    stoppingSince = Date.now();
    logger.info({ signal }, 'shutting down');
    void stack.run().then(() => {
      logger.info('stopped');
      logger.flush?.();
      process.exit(0);
    });
  };
  process.on('SIGINT', stop);
  process.on('SIGTERM', stop);
}
