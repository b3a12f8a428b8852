import { builder } from './builder.js';

builder.prismaObject('ApiKey', {
  description: 'An API key, as staff may see it: never its secret or hash.',
  fields: (t) => ({
    id: t.exposeInt('id', { description: 'Key id (internal; never returned by the REST API).' }),
    name: t.exposeString('name', { description: 'Key name.' }),
    prefix: t.exposeString('keyPrefix', { description: 'First characters of the key, to tell keys apart.' }),
    scopes: t.exposeStringList('scopes', { description: '`read`, and `write` when requested at creation.' }),
    connectionScope: t.exposeString('connectionScope', { description: '`account` or `connection`.' }),
    connectionId: t.exposeInt('connectionId', { nullable: true, description: 'The one connection a connection-scoped key reaches.' }),
    revokedAt: t.expose('revokedAt', { type: 'DateTime', nullable: true, description: 'When the key was revoked.' }),
    rotatedAt: t.expose('rotatedAt', { type: 'DateTime', nullable: true, description: 'When the key was replaced by a rotation.' }),
    lastUsedAt: t.expose('lastUsedAt', { type: 'DateTime', nullable: true, description: 'Last successful authentication.' }),
    createdAt: t.expose('createdAt', { type: 'DateTime', description: 'When the key was created.' }),
  }),
});
