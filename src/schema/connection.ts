import { builder } from './builder.js';
import { accessibleConnections, accountArgs, requireReader } from './access.js';

const CrmPause = builder.objectRef<{ until: Date; reason: string | null }>('CrmPause').implement({
  description: 'A connection held back by its CRM rate limit: no CRM call until `until`.',
  fields: (t) => ({
    until: t.expose('until', { type: 'DateTime', description: 'When calls may resume.' }),
    reason: t.exposeString('reason', { nullable: true, description: 'What the CRM answered (429, REQUEST_LIMIT_EXCEEDED, a used-up window).' }),
  }),
});

const ConnectionCapabilities = builder.objectRef<{ sync: boolean; destinations: boolean; blocklists: boolean }>('ConnectionCapabilities').implement({
  description: 'What the connection can do.',
  fields: (t) => ({
    sync: t.exposeBoolean('sync', { description: 'Events are written to the CRM.' }),
    destinations: t.exposeBoolean('destinations', { description: 'Forwarding and reply relays are available.' }),
    blocklists: t.exposeBoolean('blocklists', { description: 'Block list sync is available.' }),
  }),
});

builder.prismaObject('Connection', {
  description: 'A CRM connection. Its credentials never leave the connectors.',
  fields: (t) => ({
    id: t.exposeInt('id', { description: 'Connection id.' }),
    crm: t.exposeString('crm', { description: 'CRM profile identifier, uppercase.' }),
    status: t.exposeString('status', { description: '`ready` or `disconnected`.' }),
    organizationId: t.exposeString('organizationId', { nullable: true, description: 'The CRM organisation (portal, org) id.' }),
    organizationDomain: t.exposeString('organizationDomain', { nullable: true, description: 'The CRM organisation domain.' }),
    apiEnabled: t.exposeBoolean('apiEnabled', { description: 'Whether API keys reach this connection.' }),
    capabilities: t.field({
      type: ConnectionCapabilities,
      description: 'Sync from the connection; destinations and block lists from the account capabilities.',
      select: { syncEnabled: true, account: { select: { canUserAccount: true, canBlockList: true } } },
      resolve: (c) => ({ sync: c.syncEnabled, destinations: c.account.canUserAccount, blocklists: c.account.canBlockList }),
    }),
    syncEnabled: t.exposeBoolean('syncEnabled', { description: 'Whether events are written to the CRM.' }),
    hasCredentials: t.boolean({
      description: 'Whether credentials are stored (their content is never exposed).',
      select: { credentialsEncrypted: true },
      resolve: (connection) => connection.credentialsEncrypted !== null,
    }),
    crmPause: t.field({
      type: CrmPause,
      nullable: true,
      description: 'Support staff only: the pause its CRM rate limit imposes now, if any (null for API keys).',
      select: { crmBudget: { select: { pausedUntil: true, pauseReason: true } } },
      resolve: (c, _args, ctx) => {
        const paused = c.crmBudget?.pausedUntil;
        if (ctx.viewer.kind !== 'staff' || !paused || paused.getTime() <= Date.now()) return null;
        return { until: paused, reason: c.crmBudget?.pauseReason ?? null };
      },
    }),
    deletedAt: t.expose('deletedAt', { type: 'DateTime', nullable: true, description: 'Set when the connection was deleted.' }),
    createdAt: t.expose('createdAt', { type: 'DateTime', description: 'When the connection was created.' }),
    sources: t.relation('sources', { description: 'Inbound sources, oldest first.', query: { orderBy: { id: 'asc' } } }),
    destinations: t.relation('destinations', { description: 'Forwarding destinations, oldest first.', query: { orderBy: { id: 'asc' } } }),
    replyRelays: t.relation('replyRelays', { description: 'Reply relays, oldest first.', query: { orderBy: { id: 'asc' } } }),
    blocklists: t.relation('blocklists', { description: 'Block lists, oldest first.', query: { orderBy: { id: 'asc' } } }),
  }),
});

builder.queryFields((t) => ({
  connections: t.prismaField({
    type: ['Connection'],
    description: 'The connections the API key reaches (for staff, those of the account named), by ascending id.',
    args: accountArgs,
    resolve: async (query, _root, args, ctx) => {
      const reader = await requireReader(ctx, args.accountId);
      return ctx.prisma.connection.findMany({ ...query, relationLoadStrategy: 'join', where: accessibleConnections(reader), orderBy: { id: 'asc' } });
    },
  }),
}));
