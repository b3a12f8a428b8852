import { builder } from './builder.js';

builder.prismaObject('ForwardingDestination', {
  description: 'A customer URL that received events are forwarded to.',
  fields: (t) => ({
    id: t.exposeInt('id', { description: 'Destination id.' }),
    url: t.exposeString('url', { description: 'Customer forwarding URL.' }),
    description: t.exposeString('description', { description: 'Free text.' }),
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
