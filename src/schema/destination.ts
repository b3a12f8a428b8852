import { builder } from './builder.js';
import { accessibleConnections, accountArgs, reachableConnections, requireReader } from './access.js';
import { serviceError } from './errors.js';

builder.prismaObject('ForwardingDestination', {
  description: 'A customer URL that received events are forwarded to.',
  fields: (t) => ({
    id: t.exposeInt('id', { description: 'Destination id.' }),
    url: t.exposeString('url', { description: 'Customer forwarding URL.' }),
    description: t.exposeString('description', { description: 'Free text.' }),
    connectionId: t.exposeInt('connectionId', { description: 'Owning connection.' }),
    eventTypes: t.stringList({
      description: 'Union of the event types of its bindings (sorted).',
      select: { connectionId: true, bindings: { select: { eventTypes: true, source: { select: { connectionId: true } } } } },
      resolve: (d) => [...new Set(ownBindings(d).flatMap((b) => b.eventTypes))].sort(),
    }),
    isDelayed: t.boolean({
      description: 'True if any binding is delayed.',
      select: { connectionId: true, bindings: { select: { isDelayed: true, source: { select: { connectionId: true } } } } },
      resolve: (d) => ownBindings(d).some((b) => b.isDelayed),
    }),
    sourceIds: t.intList({
      description: 'Unique bound source ids, ascending.',
      select: { connectionId: true, bindings: { select: { sourceId: true, source: { select: { connectionId: true } } } } },
      resolve: (d) => [...new Set(ownBindings(d).map((b) => b.sourceId))].sort((a, b) => a - b),
    }),
    createdAt: t.expose('createdAt', { type: 'DateTime', description: 'When the destination was created.' }),
    bindings: t.relation('bindings', { description: 'Sources bound to this destination.', query: { orderBy: { id: 'asc' } } }),
  }),
});

builder.prismaObject('DestinationBinding', {
  description: 'Binds a forwarding destination to a source.',
  fields: (t) => ({
    eventTypes: t.exposeStringList('eventTypes', { description: 'Event types forwarded; empty forwards all.' }),
    isDelayed: t.exposeBoolean('isDelayed', { description: 'Whether forwarding is delayed.' }),
    source: t.relation('source', { description: 'The bound source.' }),
    destination: t.relation('destination', { description: 'The bound destination.' }),
  }),
});

/** Bindings from sources of the destination's own connection (forwarding never crosses connections). */
function ownBindings<B extends { source: { connectionId: number } }>(d: { connectionId: number; bindings: B[] }): B[] {
  return d.bindings.filter((b) => b.source.connectionId === d.connectionId);
}

builder.queryFields((t) => ({
  destinations: t.prismaField({
    type: ['ForwardingDestination'],
    description: 'Forwarding destinations of the connections the API key reaches (for staff, of the account named), by ascending id.',
    args: accountArgs,
    resolve: async (query, _root, args, ctx) => {
      const reader = await requireReader(ctx, args.accountId);
      return ctx.prisma.forwardingDestination.findMany({
        ...query,
        relationLoadStrategy: 'join',
        where: { connection: accessibleConnections(reader) },
        orderBy: { id: 'asc' },
      });
    },
  }),
  destination: t.prismaField({
    type: 'ForwardingDestination',
    description: 'One forwarding destination; 404 when missing or not reachable by the key. Support staff reach every account.',
    args: { id: t.arg.int({ required: true, description: 'Destination id.' }) },
    resolve: async (query, _root, args, ctx) => {
      const found = await ctx.prisma.forwardingDestination.findFirst({ ...query, where: { id: args.id, connection: reachableConnections(ctx) } });
      if (!found) throw serviceError('NOT_FOUND', `Destination ${args.id} not found`);
      return found;
    },
  }),
}));
