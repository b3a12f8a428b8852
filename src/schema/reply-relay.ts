import { builder } from './builder.js';
import { accessibleConnections, accountArgs, requireReader } from './access.js';

interface CategoryRef {
  id: string;
  name: string;
}

const Category = builder.objectRef<CategoryRef>('LeadCategory').implement({
  description: 'A lead category of the sequencer.',
  fields: (t) => ({
    id: t.exposeString('id', { description: 'Category id.' }),
    name: t.exposeString('name', { description: 'Category name.' }),
  }),
});

builder.prismaObject('ReplyRelay', {
  description: 'Copies a sales rep on prospect replies.',
  fields: (t) => ({
    id: t.exposeInt('id', { description: 'Reply relay id.' }),
    description: t.exposeString('description', { description: 'Free text.' }),
    ccEmail: t.exposeString('ccEmail', { description: 'Address copied on replies (personal data).' }),
    delayMinutes: t.exposeInt('delayMinutes', { description: 'Minutes to wait before relaying.' }),
    bodyTemplates: t.exposeStringList('bodyTemplates', { description: 'Templates of the relayed message.' }),
    categoryAllowlist: t.field({
      type: [Category],
      description: 'Categories a lead must carry for its reply to be relayed; empty relays all.',
      select: { categoryAllowlist: true },
      resolve: (relay) => relay.categoryAllowlist as unknown as CategoryRef[],
    }),
    connectionId: t.exposeInt('connectionId', { description: 'Owning connection.' }),
    sourceIds: t.intList({
      description: 'Ids of the sources of the same connection bound to this relay, ascending.',
      select: { connectionId: true, sources: { select: { id: true, connectionId: true }, orderBy: { id: 'asc' } } },
      resolve: (relay) => relay.sources.filter((s) => s.connectionId === relay.connectionId).map((s) => s.id),
    }),
    createdAt: t.expose('createdAt', { type: 'DateTime', description: 'When the relay was created.' }),
    sources: t.relation('sources', { description: 'Sources bound to this relay.', query: { orderBy: { id: 'asc' } } }),
  }),
});

builder.queryFields((t) => ({
  replyRelays: t.prismaField({
    type: ['ReplyRelay'],
    description: 'Reply relays of the connections the API key reaches (for staff, of the account named), by ascending id.',
    args: accountArgs,
    resolve: async (query, _root, args, ctx) => {
      const reader = await requireReader(ctx, args.accountId);
      return ctx.prisma.replyRelay.findMany({
        ...query,
        relationLoadStrategy: 'join',
        where: { connection: accessibleConnections(reader) },
        orderBy: { id: 'asc' },
      });
    },
  }),
}));
