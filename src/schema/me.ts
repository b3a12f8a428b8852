import { builder } from './builder.js';
import { accessibleConnections } from './access.js';
import { requireApiKey } from './errors.js';

interface MeShape {
  accountId: number;
  apiKey: { name: string; scopes: string[]; connectionScope: string; connectionId: number | null };
}

const MeAccount = builder.objectRef<{ id: number; email: string | null }>('MeAccount').implement({
  description: 'The account that owns the key.',
  fields: (t) => ({
    id: t.exposeInt('id', { description: 'Account owner id.' }),
    email: t.exposeString('email', { nullable: true, description: 'Owner email (personal data; returned only here).' }),
  }),
});

const MeApiKey = builder.objectRef<MeShape['apiKey']>('MeApiKey').implement({
  description: 'The calling key (never its secret).',
  fields: (t) => ({
    name: t.exposeString('name', { description: 'Key name.' }),
    scopes: t.exposeStringList('scopes', { description: '`read`, and `write` when granted.' }),
    connectionScope: t.exposeString('connectionScope', { description: '`account` or `connection`.' }),
    connectionId: t.exposeInt('connectionId', { nullable: true, description: 'The connection of a connection-scoped key.' }),
  }),
});

const Me = builder.objectRef<MeShape>('Me').implement({
  description: 'Identity of the calling API key.',
  fields: (t) => ({
    account: t.field({
      type: MeAccount,
      description: 'The owning account.',
      resolve: async (me, _args, ctx) => ctx.prisma.account.findUniqueOrThrow({ where: { id: me.accountId }, select: { id: true, email: true } }),
    }),
    apiKey: t.field({ type: MeApiKey, description: 'The calling key.', resolve: (me) => me.apiKey }),
    connections: t.prismaField({
      type: ['Connection'],
      description: 'Accessible connections, in the order of /connections.',
      resolve: (query, _me, _args, ctx) =>
        ctx.prisma.connection.findMany({ ...query, relationLoadStrategy: 'join', where: accessibleConnections(requireApiKey(ctx)), orderBy: { id: 'asc' } }),
    }),
  }),
});

builder.queryField('me', (t) =>
  t.field({
    type: Me,
    description: 'Identity of the calling API key.',
    resolve: (_root, _args, ctx) => {
      const viewer = requireApiKey(ctx);
      return {
        accountId: viewer.accountId,
        apiKey: { name: viewer.keyName, scopes: viewer.scopes, connectionScope: viewer.connectionScope, connectionId: viewer.connectionId },
      };
    },
  }),
);
