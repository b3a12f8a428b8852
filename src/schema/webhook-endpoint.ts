import { builder } from './builder.js';

builder.prismaObject('WebhookEndpoint', {
  description: 'A customer endpoint for platform events (never its signing secret).',
  fields: (t) => ({
    id: t.exposeString('publicId', { description: 'Endpoint id, prefix `svcwh_`.' }),
    url: t.exposeString('url', { description: 'HTTPS target.' }),
    description: t.exposeString('description', { description: 'Free text.' }),
    enabledEvents: t.exposeStringList('enabledEvents', { description: 'Event types delivered; empty means all.' }),
    isActive: t.exposeBoolean('isActive', { description: 'False once disabled (e.g. after 20 consecutive dead deliveries).' }),
    consecutiveDeadCount: t.exposeInt('consecutiveDeadCount', { description: 'Dead deliveries in a row.' }),
    createdAt: t.expose('createdAt', { type: 'DateTime', description: 'When the endpoint was created.' }),
  }),
});
