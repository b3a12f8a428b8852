import type { Prisma } from '../generated/prisma/client.js';
import { builder } from './builder.js';
import { accessibleConnections, accountArgs, requireReader } from './access.js';
import type { Context } from './context.js';

builder.prismaObject('Blocklist', {
  description: 'A CRM block list kept in sync with a sequencer.',
  fields: (t) => ({
    id: t.exposeInt('id', { description: 'Block list id.' }),
    listName: t.exposeString('listName', { description: 'Name of the CRM list.' }),
    platform: t.exposeString('platform', { description: 'Sequencer the list is pushed to.' }),
    blockType: t.exposeString('blockType', { description: '`ADDRESS` or `DOMAIN`.' }),
    status: t.exposeString('status', { description: 'CREATED, FETCHING, SYNCING, SYNCED or SYNCING_NEW_CONTACTS.' }),
    isEnabled: t.exposeBoolean('isEnabled', { description: 'False while paused.' }),
    hasCrmSource: t.exposeBoolean('hasCrmSource', { description: 'Whether a CRM list backs it.' }),
    syncedCount: t.exposeInt('syncedCount', { description: 'Entries pushed to the sequencer.' }),
    pendingCount: t.exposeInt('pendingCount', { description: 'Entries not pushed yet (those the sequencer refused are not pending).' }),
    lastFetchedAt: t.expose('lastFetchedAt', { type: 'DateTime', nullable: true, description: 'Last complete CRM fetch.' }),
    lastError: t.exposeString('lastError', { nullable: true, description: 'Last operational error (may carry vendor text).' }),
    lastAttemptedAt: t.expose('lastAttemptedAt', { type: 'DateTime', nullable: true, description: 'Last fetch or push attempt.' }),
    connectionId: t.exposeInt('connectionId', { description: 'Owning connection.' }),
    crm: t.string({
      nullable: true,
      description: 'CRM of the connection.',
      select: { connection: { select: { crm: true } } },
      resolve: (list) => list.connection.crm,
    }),
    clientId: t.exposeString('clientId', { nullable: true, description: 'Sequencer client id, when the list is client-specific.' }),
    createdAt: t.expose('createdAt', { type: 'DateTime', description: 'When the list was created.' }),
    entries: t.relation('entries', {
      description: 'Its values (personal data) by ascending id, a page at a time: pushed, pending, or refused by the sequencer (`pushError`).',
      args: {
        first: t.arg.int({ defaultValue: 100, description: 'Page size, 1 to 500.' }),
        afterId: t.arg({ type: 'BigInt', required: false, description: 'Return entries with an id greater than this.' }),
        pending: t.arg.boolean({ required: false, description: 'true: only entries not pushed yet; false: only pushed ones.' }),
      },
      query: (args) => ({
        where: {
          ...(args.afterId == null ? {} : { id: { gt: args.afterId } }),
          ...(args.pending == null ? {} : { pushedAt: args.pending ? null : { not: null } }),
        },
        orderBy: { id: 'asc' },
        take: Math.min(Math.max(args.first ?? 100, 1), 500),
      }),
    }),
  }),
});

builder.prismaObject('BlocklistEntry', {
  description: 'One value of a block list.',
  fields: (t) => ({
    id: t.expose('id', { type: 'BigInt', description: 'Entry id.' }),
    value: t.exposeString('value', { description: 'The address or domain (personal data).' }),
    pushedAt: t.expose('pushedAt', { type: 'DateTime', nullable: true, description: 'When the sequencer accepted it; null while pending.' }),
    pushError: t.exposeString('pushError', { nullable: true, description: 'The sequencer refused this value: its answer. Not pushed again.' }),
    createdAt: t.expose('createdAt', { type: 'DateTime', description: 'When it was fetched from the CRM.' }),
  }),
});

const blocklistArgs = builder.args((t) => ({
  connectionId: t.int({ required: false, description: 'Only this connection; one outside the key gives an empty list.' }),
}));
const BLOCKLISTS = 'Block lists of the connections the API key reaches (or of one of them), by ascending id.';

/** The block lists the reader of `accountId` reaches (both mounts: the root list and `Account.blocklists`). */
async function blocklistsOf(
  query: { include?: Prisma.BlocklistInclude; select?: Prisma.BlocklistSelect },
  ctx: Context,
  accountId: number | null | undefined,
  args: { connectionId?: number | null },
) {
  const reader = await requireReader(ctx, accountId);
  return ctx.prisma.blocklist.findMany({
    ...query,
    relationLoadStrategy: 'join',
    where: { connection: accessibleConnections(reader), ...(args.connectionId == null ? {} : { connectionId: args.connectionId }) },
    orderBy: { id: 'asc' },
  });
}

builder.queryField('blocklists', (t) =>
  t.prismaField({
    type: ['Blocklist'],
    description: BLOCKLISTS,
    args: { ...accountArgs, ...blocklistArgs },
    resolve: (query, _root, args, ctx) => blocklistsOf(query, ctx, args.accountId, args),
  }),
);

builder.prismaObjectField('Account', 'blocklists', (t) =>
  t.prismaField({
    type: ['Blocklist'],
    description: BLOCKLISTS,
    args: blocklistArgs,
    resolve: (query, account, args, ctx) => blocklistsOf(query, ctx, account.id, args),
  }),
);
