import { sql, type Sql } from '../db/sql.js';
import type { Context } from './context.js';
import { requireApiKey } from './errors.js';

/**
 * Prisma filters limiting reads to what the calling key reaches: its accessible connections (API
 * enabled, not deleted, and only its own for a connection-scoped key), resolved at authentication.
 */
export function accessibleConnections(ctx: Context) {
  const viewer = requireApiKey(ctx);
  return { id: { in: viewer.connectionIds }, accountId: viewer.accountId, deletedAt: null };
}

/**
 * SQL limiting a lookup by id to what the caller reaches: support staff every account (the explorer's
 * direct lookups), an API key its account and connections (a row outside them is a 404, not a 403).
 */
export function reachable(ctx: Context): Sql {
  if (ctx.viewer.kind === 'staff') return sql`TRUE`;
  return sql`account_id = ${ctx.viewer.accountId} AND connection_id = ANY(${ctx.viewer.connectionIds}::int[])`;
}
