import { parseInbound } from '../connectors/sequencers/index.js';
import { requestBodySql } from '../db/history/request-body.js';
import { sql } from '../db/sql.js';
import { recordAudit } from './audit.js';
import { builder } from './builder.js';
import type { Context } from './context.js';
import { DELIVERY_COLUMNS, DeliveryRef, type DeliveryRecord } from './delivery.js';
import { requireStaff } from './errors.js';
import { PLATFORM_EVENT_COLUMNS, PlatformEventRef, type PlatformEventRecord } from './platform-event.js';
import { RELAY_EXECUTION_COLUMNS, RelayExecutionRef, type RelayExecutionRecord } from './relay-execution.js';
import { RequestRef, type RequestRecord } from './request.js';
import { SYNC_COLUMNS, SyncRef, type SyncRecord } from './sync.js';

/**
 * A request's lineage, for support staff answering "why didn't my event reach the CRM?": its raw body,
 * the canonical event its parser made, its sync with the CRM steps, its forwarding deliveries (made and
 * due), its reply relay's emails and the platform events its outcome caused. Each field loads through a
 * DataLoader keyed by request id, so a page of 50 requests costs the statements of one.
 */

interface PendingDelivery {
  requestId: bigint;
  destinationId: number;
  attempt: number;
  dueAt: Date;
  replayOfDeliveryId: bigint | null;
}

/** What the parser made of a body: the canonical event, or why there is none. */
type Parsed = { ok: true; event: unknown; reason: null } | { ok: false; event: null; reason: string };

const PendingDeliveryRef = builder.objectRef<PendingDelivery>('PendingDelivery').implement({
  description: 'A forwarding attempt still to make: a first attempt, a retry waiting for its time, or a replay.',
  fields: (t) => ({
    destinationId: t.exposeInt('destinationId', { description: 'Destination it goes to.' }),
    attempt: t.exposeInt('attempt', { description: '1 for the first attempt; each retry the next number.' }),
    dueAt: t.expose('dueAt', { type: 'DateTime', description: 'When it is due: a retry waits for its time.' }),
    replayOfDeliveryId: t.expose('replayOfDeliveryId', { type: 'BigInt', nullable: true, description: 'The delivery it replays, for a replay.' }),
  }),
});

const ParsedRef = builder.objectRef<Parsed>('ParsedEvent').implement({
  description: "What the source platform's parser made of the raw body, run again now with today's parser.",
  fields: (t) => ({
    ok: t.exposeBoolean('ok', { description: 'Whether the body gave a canonical event.' }),
    event: t.field({ type: 'JSON', nullable: true, description: 'The canonical event (personal data), when ok.', resolve: (p) => p.event }),
    reason: t.exposeString('reason', { nullable: true, description: 'Why the body gave no event (the sync records the same reason).' }),
  }),
});

