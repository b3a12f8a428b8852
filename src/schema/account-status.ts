import { deriveAccountStatus, type AccountStatus, type ConnectionStatus, type StatusNotice } from '../domain/account-status.js';
import { builder } from './builder.js';
import { accessibleConnections, accountArgs, requireReader } from './access.js';

const CrmConnection = builder.objectRef<ConnectionStatus['crmConnection']>('StatusCrmConnection').implement({
  description: 'The CRM side of a connection.',
  fields: (t) => ({
    status: t.exposeString('status', { description: '`ready` or `disconnected`.' }),
    crm: t.exposeString('crm', { description: 'CRM profile identifier.' }),
    organizationId: t.exposeString('organizationId', { nullable: true, description: 'CRM organisation id.' }),
    organizationDomain: t.exposeString('organizationDomain', { nullable: true, description: 'CRM organisation domain.' }),
  }),
});

const SourcesStatus = builder.objectRef<ConnectionStatus['sources']>('StatusSources').implement({
  description: 'Inbound sources of a connection.',
  fields: (t) => ({
    status: t.exposeString('status', { description: '`ready`, `not_configured` or `disabled` (sync off).' }),
    count: t.exposeInt('count', { description: 'Number of sources.' }),
    platforms: t.exposeStringList('platforms', { description: 'Distinct platforms, sorted.' }),
  }),
});

const DestinationsStatus = builder.objectRef<ConnectionStatus['destinations']>('StatusDestinations').implement({
  description: 'Forwarding and reply relays of a connection.',
  fields: (t) => ({
    status: t.exposeString('status', { description: '`ready`, `not_configured` or `disabled` (no destinations capability).' }),
    count: t.exposeInt('count', { description: 'forwardingCount + replyRelayCount.' }),
    eventTypes: t.exposeStringList('eventTypes', { description: 'Event types forwarded, sorted.' }),
    forwardingCount: t.exposeInt('forwardingCount', { description: 'Distinct forwarding URLs bound to sources.' }),
    replyRelayCount: t.exposeInt('replyRelayCount', { description: 'Reply relays bound to sources.' }),
  }),
});

const BlocklistsStatus = builder.objectRef<ConnectionStatus['blocklists']>('StatusBlocklists').implement({
  description: 'Block lists of a connection.',
  fields: (t) => ({
    status: t.exposeString('status', { description: '`ready`, `not_configured`, `disabled` or `error`.' }),
    enabledCount: t.exposeInt('enabledCount', { description: 'Lists not paused.' }),
    lastError: t.exposeString('lastError', { nullable: true, description: 'Most recent error of an enabled list.' }),
    lastFetchedAt: t.expose('lastFetchedAt', { type: 'DateTime', nullable: true, description: 'Latest complete fetch.' }),
  }),
});

const ConnectionStatusRef = builder.objectRef<ConnectionStatus>('ConnectionStatus').implement({
  description: 'Readiness of one connection.',
  fields: (t) => ({
    connectionId: t.exposeInt('connectionId', { description: 'Connection id.' }),
    crm: t.exposeString('crm', { description: 'CRM profile identifier.' }),
    ready: t.exposeBoolean('ready', { description: 'No blocker on this connection.' }),
    crmConnection: t.expose('crmConnection', { type: CrmConnection, description: 'The CRM side.' }),
    sources: t.expose('sources', { type: SourcesStatus, description: 'Inbound sources.' }),
    destinations: t.expose('destinations', { type: DestinationsStatus, description: 'Forwarding and reply relays.' }),
    blocklists: t.expose('blocklists', { type: BlocklistsStatus, description: 'Block lists.' }),
  }),
});

const Notice = builder.objectRef<StatusNotice<string>>('StatusNotice').implement({
  description: 'A blocker or warning, with what to do about it.',
  fields: (t) => ({
    code: t.exposeString('code', { description: 'Stable code.' }),
    connectionId: t.exposeInt('connectionId', { description: 'Connection concerned.' }),
    crm: t.exposeString('crm', { description: 'Its CRM.' }),
    message: t.exposeString('message', { description: 'What is wrong.' }),
    remediation: t.exposeString('remediation', { description: 'What to do.' }),
    docUrl: t.exposeString('docUrl', { description: 'Where it is explained.' }),
  }),
});

const AccountStatusRef = builder.objectRef<AccountStatus>('AccountStatus').implement({
  description: 'Whether the account pipeline is ready, and why not.',
  fields: (t) => ({
    ready: t.exposeBoolean('ready', { description: 'Connections exist and every one is ready.' }),
    checkedAt: t.expose('checkedAt', { type: 'DateTime', description: 'When this was derived.' }),
    connections: t.expose('connections', { type: [ConnectionStatusRef], description: 'Per accessible connection, ascending id.' }),
    blockers: t.expose('blockers', { type: [Notice], description: 'What stops the pipeline.' }),
    warnings: t.expose('warnings', { type: [Notice], description: 'What is optional but missing or failing.' }),
  }),
});

builder.queryField('accountStatus', (t) =>
  t.field({
    type: AccountStatusRef,
    description: 'Readiness of the connections the API key reaches, from stored data only.',
    args: { ...accountArgs, docsUrl: t.arg.string({ required: true, description: 'Base of the remediation doc links.' }) },
    resolve: async (_root, args, ctx) => {
      const viewer = await requireReader(ctx, args.accountId);
      const connections = await ctx.prisma.connection.findMany({
        where: accessibleConnections(viewer),
        orderBy: { id: 'asc' },
        select: {
          id: true,
          crm: true,
          status: true,
          organizationId: true,
          organizationDomain: true,
          syncEnabled: true,
          sources: {
            select: {
              platform: true,
              backfill: { select: { failures: true, paused: true } },
              replyRelay: { select: { id: true, connectionId: true } },
              destinations: { select: { eventTypes: true, destination: { select: { url: true, connectionId: true } } } },
            },
          },
          blocklists: { select: { isEnabled: true, lastError: true, lastFetchedAt: true, lastAttemptedAt: true } },
        },
      });
      const snapshots = connections.map((c) => {
        const bindings = c.sources.flatMap((s) => s.destinations).filter((b) => b.destination.connectionId === c.id);
        const relays = new Set(
          c.sources
            .map((s) => s.replyRelay)
            .filter((r) => r !== null && r.connectionId === c.id)
            .map((r) => r!.id),
        );
        return {
          id: c.id,
          crm: c.crm,
          status: c.status,
          organizationId: c.organizationId,
          organizationDomain: c.organizationDomain,
          syncEnabled: c.syncEnabled,
          sourcePlatforms: c.sources.map((s) => s.platform),
          forwardingUrls: bindings.map((b) => b.destination.url),
          forwardingEventTypes: bindings.flatMap((b) => b.eventTypes),
          boundReplyRelayCount: relays.size,
          blocklists: c.blocklists,
          backfills: c.sources.flatMap((s) => (s.backfill ? [s.backfill] : [])),
        };
      });
      return deriveAccountStatus(snapshots, viewer.capabilities, args.docsUrl);
    },
  }),
);
