import { Kind, print, visit, type OperationDefinitionNode } from 'graphql';
import { builder } from './builder.js';
import type { Context } from './context.js';
import { requireStaff, serviceError } from './errors.js';

/**
 * The staff audit log (issue 17): a row for every mutation staff run in the explorer (written by the
 * explorer's plugin, src/http/graphql.ts) and for every read of a raw request body; readable as
 * `auditLog`, newest first. API keys never write or see it.
 */
export async function recordAudit(ctx: Context, entry: { action: string; arguments: unknown; result: unknown }): Promise<void> {
  if (ctx.viewer.kind !== 'staff') return;
  const secrets = shownOnce.get(ctx);
  const recorded = (value: unknown) => (secrets ? withhold(value, secrets) : value) as object;
  await ctx.prisma.auditEntry.create({
    data: { staff: ctx.viewer.name, action: entry.action, arguments: recorded(entry.arguments), result: recorded(entry.result) },
  });
}

/** What an audit row says in place of a secret the operation showed its caller once. */
const WITHHELD = '[shown once, not recorded]';

/** Secrets an operation shows its caller once (a new API key), by operation. */
const shownOnce = new WeakMap<Context, Set<string>>();

/**
 * Keeps a secret the answer shows once (a new API key) out of this operation's audit row: wherever the
 * row would carry it, it says {@link WITHHELD}. The answer itself is untouched.
 */
export function withholdFromAudit(ctx: Context, secret: string): void {
  const secrets = shownOnce.get(ctx) ?? new Set<string>();
  secrets.add(secret);
  shownOnce.set(ctx, secrets);
}

/** Input fields that carry a secret by their name (a sequencer's `apiKey`, an app's `clientSecret`, a token). */
const SECRET_FIELD = /(apikey|secret|token|password)$/i;

/**
 * A mutation's arguments as its audit row keeps them: its variables and its printed operation, every
 * secret-named input field blanked. A resolver withholds what it parsed, but an operation graphql-js
 * refuses before any resolver runs (a wrong type elsewhere in the input) is recorded as sent.
 */
export function auditArguments(operation: OperationDefinitionNode, variables: Record<string, unknown>): { variables: unknown; operation: string } {
  const blanked = visit(operation, {
    ObjectField: (field) =>
      SECRET_FIELD.test(field.name.value) && field.value.kind === Kind.STRING ? { ...field, value: { ...field.value, value: '[redacted]' } } : undefined,
  });
  return { variables: withoutSecretFields(variables), operation: print(blanked).slice(0, 10_000) };
}

function withoutSecretFields(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(withoutSecretFields);
  if (value === null || typeof value !== 'object') return value;
  return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, SECRET_FIELD.test(k) && typeof v === 'string' ? '[redacted]' : withoutSecretFields(v)]));
}

/** `value` (JSON: an answer, variables) with every occurrence of the secrets replaced. */
function withhold(value: unknown, secrets: Set<string>): unknown {
  if (typeof value === 'string') return [...secrets].reduce((text, secret) => text.split(secret).join(WITHHELD), value);
  if (Array.isArray(value)) return value.map((v) => withhold(v, secrets));
  // graphql-js builds its answers' objects without a prototype.
  const prototype: unknown = value !== null && typeof value === 'object' ? Object.getPrototypeOf(value) : undefined;
  if (prototype === Object.prototype || prototype === null) {
    return Object.fromEntries(Object.entries(value as object).map(([k, v]) => [k, withhold(v, secrets)]));
  }
  return value;
}

builder.prismaObject('AuditEntry', {
  description: 'One thing support staff did in the explorer.',
  fields: (t) => ({
    id: t.expose('id', { type: 'BigInt', description: 'Entry id (ascending with time).' }),
    staff: t.exposeString('staff', { description: 'Who: the name of their SUPPORT_TOKENS entry.' }),
    action: t.exposeString('action', { description: 'What: the mutation field(s), or `read:Request.body`.' }),
    arguments: t.expose('arguments', { type: 'JSON', description: 'With which arguments (variables and the operation).' }),
    result: t.expose('result', { type: 'JSON', description: 'What came of it: the answer, or the errors.' }),
    createdAt: t.expose('createdAt', { type: 'DateTime', description: 'When.' }),
  }),
});

builder.queryField('auditLog', (t) =>
  t.prismaField({
    type: ['AuditEntry'],
    description: 'Support staff only: the audit log, newest first.',
    args: {
      limit: t.arg.int({ defaultValue: 50, description: 'Entries, 1 to 500.' }),
      beforeId: t.arg({ type: 'BigInt', required: false, description: 'Only entries older than this one (the next page).' }),
      staff: t.arg.string({ required: false, description: 'Only this staff member.' }),
    },
    resolve: (query, _root, args, ctx) => {
      requireStaff(ctx);
      const limit = args.limit ?? 50;
      if (limit < 1 || limit > 500) throw serviceError('BAD_REQUEST', 'limit must be between 1 and 500');
      return ctx.prisma.auditEntry.findMany({
        ...query,
        where: { ...(args.beforeId == null ? {} : { id: { lt: args.beforeId } }), ...(args.staff == null ? {} : { staff: args.staff }) },
        orderBy: { id: 'desc' },
        take: limit,
      });
    },
  }),
);
