/**
 * Property (issue 20): every documented GET route, given arbitrary strings for each query and path
 * parameter, in every form (missing, once, repeated, bracketed, badly percent-encoded), answers 200 or
 * one of the spec's 4xx in its error shape, never a 5xx, and every answer validates against our OpenAPI
 * document (apiFetch fails otherwise). The same for every documented mutation (POST, PATCH, DELETE) under
 * arbitrary path parameters (a real webhook endpoint's id among them), bodies (any JSON, broken JSON,
 * over the 64 KB limit, none) and content types. fast-check prints the seed of any failure.
 */
import fc from 'fast-check';
import { beforeAll, describe, expect, it } from 'vitest';
import { PREFIX, randomToken, sealSecret } from '../../src/domain/secrets.js';
import { openApiDocument } from '../../src/rest/openapi.js';
import { seedTestAccounts } from '../support/accounts.js';
import { TEST_ENCRYPTION_KEY } from '../support/database.js';
import { apiFetch } from '../support/openapi.js';
import { useTestServer } from '../support/server.js';

const ctx = useTestServer();
let key: string;
/** A webhook endpoint of the key's account: mutations of it reach the body's validation, not a 404. */
let endpointId: string;
beforeAll(async () => {
  const seeded = await seedTestAccounts(ctx.db.prisma);
  key = seeded.keys.acmeWrite;
  endpointId = randomToken(PREFIX.webhookEndpoint);
  await ctx.db.prisma.webhookEndpoint.create({
    data: {
      publicId: endpointId,
      accountId: seeded.accounts['acme']!,
      url: 'https://hooks.example.com/property',
      secretEncrypted: sealSecret(TEST_ENCRYPTION_KEY, randomToken(PREFIX.webhookSecret)),
    },
  });
});

/** Cases per route, and the time each route may take at most (whichever comes first). */
const RUNS = { numRuns: 12, interruptAfterTimeLimit: 2_000 };

interface Parameter {
  name: string;
  in: 'query' | 'path';
}
type Operation = { parameters?: Array<Parameter | { $ref: string }> };
type Doc = {
  paths: Record<string, Partial<Record<'get' | 'post' | 'patch' | 'delete', Operation>>>;
  components: { parameters: Record<string, Parameter> };
};
const doc = openApiDocument as unknown as Doc;

const GET_ROUTES = Object.entries(doc.paths)
  .filter(([path, item]) => item.get && path.startsWith('/api/v1/') && !path.startsWith('/api/v1/openapi'))
  .map(([path, item]) => ({
    path,
    parameters: (item.get!.parameters ?? []).map(resolveParameter),
  }));

const MUTATIONS = Object.entries(doc.paths)
  .filter(([path]) => path.startsWith('/api/v1/'))
  .flatMap(([path, item]) =>
    (['post', 'patch', 'delete'] as const)
      .filter((method) => item[method])
      .map((method) => ({ path, method, pathParams: (item[method]!.parameters ?? []).map(resolveParameter).filter((p) => p.in === 'path') })),
  );

function resolveParameter(p: Parameter | { $ref: string }): Parameter {
  return '$ref' in p ? doc.components.parameters[p.$ref.split('/').pop()!]! : p;
}

/** A value as a client might send it: plausible, empty, huge, exotic, or not even well percent-encoded. */
const value = fc.oneof(
  fc.string({ maxLength: 30 }).map(encodeURIComponent),
  fc.string({ unit: 'grapheme', maxLength: 12 }).map(encodeURIComponent),
  fc.constantFrom(
    '',
    '0',
    '-1',
    '1',
    '500',
    '501',
    '99999999999999999999',
    '1e400',
    'NaN',
    'null',
    'true',
    '2026-11-27T00:00:00Z',
    '2026-13-45T99:99:99Z',
    '%',
    '%ZZ',
    '%ff%fe',
    '%00',
    '%E2%82',
    'svcwh_x',
    'svcevt_x',
  ),
);

/** One query parameter in one of the forms clients produce. */
const queryPart = (name: string) =>
  fc.oneof(
    fc.constant(''),
    value.map((v) => `${name}=${v}`),
    fc.tuple(value, value).map(([a, b]) => `${name}=${a}&${name}=${b}`),
    value.map((v) => `${name}[]=${v}`),
    value.map((v) => `${name}[x]=${v}`),
    fc.constant(name),
  );

// A path parameter that is empty or a dot segment is no parameter: URLs normalise it away (`/syncs/.` is `/syncs/`).
const pathSegment = value.filter((v) => v !== '' && !v.includes('%2F') && !/^(\.|%2e){1,2}$/i.test(v));

