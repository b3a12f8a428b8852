import type { PrismaClient } from '../db/prisma.js';
import { hashApiKey } from '../domain/secrets.js';
import type { ApiKeyViewer } from '../schema/context.js';

export type AuthResult = { kind: 'ok'; viewer: ApiKeyViewer } | { kind: 'unauthenticated' } | { kind: 'forbidden' };

const BEARER = /^Bearer (svcapi_[A-Za-z0-9]{16,128})$/;

interface KeyRow {
  id: number;
  accountId: number;
  name: string;
  scopes: string[];
  connectionScope: 'account' | 'connection';
  connectionId: number | null;
  revokedAt: Date | null;
  rotatedAt: Date | null;
  lastUsedAt: Date | null;
  canUseApi: boolean;
  canUserAccount: boolean;
  canBlockList: boolean;
  canUseWebhooks: boolean;
  reachable: number[];
}

/**
 * Resolves an `Authorization` header to the key's viewer, with the connections it reaches resolved
 * once, here. Missing, malformed, unknown, revoked and rotated keys are all the same `unauthenticated`
 * (the caller answers one identical 401); a key that reaches no API-enabled connection is `forbidden`.
 */
export async function authenticate(prisma: PrismaClient, header: string | undefined): Promise<AuthResult> {
  const key = BEARER.exec(header ?? '')?.[1];
  if (!key) return { kind: 'unauthenticated' };
  // One statement per request: the key, its account's flags and the connections it may reach. Looked
  // up by SHA-256, so the index compares hashes and no timing reveals how much of a key matched.
  const [row] = await prisma.$queryRaw<KeyRow[]>`
    SELECT k.id, k.account_id AS "accountId", k.name, k.scopes, k.connection_scope::text AS "connectionScope",
           k.connection_id AS "connectionId", k.revoked_at AS "revokedAt", k.rotated_at AS "rotatedAt", k.last_used_at AS "lastUsedAt",
           a.can_use_api AS "canUseApi", a.can_user_account AS "canUserAccount", a.can_block_list AS "canBlockList",
           a.can_use_webhooks AS "canUseWebhooks",
           COALESCE(array_agg(c.id ORDER BY c.id) FILTER (WHERE c.id IS NOT NULL), '{}') AS "reachable"
      FROM api_keys k
      JOIN accounts a ON a.id = k.account_id
      LEFT JOIN connections c ON c.account_id = k.account_id AND c.api_enabled AND c.deleted_at IS NULL
     WHERE k.key_hash = ${hashApiKey(key)}
     GROUP BY k.id, a.id`;
  if (!row || row.revokedAt || row.rotatedAt) return { kind: 'unauthenticated' };
  const reachable = row.reachable;
  const connectionIds = row.connectionScope === 'connection' ? reachable.filter((id) => id === row.connectionId) : reachable;
  if (!row.canUseApi || connectionIds.length === 0) return { kind: 'forbidden' };
  noteUse(prisma, row.id, row.lastUsedAt);
  const { canUseApi, canUserAccount, canBlockList, canUseWebhooks } = row;
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
