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
  await ctx.prisma.auditEntry.create({
    data: { staff: ctx.viewer.name, action: entry.action, arguments: entry.arguments as object, result: entry.result as object },
  });
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
