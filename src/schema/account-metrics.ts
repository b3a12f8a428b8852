import { sql } from '../db/sql.js';
import { builder } from './builder.js';
import { countDeliveries, DeliveryMetrics } from './delivery.js';
import { accountArgs, requireReader } from './access.js';
import { countableRows, requireWindow, windowArgs, withQueryLimit } from './history.js';
import { countRequests, RequestMetrics } from './request.js';
import { countSyncs, SyncMetrics } from './sync.js';

interface AccountMetrics {
  requests: { count: number; fetched: number };
  syncs: { success: number; warning: number; error: number };
  deliveries: { success: number; error: number };
}

const Counts = builder.objectRef<AccountMetrics>('AccountMetrics').implement({
  description: 'Counts for a window: the sums of the requests, syncs and delivery metrics.',
  fields: (t) => ({
    requests: t.field({ type: RequestMetrics, description: 'Requests received.', resolve: (m) => m.requests }),
    syncs: t.field({ type: SyncMetrics, description: 'Syncs by status.', resolve: (m) => m.syncs }),
    deliveries: t.field({ type: DeliveryMetrics, description: 'Forwarding deliveries by status.', resolve: (m) => m.deliveries }),
  }),
});

builder.queryField('accountMetrics', (t) =>
  t.field({
    type: Counts,
    description: 'Request, sync and delivery counts over a window, for the key or one of its connections.',
    args: {
      ...accountArgs,
      ...windowArgs,
      connectionId: t.arg.int({ required: false, description: 'Only this connection (one outside the key counts nothing).' }),
    },
    resolve: async (_root, args, ctx) => {
      const viewer = await requireReader(ctx, args.accountId);
      const window = requireWindow(args.from, args.to);
      const where = () => [...countableRows(viewer, window), ...(args.connectionId != null ? [sql`connection_id = ${args.connectionId}`] : [])];
      return withQueryLimit(ctx, 'Narrow the from/to window or pass connectionId.', async (client) => {
        const [requests, syncs, deliveries] = await Promise.all([
          countRequests(client, where()),
          countSyncs(client, where()),
          countDeliveries(client, where()),
        ]);
        return { requests, syncs, deliveries };
      });
    },
  }),
);
