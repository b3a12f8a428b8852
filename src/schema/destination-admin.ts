import { bindingSchema, destinationSchema, type Problem } from '../admin/entities.js';
import { builder } from './builder.js';
import type { Context } from './context.js';
import { requireStaff, serviceError } from './errors.js';
import { DeletedObject, given, inputConnection, parsed, refuseProblems, refuseWithHistory } from './staff-input.js';

/**
 * Support staff's forwarding mutations in the explorer (issue 30): forwarding destinations (create,
 * change, delete one that never forwarded anything) and their bindings to sources, with the event types
 * each forwards and whether it waits for the sync (create, change, delete). Staff only, each audited;
 * checked with the fixture format's schemas (src/admin/entities.ts). Forwarding never crosses
 * connections: a binding's source and destination are of one connection.
 */

const CreateDestinationInput = builder.inputType('CreateDestinationInput', {
  description: 'A new forwarding destination of a connection (bind it to sources to forward their events).',
  fields: (t) => ({
    connectionId: t.int({ required: true, description: 'The connection it belongs to.' }),
    url: t.string({ required: true, description: 'The customer URL events are forwarded to: http:// or https://.' }),
    description: t.string({ required: false, description: 'Free text.' }),
  }),
});

const UpdateDestinationInput = builder.inputType('UpdateDestinationInput', {
  description: 'What to change of a forwarding destination; what is left out stays. Past deliveries keep the URL they went to.',
  fields: (t) => ({
    url: t.string({ required: false, description: 'The customer URL: http:// or https://.' }),
    description: t.string({ required: false, description: 'Free text.' }),
  }),
});

const BindingInput = builder.inputType('DestinationBindingInput', {
  description: 'A forwarding destination bound to a source of the same connection.',
  fields: (t) => ({
    sourceId: t.int({ required: true, description: 'The source whose events are forwarded.' }),
    destinationId: t.int({ required: true, description: 'The forwarding destination.' }),
    eventTypes: t.stringList({ required: false, description: 'Event types forwarded (`EMAIL_REPLY`, ...); empty forwards all. On update, replaces the list.' }),
    isDelayed: t.boolean({ required: false, description: 'Forward once the sync has an outcome rather than at once.' }),
  }),
});

const DeletedBinding = builder.objectRef<{ sourceId: number; destinationId: number; deleted: true }>('DeletedDestinationBinding').implement({
  description: 'A binding deleted by support staff: the source no longer forwards to the destination (deliveries already queued still go).',
  fields: (t) => ({
    sourceId: t.exposeInt('sourceId', { description: 'The source.' }),
    destinationId: t.exposeInt('destinationId', { description: 'The destination.' }),
    deleted: t.exposeBoolean('deleted', { description: 'Always true.' }),
  }),
});

const idArg = builder.args((t) => ({ id: t.int({ required: true, description: 'Destination id.' }) }));
const bindingArgs = builder.args((t) => ({
  sourceId: t.int({ required: true, description: 'The source.' }),
  destinationId: t.int({ required: true, description: 'The destination.' }),
}));

