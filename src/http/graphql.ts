import type { Express, RequestHandler } from 'express';
import { createYoga } from 'graphql-yoga';
import { renderGraphiQL } from '@graphql-yoga/render-graphiql';
import { safeEqual } from '../domain/secrets.js';
import type { Logger } from '../logger.js';
import { schema } from '../schema/index.js';
import type { Context, SharedContext } from '../schema/context.js';
import { sendError } from './errors.js';

const GRAPHQL_PATH = '/graphql';

/**
 * The support staff's GraphQL explorer at /graphql. Every operation needs a staff bearer token from
 * SUPPORT_TOKENS; anyone else gets 401 before GraphQL runs, so not even introspection answers.
 * The GraphiQL page itself (an HTML shell with no data, bundled so it works offline) is served to
 * browsers; the token goes into its headers editor.
 */
export function installGraphql(app: Express, deps: { supportTokens: string[]; shared: SharedContext; logger: Logger }): void {
  const yoga = createYoga<object, Context>({
    schema,
    graphqlEndpoint: GRAPHQL_PATH,
    landingPage: false,
    renderGraphiQL,
    graphiql: {
      title: 'Pipeline Sync Service: support explorer',
      headers: JSON.stringify({ Authorization: 'Bearer <support token>' }),
      shouldPersistHeaders: false,
    },
    logging: {
      debug: (...args) => deps.logger.debug({ args }, 'graphql'),
      info: (...args) => deps.logger.info({ args }, 'graphql'),
      warn: (...args) => deps.logger.warn({ args }, 'graphql'),
      error: (...args) => deps.logger.error({ args }, 'graphql'),
    },
    context: () => ({ ...deps.shared, viewer: { kind: 'staff' } }),
  });
  app.use(GRAPHQL_PATH, requireStaff(deps.supportTokens), yoga as unknown as RequestHandler);
}

function requireStaff(tokens: string[]): RequestHandler {
  return (req, res, next) => {
    if (isGraphiqlPage(req.method, req.headers.accept, req.query)) return next();
    const match = /^Bearer (\S+)$/.exec(req.headers.authorization ?? '');
    // Compare against every token so timing does not reveal which (or whether one) came close.
    const presented = match?.[1];
    const ok = presented !== undefined && tokens.reduce((found, token) => safeEqual(presented, token) || found, false);
    if (ok) return next();
    res.set('WWW-Authenticate', 'Bearer realm="Support"');
    sendError(res, 401, 'A support staff token is required');
  };
}

function isGraphiqlPage(method: string, accept: string | undefined, query: unknown): boolean {
  const hasOperation = typeof query === 'object' && query !== null && 'query' in query;
  return method === 'GET' && !hasOperation && (accept ?? '').includes('text/html');
}