builder.objectFields(RequestRef, (t) => ({
  rawBody: t.loadable({
    type: 'String',
    nullable: true,
    description:
      'Support staff only, never through REST: the body as received (personal data); null once past RAW_BODY_RETENTION_DAYS (deleted). Each read is written to the audit log.',
    load: (ids: bigint[], ctx: Context) => auditedBodies(ctx, ids),
    resolve: staffOnly,
  }),
  parsed: t.loadable({
    type: ParsedRef,
    description: "Support staff only: the canonical event the source platform's parser makes of the body, or why it cannot.",
    load: (ids: bigint[], ctx: Context) => parsedBodies(ctx, ids),
    resolve: staffOnly,
  }),
  sync: t.loadable({
    type: SyncRef,
    nullable: true,
    description: 'Its CRM sync, with the steps `crmState` records; null before the worker took it.',
    load: async (ids: bigint[], ctx: Context) => {
      const rows = await ctx.prisma.$queryRaw<SyncRecord[]>`SELECT ${SYNC_COLUMNS} FROM syncs WHERE request_id = ANY(${ids}::bigint[])`;
      const byRequest = new Map(rows.map((r) => [r.payloadId, r]));
      return ids.map((id) => byRequest.get(id) ?? null);
    },
    resolve: (request) => request.id,
  }),
  deliveries: t.loadableGroup({
    type: DeliveryRef,
    description: 'Every forwarding attempt made for it (retries and replays included), oldest first.',
    load: (ids: bigint[], ctx: Context) =>
      ctx.prisma.$queryRaw<DeliveryRecord[]>`SELECT ${DELIVERY_COLUMNS} FROM deliveries WHERE request_id = ANY(${ids}::bigint[]) ORDER BY created_at, id`,
    group: (delivery) => delivery.payloadId,
    resolve: (request) => request.id,
  }),
  pendingDeliveries: t.loadableGroup({
    type: PendingDeliveryRef,
    description: 'Forwarding attempts still to make, soonest first.',
    load: (ids: bigint[], ctx: Context) =>
      ctx.prisma.$queryRaw<PendingDelivery[]>`
        SELECT request_id AS "requestId", destination_id AS "destinationId", attempt, due_at AS "dueAt", replay_of_delivery_id AS "replayOfDeliveryId"
          FROM pending_deliveries WHERE request_id = ANY(${ids}::bigint[]) ORDER BY due_at, id`,
    group: (pending) => pending.requestId,
    resolve: (request) => request.id,
  }),
  relayExecutions: t.loadableGroup({
    type: RelayExecutionRef,
    description: 'Support staff only: what its reply relay did with it (a reply of a relay-bound source), oldest first.',
    load: (ids: bigint[], ctx: Context) =>
      ctx.prisma.$queryRaw<RelayExecutionRecord[]>`
        SELECT ${RELAY_EXECUTION_COLUMNS} FROM relay_executions WHERE request_id = ANY(${ids}::bigint[]) ORDER BY id`,
    group: (execution) => execution.requestId,
    resolve: staffOnly,
  }),
  platformEvents: t.loadableGroup({
    type: PlatformEventRef,
    description: 'Support staff only: the platform events its sync outcome caused (`sync.failed`, `sync.recovered`), oldest first.',
    load: (ids: bigint[], ctx: Context) =>
      ctx.prisma.$queryRaw<PlatformEventRecord[]>`
        SELECT ${PLATFORM_EVENT_COLUMNS} FROM platform_events WHERE request_id = ANY(${ids}::bigint[]) ORDER BY id`,
    group: (event) => event.requestId!, // the statement selects only events with this request
    resolve: staffOnly,
  }),
}));

/** The key of a staff-only lineage field: the request's id, for staff; a 403 for anyone else. */
function staffOnly(request: RequestRecord, _args: unknown, ctx: Context): bigint {
  requireStaff(ctx);
  return request.id;
}

/** The bodies of `ids`, in their order, with one audit row naming every request read. */
async function auditedBodies(ctx: Context, ids: bigint[]): Promise<(string | null)[]> {
  const bodies = await readBodies(ctx, ids);
  await recordAudit(ctx, { action: 'read:Request.body', arguments: { requestIds: ids.map(String) }, result: { read: bodies.size } });
  return ids.map((id) => bodies.get(id)?.body ?? null);
}

/** What the parser of each request's source platform makes of its body. */
async function parsedBodies(ctx: Context, ids: bigint[]): Promise<Parsed[]> {
  const bodies = await readBodies(ctx, ids);
  return ids.map((id) => {
    const row = bodies.get(id);
    if (!row?.platform) return { ok: false, event: null, reason: 'the source is gone: no platform to parse the body with' };
    const result = parseInbound(row.platform, row.body);
    return result.ok ? { ok: true, event: result.event, reason: null } : { ok: false, event: null, reason: result.reason };
  });
}

async function readBodies(ctx: Context, ids: bigint[]): Promise<Map<bigint, { body: string | null; platform: string | null }>> {
  const rows = await ctx.prisma.$queryRaw<{ id: bigint; body: string | null; platform: string | null }[]>(sql`
    SELECT r.id, ${requestBodySql('r')} AS body, s.platform FROM requests r LEFT JOIN sources s ON s.id = r.source_id WHERE r.id = ANY(${ids}::bigint[])`);
  return new Map(rows.map((r) => [r.id, r]));
}
