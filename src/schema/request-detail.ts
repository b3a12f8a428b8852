import { sql } from '../db/sql.js';
import { builder } from './builder.js';
import { DELIVERY_COLUMNS, DeliveryRef, type DeliveryRecord } from './delivery.js';
import { requireStaff, serviceError } from './errors.js';
import { RELAY_EXECUTION_COLUMNS, RelayExecutionRef, type RelayExecutionRecord } from './relay-execution.js';
import { SYNC_COLUMNS, SyncRef, type SyncRecord } from './sync.js';

/** One request with what became of it: its CRM sync, its forwarding attempts, those still due, and its reply relay's email. */
interface RequestDetail {
  id: bigint;
  accountId: number;
  sourceId: number | null;
  connectionId: number | null;
  contentType: string | null;
  createdAt: Date;
  sync: SyncRecord | null;
  deliveries: DeliveryRecord[];
  pendingDeliveries: PendingDelivery[];
  relayExecutions: RelayExecutionRecord[];
}

interface PendingDelivery {
  destinationId: number;
  attempt: number;
  dueAt: Date;
  replayOfDeliveryId: bigint | null;
}

const PendingDeliveryRef = builder.objectRef<PendingDelivery>('PendingDelivery').implement({
  description: 'A forwarding attempt still to make: a first attempt, a retry waiting for its time, or a replay.',
  fields: (t) => ({
    destinationId: t.exposeInt('destinationId', { description: 'Destination it goes to.' }),
    attempt: t.exposeInt('attempt', { description: '1 for the first attempt; each retry the next number.' }),
    dueAt: t.expose('dueAt', { type: 'DateTime', description: 'When it is due: a retry waits for its time.' }),
    replayOfDeliveryId: t.expose('replayOfDeliveryId', { type: 'BigInt', nullable: true, description: 'The delivery it replays, for a replay.' }),
  }),
});

const RequestDetailRef = builder.objectRef<RequestDetail>('RequestDetail').implement({
  description: 'One inbound request and what became of it, for support staff: its CRM sync next to its forwarding deliveries.',
  fields: (t) => ({
    id: t.expose('id', { type: 'BigInt', description: 'Request id (the event id forwarded deliveries carry).' }),
    accountId: t.exposeInt('accountId', { description: 'Account.' }),
    sourceId: t.exposeInt('sourceId', { nullable: true, description: 'Null only when the source is gone.' }),
    connectionId: t.exposeInt('connectionId', { nullable: true, description: 'Null only when the source is gone.' }),
    contentType: t.exposeString('contentType', { nullable: true, description: 'The Content-Type the sequencer sent.' }),
    createdAt: t.expose('createdAt', { type: 'DateTime', description: 'When it was received.' }),
    sync: t.field({ type: SyncRef, nullable: true, description: 'Its CRM sync; null before the worker took it.', resolve: (r) => r.sync }),
    deliveries: t.field({
      type: [DeliveryRef],
      description: 'Every forwarding attempt made for it (retries and replays included), oldest first.',
      resolve: (r) => r.deliveries,
    }),
    pendingDeliveries: t.field({
      type: [PendingDeliveryRef],
      description: 'Forwarding attempts still to make, soonest first.',
      resolve: (r) => r.pendingDeliveries,
    }),
    relayExecutions: t.field({
      type: [RelayExecutionRef],
      description: 'What its reply relay did with it (a reply of a relay-bound source), oldest first.',
      resolve: (r) => r.relayExecutions,
    }),
  }),
});

builder.queryField('request', (t) =>
  t.field({
    type: RequestDetailRef,
    description: 'One request of any account, with its sync and its deliveries (support staff only).',
    args: { id: t.arg({ type: 'BigInt', required: true, description: 'Request id.' }) },
    resolve: async (_root, args, ctx) => {
      requireStaff(ctx);
      // One parent: four reads of its own, no per-row loading to batch.
      const [request] = await ctx.prisma.$queryRaw<Omit<RequestDetail, 'sync' | 'deliveries' | 'pendingDeliveries' | 'relayExecutions'>[]>`
        SELECT id, account_id AS "accountId", source_id AS "sourceId", connection_id AS "connectionId", content_type AS "contentType", created_at AS "createdAt"
          FROM requests WHERE id = ${args.id}`;
      if (!request) throw serviceError('NOT_FOUND', `Request ${args.id} not found`);
      const [syncs, deliveries, pending, relayExecutions] = await Promise.all([
        ctx.prisma.$queryRaw<SyncRecord[]>(sql`SELECT ${SYNC_COLUMNS} FROM syncs WHERE request_id = ${args.id}`),
        ctx.prisma.$queryRaw<DeliveryRecord[]>(sql`SELECT ${DELIVERY_COLUMNS} FROM deliveries WHERE request_id = ${args.id} ORDER BY created_at, id`),
        ctx.prisma.$queryRaw<PendingDelivery[]>`
          SELECT destination_id AS "destinationId", attempt, due_at AS "dueAt", replay_of_delivery_id AS "replayOfDeliveryId"
            FROM pending_deliveries WHERE request_id = ${args.id} ORDER BY due_at, id`,
        ctx.prisma.$queryRaw<RelayExecutionRecord[]>(sql`SELECT ${RELAY_EXECUTION_COLUMNS} FROM relay_executions WHERE request_id = ${args.id} ORDER BY id`),
      ]);
      return { ...request, sync: syncs[0] ?? null, deliveries, pendingDeliveries: pending, relayExecutions };
    },
  }),
);
