import { builder } from './builder.js';

builder.prismaObject('Connection', {
  description: 'A CRM connection. Its credentials never leave the connectors.',
  fields: (t) => ({
    id: t.exposeInt('id', { description: 'Connection id.' }),
    crm: t.exposeString('crm', { description: 'CRM profile identifier, uppercase.' }),
    status: t.exposeString('status', { description: '`ready` or `disconnected`.' }),
    organizationId: t.exposeString('organizationId', { nullable: true, description: 'The CRM organisation (portal, org) id.' }),
    organizationDomain: t.exposeString('organizationDomain', { nullable: true, description: 'The CRM organisation domain.' }),
    apiEnabled: t.exposeBoolean('apiEnabled', { description: 'Whether API keys reach this connection.' }),
    syncEnabled: t.exposeBoolean('syncEnabled', { description: 'Whether events are written to the CRM.' }),
    hasCredentials: t.boolean({
      description: 'Whether credentials are stored (their content is never exposed).',
      select: { credentialsEncrypted: true },
      resolve: (connection) => connection.credentialsEncrypted !== null,
    }),
    deletedAt: t.expose('deletedAt', { type: 'DateTime', nullable: true, description: 'Set when the connection was deleted.' }),
    createdAt: t.expose('createdAt', { type: 'DateTime', description: 'When the connection was created.' }),
    sources: t.relation('sources', { description: 'Inbound sources, oldest first.', query: { orderBy: { id: 'asc' } } }),
    destinations: t.relation('destinations', { description: 'Forwarding destinations, oldest first.', query: { orderBy: { id: 'asc' } } }),
    replyRelays: t.relation('replyRelays', { description: 'Reply relays, oldest first.', query: { orderBy: { id: 'asc' } } }),
    blocklists: t.relation('blocklists', { description: 'Block lists, oldest first.', query: { orderBy: { id: 'asc' } } }),
  }),
});
