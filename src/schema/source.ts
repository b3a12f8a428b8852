import { builder } from './builder.js';
import { sourceUrl } from '../domain/source-url.js';

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
    createdAt: t.expose('createdAt', { type: 'DateTime', description: 'When the source was created.' }),
    connection: t.relation('connection', { description: 'The connection the source writes to.' }),
    destinations: t.relation('destinations', { description: 'Forwarding bindings of this source.', query: { orderBy: { id: 'asc' } } }),
    replyRelay: t.relation('replyRelay', { nullable: true, description: 'The reply relay bound to this source.' }),
  }),
});
