import type { PrismaClient } from '../db/prisma.js';
import { apiKeyPrefix, hashApiKey, PREFIX, randomToken } from '../domain/secrets.js';

/** A key as the admin CLI prints it at creation: the only time the secret is shown. */
export interface CreatedKey {
  id: number;
  accountId: number;
  name: string;
  key: string;
  scopes: string[];
  connectionScope: 'account' | 'connection';
  connectionId: number | null;
}

const SCOPES = ['read', 'write'];

/**
 * Creates an API key. Every key has `read`; `write` only when asked for. With `connectionId` the key
 * is connection-scoped to that (live) connection of the account.
 */
export async function createApiKey(
  prisma: PrismaClient,
  input: { accountId: number; name: string; scopes: string[]; connectionId?: number | undefined },
): Promise<CreatedKey> {
  const requested = input.scopes.map((s) => s.trim()).filter(Boolean);
  const unknown = requested.filter((s) => !SCOPES.includes(s));
  if (unknown.length > 0) throw new Error(`Unknown scope ${unknown.join(', ')}: scopes are read and write`);
  if (input.name.trim() === '') throw new Error('A key needs a name');
  const scopes = SCOPES.filter((s) => s === 'read' || requested.includes(s));

  const account = await prisma.account.findUnique({ where: { id: input.accountId }, select: { id: true } });
  if (!account) throw new Error(`Account ${input.accountId} not found`);
  if (input.connectionId !== undefined) {
    const connection = await prisma.connection.findFirst({
      where: { id: input.connectionId, accountId: input.accountId, deletedAt: null },
      select: { id: true },
    });
    if (!connection) throw new Error(`Connection ${input.connectionId} is not a live connection of account ${input.accountId}`);
  }
  const key = randomToken(PREFIX.apiKey);
  const row = await prisma.apiKey.create({
    data: {
      accountId: input.accountId,
      name: input.name.trim(),
      keyHash: hashApiKey(key),
      keyPrefix: apiKeyPrefix(key),
      scopes,
      connectionScope: input.connectionId === undefined ? 'account' : 'connection',
      connectionId: input.connectionId ?? null,
    },
  });
  return {
    id: row.id,
    accountId: row.accountId,
    name: row.name,
    key,
    scopes: row.scopes,
    connectionScope: row.connectionScope,
    connectionId: row.connectionId,
  };
}

/** Revokes a key by id or by value. Revoking a revoked key is not an error; its first revocation time stands. */
export async function revokeApiKey(prisma: PrismaClient, by: { id?: number | undefined; key?: string | undefined }): Promise<{ id: number; revokedAt: Date }> {
  if ((by.id === undefined) === (by.key === undefined)) throw new Error('Pass exactly one of --id or --key');
  const where = by.id !== undefined ? { id: by.id } : { keyHash: hashApiKey(by.key as string) };
  const existing = await prisma.apiKey.findUnique({ where, select: { id: true, revokedAt: true } });
  // Never echo a key value back, even in an error.
  if (!existing) throw new Error(by.id !== undefined ? `API key ${by.id} not found` : 'No API key has that value');
  if (existing.revokedAt) return { id: existing.id, revokedAt: existing.revokedAt };
  const row = await prisma.apiKey.update({ where: { id: existing.id }, data: { revokedAt: new Date() }, select: { id: true, revokedAt: true } });
  return { id: row.id, revokedAt: row.revokedAt as Date };
}

/** Every account with its capabilities, connections, source count and keys (prefix only). */
export async function listAccounts(prisma: PrismaClient) {
  const accounts = await prisma.account.findMany({
    orderBy: { id: 'asc' },
    include: {
      connections: { orderBy: { id: 'asc' }, include: { _count: { select: { sources: true } } } },
      apiKeys: { orderBy: { id: 'asc' } },
    },
  });
  return accounts.map((account) => ({
    id: account.id,
    email: account.email,
    capabilities: {
      canUseApi: account.canUseApi,
      canUserAccount: account.canUserAccount,
      canBlockList: account.canBlockList,
      canUseWebhooks: account.canUseWebhooks,
    },
    createdAt: account.createdAt,
    connections: account.connections.map((c) => ({
      id: c.id,
      crm: c.crm,
      status: c.status,
      apiEnabled: c.apiEnabled,
      syncEnabled: c.syncEnabled,
      deleted: c.deletedAt !== null,
      sourceCount: c._count.sources,
    })),
    apiKeys: account.apiKeys.map((k) => ({
      id: k.id,
      name: k.name,
      prefix: k.keyPrefix,
      scopes: k.scopes,
      connectionScope: k.connectionScope,
      connectionId: k.connectionId,
      revoked: k.revokedAt !== null || k.rotatedAt !== null,
      lastUsedAt: k.lastUsedAt,
    })),
  }));
}
