import { type Problem, replyRelaySchema } from '../admin/entities.js';
import { builder } from './builder.js';
import type { Context } from './context.js';
import { requireStaff, serviceError } from './errors.js';
import { DeletedObject, given, inputConnection, parsed, refuseProblems, refuseWithHistory } from './staff-input.js';

/**
 * Support staff's reply relay mutations in the explorer (issue 30): create, change, delete one that never
 * relayed a reply. A source is bound to a relay by `updateSource(input: {replyRelayId})`. Staff only, each
 * audited; checked with the fixture format's schema (src/admin/entities.ts).
 */

const LeadCategoryInput = builder.inputType('LeadCategoryInput', {
  description: 'A lead category of the sequencer.',
  fields: (t) => ({
    id: t.string({ required: true, description: 'Category id.' }),
    name: t.string({ required: true, description: 'Category name.' }),
  }),
});

const relayFields = (required: boolean) =>
  builder.inputType(required ? 'CreateReplyRelayInput' : 'UpdateReplyRelayInput', {
    description: required ? 'A new reply relay of a connection.' : 'What to change of a reply relay; what is left out stays.',
    fields: (t) => ({
      ...(required ? { connectionId: t.int({ required: true, description: 'The connection it belongs to.' }) } : {}),
      ccEmail: t.string({ required, description: 'The sales rep copied on replies (personal data).' }),
      description: t.string({ required: false, description: 'Free text.' }),
      delayMinutes: t.int({ required: false, description: 'Minutes to wait before relaying (0: at once).' }),
      bodyTemplates: t.stringList({ required: false, description: 'Templates of the relayed message (see docs/reply-relays.md).' }),
      categoryAllowlist: t.field({
        type: [LeadCategoryInput],
        required: false,
        description: 'Lead categories a reply must carry to be relayed, at most 50; empty relays every reply.',
      }),
    }),
  });

const CreateReplyRelayInput = relayFields(true);
const UpdateReplyRelayInput = relayFields(false);

const idArg = builder.args((t) => ({ id: t.int({ required: true, description: 'Reply relay id.' }) }));

builder.mutationFields((t) => ({
  createReplyRelay: t.prismaField({
    type: 'ReplyRelay',
    description: 'Support staff: creates a reply relay of a connection; bind sources to it with `updateSource(input: {replyRelayId})`. Audited.',
    args: { input: t.arg({ type: CreateReplyRelayInput, required: true, description: 'The relay.' }) },
    resolve: async (query, _root, { input }, ctx) => {
      requireStaff(ctx);
      const problems: Problem[] = [];
      const { connectionId, ...fields } = given(input);
      const relay = parsed(replyRelaySchema, fields, problems);
      const connection = await inputConnection(ctx, connectionId as number, problems);
      refuseProblems(problems);
      return ctx.prisma.replyRelay.create({
        ...query,
        data: { connectionId: (connection as NonNullable<typeof connection>).id, ...(relay as NonNullable<typeof relay>) },
      });
    },
  }),
  updateReplyRelay: t.prismaField({
    type: 'ReplyRelay',
    description: 'Support staff: changes a reply relay (replies already scheduled keep their time). Audited.',
    args: { ...idArg, input: t.arg({ type: UpdateReplyRelayInput, required: true, description: 'What to change.' }) },
    resolve: async (query, _root, args, ctx) => {
      requireStaff(ctx);
      const current = await findRelay(ctx, args.id);
      const changes = given(args.input);
      const problems: Problem[] = [];
      const { description, ccEmail, delayMinutes, bodyTemplates, categoryAllowlist } = current;
      const relay = parsed(replyRelaySchema, { description, ccEmail, delayMinutes, bodyTemplates, categoryAllowlist, ...changes }, problems);
      if (problems.length === 0 && Object.keys(changes).length === 0) problems.push({ path: [], message: 'give at least one field to change' });
      refuseProblems(problems);
      return ctx.prisma.replyRelay.update({ ...query, where: { id: args.id }, data: relay as NonNullable<typeof relay> });
    },
  }),
  deleteReplyRelay: t.field({
    type: DeletedObject,
    description:
      'Support staff: deletes a reply relay that never relayed a reply (its sources are unbound). One with relay executions is kept (409): ' +
      'unbind its sources instead. Audited.',
    args: idArg,
    resolve: async (_root, args, ctx) => {
      requireStaff(ctx);
      await findRelay(ctx, args.id);
      await ctx.prisma.$transaction(async (tx) => {
        // Locked: an execution written meanwhile waits for the delete, then fails on the missing relay (its job retries and finds
        // nothing to do), so no history is written between the check and the delete and cascaded away.
        const locked = await tx.$queryRaw<{ id: number }[]>`SELECT id FROM reply_relays WHERE id = ${args.id} FOR UPDATE`;
        if (locked.length === 0) throw serviceError('NOT_FOUND', `Reply relay ${args.id} not found`);
        if (await tx.relayExecution.findFirst({ where: { relayId: args.id }, select: { id: true } })) {
          refuseWithHistory(
            `Reply relay ${args.id}`,
            'relayed replies (relay executions)',
            'To stop it, unbind its sources (updateSource(input: {replyRelayId: null})); its executions stay readable.',
          );
        }
        await tx.replyRelay.delete({ where: { id: args.id } });
      });
      return { id: args.id, deleted: true as const };
    },
  }),
}));

/** A reply relay of a live connection, or a 404 naming it. */
async function findRelay(ctx: Context, id: number) {
  const relay = await ctx.prisma.replyRelay.findFirst({ where: { id, connection: { deletedAt: null } } });
  if (!relay) throw serviceError('NOT_FOUND', `Reply relay ${id} not found`);
  return relay;
}
