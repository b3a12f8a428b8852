import type { PrismaClient } from '../db/prisma.js';
import { hashApiKey } from '../domain/secrets.js';
import type { ApiKeyViewer } from '../schema/context.js';

export type AuthResult = { kind: 'ok'; viewer: ApiKeyViewer } | { kind: 'unauthenticated' } | { kind: 'forbidden' };

const BEARER = /^Bearer (svcapi_[A-Za-z0-9]{16,128})$/;

/**
 * Resolves an `Authorization` header to the key's viewer, with the connections it reaches resolved
 * once, here. Missing, malformed, unknown, revoked and rotated keys are all the same `unauthenticated`
 * (the caller answers one identical 401); a key that reaches no API-enabled connection is `forbidden`.
 */
export async function authenticate(prisma: PrismaClient, header: string | undefined): Promise<AuthResult> {
  const key = BEARER.exec(header ?? '')?.[1];
  if (!key) return { kind: 'unauthenticated' };
  // Looked up by SHA-256: the index compares hashes, so no timing reveals how much of a key matched.
  const row = await prisma.apiKey.findUnique({
    where: { keyHash: hashApiKey(key) },
    include: {
      account: {
        select: {
          canUseApi: true,
          canUserAccount: true,
          canBlockList: true,
          canUseWebhooks: true,
          connections: { where: { apiEnabled: true, deletedAt: null }, select: { id: true }, orderBy: { id: 'asc' } },
        },
      },
    },
  });
  if (!row || row.revokedAt || row.rotatedAt) return { kind: 'unauthenticated' };
  const reachable = row.account.connections.map((c) => c.id);
  const connectionIds = row.connectionScope === 'connection' ? reachable.filter((id) => id === row.connectionId) : reachable;
  if (!row.account.canUseApi || connectionIds.length === 0) return { kind: 'forbidden' };
  noteUse(prisma, row.id, row.lastUsedAt);
  const { canUseApi, canUserAccount, canBlockList, canUseWebhooks } = row.account;
  return {
    kind: 'ok',
    viewer: {
      kind: 'apiKey',
      accountId: row.accountId,
      keyId: row.id,
      keyName: row.name,
      scopes: row.scopes,
      connectionScope: row.connectionScope,
      connectionId: row.connectionScope === 'connection' ? row.connectionId : null,
      connectionIds,
      capabilities: { canUseApi, canUserAccount, canBlockList, canUseWebhooks },
    },
  };
}

/** Records last use at most hourly, off the request path: a write per request would cost every read. */
function noteUse(prisma: PrismaClient, id: number, lastUsedAt: Date | null): void {
  if (lastUsedAt && Date.now() - lastUsedAt.getTime() < 3_600_000) return;
  prisma.apiKey.update({ where: { id }, data: { lastUsedAt: new Date() } }).catch(() => {});
}
