import { expect } from 'vitest';
import type { PrismaClient } from '../../src/db/prisma.js';
import { FORWARDING_HEADERS } from '../../src/jobs/deliveries__send.js';
import { sealSecret } from '../../src/domain/secrets.js';
import { startDestinationEmulator, type DestinationEmulator } from '../../src/emulators/destination.js';
import { startHubspotEmulator, type HubspotEmulator } from '../../src/emulators/hubspot.js';
import { seedTestAccounts, type TestAccounts } from './accounts.js';
import { TEST_ENCRYPTION_KEY, type TestDatabase } from './database.js';
import { eventually } from './worker.js';

/** What a forwarding test starts from: the test accounts, their acme-hubspot connection, a HubSpot emulator holding its token, and a destination emulator. */
export interface ForwardingRig {
  ids: TestAccounts;
  connectionId: number;
  hubspot: HubspotEmulator;
  receiver: DestinationEmulator;
}

export async function startForwardingRig(db: TestDatabase, hubspotToken: string): Promise<ForwardingRig> {
  const ids = await seedTestAccounts(db.prisma);
  const connectionId = ids.connections['acme-hubspot']!;
  const hubspot = await startHubspotEmulator({ accessToken: hubspotToken });
  const receiver = await startDestinationEmulator();
  await db.prisma.connection.update({
    where: { id: connectionId },
    data: { credentialsEncrypted: sealSecret(TEST_ENCRYPTION_KEY, JSON.stringify({ accessToken: hubspotToken })) },
  });
  return { ids, connectionId, hubspot, receiver };
}

/** What a forwarding binding says in a test: its event types (empty: all) and whether it waits for the CRM. */
export interface TestBinding {
  eventTypes?: string[];
  isDelayed?: boolean;
  /** The destination's URL; `${baseUrl}/${name}/${index}` when absent. */
  url?: string;
}

/** A source of its own, bound to destinations of its own: tests never see each other's traffic. */
export interface TestPipeline {
  sourceId: number;
  /** The sources's ingress code, also the first segment of its destinations' default paths. */
  code: string;
  destinations: Array<{ id: number; url: string; path: string }>;
}

/**
 * Creates a smartlead source with ingress code `name` on `connectionId`, and one destination per binding,
 * at `${baseUrl}/${name}/${i}` unless the binding names its URL.
 */
export async function createPipeline(
  prisma: PrismaClient,
  options: { connectionId: number; name: string; baseUrl: string; bindings: TestBinding[] },
): Promise<TestPipeline> {
  const { connectionId, name, baseUrl, bindings } = options;
  const source = await prisma.source.create({ data: { connectionId, platform: 'smartlead', ingressCode: name } });
  const destinations = [];
  for (const [i, binding] of bindings.entries()) {
    const url = binding.url ?? `${baseUrl}/${name}/${i}`;
    const destination = await prisma.forwardingDestination.create({ data: { connectionId, url } });
    await prisma.destinationBinding.create({
      data: { sourceId: source.id, destinationId: destination.id, eventTypes: binding.eventTypes ?? [], isDelayed: binding.isDelayed ?? false },
    });
    destinations.push({ id: destination.id, url, path: `/${name}/${i}` });
  }
  return { sourceId: source.id, code: name, destinations };
}

/** A Smartlead webhook body (as text) for `eventType` about `email`, with `extra` fields. */
export function smartleadEvent(eventType: string, email: string, extra: Record<string, unknown> = {}): string {
  return JSON.stringify({ event_type: eventType, to_email: email, from_email: 'sales@acme.test', subject: 'Quick question', ...extra });
}

/**
 * A Smartlead body the service cannot read: an event type, but no lead email anywhere
 * (src/connectors/sequencers/smartlead/parser.ts needs one of sl_lead_email, to_email, lead_email, ...).
 */
export const UNREADABLE_SMARTLEAD = '{"event_type":"EMAIL_SENT"}';

