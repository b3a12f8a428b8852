/**
 * Onboarding in the explorer, accounts and API keys (issue 30): support staff create an account, change
 * its email and capabilities, deactivate it; create a key for the account or one connection (its value
 * shown once, only its hash stored), rotate it, revoke it. Each answer is what REST would show, bad input
 * is a 400 naming its field, an API key cannot call them, every call writes its audit row, and no key
 * value reaches an audit row or a log line. The keys are used against REST: they work, a
 * connection-scoped one sees its connection only, rotated and revoked ones get 401, a deactivated
 * account's keys 403.
 */
import { createHash } from 'node:crypto';
import { PassThrough } from 'node:stream';
import { execute, parse } from 'graphql';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { seedFixture } from '../../src/admin/seed.js';
import { schema } from '../../src/schema/index.js';
import type { Context } from '../../src/schema/context.js';
import { TEST_ENCRYPTION_KEY } from '../support/database.js';
import { apiGet } from '../support/rest.js';
import { startTestServer, SUPPORT_TOKEN, useTestServer, type TestServer } from '../support/server.js';

const ctx = useTestServer();
const WITHHELD = '[shown once, not recorded]';
/** Every key value a mutation answered in this file: none may be in an audit row or a log line. */
const issued: string[] = [];

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- answers are checked field by field
type Answer = { data?: Record<string, any> | null; errors?: Array<{ message: string; extensions?: { code?: string; messages?: string[] } }> };

