/**
 * The explorer never shows a secret (issue 17): walking the whole schema by introspection, no field is
 * named for a secret (API key, key hash, CRM credentials, webhook signing secret, SMTP password) except
 * the one that hands an API key its new webhook signing secret once, and every path to that one refuses
 * support staff. Values are checked too: with every secret the fixture can hold seeded, a staff query of
 * every scalar field of the account tree returns none of them.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { getIntrospectionQuery, type IntrospectionField, type IntrospectionObjectType, type IntrospectionQuery, type IntrospectionTypeRef } from 'graphql';
import { seedFixture } from '../../src/admin/seed.js';
import { TEST_ENCRYPTION_KEY } from '../support/database.js';
import { SUPPORT_TOKEN, useTestServer } from '../support/server.js';

const ctx = useTestServer();
const SECRETS = {
  apiKey: 'svcapi_explorerSecretsWalk000000001',
  crmToken: 'explorer-secrets-hubspot-access-token',
  refreshToken: 'explorer-secrets-hubspot-refresh-token',
  clientSecret: 'explorer-secrets-hubspot-client-secret',
  sequencerKey: 'explorer-secrets-smartlead-api-key',
  webhookSecret: 'svcwhsec_explorerSecretsWalk0000000000000001',
};
/** Field names that would carry a secret. */
const SECRET_NAME = /secret|password|passwd|hash|credential|token|privatekey|apikey$/i;
/**
 * Fields allowed such a name: the signing secret the API hands its key once (and the mutation that does),
 * whether a connection has credentials (a boolean), and the calling key's identity (id, name, scopes; an
 * object with no secret in it, which the value check below covers).
 */
const ALLOWED = new Set([
  'WebhookEndpointWithSecret.secret',
  'Mutation.rotateWebhookSecret',
  'Connection.hasCredentials',
  'Me.apiKey',
  // Support staff's key mutations (issue 30): a new key's value is shown once in NewApiKey.key, withheld from
  // the audit log (explorer.onboarding-accounts.test.ts); NewApiKey.apiKey is the stored key, never its value.
  'Mutation.createApiKey',
  'Mutation.rotateApiKey',
  'Mutation.revokeApiKey',
  'NewApiKey.apiKey',
]);

async function explorer(query: string, variables?: Record<string, unknown>) {
  const res = await fetch(`${ctx.server.baseUrl}/graphql`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${SUPPORT_TOKEN}` },
    body: JSON.stringify({ query, ...(variables ? { variables } : {}) }),
  });
  return (await res.json()) as { data?: unknown; errors?: Array<{ message: string; extensions?: { code?: string } }> };
}

let schema: IntrospectionQuery['__schema'];
beforeAll(async () => {
  await seedFixture(
    ctx.db.prisma,
    {
      accounts: [
        {
          ref: 'secrets',
          connections: [
            {
              ref: 'hubspot',
              crm: 'HUBSPOT',
              credentials: { accessToken: SECRETS.crmToken, refreshToken: SECRETS.refreshToken, clientId: 'client', clientSecret: SECRETS.clientSecret },
              sources: [{ ref: 'source', platform: 'smartlead' }],
              blocklists: [
                {
                  ref: 'list',
                  listName: 'l',
                  platform: 'smartlead',
                  blockType: 'DOMAIN',
                  crmSource: { listId: '1' },
                  sequencer: { apiKey: SECRETS.sequencerKey },
                },
              ],
            },
          ],
          apiKeys: [{ name: 'key', key: SECRETS.apiKey, scopes: ['read', 'write'] }],
          webhookEndpoints: [{ ref: 'hook', url: 'https://hooks.example.com/in', secret: SECRETS.webhookSecret }],
        },
      ],
    },
    TEST_ENCRYPTION_KEY,
  );
  schema = ((await explorer(getIntrospectionQuery())).data as IntrospectionQuery).__schema;
});

const objects = () => schema.types.filter((t): t is IntrospectionObjectType => t.kind === 'OBJECT' && !t.name.startsWith('__'));

describe('the explorer and secrets', () => {
  it('has no field named for a secret but the one that hands a key its new signing secret', () => {
    const named = objects().flatMap((type) => type.fields.filter((f) => SECRET_NAME.test(f.name)).map((f) => `${type.name}.${f.name}`));
    expect(named.filter((name) => !ALLOWED.has(name))).toEqual([]);
  });

  it('refuses support staff every mutation that returns a signing secret', async () => {
    const returning = objects()
      .find((t) => t.name === 'Mutation')!
      .fields.filter((f) => named(f.type) === 'WebhookEndpointWithSecret')
      .map((f: IntrospectionField) => f.name);
    expect(returning.sort()).toEqual(['createWebhookEndpoint', 'rotateWebhookSecret']);
    const create = await explorer('mutation { createWebhookEndpoint(input: {url: "https://hooks.example.com/x"}) { secret } }');
    const rotate = await explorer('mutation { rotateWebhookSecret(id: "svcwh_x") { secret } }');
    for (const answer of [create, rotate]) {
      expect(answer.data ?? null).toBeNull();
      expect(answer.errors?.[0]?.extensions?.code).toMatch(/^(UNAUTHENTICATED|FORBIDDEN)$/);
    }
    expect(JSON.stringify([create, rotate])).not.toMatch(/svcwhsec_/);
  });

  it('returns none of the seeded secrets in any scalar field of the account tree', async () => {
    const query = `{ accounts { ${scalars('Account', 3)} } }`;
    const answer = await explorer(query);
    expect(answer.errors).toBeUndefined();
    const text = JSON.stringify(answer.data);
    expect(text).toContain('hooks.example.com');
    for (const secret of Object.values(SECRETS)) expect(text).not.toContain(secret);
    const [stored] = await ctx.db.query<{ sealed: string }>('SELECT credentials_encrypted AS sealed FROM connections');
    expect(text).not.toContain(stored!.sealed);
  });
});

/** Every argument-free field of `typeName`, objects followed `depth` levels down. */
function scalars(typeName: string, depth: number): string {
  const type = objects().find((t) => t.name === typeName);
  if (!type) return '__typename';
  const parts: string[] = [];
  for (const field of type.fields) {
    if (field.args.some((a) => a.type.kind === 'NON_NULL' && a.defaultValue == null)) continue;
    const target = schema.types.find((t) => t.name === named(field.type));
    if (target?.kind === 'OBJECT') {
      if (depth > 0) parts.push(`${field.name} { ${scalars(target.name, depth - 1)} }`);
    } else parts.push(field.name);
  }
  return parts.length > 0 ? parts.join(' ') : '__typename';
}

function named(ref: IntrospectionTypeRef): string {
  return 'ofType' in ref && ref.ofType ? named(ref.ofType) : (ref as { name: string }).name;
}
