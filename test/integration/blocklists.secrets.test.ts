import { beforeAll, describe, expect, it } from 'vitest';
import { seedFixture, type SeedResult } from '../../src/admin/seed.js';
import { TEST_ENCRYPTION_KEY } from '../support/database.js';
import { SUPPORT_TOKEN, useTestServer } from '../support/server.js';

/**
 * A block list's sequencer API key is stored sealed and never returned: neither the key nor its sealed
 * envelope appears in any field the explorer or the REST API has, whatever fields they gain later.
 */

const SEQUENCER_KEY = 'smartlead-secrets-test-key-0123456789abcdef';
const CRM_TOKEN = 'hubspot-secrets-test-access-token';
const API_KEY = 'svcapi_blocklistSecretsTest000000001';

const ctx = useTestServer();
let seeded: SeedResult;
/** Everything that must never be returned: the raw secrets and their sealed forms as stored. */
let secrets: string[];
beforeAll(async () => {
  seeded = await seedFixture(ctx.db.prisma, fixture(), TEST_ENCRYPTION_KEY);
  const [stored] = await ctx.db.query<{ sequencer: string; credentials: string }>(
    'SELECT b.sequencer_credentials_encrypted AS sequencer, c.credentials_encrypted AS credentials FROM blocklists b JOIN connections c ON c.id = b.connection_id',
  );
  secrets = [SEQUENCER_KEY, CRM_TOKEN, stored!.sequencer, stored!.credentials];
});

function fixture() {
  return {
    accounts: [
      {
        ref: 'acme',
        connections: [
          {
            ref: 'hubspot',
            crm: 'HUBSPOT',
            credentials: { accessToken: CRM_TOKEN },
            crmRateLimit: { requestsPer10s: 150 },
            blocklists: [
              {
                ref: 'domains',
                listName: 'Customers',
                platform: 'smartlead',
                blockType: 'DOMAIN',
                crmSource: { listId: '101' },
                sequencer: { apiKey: SEQUENCER_KEY, clientId: '4242' },
              },
            ],
          },
        ],
        apiKeys: [{ name: 'reader', key: API_KEY }],
      },
    ],
  };
}

async function graphql(query: string): Promise<{ data?: Record<string, unknown>; errors?: unknown }> {
  const res = await fetch(`${ctx.server.baseUrl}/graphql`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${SUPPORT_TOKEN}` },
    body: JSON.stringify({ query }),
  });
  expect(res.status).toBe(200);
  return (await res.json()) as { data?: Record<string, unknown>; errors?: unknown };
}

interface TypeRef {
  kind: string;
  ofType: TypeRef | null;
}

/** Every argument-free scalar or enum field of a GraphQL type, from introspection: a field added later is read too. */
async function leafFields(type: string): Promise<string> {
  const { data } = await graphql(`{ __type(name: "${type}") { fields { name args { name } type { kind ofType { kind ofType { kind ofType { kind } } } } } } }`);
  const fields = (data?.__type as { fields: { name: string; args: unknown[]; type: TypeRef }[] }).fields;
  const leaf = (t: TypeRef): boolean => (t.ofType ? leaf(t.ofType) : t.kind === 'SCALAR' || t.kind === 'ENUM');
  return fields
    .filter((f) => f.args.length === 0 && leaf(f.type))
    .map((f) => f.name)
    .join(' ');
}

describe('a block list with a sequencer API key', () => {
  it('shows in the explorer with every field, never with the key', async () => {
    // Setup
    const [connectionFields, blocklistFields] = await Promise.all([leafFields('Connection'), leafFields('Blocklist')]);
    expect(blocklistFields).toContain('clientId');
    // Action
    const body = await graphql(`{ account(id: ${seeded.accounts.acme}) { connections { ${connectionFields} blocklists { ${blocklistFields} } } } }`);
    // Assertions
    expect(body.errors).toBeUndefined();
    const text = JSON.stringify(body.data);
    expect(text).toContain('"clientId":"4242"');
    for (const secret of secrets) expect(text).not.toContain(secret);
  });

  it.each([
    ['/blocklists', '"clientId":"4242"'],
    ['/connections', '"crm":"HUBSPOT"'],
  ])('is listed by GET /api/v1%s without the key', async (path, listed) => {
    const res = await fetch(`${ctx.server.baseUrl}/api/v1${path}`, { headers: { authorization: `Bearer ${API_KEY}` } });

    expect(res.status).toBe(200);
    const text = await res.text();
    expect(text).toContain(listed);
    for (const secret of secrets) expect(text).not.toContain(secret);
  });
});
