import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApiKey, listAccounts, revokeApiKey } from '../../src/admin/keys.js';
import { hashApiKey } from '../../src/domain/secrets.js';
import { seedTestAccounts, type TestAccounts } from '../support/accounts.js';
import { createTestDatabase, TEST_ENCRYPTION_KEY, type TestDatabase } from '../support/database.js';
import { childEnv, tsxCommand } from '../support/processes.js';

const run = promisify(execFile);
let db: TestDatabase;
let ids: TestAccounts;
beforeAll(async () => {
  db = await createTestDatabase();
  ids = await seedTestAccounts(db.prisma);
});
afterAll(async () => {
  await db.drop();
});

function admin(...args: string[]) {
  const [command, argv] = tsxCommand('src/admin/cli.ts', ...args);
  return run(command, argv, { env: childEnv({ DATABASE_URL: db.url, ENCRYPTION_KEY: TEST_ENCRYPTION_KEY.toString('hex') }) });
}

describe('create-key', () => {
  it('creates a key stored only as its hash, always with read', async () => {
    const created = await createApiKey(db.prisma, { accountId: ids.accounts.acme!, name: 'ops', scopes: ['write'] });

    expect(created).toMatchObject({ name: 'ops', scopes: ['read', 'write'], connectionScope: 'account', connectionId: null });
    const row = await db.prisma.apiKey.findUniqueOrThrow({ where: { id: created.id } });
    expect(row.keyHash).toBe(hashApiKey(created.key));
    expect(JSON.stringify(row)).not.toContain(created.key);
  });

  it('scopes a key to a live connection of the account only', async () => {
    const scoped = await createApiKey(db.prisma, { accountId: ids.accounts.acme!, name: 's', scopes: ['read'], connectionId: ids.connections['acme-hubspot'] });
    expect(scoped).toMatchObject({ connectionScope: 'connection', connectionId: ids.connections['acme-hubspot'] });

    await expect(
      createApiKey(db.prisma, { accountId: ids.accounts.acme!, name: 's', scopes: ['read'], connectionId: ids.connections['globex-hubspot'] }),
    ).rejects.toThrow(`Connection ${ids.connections['globex-hubspot']} is not a live connection of account ${ids.accounts.acme}`);
    await expect(
      createApiKey(db.prisma, { accountId: ids.accounts.acme!, name: 's', scopes: ['read'], connectionId: ids.connections['acme-old-pipedrive'] }),
    ).rejects.toThrow(/is not a live connection/);
    await expect(createApiKey(db.prisma, { accountId: 999_999, name: 's', scopes: ['read'] })).rejects.toThrow('Account 999999 not found');
    await expect(createApiKey(db.prisma, { accountId: ids.accounts.acme!, name: 's', scopes: ['admin'] })).rejects.toThrow('Unknown scope admin');
  });
});

describe('revoke-key and list-accounts through the command', () => {
  it('revokes by value and by id, idempotently, and lists keys without secrets', async () => {
    // Setup
    const { stdout } = await admin('create-key', '--account', String(ids.accounts.globex), '--name', 'temp');
    const created = JSON.parse(stdout) as { id: number; key: string };

    // Action: by value, then again by id
    const byKey = JSON.parse((await admin('revoke-key', '--key', created.key)).stdout);
    const byId = JSON.parse((await admin('revoke-key', '--id', String(created.id))).stdout);

    // Assertions
    expect(byKey).toEqual({ id: created.id, revokedAt: expect.any(String) });
    expect(byId).toEqual(byKey);
    const listed = JSON.parse((await admin('list-accounts')).stdout);
    const globex = listed.find((a: { id: number }) => a.id === ids.accounts.globex);
    expect(globex.apiKeys.find((k: { id: number }) => k.id === created.id)).toMatchObject({ revoked: true, prefix: created.key.slice(0, 11) });
    const text = JSON.stringify(listed);
    expect(text).not.toContain(created.key);
    expect(text).not.toContain(hashApiKey(created.key));
  });

  it('says so, without echoing the value, for an unknown key', async () => {
    const error = (await admin('revoke-key', '--key', 'svcapi_doesNotExist00000000000000').catch((e: unknown) => e)) as { code: number; stderr: string };
    expect(error.code).toBe(1);
    expect(error.stderr).toContain('No API key has that value');
    expect(error.stderr).not.toContain('svcapi_doesNotExist');
    await expect(revokeApiKey(db.prisma, {})).rejects.toThrow('Pass exactly one of --id or --key');
  });

  it('lists every account with capabilities and connections', async () => {
    const accounts = await listAccounts(db.prisma);
    expect(accounts.map((a) => a.email)).toEqual(['owner@acme.test', null]);
    expect(accounts[0]!.connections.find((c) => c.crm === 'PIPEDRIVE')).toMatchObject({ deleted: true });
  });
});
