import { checkLimit, checkWindow, type Window } from '../domain/window.js';
import { cursorScope, decodeCursor, encodeCursor, type Position } from '../domain/cursor.js';
import { join, raw, sql, type Sql } from '../db/sql.js';
import type { InputFieldMap, InputShapeFromFields, ObjectRef } from '@pothos/core';
import { builder, type BuilderTypes } from './builder.js';
import type { Context } from './context.js';
import { accountArgs, type Reader } from './access.js';
import { isQueryCanceled } from '../db/prisma.js';
import { serviceError } from './errors.js';

/**
 * What the observability lists (requests, syncs, deliveries) share: the window and limit rules, the
 * rows the key may see, and keyset pages newest first by (created_at, id) with signed cursors.
 */

/** Window arguments every observability list and metric takes. */
export const windowArgs = builder.args((t) => ({
  from: t.string({ required: true, description: 'Start of the window (ISO 8601), inclusive.' }),
  to: t.string({ required: true, description: 'End of the window (ISO 8601), inclusive; at most 31 days after from.' }),
}));

/** Paging arguments of the cursor lists. */
export const pageArgs = builder.args((t) => ({
  cursor: t.string({ required: false, description: 'nextCursor of the previous page.' }),
  limit: t.int({ required: false, description: 'Page size, 1 to 500 (default 100).' }),
}));

/**
 * One list of an account's history, defined once and mounted twice: at the root, where support staff name
 * the account with `accountId` (an API key reads its own), and under `Account`, where the account is the
 * parent (`account(id: 7) { syncs(...) }`). Both mounts take the same arguments and run the same resolver,
 * so they answer the same rows, under the same rules, with cursors valid at either.
 */
export function accountHistoryList<Args extends InputFieldMap, Shape>(
  name: string,
  list: {
    type: ObjectRef<BuilderTypes, Shape>;
    description: string;
    args: Args;
    resolve: (ctx: Context, accountId: number | null | undefined, args: InputShapeFromFields<Args>) => Promise<Shape>;
  },
): void {
  // Pothos cannot check a field whose type and arguments are type parameters: the signature above is what
  // the lists are checked against, and these erase it for the two mounts.
  const type = list.type as ObjectRef<BuilderTypes, unknown>;
  const args: InputFieldMap = list.args;
  const resolve = list.resolve as (ctx: Context, accountId: number | null | undefined, args: object) => Promise<unknown>;
  builder.queryField(name, (t) =>
    t.field({
      type,
      description: list.description,
      args: { ...accountArgs, ...args },
      resolve: (_root, rootArgs, ctx) => resolve(ctx, rootArgs.accountId, rootArgs),
    }),
  );
  builder.prismaObjectField('Account', name, (t) =>
    t.field({ type, description: list.description, args, resolve: (account, fieldArgs, ctx) => resolve(ctx, account.id, fieldArgs) }),
  );
}

/** The window of a request, or a 400 listing what is wrong with it. */
export function requireWindow(from: string, to: string): Window {
  const checked = checkWindow(from, to);
  if (!checked.ok) throw serviceError('BAD_REQUEST', checked.problems);
  return checked.value;
}

export function requireLimit(limit: number | null | undefined): number {
  const checked = checkLimit(limit ?? undefined);
  if (!checked.ok) throw serviceError('BAD_REQUEST', checked.problems);
  return checked.value;
}

/** Rows of the reader's account on the connections it reaches (the SQL the history tables share). */
export function visibleRows(viewer: Reader, window: Window): Sql[] {
  // The account predicate leads so that lists walk the (account_id, created_at, id) index.
  return [sql`account_id = ${viewer.accountId}`, ...countableRows(viewer, window)];
}

/**
 * Runs a heavy read (the spec's 504 list) on the client whose statements PostgreSQL cancels past the
 * query time limit; a cancelled query becomes the spec's 504, with a hint for this endpoint. Reads only:
 * nothing was written, so retrying is safe.
 */
export async function withQueryLimit<T>(ctx: Context, hint: string, read: (client: Context['heavy']) => Promise<T>): Promise<T> {
  try {
    return await read(ctx.heavy);
  } catch (error) {
    if (!isQueryCanceled(error)) throw error;
    throw serviceError('TIMEOUT', `Request exceeded the ${formatSeconds(ctx.queryTimeoutMs)} query time limit. ${hint}`);
  }
}

function formatSeconds(ms: number): string {
  return `${Number((ms / 1000).toFixed(3))}s`;
}

/**
 * The same rows for counting: by connection only. The key's connections were resolved from its own
 * account, so the account predicate is implied, and without it PostgreSQL counts each connection's
 * window by an index-only scan of `(connection_id, created_at, id, status)` instead of the whole table.
 */
export function countableRows(viewer: Reader, window: Window): Sql[] {
  return [sql`connection_id = ANY(${viewer.connectionIds}::int[])`, sql`created_at >= ${window.from}`, sql`created_at <= ${window.to}`];
}

/** A 404 unless the source exists and belongs to a connection the reader reaches. */
export async function requireSource(ctx: Context, viewer: Reader, sourceId: number): Promise<void> {
  const source = await ctx.prisma.source.findFirst({ where: { id: sourceId, connectionId: { in: viewer.connectionIds } }, select: { id: true } });
  if (!source) throw serviceError('NOT_FOUND', `Source ${sourceId} not found`);
}

export interface Page<Row> {
  data: Row[];
  hasMore: boolean;
  nextCursor: string | null;
}

/**
 * One keyset page, newest first. `scope` names the query (list, account, filters, window): a cursor
 * only works for the query that produced it.
 */
export async function keysetPage<Row extends { id: bigint; createdAt: Date }>(
  ctx: Context,
  query: { table: string; columns: Sql; where: Sql[]; limit: number; cursor: string | null | undefined; scope: Record<string, unknown> },
  client: Context['prisma'] = ctx.prisma,
): Promise<Page<Row>> {
  const scope = cursorScope({ ...(query.scope as Record<string, string>), table: query.table });
  let after: Position | undefined;
  if (query.cursor) {
    after = decodeCursor(ctx.cursorKey, query.cursor, scope);
    if (!after) throw serviceError('BAD_REQUEST', 'cursor is malformed or does not belong to this query');
  }
  const where = after ? [...query.where, sql`(created_at, id) < (${after.createdAt}, ${after.id})`] : query.where;
  const rows = await client.$queryRaw<Row[]>`
    SELECT ${query.columns} FROM ${raw(query.table)}
     WHERE ${join(where, ' AND ')}
     ORDER BY created_at DESC, id DESC
     LIMIT ${query.limit + 1}`;
  const hasMore = rows.length > query.limit;
  const data = hasMore ? rows.slice(0, query.limit) : rows;
  const last = data[data.length - 1];
  return { data, hasMore, nextCursor: hasMore && last ? encodeCursor(ctx.cursorKey, { createdAt: last.createdAt, id: last.id }, scope) : null };
}

/** The GraphQL page type of a row type: `{data, hasMore, nextCursor}`. */
export function pageType<Row>(name: string, rowRef: ObjectRef<BuilderTypes, Row>) {
  return builder.objectRef<Page<Row>>(name).implement({
    description: `A page of ${name.replace(/Page$/, '').toLowerCase()} records, newest first.`,
    fields: (t) => ({
      data: t.field({ type: [rowRef], description: 'The rows of this page.', resolve: (page) => page.data }),
      hasMore: t.exposeBoolean('hasMore', { description: 'Whether another page follows.' }),
      nextCursor: t.exposeString('nextCursor', { nullable: true, description: 'Pass as cursor for the next page.' }),
    }),
  });
}
