import { raw, sql, type Sql } from '../db/sql.js';
import { builder } from './builder.js';
import type { ApiKeyViewer, Context } from './context.js';
import { serviceError } from './errors.js';

/**
 * Whose data a read covers: an API key reads its own account on the connections it reaches; support
 * staff read the account they name, on every connection it has (API-disabled and deleted ones included:
 * their history is what a customer asks about). One schema and one set of resolvers serve both; the
 * viewer decides the scope.
 */
export type Reader = Pick<ApiKeyViewer, 'accountId' | 'connectionIds' | 'connectionScope' | 'capabilities'>;

/** The argument staff name an account with on every list and metric (an API key reads its own). */
export const accountArgs = builder.args((t) => ({
  accountId: t.int({ required: false, description: 'Support staff: the account to read (required). An API key reads its own account.' }),
}));

/** The reader of a list: the API key, or for staff the account `accountId` names (400 without one, 404 if none). */
export async function requireReader(ctx: Context, accountId: number | null | undefined): Promise<Reader> {
  if (ctx.viewer.kind === 'apiKey') {
    // REST never passes it; a key naming another account learns nothing about it.
    if (accountId != null && accountId !== ctx.viewer.accountId) throw serviceError('NOT_FOUND', `Account ${accountId} not found`);
    return ctx.viewer;
  }
  if (accountId == null) throw serviceError('BAD_REQUEST', 'accountId is required for support staff');
  const account = await ctx.prisma.account.findUnique({
    where: { id: accountId },
    select: { canUseApi: true, canUserAccount: true, canBlockList: true, canUseWebhooks: true, connections: { select: { id: true }, orderBy: { id: 'asc' } } },
  });
  if (!account) throw serviceError('NOT_FOUND', `Account ${accountId} not found`);
  const { connections, ...capabilities } = account;
  return { accountId, connectionIds: connections.map((c) => c.id), connectionScope: 'account', capabilities };
}

/** Prisma filters limiting a list to the reader's live connections (not deleted; for a key, API-enabled). */
export function accessibleConnections(reader: Reader) {
  return { id: { in: reader.connectionIds }, accountId: reader.accountId, deletedAt: null };
}

/**
 * SQL limiting a lookup by id to what the caller reaches: support staff every account (the explorer's
 * direct lookups), an API key its account and connections (a row outside them is a 404, not a 403).
 * `alias` qualifies the columns when the lookup joins tables.
 */
export function reachable(ctx: Context, alias?: string): Sql {
  if (ctx.viewer.kind === 'staff') return sql`TRUE`;
  const column = (name: string) => raw(alias ? `${alias}.${name}` : name);
  return sql`${column('account_id')} = ${ctx.viewer.accountId} AND ${column('connection_id')} = ANY(${ctx.viewer.connectionIds}::int[])`;
}

/** Prisma filter for a lookup by id: support staff reach any live connection, an API key its own. */
export function reachableConnections(ctx: Context) {
  return ctx.viewer.kind === 'staff' ? { deletedAt: null } : accessibleConnections(ctx.viewer);
}