builder.mutationFields((t) => ({
  createDestination: t.prismaField({
    type: 'ForwardingDestination',
    description: 'Support staff: creates a forwarding destination of a connection; `createDestinationBinding` makes sources forward to it. Audited.',
    args: { input: t.arg({ type: CreateDestinationInput, required: true, description: 'The destination.' }) },
    resolve: async (query, _root, { input }, ctx) => {
      requireStaff(ctx);
      const problems: Problem[] = [];
      const { connectionId, ...fields } = given(input);
      const destination = parsed(destinationSchema, fields, problems);
      const connection = await inputConnection(ctx, input.connectionId, problems);
      refuseProblems(problems);
      return ctx.prisma.forwardingDestination.create({
        ...query,
        data: { connectionId: (connection as NonNullable<typeof connection>).id, ...(destination as NonNullable<typeof destination>) },
      });
    },
  }),
  updateDestination: t.prismaField({
    type: 'ForwardingDestination',
    description: 'Support staff: changes a forwarding destination’s URL or description (later deliveries go to the new URL). Audited.',
    args: { ...idArg, input: t.arg({ type: UpdateDestinationInput, required: true, description: 'What to change.' }) },
    resolve: async (query, _root, args, ctx) => {
      requireStaff(ctx);
      const current = await findDestination(ctx, args.id);
      const changes = given(args.input);
      const problems: Problem[] = [];
      const destination = parsed(destinationSchema, { url: current.url, description: current.description, ...changes }, problems);
      if (problems.length === 0 && Object.keys(changes).length === 0) problems.push({ path: [], message: 'give a url or a description to change' });
      refuseProblems(problems);
      return ctx.prisma.forwardingDestination.update({ ...query, where: { id: args.id }, data: destination as NonNullable<typeof destination> });
    },
  }),
  deleteDestination: t.field({
    type: DeletedObject,
    description:
      'Support staff: deletes a forwarding destination that never forwarded anything (its bindings go with it). One with deliveries, ' +
      'past or queued, is kept (409): unbind it from its sources instead. Audited.',
    args: idArg,
    resolve: async (_root, args, ctx) => {
      requireStaff(ctx);
      await findDestination(ctx, args.id);
      await ctx.prisma.$transaction(async (tx) => {
        // Locked: a delivery written meanwhile waits for the delete, then fails on the missing destination (its job retries and
        // finds nothing to do), so no history is written between the check and the delete and cascaded away.
        const locked = await tx.$queryRaw<{ id: number }[]>`SELECT id FROM destinations WHERE id = ${args.id} FOR UPDATE`;
        if (locked.length === 0) throw serviceError('NOT_FOUND', `Destination ${args.id} not found`);
        const [delivery, pending] = await Promise.all([
          tx.delivery.findFirst({ where: { destinationId: args.id }, select: { id: true } }),
          tx.pendingDelivery.findFirst({ where: { destinationId: args.id }, select: { id: true } }),
        ]);
        if (delivery || pending) {
          refuseWithHistory(
            `Destination ${args.id}`,
            'deliveries (past or queued)',
            'To stop forwarding to it, delete its bindings (deleteDestinationBinding); its deliveries stay readable.',
          );
        }
        await tx.forwardingDestination.delete({ where: { id: args.id } });
      });
      return { id: args.id, deleted: true as const };
    },
  }),
  createDestinationBinding: t.prismaField({
    type: 'DestinationBinding',
    description: 'Support staff: makes a source forward its events (all, or `eventTypes`) to a destination of its connection. Audited.',
    args: { input: t.arg({ type: BindingInput, required: true, description: 'The binding.' }) },
    resolve: async (query, _root, { input }, ctx) => {
      requireStaff(ctx);
      const { sourceId, destinationId, ...fields } = given(input);
      const problems: Problem[] = [];
      const binding = parsed(bindingSchema, fields, problems);
      problems.push(...(await pairProblems(ctx, input.sourceId, input.destinationId)));
      if (problems.length === 0 && (await findBinding(ctx, input.sourceId, input.destinationId))) {
        problems.push({ path: ['destinationId'], message: 'is already bound to this source (updateDestinationBinding changes it)' });
      }
      refuseProblems(problems);
      return ctx.prisma.destinationBinding.create({
        ...query,
        data: { sourceId: sourceId as number, destinationId: destinationId as number, ...(binding as NonNullable<typeof binding>) },
      });
    },
  }),
  updateDestinationBinding: t.prismaField({
    type: 'DestinationBinding',
    description: 'Support staff: changes which event types a binding forwards, or whether it waits for the sync. Audited.',
    args: { input: t.arg({ type: BindingInput, required: true, description: 'The binding and what to change.' }) },
    resolve: async (query, _root, { input }, ctx) => {
      requireStaff(ctx);
      const current = await findBinding(ctx, input.sourceId, input.destinationId);
      if (!current) throw bindingNotFound(input.sourceId, input.destinationId);
      const { sourceId: _s, destinationId: _d, ...changes } = given(input);
      const problems: Problem[] = [];
      const binding = parsed(bindingSchema, { eventTypes: current.eventTypes, isDelayed: current.isDelayed, ...changes }, problems);
      if (problems.length === 0 && Object.keys(changes).length === 0) problems.push({ path: [], message: 'give eventTypes or isDelayed to change' });
      refuseProblems(problems);
      return ctx.prisma.destinationBinding.update({ ...query, where: { id: current.id }, data: binding as NonNullable<typeof binding> });
    },
  }),
  deleteDestinationBinding: t.field({
    type: DeletedBinding,
    description: 'Support staff: the source stops forwarding to the destination; both, and their history, stay. Audited.',
    args: bindingArgs,
    resolve: async (_root, args, ctx) => {
      requireStaff(ctx);
      const current = await findBinding(ctx, args.sourceId, args.destinationId);
      if (!current) throw bindingNotFound(args.sourceId, args.destinationId);
      await ctx.prisma.destinationBinding.delete({ where: { id: current.id } });
      return { sourceId: args.sourceId, destinationId: args.destinationId, deleted: true as const };
    },
  }),
}));

/** A forwarding destination of a live connection, or a 404 naming it (the API's message). */
async function findDestination(ctx: Context, id: number) {
  const destination = await ctx.prisma.forwardingDestination.findFirst({ where: { id, connection: { deletedAt: null } } });
  if (!destination) throw serviceError('NOT_FOUND', `Destination ${id} not found`);
  return destination;
}

/** The binding of a source to a destination (of a live connection), or null. */
function findBinding(ctx: Context, sourceId: number, destinationId: number) {
  return ctx.prisma.destinationBinding.findFirst({ where: { sourceId, destinationId, source: { connection: { deletedAt: null } } } });
}

function bindingNotFound(sourceId: number, destinationId: number) {
  return serviceError('NOT_FOUND', `Source ${sourceId} is not bound to destination ${destinationId}`);
}

/** Problems of binding a source to a destination: both exist, on one live connection. */
async function pairProblems(ctx: Context, sourceId: number, destinationId: number): Promise<Problem[]> {
  const live = { connection: { deletedAt: null } };
  const [source, destination] = await Promise.all([
    ctx.prisma.source.findFirst({ where: { id: sourceId, ...live }, select: { connectionId: true } }),
    ctx.prisma.forwardingDestination.findFirst({ where: { id: destinationId, ...live }, select: { connectionId: true } }),
  ]);
  if (!source) return [{ path: ['sourceId'], message: `no source ${sourceId}` }];
  if (!destination) return [{ path: ['destinationId'], message: `no destination ${destinationId}` }];
  return destination.connectionId === source.connectionId
    ? []
    : [{ path: ['destinationId'], message: `${destinationId} is not a destination of this source's connection` }];
}
