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
