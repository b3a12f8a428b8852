import { GraphQLError } from 'graphql';
import { builder } from './builder.js';
import { requireStaff } from './errors.js';

const Capabilities = builder
  .objectRef<{ canUseApi: boolean; canUserAccount: boolean; canBlockList: boolean; canUseWebhooks: boolean }>('AccountCapabilities')
  .implement({
    description: 'What the account may use.',
    fields: (t) => ({
      canUseApi: t.exposeBoolean('canUseApi', { description: 'REST API access.' }),
      canUserAccount: t.exposeBoolean('canUserAccount', { description: 'Destinations: forwarding and reply relays.' }),
      canBlockList: t.exposeBoolean('canBlockList', { description: 'Block list resync.' }),
      canUseWebhooks: t.exposeBoolean('canUseWebhooks', { description: 'Platform webhooks and the event log.' }),
    }),
  });

builder.prismaObject('Account', {
  description: 'A customer account.',
  fields: (t) => ({
    id: t.exposeInt('id', { description: 'Account owner id.' }),
    email: t.exposeString('email', { nullable: true, description: 'Owner email (personal data).' }),
    capabilities: t.field({
      type: Capabilities,
      description: 'The four capability flags.',
      select: { canUseApi: true, canUserAccount: true, canBlockList: true, canUseWebhooks: true },
      resolve: (account) => account,
    }),
    createdAt: t.expose('createdAt', { type: 'DateTime', description: 'When the account was created.' }),
    connections: t.relation('connections', {
      description: 'CRM connections, oldest first.',
      args: { includeDeleted: t.arg.boolean({ defaultValue: false, description: 'Include soft-deleted connections.' }) },
      query: (args) => ({ where: args.includeDeleted ? {} : { deletedAt: null }, orderBy: { id: 'asc' } }),
    }),
    apiKeys: t.relation('apiKeys', { description: 'API keys (never their secret or hash).', query: { orderBy: { id: 'asc' } } }),
    webhookEndpoints: t.relation('webhookEndpoints', {
      description: 'Platform webhook endpoints (never their signing secret).',
      query: { where: { deletedAt: null }, orderBy: { id: 'asc' } },
    }),
  }),
});

builder.queryFields((t) => ({
  accounts: t.prismaField({
    type: ['Account'],
    description: 'Accounts by ascending id, a page at a time.',
    args: {
      first: t.arg.int({ defaultValue: 50, description: 'Page size, 1 to 500.' }),
      afterId: t.arg.int({ required: false, description: 'Return accounts with an id greater than this.' }),
    },
    resolve: (query, _root, args, ctx) => {
      requireStaff(ctx);
      const first = args.first ?? 50;
      if (first < 1 || first > 500) throw new GraphQLError('first must be between 1 and 500', { extensions: { code: 'BAD_USER_INPUT' } });
      return ctx.prisma.account.findMany({
        ...query,
        where: args.afterId == null ? {} : { id: { gt: args.afterId } },
        orderBy: { id: 'asc' },
        take: first,
      });
    },
  }),
  account: t.prismaField({
    type: 'Account',
    nullable: true,
    description: 'One account by id.',
    args: { id: t.arg.int({ required: true, description: 'Account id.' }) },
    resolve: (query, _root, args, ctx) => {
      requireStaff(ctx);
      return ctx.prisma.account.findUnique({ ...query, where: { id: args.id } });
    },
  }),
}));
