import { builder } from './builder.js';
import { pastedIngressPath, sourceUrl } from '../domain/source-url.js';
import { accessibleConnections, accountArgs, requireReader } from './access.js';
import { ingressTarget } from '../ingress/path.js';
import { requireStaff, serviceError } from './errors.js';

interface SourceConfig {
  createOrUpdateCompany: boolean;
  createOrUpdateTask: boolean;
  assignContactOwner: boolean;
  crmObjectType: string | null;
}

const SourceConfigRef = builder.objectRef<SourceConfig>('SourceConfig').implement({
  description: 'What the sync writes for this source.',
  fields: (t) => ({
    createOrUpdateCompany: t.exposeBoolean('createOrUpdateCompany', { description: 'Create or update the company by domain.' }),
    createOrUpdateTask: t.exposeBoolean('createOrUpdateTask', { description: 'Create a CRM task for each event.' }),
    assignContactOwner: t.exposeBoolean('assignContactOwner', { description: 'Assign the contact owner.' }),
    crmObjectType: t.exposeString('crmObjectType', { nullable: true, description: 'Object type used for one CRM kind; null otherwise.' }),
  }),
});

interface ForwardingBinding {
  url: string;
  description: string;
  eventTypes: string[];
  isDelayed: boolean;
}

const SourceForwardingRef = builder.objectRef<ForwardingBinding>('SourceForwarding').implement({
  description: 'A forwarding destination bound to a source.',
  fields: (t) => ({
    url: t.exposeString('url', { description: 'Customer forwarding URL.' }),
    description: t.exposeString('description', { description: 'Free text.' }),
    eventTypes: t.exposeStringList('eventTypes', { description: 'Event types forwarded; empty forwards all.' }),
    isDelayed: t.exposeBoolean('isDelayed', { description: 'Whether forwarding is delayed.' }),
  }),
});

interface RelaySummary {
  id: number;
  description: string;
  ccEmail: string;
  delayMinutes: number;
}

const SourceReplyRelayRef = builder.objectRef<RelaySummary>('SourceReplyRelay').implement({
  description: 'The reply relay bound to a source.',
  fields: (t) => ({
    id: t.exposeInt('id', { description: 'Reply relay id.' }),
    description: t.exposeString('description', { description: 'Free text.' }),
    ccEmail: t.exposeString('ccEmail', { description: 'Address copied on replies (personal data).' }),
    delayMinutes: t.exposeInt('delayMinutes', { description: 'Minutes to wait before relaying.' }),
  }),
});

builder.prismaObject('Source', {
  description: 'An inbound URL a sequencer posts events to.',
  fields: (t) => ({
    id: t.exposeInt('id', { description: 'Source id.' }),
    platform: t.exposeString('platform', { description: 'Sequencer platform, lowercase.' }),
    url: t.string({
      description: 'Paste URL for the sequencer; embeds the secret ingress code.',
      select: { ingressCode: true, legacyId1: true, legacyId2: true },
      resolve: (source, _args, ctx) => sourceUrl(ctx.ingressUrl, source),
    }),
    createOrUpdateCompany: t.exposeBoolean('createOrUpdateCompany', { description: 'Create or update the company by domain.' }),
    createOrUpdateTask: t.exposeBoolean('createOrUpdateTask', { description: 'Create a CRM task for each event.' }),
    assignContactOwner: t.exposeBoolean('assignContactOwner', { description: 'Assign the contact owner.' }),
    crmObjectType: t.exposeString('crmObjectType', { nullable: true, description: 'CRM object type to create (one CRM kind).' }),
    connectionId: t.exposeInt('connectionId', { description: 'The connection the source writes to.' }),
    crm: t.string({
      description: 'CRM of the connection.',
      select: { connection: { select: { crm: true } } },
      resolve: (source) => source.connection.crm,
    }),
    config: t.field({
      type: SourceConfigRef,
      description: 'What the sync writes.',
      select: { createOrUpdateCompany: true, createOrUpdateTask: true, assignContactOwner: true, crmObjectType: true },
      resolve: (source) => source,
    }),
    forwarding: t.field({
      type: [SourceForwardingRef],
      description: 'Forwarding bindings; only destinations owned by the same connection are shown.',
      select: {
        connectionId: true,
        destinations: {
          select: { eventTypes: true, isDelayed: true, destination: { select: { url: true, description: true, connectionId: true } } },
          orderBy: { id: 'asc' },
        },
      },
      resolve: (source) =>
        source.destinations
          .filter((b) => b.destination.connectionId === source.connectionId)
          .map((b) => ({ url: b.destination.url, description: b.destination.description, eventTypes: b.eventTypes, isDelayed: b.isDelayed })),
    }),
    replyRelaySummary: t.field({
      type: SourceReplyRelayRef,
      nullable: true,
      description: 'The bound reply relay, when it belongs to the same connection.',
      select: { connectionId: true, replyRelay: { select: { id: true, description: true, ccEmail: true, delayMinutes: true, connectionId: true } } },
      resolve: (source) =>
        source.replyRelay && source.replyRelay.connectionId === source.connectionId
          ? {
              id: source.replyRelay.id,
              description: source.replyRelay.description,
              ccEmail: source.replyRelay.ccEmail,
              delayMinutes: source.replyRelay.delayMinutes,
            }
          : null,
    }),
    createdAt: t.expose('createdAt', { type: 'DateTime', description: 'When the source was created.' }),
    connection: t.relation('connection', { description: 'The connection the source writes to.' }),
    destinations: t.relation('destinations', { description: 'Forwarding bindings of this source.', query: { orderBy: { id: 'asc' } } }),
    replyRelay: t.relation('replyRelay', { nullable: true, description: 'The reply relay bound to this source.' }),
  }),
});

builder.queryFields((t) => ({
  sourceByUrl: t.prismaField({
    type: 'Source',
    description:
      'Support staff only: the source an ingress URL a customer pasted names, of any account: `.../webhooks/<code>` or a legacy ' +
      '`.../webhooks/<id1>/<id2>`, with or without scheme and host. 404 when it names no source.',
    args: { url: t.arg.string({ required: true, description: 'The ingress URL, or its path.' }) },
    resolve: async (query, _root, args, ctx) => {
      requireStaff(ctx);
      const target = ingressTarget(pastedIngressPath(args.url));
      if (!target) throw serviceError('BAD_REQUEST', 'url must be an ingress URL: .../webhooks/<code> or .../webhooks/<id1>/<id2>');
      const where = 'code' in target ? { ingressCode: target.code } : { legacyId1: target.legacy[0], legacyId2: target.legacy[1] };
      const source = await ctx.prisma.source.findFirst({ ...query, where });
      if (!source) throw serviceError('NOT_FOUND', 'No source has this ingress URL');
      return source;
    },
  }),
  sources: t.prismaField({
    type: ['Source'],
    description: 'Sources of the connections the API key reaches (for staff, of the account named), by ascending id.',
    args: accountArgs,
    resolve: async (query, _root, args, ctx) => {
      const reader = await requireReader(ctx, args.accountId);
      return ctx.prisma.source.findMany({
        ...query,
        relationLoadStrategy: 'join',
        where: { connection: accessibleConnections(reader) },
        orderBy: { id: 'asc' },
      });
    },
  }),
}));
