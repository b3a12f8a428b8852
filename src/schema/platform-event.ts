import { join, sql, type Sql } from '../db/sql.js';
import { builder } from './builder.js';
import { PLATFORM_EVENT_TYPES } from '../domain/platform-events.js';
import type { Context } from './context.js';
import { requireReader, type Reader } from './access.js';
import { serviceError } from './errors.js';
import { accountHistoryList, keysetPage, pageArgs, pageType, requireLimit, requireWindow, windowArgs } from './history.js';
import { requireWebhooks } from './key-access.js';

/** A platform event as stored: the spec's webhook payload (public id, type, created, summary, data). */
export interface PlatformEventRecord {
  id: bigint;
  publicId: string;
  type: string;
  summary: string;
  data: unknown;
  /** The request whose sync outcome caused it, when one did. */
  requestId: bigint | null;
  createdAt: Date;
}

export const PLATFORM_EVENT_COLUMNS = sql`id, public_id AS "publicId", type, summary, data, request_id AS "requestId", created_at AS "createdAt"`;

export const PlatformEventRef = builder.objectRef<PlatformEventRecord>('PlatformEvent').implement({
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

const eventFilters = builder.args((t) => ({
  type: t.string({ required: false, description: 'Only this event type.' }),
}));

accountHistoryList('events', {
  type: PlatformEventPage,
  description: 'Platform events of the account, newest first (the webhooks capability is required).',
  args: { ...windowArgs, ...pageArgs, ...eventFilters },
  resolve: async (ctx, accountId, args) => {
    const viewer = await eventsReader(ctx, accountId);
    const window = requireWindow(args.from, args.to);
    const limit = requireLimit(args.limit);
    if (args.type != null && !(PLATFORM_EVENT_TYPES as readonly string[]).includes(args.type)) {
      throw serviceError('BAD_REQUEST', `type must be one of ${PLATFORM_EVENT_TYPES.join(', ')}`);
    }
    const where = [...visibleEvents(viewer), sql`created_at >= ${window.from}`, sql`created_at <= ${window.to}`];
    if (args.type != null) where.push(sql`type = ${args.type}`);
    return keysetPage<PlatformEventRecord>(ctx, {
      table: 'platform_events',
      columns: PLATFORM_EVENT_COLUMNS,
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
});

builder.queryFields((t) => ({
  event: t.field({
    type: PlatformEventRef,
    description: 'One platform event of the account by its `svcevt_` id (the webhooks capability is required). Support staff reach every account.',
    args: { id: t.arg.string({ required: true, description: 'Event id, prefix `svcevt_`.' }) },
    resolve: async (_root, args, ctx) => {
      const visible = ctx.viewer.kind === 'staff' ? [] : visibleEvents(requireWebhooks(ctx));
      const [event] = await ctx.prisma.$queryRaw<PlatformEventRecord[]>`
        SELECT ${PLATFORM_EVENT_COLUMNS} FROM platform_events WHERE ${join([...visible, sql`public_id = ${args.id}`], ' AND ')}`;
      if (!event) throw serviceError('NOT_FOUND', `Event ${args.id} not found`);
      return event;
    },
  }),
}));

/** The reader of the event log: a key whose account may use platform webhooks, or staff (who read what was emitted, whatever the capability). */
async function eventsReader(ctx: Context, accountId: number | null | undefined): Promise<Reader> {
  if (ctx.viewer.kind === 'apiKey') requireWebhooks(ctx);
  return requireReader(ctx, accountId);
}

// An account-scoped key sees every event of its account; a connection-scoped one, those of its
// connections and those of no connection (test pings).
function visibleEvents(viewer: Reader): Sql[] {
  const account = sql`account_id = ${viewer.accountId}`;
  if (viewer.connectionScope === 'account') return [account];
  return [account, sql`(connection_id IS NULL OR connection_id = ANY(${viewer.connectionIds}::int[]))`];
}
