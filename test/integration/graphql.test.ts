import { beforeAll, describe, expect, it } from 'vitest';
import { createPrisma } from '../../src/db/prisma.js';
import { CREDENTIALS, INGRESS, seedTestAccounts, type TestAccounts } from '../support/accounts.js';
import { createTestDatabase } from '../support/database.js';
import { createAccounts } from '../support/factories.js';
import { startTestServer, SUPPORT_TOKEN, useTestServer } from '../support/server.js';

const ctx = useTestServer();
let seeded: TestAccounts;
beforeAll(async () => {
  seeded = await seedTestAccounts(ctx.db.prisma);
});

function graphql(base: string, query: string, headers: Record<string, string> = { authorization: `Bearer ${SUPPORT_TOKEN}` }) {
  return fetch(`${base}/graphql`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify({ query }) });
}

describe('staff authentication', () => {
  // Headers as thunks: the API key exists only once beforeAll has seeded it.
  it.each([
    ['no Authorization header', () => ({})],
    ['a wrong token', () => ({ authorization: 'Bearer not-a-staff-token-at-all' })],
    ['a token in another scheme', () => ({ authorization: `Basic ${SUPPORT_TOKEN}` })],
    ['a valid API key', () => ({ authorization: `Bearer ${seeded.keys.acmeRead}` })],
  ])('refuses %s with a GraphQL-shaped 401 and answers no introspection', async (_label, headers) => {
    const res = await graphql(ctx.server.baseUrl, '{ __schema { types { name } } }', headers());

    expect(res.status).toBe(401);
    expect(res.headers.get('www-authenticate')).toBe('Bearer realm="Support"');
    const body = await res.json();
    // GraphQL-shaped, so GraphiQL shows the message itself rather than a response validation failure.
    expect(body).toEqual({ errors: [{ message: 'A support staff token is required', extensions: { code: 'UNAUTHENTICATED' } }] });
    expect(res.headers.get('content-type')).toMatch(/^application\/json/);
    expect(JSON.stringify(body)).not.toContain('__schema');
  });

  it('refuses a GET operation without a token', async () => {
    const res = await fetch(`${ctx.server.baseUrl}/graphql?query=${encodeURIComponent('{ accounts { id } }')}`, { headers: { accept: 'text/html' } });
    expect(res.status).toBe(401);
  });

  it('refuses everyone when no SUPPORT_TOKENS are configured', async () => {
    const closed = await startTestServer(ctx.db, { SUPPORT_TOKENS: '' });
    try {
      const res = await graphql(closed.baseUrl, '{ accounts { id } }');
      expect(res.status).toBe(401);
    } finally {
      await closed.close();
    }
  });

  it('serves the GraphiQL page (no data in it) to a browser', async () => {
    const res = await fetch(`${ctx.server.baseUrl}/graphql`, { headers: { accept: 'text/html' } });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/text\/html/);
    const html = await res.text();
    expect(html).toContain('GraphiQL');
    expect(html).not.toMatch(/unpkg\.com|cdn\.jsdelivr/); // works offline
  });

  it('lets staff introspect and read', async () => {
    const res = await graphql(ctx.server.baseUrl, '{ __schema { queryType { name } } }');
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ data: { __schema: { queryType: { name: 'Query' } } } });
  });
});