async function explorer(query: string, variables?: Record<string, unknown>, options: { token?: string; server?: TestServer } = {}) {
  const res = await fetch(`${(options.server ?? ctx.server).baseUrl}/graphql`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${options.token ?? SUPPORT_TOKEN}` },
    body: JSON.stringify({ query, ...(variables ? { variables } : {}) }),
  });
  return { status: res.status, body: (await res.json()) as Answer };
}

/** The newest audit rows, newest first. */
async function audit(limit = 1) {
  return ctx.db.query<{ staff: string; action: string; arguments: { variables: Record<string, unknown> }; result: Answer }>(
    'SELECT staff, action, arguments, result FROM audit_log ORDER BY id DESC LIMIT $1',
    [limit],
  );
}

const KEY_FIELDS = 'apiKey { id name prefix scopes connectionScope connectionId revokedAt rotatedAt } key';
const CREATE_KEY = `mutation ($input: CreateApiKeyInput!) { createApiKey(input: $input) { ${KEY_FIELDS} } }`;
const ACCOUNT_FIELDS = 'id email capabilities { canUseApi canUserAccount canBlockList canUseWebhooks }';

async function createKey(input: Record<string, unknown>): Promise<{ id: number; key: string; apiKey: Record<string, unknown> }> {
  const { body } = await explorer(CREATE_KEY, { input });
  expect(body.errors).toBeUndefined();
  const answer = body.data!.createApiKey as { apiKey: { id: number }; key: string };
  issued.push(answer.key);
  return { id: answer.apiKey.id, key: answer.key, apiKey: answer.apiKey };
}

/** A staff-created account with a HubSpot and a Salesforce connection (connection mutations are another part of issue 30). */
let account: number;
let hubspot: number;
let salesforce: number;

beforeAll(async () => {
  const { body } = await explorer(`mutation ($input: CreateAccountInput!) { createAccount(input: $input) { ${ACCOUNT_FIELDS} } }`, {
    input: { email: 'owner@onboarded.test' },
  });
  expect(body.errors).toBeUndefined();
  account = body.data!.createAccount.id;
  hubspot = (await ctx.db.prisma.connection.create({ data: { accountId: account, crm: 'HUBSPOT', organizationId: '101' } })).id;
  salesforce = (await ctx.db.prisma.connection.create({ data: { accountId: account, crm: 'SALESFORCE', organizationId: '00D' } })).id;
});

afterAll(async () => {
  // No key value in any audit row (arguments or result) of the whole file.
  const rows = await ctx.db.query<{ text: string }>('SELECT arguments::text || result::text AS text FROM audit_log');
  const text = rows.map((r) => r.text).join('\n');
  expect(issued.length).toBeGreaterThan(0);
  for (const key of issued) expect(text).not.toContain(key);
});

describe('accounts', () => {
  it('creates an account with its email and capabilities, all on unless turned off, with its audit row', async () => {
    const { body } = await explorer(`mutation ($input: CreateAccountInput!) { createAccount(input: $input) { ${ACCOUNT_FIELDS} createdAt } }`, {
      input: { email: 'ops@customer.test', capabilities: { canUseWebhooks: false } },
    });
    expect(body.errors).toBeUndefined();
    const created = body.data!.createAccount;
    expect(created).toEqual({
      id: expect.any(Number),
      email: 'ops@customer.test',
      capabilities: { canUseApi: true, canUserAccount: true, canBlockList: true, canUseWebhooks: false },
      createdAt: expect.any(String),
    });
    const [row] = await ctx.db.query('SELECT email, can_use_api, can_use_webhooks FROM accounts WHERE id = $1', [created.id]);
    expect(row).toEqual({ email: 'ops@customer.test', can_use_api: true, can_use_webhooks: false });

    const [entry] = await audit();
    expect(entry).toMatchObject({
      staff: expect.any(String),
      action: 'createAccount',
      arguments: { variables: { input: { email: 'ops@customer.test', capabilities: { canUseWebhooks: false } } } },
      result: { data: { createAccount: { id: created.id, email: 'ops@customer.test' } } },
    });
  });

  it('names the field of bad input, creates nothing, and audits the refusal', async () => {
    const before = await ctx.db.prisma.account.count();
    const { body } = await explorer('mutation { createAccount(input: {email: "not-an-email"}) { id } }');
    expect(body.data).toBeNull();
    expect(body.errors?.[0]?.message).toBe('input.email: must be an email address');
    expect(body.errors?.[0]?.extensions?.code).toBe('BAD_REQUEST');
    expect(await ctx.db.prisma.account.count()).toBe(before);
    expect((await audit())[0]).toMatchObject({ action: 'createAccount', result: { errors: ['input.email: must be an email address'] } });

    // A missing required field is named by GraphQL itself.
    const missing = await explorer('mutation { createAccount(input: {}) { id } }');
    expect(missing.body.errors?.[0]?.message).toBe('Field "CreateAccountInput.email" of required type "String!" was not provided.');
  });

  it("changes an account's email and the flags given, leaving the others", async () => {
    const target = await ctx.db.prisma.account.create({ data: { email: 'old@customer.test' } });
    const { body } = await explorer(`mutation ($id: Int!, $input: UpdateAccountInput!) { updateAccount(id: $id, input: $input) { ${ACCOUNT_FIELDS} } }`, {
      id: target.id,
      input: { email: 'new@customer.test', capabilities: { canBlockList: false, canUseWebhooks: null } },
    });
    expect(body.errors).toBeUndefined();
    expect(body.data!.updateAccount).toEqual({
      id: target.id,
      email: 'new@customer.test',
      capabilities: { canUseApi: true, canUserAccount: true, canBlockList: false, canUseWebhooks: true },
    });
    expect((await audit())[0]).toMatchObject({ action: 'updateAccount', result: { data: { updateAccount: { email: 'new@customer.test' } } } });

    const bad = await explorer(`mutation { updateAccount(id: ${target.id}, input: {email: "x@", capabilities: {}}) { id } }`);
    expect(bad.body.errors?.[0]?.extensions?.messages).toEqual(['input.email: must be an email address']);
    const empty = await explorer(`mutation { updateAccount(id: ${target.id}, input: {}) { id } }`);
    expect(empty.body.errors?.[0]?.message).toBe('input: give an email or at least one capability flag to change');
    const unknown = await explorer('mutation { updateAccount(id: 987654, input: {capabilities: {canUseApi: false}}) { id } }');
    expect(unknown.body.errors?.[0]).toMatchObject({ message: 'Account 987654 not found', extensions: { code: 'NOT_FOUND' } });
    expect((await ctx.db.prisma.account.findUniqueOrThrow({ where: { id: target.id } })).email).toBe('new@customer.test');
  });

  it('deactivates an account: its keys get 403, its syncs and webhook endpoints stop, nothing is deleted; again changes nothing', async () => {
    const seeded = await seedFixture(
      ctx.db.prisma,
      {
        accounts: [
          {
            ref: 'leaving',
            connections: [
              { ref: 'leaving-hubspot', crm: 'HUBSPOT', sources: [{ platform: 'smartlead' }] },
              { ref: 'leaving-paused', crm: 'SALESFORCE', syncEnabled: false },
            ],
            apiKeys: [{ ref: 'leaving-key', name: 'Zapier' }],
            webhookEndpoints: [{ ref: 'leaving-ops', url: 'https://leaving.example.com/ops' }],
          },
        ],
      },
      TEST_ENCRYPTION_KEY,
    );
    const id = seeded.accounts.leaving!;
    const key = seeded.generatedSecrets['leaving-key']!;
    expect((await apiGet(ctx.server.baseUrl, '/me', key)).status).toBe(200);

    const deactivate = `mutation { deactivateAccount(id: ${id}) {
      account { ${ACCOUNT_FIELDS} connections { id syncEnabled } apiKeys { revokedAt } }
      syncDisabledConnectionIds disabledWebhookEndpointIds } }`;
    const { body } = await explorer(deactivate);
    expect(body.errors).toBeUndefined();
    expect(body.data!.deactivateAccount).toEqual({
      account: {
        id,
        email: null,
        capabilities: { canUseApi: false, canUserAccount: false, canBlockList: false, canUseWebhooks: false },
        connections: [
          { id: seeded.connections['leaving-hubspot'], syncEnabled: false },
          { id: seeded.connections['leaving-paused'], syncEnabled: false },
        ],
        apiKeys: [{ revokedAt: null }],
      },
      syncDisabledConnectionIds: [seeded.connections['leaving-hubspot']],
      disabledWebhookEndpointIds: [seeded.webhookEndpoints['leaving-ops']],
    });
    expect((await audit())[0]).toMatchObject({ action: 'deactivateAccount', result: { data: { deactivateAccount: { account: { id } } } } });

    // The key is not revoked: the account has no API access (the spec's 403 for it).
    const me = await apiGet(ctx.server.baseUrl, '/me', key);
    expect(me.status).toBe(403);
    expect(me.body.message).toBe('API access is not enabled for this account');
    const [endpoint] = await ctx.db.query('SELECT is_active, disabled_reason FROM webhook_endpoints WHERE public_id = $1', [
      seeded.webhookEndpoints['leaving-ops'],
    ]);
    expect(endpoint).toEqual({ is_active: false, disabled_reason: 'The account was deactivated by support' });
    expect(await ctx.db.prisma.source.count({ where: { connectionId: seeded.connections['leaving-hubspot'] } })).toBe(1);

    const again = await explorer(deactivate);
    expect(again.body.data!.deactivateAccount).toMatchObject({ syncDisabledConnectionIds: [], disabledWebhookEndpointIds: [] });
    expect((await explorer('mutation { deactivateAccount(id: 987654) { syncDisabledConnectionIds } }')).body.errors?.[0]?.message).toBe(
      'Account 987654 not found',
    );

    // Turned back on through the capabilities: the same key works again.
    await explorer(`mutation { updateAccount(id: ${id}, input: {capabilities: {canUseApi: true}}) { id } }`);
    expect((await apiGet(ctx.server.baseUrl, '/me', key)).status).toBe(200);
  });
});

describe('API keys', () => {
  it('creates an account-wide key, shown once and stored as its hash, that works against REST', async () => {
    const created = await createKey({ accountId: account, name: '  CRM dashboard ', scopes: ['write'] });
    expect(created.key).toMatch(/^svcapi_[A-Za-z0-9]{32}$/);
    expect(created.apiKey).toEqual({
      id: created.id,
      name: 'CRM dashboard',
      prefix: created.key.slice(0, 11),
      scopes: ['read', 'write'],
      connectionScope: 'account',
      connectionId: null,
      revokedAt: null,
      rotatedAt: null,
    });
    const [row] = await ctx.db.query<Record<string, unknown>>('SELECT * FROM api_keys WHERE id = $1', [created.id]);
    expect(row!.key_hash).toBe(createHash('sha256').update(created.key).digest('hex'));
    expect(JSON.stringify(row)).not.toContain(created.key);

    const me = await apiGet(ctx.server.baseUrl, '/me', created.key);
    expect(me.status).toBe(200);
    expect(me.body.account).toEqual({ id: account, email: 'owner@onboarded.test' });
    expect(me.body.apiKey).toEqual({ name: 'CRM dashboard', scopes: ['read', 'write'], connectionScope: 'account', connectionId: null });
    expect(me.body.connections.map((c: { id: number }) => c.id)).toEqual([hubspot, salesforce]);

    // The audit row has everything but the value.
    const [entry] = await audit();
    expect(entry).toMatchObject({
      action: 'createApiKey',
      result: { data: { createApiKey: { key: WITHHELD, apiKey: { id: created.id, name: 'CRM dashboard', prefix: created.key.slice(0, 11) } } } },
    });
    // Listed with the account, never with its value.
    const listed = await explorer(`{ account(id: ${account}) { apiKeys { id name } } }`);
    expect(listed.body.data!.account.apiKeys).toContainEqual({ id: created.id, name: 'CRM dashboard' });
    expect(JSON.stringify(listed.body)).not.toContain(created.key);
  });

  it('creates a connection-scoped key that sees its one connection only', async () => {
    const scoped = await createKey({ accountId: account, name: 'HubSpot only', connectionId: hubspot });
    expect(scoped.apiKey).toMatchObject({ scopes: ['read'], connectionScope: 'connection', connectionId: hubspot });

    const me = await apiGet(ctx.server.baseUrl, '/me', scoped.key);
    expect(me.body.apiKey).toEqual({ name: 'HubSpot only', scopes: ['read'], connectionScope: 'connection', connectionId: hubspot });
    const connections = await apiGet(ctx.server.baseUrl, '/connections', scoped.key);
    expect(connections.status).toBe(200);
    expect(connections.body.connections.map((c: { id: number }) => c.id)).toEqual([hubspot]);

    const wide = await createKey({ accountId: account, name: 'Everything' });
    const all = await apiGet(ctx.server.baseUrl, '/connections', wide.key);
    expect(all.body.connections.map((c: { id: number }) => c.id)).toEqual([hubspot, salesforce]);
  });

  it('names the field of each problem in one 400 and creates nothing', async () => {
    const other = await ctx.db.prisma.account.create({ data: {} });
    const foreign = (await ctx.db.prisma.connection.create({ data: { accountId: other.id, crm: 'HUBSPOT' } })).id;
    const before = await ctx.db.prisma.apiKey.count();

    const { body } = await explorer(CREATE_KEY, { input: { accountId: account, name: '   ', scopes: ['read', 'admin'], connectionId: foreign } });
    expect(body.errors?.[0]?.extensions).toMatchObject({
      code: 'BAD_REQUEST',
      messages: [
        'input.name: must not be empty',
        'input.scopes[1]: must be read or write',
        `input.connectionId: connection ${foreign} is not a live connection of account ${account}`,
      ],
    });
    const unknown = await explorer(CREATE_KEY, { input: { accountId: 987654, name: 'x', scopes: [] } });
    expect(unknown.body.errors?.[0]?.extensions?.messages).toEqual(['input.scopes: must name at least one scope', 'input.accountId: account 987654 not found']);
    expect(await ctx.db.prisma.apiKey.count()).toBe(before);
    expect((await audit())[0]).toMatchObject({ action: 'createApiKey', result: { errors: [expect.stringContaining('input.accountId')] } });
  });

  it('rotates a key: the new value is shown once and works, the old one gets 401 at once', async () => {
    const old = await createKey({ accountId: account, name: 'Rotated', scopes: ['read', 'write'], connectionId: salesforce });
    const { body } = await explorer(`mutation ($id: Int!) { rotateApiKey(id: $id) { ${KEY_FIELDS} } }`, { id: old.id });
    expect(body.errors).toBeUndefined();
    const rotated = body.data!.rotateApiKey as { apiKey: { id: number }; key: string };
    issued.push(rotated.key);
    expect(rotated.key).toMatch(/^svcapi_/);
    expect(rotated.key).not.toBe(old.key);
    expect(rotated.apiKey).toMatchObject({
      name: 'Rotated',
      scopes: ['read', 'write'],
      connectionScope: 'connection',
      connectionId: salesforce,
      rotatedAt: null,
    });
    expect(rotated.apiKey.id).not.toBe(old.id);

    const refused = await apiGet(ctx.server.baseUrl, '/me', old.key);
    expect(refused.status).toBe(401);
    expect(refused.body.message).toBe('Invalid API key');
    const me = await apiGet(ctx.server.baseUrl, '/me', rotated.key);
    expect(me.body.apiKey).toEqual({ name: 'Rotated', scopes: ['read', 'write'], connectionScope: 'connection', connectionId: salesforce });
    const [row] = await ctx.db.query('SELECT rotated_at IS NOT NULL AS rotated, replaced_by_id FROM api_keys WHERE id = $1', [old.id]);
    expect(row).toEqual({ rotated: true, replaced_by_id: rotated.apiKey.id });
    expect((await audit())[0]).toMatchObject({ action: 'rotateApiKey', result: { data: { rotateApiKey: { key: WITHHELD } } } });

    const again = await explorer(`mutation { rotateApiKey(id: ${old.id}) { key } }`);
    expect(again.body.errors?.[0]).toMatchObject({
      message: `API key ${old.id} was already rotated: rotate its replacement, key ${rotated.apiKey.id}`,
      extensions: { code: 'CONFLICT' },
    });
    expect((await explorer('mutation { rotateApiKey(id: 987654) { key } }')).body.errors?.[0]?.message).toBe('API key 987654 not found');
  });

  it('revokes a key: 401 from then on; revoking again keeps the first time', async () => {
    const target = await createKey({ accountId: account, name: 'Revoked' });
    expect((await apiGet(ctx.server.baseUrl, '/me', target.key)).status).toBe(200);
    const revoke = `mutation { revokeApiKey(id: ${target.id}) { id name revokedAt } }`;
    const first = await explorer(revoke);
    expect(first.body.data!.revokeApiKey).toEqual({ id: target.id, name: 'Revoked', revokedAt: expect.any(String) });
    expect((await audit())[0]).toMatchObject({ action: 'revokeApiKey', result: { data: { revokeApiKey: { id: target.id } } } });

    const refused = await apiGet(ctx.server.baseUrl, '/me', target.key);
    expect(refused.status).toBe(401);
    expect(refused.body.message).toBe('Invalid API key');
    expect((await explorer(revoke)).body.data!.revokeApiKey.revokedAt).toBe(first.body.data!.revokeApiKey.revokedAt);
    const rotate = await explorer(`mutation { rotateApiKey(id: ${target.id}) { key } }`);
    expect(rotate.body.errors?.[0]?.message).toBe(`API key ${target.id} is revoked: create a new key instead`);
    expect((await explorer('mutation { revokeApiKey(id: 987654) { id } }')).body.errors?.[0]?.message).toBe('API key 987654 not found');
  });
});

describe('who may call them', () => {
  const MUTATIONS = [
    `mutation { createAccount(input: {email: "intruder@evil.test"}) { id } }`,
    () => `mutation { updateAccount(id: ${account}, input: {capabilities: {canUseApi: false}}) { id } }`,
    () => `mutation { deactivateAccount(id: ${account}) { syncDisabledConnectionIds } }`,
    () => `mutation { createApiKey(input: {accountId: ${account}, name: "mine"}) { key } }`,
    () => `mutation { rotateApiKey(id: 1) { key } }`,
    () => `mutation { revokeApiKey(id: 1) { id } }`,
  ].map((m) => (typeof m === 'string' ? () => m : m));

  it('refuses an API key at the explorer (401) and in the schema itself (403), changing and auditing nothing', async () => {
    const key = await createKey({ accountId: account, name: 'Customer write key', scopes: ['write'] });
    const state = async () =>
      JSON.stringify(
        await ctx.db.query(
          `SELECT (SELECT count(*) FROM audit_log) AS audit,
                  (SELECT json_agg(json_build_object('id', id, 'api', can_use_api, 'email', email) ORDER BY id) FROM accounts) AS accounts,
                  (SELECT json_agg(json_build_object('id', id, 'sync', sync_enabled) ORDER BY id) FROM connections) AS connections,
                  (SELECT json_agg(json_build_object('id', id, 'revoked', revoked_at, 'rotated', rotated_at) ORDER BY id) FROM api_keys) AS keys`,
        ),
      );
    const before = await state();

    for (const mutation of MUTATIONS) {
      const { status, body } = await explorer(mutation(), undefined, { token: key.key });
      expect(status).toBe(401);
      expect(body).toEqual({ errors: [{ message: 'A support staff token is required', extensions: { code: 'UNAUTHENTICATED' } }] });
    }

    // The schema is shared with the REST facade: an API key viewer is refused by each resolver too.
    const viewer: Context['viewer'] = {
      kind: 'apiKey',
      accountId: account,
      keyId: key.id,
      keyName: 'Customer write key',
      scopes: ['read', 'write'],
      connectionScope: 'account',
      connectionId: null,
      connectionIds: [hubspot, salesforce],
      capabilities: { canUseApi: true, canUserAccount: true, canBlockList: true, canUseWebhooks: true },
    };
    const context: Context = {
      prisma: ctx.db.prisma,
      heavy: ctx.db.prisma,
      queryTimeoutMs: 20_000,
      viewer,
      ingressUrl: 'http://ingress.test',
      cursorKey: Buffer.alloc(32, 1),
      encryptionKey: TEST_ENCRYPTION_KEY,
      outboundAllowPrivate: true,
      sandboxOrigin: undefined,
    };
    for (const mutation of MUTATIONS) {
      const result = await execute({ schema, document: parse(mutation()), contextValue: context });
      expect(result.data).toBeNull();
      expect(result.errors?.map((e) => [e.message, e.extensions.code])).toEqual([['Support staff only', 'FORBIDDEN']]);
    }
    expect(await state()).toBe(before);
  });
});

describe('secrets in logs', () => {
  it('writes no key value to a log line, even at debug level', async () => {
    const lines: string[] = [];
    const stream = new PassThrough();
    stream.on('data', (chunk: Buffer) => lines.push(chunk.toString('utf8')));
    const server = await startTestServer(ctx.db, {}, { level: 'debug', stream });
    try {
      const { body } = await explorer(CREATE_KEY, { input: { accountId: account, name: 'Logged' } }, { server });
      const created = body.data!.createApiKey as { apiKey: { id: number }; key: string };
      issued.push(created.key);
      const rotated = (await explorer(`mutation { rotateApiKey(id: ${created.apiKey.id}) { key } }`, undefined, { server })).body.data!.rotateApiKey.key;
      issued.push(rotated);
      expect((await apiGet(server.baseUrl, '/me', rotated)).status).toBe(200);
      expect((await apiGet(server.baseUrl, '/me', created.key)).status).toBe(401);
    } finally {
      await server.close();
    }
    const text = lines.join('');
    expect(text).toContain('graphql'); // the explorer's requests were logged
    for (const key of issued) expect(text).not.toContain(key);
  });
});
