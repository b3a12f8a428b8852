import { join, sql, type Sql } from '../db/sql.js';
import { builder } from './builder.js';
import { PLATFORM_EVENT_TYPES } from '../domain/platform-events.js';
import type { ApiKeyViewer } from './context.js';
import { serviceError } from './errors.js';
import { keysetPage, pageArgs, pageType, requireLimit, requireWindow, windowArgs } from './history.js';
import { requireWebhooks } from './key-access.js';

/** A platform event as stored: the spec's webhook payload (public id, type, created, summary, data). */
interface PlatformEventRecord {
  id: bigint;
  publicId: string;
  type: string;
  summary: string;
  data: unknown;
  createdAt: Date;
}

const EVENT_COLUMNS = sql`id, public_id AS "publicId", type, summary, data, created_at AS "createdAt"`;

const PlatformEventRef = builder.objectRef<PlatformEventRecord>('PlatformEvent').implement({
  description: 'An event the service itself emitted (sync monitoring, test pings): what webhook endpoints receive.',
  fields: (t) => ({
    id: t.exposeString('publicId', { description: 'Event id, prefix `svcevt_`.' }),
    type: t.exposeString('type', { description: '`sync.failed`, `sync.recovered` or `test.ping`.' }),
    created: t.expose('createdAt', { type: 'DateTime', description: 'When it was emitted.' }),
    summary: t.exposeString('summary', { description: 'One line for people.' }),
    data: t.field({ type: 'JSON', description: "The event's details; their fields depend on its type.", resolve: (e) => e.data }),
  }),
});

const PlatformEventPage = pageType('PlatformEventPage', PlatformEventRef);

builder.queryFields((t) => ({
  events: t.field({
    type: PlatformEventPage,
    description: 'Platform events of the account, newest first (the webhooks capability is required).',
    args: {
      ...windowArgs,
      ...pageArgs,
      type: t.arg.string({ required: false, description: 'Only this event type.' }),
    },
    resolve: async (_root, args, ctx) => {
      const viewer = requireWebhooks(ctx);
      const window = requireWindow(args.from, args.to);
      const limit = requireLimit(args.limit);
      if (args.type != null && !(PLATFORM_EVENT_TYPES as readonly string[]).includes(args.type)) {
        throw serviceError('BAD_REQUEST', `type must be one of ${PLATFORM_EVENT_TYPES.join(', ')}`);
      }
      const where = [...visibleEvents(viewer), sql`created_at >= ${window.from}`, sql`created_at <= ${window.to}`];
      if (args.type != null) where.push(sql`type = ${args.type}`);
      return keysetPage<PlatformEventRecord>(ctx, {
        table: 'platform_events',
        columns: EVENT_COLUMNS,
        where,
        limit,
        cursor: args.cursor,
        scope: {
          account: viewer.accountId,
          connections: viewer.connectionScope === 'account' ? 'all' : viewer.connectionIds.join(','),
          type: args.type,
          from: window.from.toISOString(),
          to: window.to.toISOString(),
        },
      });
    },
  }),
  event: t.field({
    type: PlatformEventRef,
    description: 'One platform event of the account by its `svcevt_` id (the webhooks capability is required). Support staff reach every account.',
    args: { id: t.arg.string({ required: true, description: 'Event id, prefix `svcevt_`.' }) },
    resolve: async (_root, args, ctx) => {
      const visible = ctx.viewer.kind === 'staff' ? [] : visibleEvents(requireWebhooks(ctx));
      const [event] = await ctx.prisma.$queryRaw<PlatformEventRecord[]>`
        SELECT ${EVENT_COLUMNS} FROM platform_events WHERE ${join([...visible, sql`public_id = ${args.id}`], ' AND ')}`;
      if (!event) throw serviceError('NOT_FOUND', `Event ${args.id} not found`);
      return event;
    },
  }),
}));

// An account-scoped key sees every event of its account; a connection-scoped one, those of its
// connections and those of no connection (test pings).
function visibleEvents(viewer: ApiKeyViewer): Sql[] {
  const account = sql`account_id = ${viewer.accountId}`;
  if (viewer.connectionScope === 'account') return [account];
  return [account, sql`(connection_id IS NULL OR connection_id = ANY(${viewer.connectionIds}::int[]))`];
}