describe('reading accounts', () => {
  it('shows an account with its connections, sources, destinations, reply relays and block lists, never secrets', async () => {
    // Setup: the test accounts (beforeAll)
    const id = seeded.accounts.acme!;
    // Action
    const res = await graphql(
      ctx.server.baseUrl,
      `{ account(id: ${id}) { id email capabilities { canUseApi canUserAccount canBlockList canUseWebhooks }
          connections { crm status hasCredentials
            sources { platform url createOrUpdateCompany crmObjectType destinations { eventTypes isDelayed destination { url } } replyRelay { ccEmail } }
            destinations { url description bindings { source { platform } } }
            replyRelays { ccEmail delayMinutes categoryAllowlist { id name } sources { platform } }
            blocklists { listName status syncedCount pendingCount } }
          apiKeys { name prefix scopes connectionScope revokedAt }
          webhookEndpoints { id url enabledEvents isActive } } }`,
    );
    // Assertions
    expect(res.status).toBe(200);
    const { data, errors } = await res.json();
    expect(errors).toBeUndefined();
    const account = data.account;
    expect(account.email).toBe('owner@acme.test');
    expect(account.connections.map((c: { crm: string }) => c.crm)).toEqual(['HUBSPOT', 'SALESFORCE']); // the deleted one is hidden
    const hubspot = account.connections[0];
    expect(hubspot.hasCredentials).toBe(true);
    expect(hubspot.sources[0]).toEqual({
      platform: 'smartlead',
      url: `http://api.test.local/webhooks/${INGRESS.acmeSmartlead}`,
      createOrUpdateCompany: true,
      crmObjectType: null,
      destinations: [
        { eventTypes: [], isDelayed: false, destination: { url: 'https://hooks.acme.test/pipeline' } },
        { eventTypes: ['EMAIL_REPLY'], isDelayed: true, destination: { url: 'https://hooks.acme.test/replies' } },
      ],
      replyRelay: { ccEmail: 'dana.rep@acme.test' },
    });
    expect(hubspot.sources[1].url).toBe(`http://api.test.local/webhooks/${INGRESS.acmeHeyreachLegacy.join('/')}`);
    expect(hubspot.replyRelays[0].categoryAllowlist).toEqual([
      { id: '1', name: 'Interested' },
      { id: '5', name: 'Meeting Request' },
    ]);
    expect(hubspot.blocklists[0]).toEqual({ listName: 'Customers and partners', status: 'SYNCED', syncedCount: 2, pendingCount: 0 });
    expect(account.apiKeys).toHaveLength(4);
    expect(account.webhookEndpoints[0].id).toMatch(/^svcwh_/);
    const text = JSON.stringify(data);
    // No credential, no API key (all four were generated by the seed), no webhook signing secret.
    for (const secret of [CREDENTIALS.acmeHubspot.accessToken, CREDENTIALS.acmeHubspot.refreshToken, ...Object.values(seeded.generatedSecrets), 'svcwhsec_']) {
      expect(text).not.toContain(secret);
    }
  });

  it('rejects a page size outside 1..500 with a GraphQL error, not a crash', async () => {
    const res = await graphql(ctx.server.baseUrl, '{ accounts(first: 501) { id } }');
    const body = await res.json();
    expect(body.errors[0].message).toBe('first must be between 1 and 500');
  });
});

describe('batching', () => {
  it('issues the same number of SQL statements for 1 and for 50 accounts with their connections and sources', async () => {
    // Setup: a separate database holding exactly 50 factory accounts, and an app whose Prisma counts statements
    const counted = await createTestDatabase();
    const statements: string[] = [];
    const prisma = createPrisma(counted.url, { onQuery: (sql) => statements.push(sql) });
    const app = await startTestServer({ url: counted.url, prisma });
    try {
      await createAccounts(counted.prisma, 50);
      const query = (
        first: number,
      ) => `{ accounts(first: ${first}) { id connections { id sources { id url destinations { eventTypes destination { url } } replyRelay { id } }
        destinations { id bindings { isDelayed } } replyRelays { id categoryAllowlist { name } } blocklists { id syncedCount pendingCount } } apiKeys { name } } }`;
      const count = async (first: number) => {
        statements.length = 0;
        const res = await graphql(app.baseUrl, query(first));
        const body = await res.json();
        expect(body.errors).toBeUndefined();
        expect(body.data.accounts).toHaveLength(first);
        return statements.length;
      };
      // Action
      const one = await count(1);
      const fifty = await count(50);
      // Assertions
      expect(one).toBeGreaterThan(0);
      expect(fifty).toBe(one);
    } finally {
      await app.close();
      await prisma.$disconnect();
      await counted.drop();
    }
  });
});