/** The route's path with its parameters (in their order) put in. */
function fillPath(path: string, params: readonly Parameter[], values: readonly string[]): string {
  return params.reduce((filled, p, i) => filled.replace(`{${p.name}}`, values[i]!), path);
}

/** What every answer to any input must be: below 500 and, when refused, the spec's error shape (one message, or one per problem). */
function expectSpecAnswer(res: { status: number; body: { statusCode?: unknown; message?: unknown } }): void {
  expect(res.status).toBeLessThan(500);
  if (res.status >= 400) {
    expect(res.body).toMatchObject({ statusCode: res.status, error: expect.any(String) });
    expect([res.body.message].flat().every((m: unknown) => typeof m === 'string' && m.length > 0)).toBe(true);
  }
}

describe('every GET route under arbitrary parameters', () => {
  it('has routes to try', () => {
    expect(GET_ROUTES.length).toBeGreaterThan(15);
  });

  it.each(GET_ROUTES.map((r) => [r.path, r] as const))('%s: 200 or a 4xx in the spec shape, never a 5xx', async (_path, route) => {
    const pathParams = route.parameters.filter((p) => p.in === 'path');
    const queryParams = route.parameters.filter((p) => p.in === 'query');
    const request = fc.record({
      path: fc.tuple(...pathParams.map(() => pathSegment)),
      query: fc.tuple(...queryParams.map((p) => queryPart(p.name)), queryPart('unknown')),
    });
    await fc.assert(
      fc.asyncProperty(request, async ({ path, query }) => {
        const search = query.filter(Boolean).join('&');
        const target = `${ctx.server.baseUrl}${fillPath(route.path, pathParams, path)}${search ? `?${search}` : ''}`;
        expectSpecAnswer(await apiFetch(target, { headers: { authorization: `Bearer ${key}` } }));
      }),
      RUNS,
    );
  });
});

/** URLs an endpoint might be given: IP literals only, so no case waits on DNS (CI has none). */
const url = fc.constantFrom(
  'https://93.184.215.14/hook',
  'https://10.0.0.1/hook',
  'https://127.0.0.1:8443/',
  'https://[::1]/x',
  'http://93.184.215.14/plain-http',
  'https://user:pw@93.184.215.14/creds',
  `https://93.184.215.14/${'p'.repeat(2_100)}`,
  'ftp://93.184.215.14/',
);

/** A body as a client might send one: none, any JSON, JSON-looking garbage, or over the 64 KB limit. */
const body = fc.oneof(
  fc.constant(undefined),
  fc.json({ maxDepth: 3 }),
  fc
    .record({ url: fc.oneof(url, fc.string()), description: fc.string(), enabledEvents: fc.array(fc.string()), isActive: fc.anything() }, { requiredKeys: [] })
    .map((b) => JSON.stringify(b)),
  fc.string({ maxLength: 40 }),
  fc.constantFrom('{', '{"url":', '[]', 'null', '{"__proto__":{"x":1}}', `{"description":"${'x'.repeat(70_000)}"}`),
);
const contentType = fc.constantFrom(
  undefined,
  'application/json',
  'application/json; charset=utf-8',
  'text/plain',
  'application/x-www-form-urlencoded',
  'multipart/form-data; boundary=x',
);

describe('every mutation under arbitrary bodies', () => {
  it('has mutations to try', () => {
    expect(MUTATIONS.length).toBeGreaterThan(8);
  });

  it.each(MUTATIONS.map((m) => [`${m.method.toUpperCase()} ${m.path}`, m] as const))(
    '%s: 2xx or a 4xx in the spec shape, never a 5xx',
    async (_name, route) => {
      // The real endpoint's id reaches each body's validation; DELETE gets other ids only, so it stays there for the rest.
      const pathValue = fc.oneof(fc.constant(route.method === 'delete' ? 'svcwh_notThisOne' : endpointId), pathSegment);
      const request = fc.record({ path: fc.tuple(...route.pathParams.map(() => pathValue)), body, contentType });
      await fc.assert(
        fc.asyncProperty(request, async ({ path, body: sent, contentType: type }) => {
          const headers: Record<string, string> = { authorization: `Bearer ${key}`, ...(type ? { 'content-type': type } : {}) };
          const res = await apiFetch(`${ctx.server.baseUrl}${fillPath(route.path, route.pathParams, path)}`, {
            method: route.method.toUpperCase(),
            headers,
            ...(sent === undefined ? {} : { body: sent }),
          });
          expectSpecAnswer(res);
        }),
        RUNS,
      );
    },
  );
});
