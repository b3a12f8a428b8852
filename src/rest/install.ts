import express, { type Express, type RequestHandler } from 'express';
import { keyRefusal } from '../schema/key-access.js';
import swaggerUi from 'swagger-ui-express';
import type { Config } from '../config.js';
import type { PrismaClient } from '../db/prisma.js';
import { sendError } from '../http/errors.js';
import type { Logger } from '../logger.js';
import type { ApiKeyViewer, Context, SharedContext } from '../schema/context.js';
import type { RateLimitStore } from '../db/rate-limit-store.js';
import { authenticate } from './auth.js';
import { runOperation } from './executor.js';
import { installOpenApi, openApiDocument } from './openapi.js';
import { RestError } from './params.js';
import { restJsonBody } from './json-body.js';
import { answerPerIp, perIpMiddleware, rateLimiters, type RateLimiters } from './rate-limit.js';
import { ROUTES, type Route, type RouteEnv } from './routes.js';

export interface RestDeps {
  config: Config;
  logger: Logger;
  shared: SharedContext;
  rateLimits: RateLimitStore;
}

const API_PREFIX = '/api/v1';

/**
 * REST API v1: the RFC 8631 Link header on every /api/v1 response (401s and 404s included), the
 * discovery routes, then the route table, each route behind API key authentication and its rate limits
 * (general routes: per IP before the key is looked at, then per account; outreach: its own bucket). Unknown paths
 * fall through to the app's JSON 404 with the Link header already set. Also the reference page /docs.
 */
export function installRest(app: Express, deps: RestDeps): void {
  const env: RouteEnv = { baseUrl: deps.config.baseUrl, docsUrl: deps.config.docsUrl };
  const router = express.Router({ caseSensitive: true, strict: false });
  const link = `<${deps.config.baseUrl}${API_PREFIX}/openapi.json>; rel="service-desc", <${deps.config.docsUrl}>; rel="service-doc"`;
  router.use((_req, res, next) => {
    res.set('Link', link);
    next();
  });
  const limits = rateLimiters(deps.rateLimits, deps.config.rateLimits, deps.logger);
  installOpenApi(router, perIpMiddleware(limits));
  const generalGuard = requireKey(deps.shared.prisma, limits);
  const outreachGuard = requireKey(deps.shared.prisma, null);
  const jsonParser = restJsonBody();
  for (const route of ROUTES) {
    const guards = route.bucket === 'outreach' ? [outreachGuard, limits.outreach] : [generalGuard, limits.perAccount];
    router[route.method ?? 'get'](route.path, ...guards, access(route), ...(route.body ? [jsonParser] : []), handle(route, env, deps));
  }
  app.use(API_PREFIX, router);
  app.use('/docs', swaggerUi.serve, swaggerUi.setup(openApiDocument, { customSiteTitle: 'Pipeline Sync Service API v1' }));
}

/**
 * Authenticates the key; 401 (identical for every kind of bad key) or 403 otherwise. With `limits`, the
 * per-IP limit comes first: its count and the key lookup run at once (one round trip of latency, not
 * two), and a refused address gets its 429 whatever the key.
 */
function requireKey(prisma: PrismaClient, limits: RateLimiters | null): RequestHandler {
  return async (req, res, next) => {
    const perIp = limits?.perIp(req) ?? Promise.resolve(null);
    const result = authenticate(prisma, req.headers.authorization);
    // Settled below unless the address is refused; then its outcome no longer matters.
    result.catch(() => {});
    if (!answerPerIp(await perIp, res)) return;
    const auth = await result;
    if (auth.kind === 'unauthenticated') {
      res.set('WWW-Authenticate', 'Bearer realm="Service API"');
      return sendError(res, 401, 'Invalid API key');
    }
    if (auth.kind === 'forbidden') return sendError(res, 403, 'API access is not enabled for this account');
    res.locals.viewer = auth.viewer;
    next();
  };
}

/**
 * What the key may do on this route, in the spec's order, before a body is read or anything looked up
 * (so also for unknown ids): an account-scoped key where one is required, the account's capability,
 * then the write scope for mutations.
 */
function access(route: Route): RequestHandler {
  const needs = { accountKey: route.accountKeyOnly === true, webhooks: route.capability === 'webhooks', write: route.method !== 'get' };
  return (_req, res, next) => {
    const refusal = keyRefusal(res.locals.viewer as ApiKeyViewer, needs);
    if (refusal) return sendError(res, 403, refusal);
    next();
  };
}

function handle(route: Route, env: RouteEnv, deps: RestDeps): RequestHandler {
  return async (req, res) => {
    const viewer = res.locals.viewer as ApiKeyViewer;
    let variables: Record<string, unknown>;
    try {
      variables = route.variables(req, env);
    } catch (error) {
      if (error instanceof RestError) return sendError(res, error.status, error.messages ?? error.message);
      throw error;
    }
    const context: Context = { ...deps.shared, viewer };
    const result = await runOperation(route.operation, variables, context);
    if (result.ok) {
      res.status(route.status ?? 200).json(route.shape(result.data, env));
      return;
    }
    // One error decides the answer: the first that carries an HTTP status, else a logged 500.
    const known = result.errors.find((e) => typeof e.extensions?.http?.status === 'number');
    if (known) return sendError(res, known.extensions!.http!.status!, known.extensions?.messages ?? known.message);
    deps.logger.error({ err: result.cause, path: route.path, errors: result.errors.map((e) => e.message) }, 'operation failed');
    sendError(res, 500, 'Internal server error');
  };
}