/** POSTs `body` at the ingress (any content type; no header at all when `contentType` is null); returns the request id. */
export async function ingest(baseUrl: string, code: string, body: string, contentType: string | null = 'application/json'): Promise<number> {
  const res = await fetch(`${baseUrl}/webhooks/${code}`, {
    method: 'POST',
    // A string body gets a text/plain content type from fetch; a Uint8Array one gets none.
    body: contentType === null ? new Uint8Array(Buffer.from(body, 'utf8')) : body,
    headers: contentType === null ? {} : { 'content-type': contentType },
  });
  expect(res.status).toBe(200);
  return ((await res.json()) as { requestId: number }).requestId;
}

/** A delivery row as the tests read it. */
export interface DeliveryRow {
  id: string;
  destination_id: number;
  request_id: string;
  status: 'success' | 'error';
  http_status: number | null;
  event_type: string;
  to_email: string;
  error: { message: string; body?: string } | null;
  destination_url: string;
  created_at: Date;
}

const DELIVERY_COLUMNS = 'id, destination_id, request_id, status::text AS status, http_status, event_type, to_email, error, destination_url, created_at';

/** The delivery rows of one destination, oldest first. */
export function deliveriesTo(db: TestDatabase, destinationId: number): Promise<DeliveryRow[]> {
  return db.query<DeliveryRow>(`SELECT ${DELIVERY_COLUMNS} FROM deliveries WHERE destination_id = $1 ORDER BY id`, [destinationId]);
}

/** The delivery rows of one request, by destination (in the order they were created), then oldest first. */
export function deliveriesOf(db: TestDatabase, requestId: number): Promise<DeliveryRow[]> {
  return db.query<DeliveryRow>(`SELECT ${DELIVERY_COLUMNS} FROM deliveries WHERE request_id = $1 ORDER BY destination_id, id`, [requestId]);
}

/** Attempts still to be made (first ones, retries) for these requests. */
export async function pendingCount(db: TestDatabase, requestIds: number[]): Promise<number> {
  const [row] = await db.query<{ n: number }>('SELECT count(*)::int AS n FROM pending_deliveries WHERE request_id = ANY($1::bigint[])', [requestIds]);
  return row!.n;
}

/** The sync row of a request (undefined before its first run). */
export async function syncOf(db: TestDatabase, requestId: number): Promise<{ id: string; status: string | null; updated_at: Date } | undefined> {
  const [row] = await db.query<{ id: string; status: string | null; updated_at: Date }>(
    'SELECT id, status::text AS status, updated_at FROM syncs WHERE request_id = $1',
    [requestId],
  );
  return row;
}

/**
 * Waits until every request's sync has recorded its outcome and no attempt is pending for any of them:
 * a delayed binding's first attempt is written with the outcome and a retry with its failed attempt, so
 * from then on nothing more is sent for these requests.
 */
export async function settled(db: TestDatabase, requestIds: number[], ms = 20_000): Promise<void> {
  await eventually(
    async () => {
      const [row] = await db.query<{ open: number }>('SELECT count(*)::int AS open FROM syncs WHERE request_id = ANY($1::bigint[]) AND status IS NOT NULL', [
        requestIds,
      ]);
      if (row!.open !== requestIds.length) return undefined;
      return (await pendingCount(db, requestIds)) === 0 ? true : undefined;
    },
    ms,
    `requests ${requestIds.join(', ')} settled`,
  );
}

/** The service-event-id headers of received requests. */
export function eventIdsOf(received: Array<{ headers: Record<string, string | string[] | undefined> }>): string[] {
  return received.map((r) => String(r.headers[FORWARDING_HEADERS.eventId]));
}

/** Waits until the emulator has received at least `n` requests on `path` (and returns them). */
export function receivedOn(emulator: DestinationEmulator, path: string, n = 1, ms = 15_000): Promise<DestinationEmulator['received']> {
  return eventually(() => Promise.resolve(emulator.on(path).length >= n ? emulator.on(path) : undefined), ms, `${n} requests on ${path}`);
}
