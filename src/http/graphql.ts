import { EnvelopArmorPlugin } from '@escape.tech/graphql-armor';
import type { Express, RequestHandler } from 'express';
import { Kind, OperationTypeNode, type DocumentNode, type ExecutionArgs, type ExecutionResult, type OperationDefinitionNode } from 'graphql';
import { createYoga, type Plugin } from 'graphql-yoga';
import { renderGraphiQL } from '@graphql-yoga/render-graphiql';
import type { StaffToken } from '../config.js';
import { safeEqual } from '../domain/secrets.js';
import type { Logger } from '../logger.js';
import { auditArguments, recordAudit } from '../schema/audit.js';
import { schema } from '../schema/index.js';
import type { Context, SharedContext } from '../schema/context.js';
import { explorerWelcome } from './explorer-welcome.js';

const GRAPHQL_PATH = '/graphql';

/**
 * Query limits of the explorer (graphql-armor): deep, wide, aliased or huge documents are refused before
 * they run, with a GraphQL error. The REST facade runs its persisted operations without them.
 */
const ARMOR = {
  maxDepth: { n: 12 },
  maxAliases: { n: 10 },
  maxDirectives: { n: 10 },
  maxTokens: { n: 3_000 },
  costLimit: { maxCost: 20_000, objectCost: 2, scalarCost: 1, depthCostFactor: 1.5 },
  blockFieldSuggestion: { enabled: true },
};

/**
 * The support staff's GraphQL explorer at /graphql. Every operation needs a staff bearer token from
 * SUPPORT_TOKENS (compared in constant time); anyone else gets a GraphQL-shaped 401 before GraphQL runs,
 * so not even introspection answers. The GraphiQL page itself (an HTML shell with no data, bundled so it
 * works offline) is served to browsers, opening on a useful first document; the token goes into its
 * headers editor. Unexpected errors are masked (yoga's default): no stack or SQL reaches the answer.
 * Every staff mutation is audited (src/schema/audit.ts).
 */
export function installGraphql(app: Express, deps: { supportTokens: StaffToken[]; shared: SharedContext; logger: Logger }): void {
  const yoga = createYoga<{ staff: string }, Context>({
    schema,
    graphqlEndpoint: GRAPHQL_PATH,
    landingPage: false,
    renderGraphiQL,
    // A function, so the first document's window ends now.
    graphiql: () => ({
      title: 'Pipeline Sync Service: support explorer',
      headers: JSON.stringify({ Authorization: 'Bearer <support token>' }),
      defaultQuery: explorerWelcome(new Date()),
      shouldPersistHeaders: false,
    }),
    plugins: [EnvelopArmorPlugin(ARMOR), auditMutations()],
    logging: {
      debug: (...args) => deps.logger.debug({ args }, 'graphql'),
      info: (...args) => deps.logger.info({ args }, 'graphql'),
      warn: (...args) => deps.logger.warn({ args }, 'graphql'),
      error: (...args) => deps.logger.error({ args }, 'graphql'),
    },
    context: ({ staff }) => ({ ...deps.shared, viewer: { kind: 'staff', name: staff } }),
  });
  const handler: RequestHandler = (req, res) => void yoga(req, res, { staff: res.locals.staff as string });
  app.use(GRAPHQL_PATH, requireStaff(deps.supportTokens), handler);
}

function requireStaff(tokens: StaffToken[]): RequestHandler {
  return (req, res, next) => {
    if (isGraphiqlPage(req.method, req.headers.accept, req.query)) return next();
    const match = /^Bearer (\S+)$/.exec(req.headers.authorization ?? '');
    // Compare against every token so timing does not reveal which (or whether one) came close.
    const presented = match?.[1];
    const found = presented === undefined ? undefined : tokens.reduce<StaffToken | undefined>((hit, t) => (safeEqual(presented, t.token) ? t : hit), undefined);
    if (found) {
      res.locals.staff = found.name;
      return next();
    }
    res.set('WWW-Authenticate', 'Bearer realm="Support"');
    res.status(401).json({ errors: [{ message: 'A support staff token is required', extensions: { code: 'UNAUTHENTICATED' } }] });
  };
}

function isGraphiqlPage(method: string, accept: string | undefined, query: unknown): boolean {
  const hasOperation = typeof query === 'object' && query !== null && 'query' in query;
  return method === 'GET' && !hasOperation && (accept ?? '').includes('text/html');
}

/** Writes an audit row for every mutation staff run, once it has run (its answer or its errors). */
function auditMutations(): Plugin<Context> {
  return {
    onExecute({ args }) {
      // envelop types the arguments loosely: these are graphql-js's execution arguments with our context.
      const execution = args as ExecutionArgs & { contextValue: Context };
      const operation = operationOf(execution.document, execution.operationName);
      if (operation?.operation !== OperationTypeNode.MUTATION) return;
      return {
        async onExecuteDone({ result }) {
          if (!('data' in result) && !('errors' in result)) return;
          const answer = result as ExecutionResult;
          const fields = operation.selectionSet.selections.flatMap((s) => (s.kind === Kind.FIELD ? [s.name.value] : []));
          await recordAudit(execution.contextValue, {
            action: fields.join(',') || 'mutation',
            arguments: auditArguments(operation, execution.variableValues ?? {}),
            result: answer.errors?.length ? { errors: answer.errors.map((e) => e.message) } : { data: answer.data ?? null },
          });
        },
      };
    },
  };
}

function operationOf(document: DocumentNode, name: string | null | undefined): OperationDefinitionNode | undefined {
  const operations = document.definitions.filter((d): d is OperationDefinitionNode => d.kind === Kind.OPERATION_DEFINITION);
  return name ? operations.find((o) => o.name?.value === name) : operations[0];
}
