import type { z } from 'zod';
import type { Problem } from '../admin/entities.js';
import { formatPath } from '../admin/fixture.js';
import { builder } from './builder.js';
import type { Context } from './context.js';
import { serviceError } from './errors.js';

/**
 * What the explorer's onboarding mutations (src/schema/*-admin.ts, connection-settings.ts) share: input
 * checked with the entity schemas of src/admin/entities.ts, every problem named by its field below
 * `input` in one 400 (`input.crmSource.listId: must be a HubSpot list id (digits)`); references inside
 * the input (a connection, a relay, a destination) checked the same way; and the answer to a delete.
 */

/** One 400 naming every problem's field below `input`, when there is one. */
export function refuseProblems(problems: readonly Problem[]): void {
  if (problems.length > 0)
    throw serviceError(
      'BAD_REQUEST',
      problems.map(({ path, message }) => `${formatPath(['input', ...path])}: ${message}`),
    );
}

/** The value `schema` parsed, or undefined with its issues added to `problems` under `at`. */
export function parsed<T extends z.ZodType>(schema: T, value: unknown, problems: Problem[], at: PropertyKey[] = []): z.output<T> | undefined {
  const result = schema.safeParse(value);
  if (result.success) return result.data;
  for (const issue of result.error.issues) problems.push({ path: [...at, ...issue.path], message: issue.message });
  return undefined;
}

/** The fields of a GraphQL input that were given: without those left out or null (GraphQL's "not given"). */
export function given<T extends object>(input: T | null | undefined): { [K in keyof T]?: NonNullable<T[K]> } {
  return Object.fromEntries(Object.entries(input ?? {}).filter(([, v]) => v != null)) as { [K in keyof T]?: NonNullable<T[K]> };
}

/** The live (not deleted) connection an input names by `connectionId`, or undefined with a problem naming the field. */
export async function inputConnection(ctx: Context, id: number, problems: Problem[]): Promise<{ id: number; accountId: number; crm: string } | undefined> {
  const connection = await ctx.prisma.connection.findFirst({ where: { id, deletedAt: null }, select: { id: true, accountId: true, crm: true } });
  if (!connection) problems.push({ path: ['connectionId'], message: `no connection ${id}` });
  return connection ?? undefined;
}

/** The answer to a delete: which object is gone. */
export const DeletedObject = builder.objectRef<{ id: number; deleted: true }>('DeletedObject').implement({
  description: 'An object deleted by support staff: its id answers 404 from now on.',
  fields: (t) => ({
    id: t.exposeInt('id', { description: 'The id it had.' }),
    deleted: t.exposeBoolean('deleted', { description: 'Always true.' }),
  }),
});

/**
 * 409 for a delete that would take history with it: every table that records what an object did
 * (requests, syncs, deliveries, relay emails) cascades from it in the database, so an object with history
 * is kept and `instead` says what to do.
 */
export function refuseWithHistory(what: string, history: string, instead: string): never {
  throw serviceError('CONFLICT', `${what} has ${history} and is kept: deleting it would delete that history. ${instead}`);
}
