import express, { type Express } from 'express';
import { pinoHttp } from 'pino-http';
import type { Config } from './config.js';
import type { PrismaClient } from './db/prisma.js';
import type { RateLimitStore } from './db/rate-limit-store.js';
import type { Logger } from './logger.js';
import { errorHandler, notFound } from './http/errors.js';
import { installGraphql } from './http/graphql.js';
import { installHealth } from './http/health.js';
import { installRest } from './rest/install.js';
import { installSandbox } from './sandbox/router.js';
import type { Sandbox } from './sandbox/sandbox.js';
import { maskIngressCode } from './domain/source-url.js';
import { deriveKey } from './domain/secrets.js';
import { connectSettings } from './connect/links.js';
import { installConnect, maskConnectQuery } from './connect/routes.js';
import { createHttpClient } from './connectors/http/client.js';

export interface AppDeps {
  config: Config;
  prisma: PrismaClient;
  logger: Logger;
  /** The client for heavy reads, whose statements PostgreSQL cancels past QUERY_TIMEOUT_MS. */
  heavyPrisma: PrismaClient;
  /** ENCRYPTION_KEY (or the embedded default's key): cursor signing keys are derived from it. */
  encryptionKey: Buffer;
  /** The rate-limit counters, shared through PostgreSQL with every other API process. */
  rateLimits: RateLimitStore;
  /** SANDBOX: the stand-ins for the outside systems, served under /sandbox; absent, /sandbox is a 404 like any unknown path. */
  sandbox?: Sandbox;
}

/** The HTTP app, read top to bottom: each server concern installs itself; unmatched paths get JSON 404s. */
export function makeApp(deps: AppDeps): Express {
  const app = express();
  app.disable('x-powered-by');
  app.set('trust proxy', deps.config.trustProxyHops > 0 ? deps.config.trustProxyHops : false);
  app.use(
    pinoHttp({
      logger: deps.logger,
      // The sandbox's systems answer the service's own outbound calls: logging them would double every call in the log.
      autoLogging: { ignore: (req) => (req.url?.startsWith('/health') || (deps.sandbox !== undefined && req.url?.startsWith('/sandbox/'))) ?? false },
      // Only what an operator needs; headers stay out and ingress codes are masked (they are secrets).
      serializers: {
        req: (req: { id: unknown; method: string; url: string }) => ({ id: req.id, method: req.method, url: maskConnectQuery(maskIngressCode(req.url)) }),
        res: (res: { statusCode: number }) => ({ statusCode: res.statusCode }),
      },
    }),
  );

  installHealth(app, deps);
  // Connect links (before the sandbox's router: its "connect a sandbox CRM" button is one of these routes).
  const connect = connectSettings(deps.config, deps.encryptionKey);
  installConnect(app, {
    prisma: deps.prisma,
    logger: deps.logger,
    encryptionKey: deps.encryptionKey,
    settings: connect,
    http: createHttpClient({ allowPrivate: deps.config.outboundAllowPrivate, userAgent: 'pipeline-sync-service', trustedOrigin: deps.config.sandbox?.origin }),
    sandbox: deps.sandbox !== undefined,
  });
  if (deps.sandbox) installSandbox(app, deps.sandbox);
  // What every GraphQL operation's context shares, whoever the viewer is.
  const shared = {
    prisma: deps.prisma,
    heavy: deps.heavyPrisma,
    queryTimeoutMs: deps.config.queryTimeoutMs,
    ingressUrl: deps.config.ingressUrl,
    cursorKey: deriveKey(deps.encryptionKey, 'cursor'),
    encryptionKey: deps.encryptionKey,
    outboundAllowPrivate: deps.config.outboundAllowPrivate,
    sandboxOrigin: deps.config.sandbox?.origin,
    connect,
  };
  installRest(app, { config: deps.config, logger: deps.logger, shared, rateLimits: deps.rateLimits });
  installGraphql(app, { logger: deps.logger, supportTokens: deps.config.supportTokens, shared });

  app.use(notFound);
  app.use(errorHandler(deps.logger));
  return app;
}
