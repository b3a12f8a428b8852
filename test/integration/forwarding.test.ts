/**
 * Forwarding, end to end: events POSTed at the ingress reach the customer's URLs (a destination
 * emulator over real HTTP) through the real worker, with one delivery row per attempt.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sealSecret } from '../../src/domain/secrets.js';
import { FORWARDING_HEADERS } from '../../src/jobs/deliveries__send.js';
import { startDestinationEmulator, type DestinationEmulator } from '../emulators/destination.js';
import { startHubspotEmulator, type HubspotEmulator } from '../emulators/hubspot.js';
import { seedTestAccounts } from '../support/accounts.js';
import { TEST_ENCRYPTION_KEY } from '../support/database.js';
import { useTestServer } from '../support/server.js';
import { eventually, startTestWorker } from '../support/worker.js';

const ctx = useTestServer();

let hubspot: HubspotEmulator;
let receiver: DestinationEmulator;
let worker: { stop(): Promise<void> };
let connectionId: number;

beforeAll(async () => {
  const ids = await seedTestAccounts(ctx.db.prisma);
  connectionId = ids.connections['acme-hubspot']!;
  hubspot = await startHubspotEmulator({ accessToken: 'fwd-hubspot-token' });
  receiver = await startDestinationEmulator();
  await ctx.db.prisma.connection.update({
    where: { id: connectionId },
    data: { credentialsEncrypted: sealSecret(TEST_ENCRYPTION_KEY, JSON.stringify({ accessToken: 'fwd-hubspot-token' })) },
  });
  worker = await startTestWorker(ctx.db.url, { hubspotBaseUrl: hubspot.url }, { forwarding: { retrySchedule: [0.2, 0.2] } });
});

afterAll(async () => {
  await worker?.stop();
  await hubspot?.close();
  await receiver?.close();
});

/** A source of its own bound to destinations of its own on the receiver, under `path`. */
async function pipeline(name: string, bindings: Array<{ eventTypes?: string[]; isDelayed?: boolean }>) {
  const source = await ctx.db.prisma.source.create({ data: { connectionId, platform: 'smartlead', ingressCode: `fwd${name}` } });
  const destinations = [];
  for (const [i, binding] of bindings.entries()) {
    const destination = await ctx.db.prisma.forwardingDestination.create({ data: { connectionId, url: `${receiver.url}/${name}/${i}` } });
    await ctx.db.prisma.destinationBinding.create({
      data: { sourceId: source.id, destinationId: destination.id, eventTypes: binding.eventTypes ?? [], isDelayed: binding.isDelayed ?? false },
    });
    destinations.push(destination);
  }
  return { source, destinations, code: `fwd${name}` };
}

async function ingest(code: string, body: string, contentType = 'application/json'): Promise<number> {
  const res = await fetch(`${ctx.server.baseUrl}/webhooks/${code}`, { method: 'POST', body, headers: { 'content-type': contentType } });
  expect(res.status).toBe(200);
  return ((await res.json()) as { requestId: number }).requestId;
}

const deliveriesOf = (requestId: number) =>
  ctx.db.query<{ destination_id: number; status: string; http_status: number | null; event_type: string; to_email: string; error: unknown }>(
    'SELECT destination_id, status::text, http_status, event_type, to_email, error FROM deliveries WHERE request_id = $1 ORDER BY id',
    [requestId],
  );

describe('an accepted event', () => {
  it('is POSTed to the destination byte for byte, with its content type and the event headers', async () => {
    const { source, destinations, code } = await pipeline('Bytes', [{}]);
    const body = '{ "event_type":"EMAIL_SENT",  "to_email":"Jane@Prospect.test", "note":"caf\u00e9 \u2014 \ud83d\udc4b" }';
    const requestId = await ingest(code, body, 'application/json; charset=utf-8');

    const [delivery] = await eventually(async () => ((await deliveriesOf(requestId)).length === 1 ? deliveriesOf(requestId) : undefined));
    expect(delivery).toMatchObject({
      destination_id: destinations[0]!.id,
      status: 'success',
      http_status: 200,
      event_type: 'EMAIL_SENT',
      to_email: 'jane@prospect.test',
    });
    const [received] = receiver.on('/Bytes/0');
    expect(received!.body.equals(Buffer.from(body, 'utf8'))).toBe(true);
    expect(received!.headers).toMatchObject({
      'content-type': 'application/json; charset=utf-8',
      [FORWARDING_HEADERS.eventId]: String(requestId),
      [FORWARDING_HEADERS.eventType]: 'EMAIL_SENT',
      [FORWARDING_HEADERS.platform]: 'smartlead',
      [FORWARDING_HEADERS.sourceId]: String(source.id),
      [FORWARDING_HEADERS.attempt]: '1',
    });
    expect(FORWARDING_HEADERS).toEqual({
      eventId: 'service-event-id',
      eventType: 'service-event-type',
      platform: 'service-source-platform',
      sourceId: 'service-source-id',
      attempt: 'service-delivery-attempt',
    });
    expect(received!.headers['user-agent']).toMatch(/^pipeline-sync-service\//);
  });
});
