/**
 * POST /api/v1/destinations/:id/deliveries/:deliveryId/replay: write scope first, 404s that name what is
 * missing, 202 at once; the worker sends the event again, once, to the destination's current URL, with
 * the same event id, and the new delivery row links the replayed one.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApiKey } from '../../src/admin/keys.js';
import { FORWARDING_HEADERS } from '../../src/jobs/deliveries__send.js';
import { startDestinationEmulator, type DestinationEmulator } from '../../src/emulators/destination.js';
import { seedTestAccounts, type TestKeys } from '../support/accounts.js';
import { apiFetch } from '../support/openapi.js';
import { useTestServer } from '../support/server.js';
import { eventually, startTestWorker } from '../support/worker.js';

const ctx = useTestServer();

let keys: TestKeys;
let writeScopedToHubspot: string;
let receiver: DestinationEmulator;
let worker: { stop(): Promise<void> };
let hubspotConnection: number;
let globexDestination: number;
let globexDelivery: string;

beforeAll(async () => {
  const ids = await seedTestAccounts(ctx.db.prisma);
  keys = ids.keys;
  hubspotConnection = ids.connections['acme-hubspot']!;
  writeScopedToHubspot = (
    await createApiKey(ctx.db.prisma, { accountId: ids.accounts.acme!, name: 'replayer', scopes: ['read', 'write'], connectionId: hubspotConnection })
  ).key;
  receiver = await startDestinationEmulator();
  // Another account's destination and delivery, which acme's keys must not reach.
  const globex = await delivered(ids.connections['globex-hubspot']!, ids.accounts.globex!, 'globex');
  globexDestination = globex.destinationId;
  globexDelivery = globex.deliveryId;
  // Sync sits disabled so that the connection's CRM is never called; forwarding does not depend on it.
  await ctx.db.prisma.connection.update({ where: { id: hubspotConnection }, data: { syncEnabled: false } });
  worker = await startTestWorker(ctx.db.url, {}, { forwarding: { retrySchedule: [0.1, 0.1] } });
});

afterAll(async () => {
  await worker?.stop();
  await receiver?.close();
});

/** A destination of its own with one delivered event (written as history, not sent). */
async function delivered(connectionId: number, accountId: number, name: string) {
  const source = await ctx.db.prisma.source.create({ data: { connectionId, platform: 'smartlead', ingressCode: `replay${name}${Date.now()}` } });
  const destination = await ctx.db.prisma.forwardingDestination.create({ data: { connectionId, url: `${receiver.url}/${name}/old` } });
  await ctx.db.prisma.destinationBinding.create({ data: { sourceId: source.id, destinationId: destination.id, eventTypes: ['EMAIL_REPLY'] } });
  const body = '{"event_type":"EMAIL_SENT","to_email":"jane@prospect.test","campaign_name":"Replay"}';
  const request = await ctx.db.prisma.request.create({
    data: { accountId, sourceId: source.id, connectionId, path: source.ingressCode, body, contentType: 'application/json; charset=utf-8' },
  });
  const delivery = await ctx.db.prisma.delivery.create({
    data: {
      accountId,
      destinationId: destination.id,
      destinationUrl: destination.url,
      connectionId,
      sourceId: source.id,
      requestId: request.id,
      eventType: 'EMAIL_SENT',
      toEmail: 'jane@prospect.test',
      status: 'error',
      httpStatus: 500,
      error: { message: 'HTTP 500 from the destination' },
    },
  });
  return { destinationId: destination.id, deliveryId: String(delivery.id), requestId: request.id, body, sourceId: source.id };
}

const replay = (destinationId: number | string, deliveryId: string, key: string) =>
  apiFetch(`${ctx.server.baseUrl}/api/v1/destinations/${destinationId}/deliveries/${deliveryId}/replay`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}` },
  });

describe('replaying a delivery', () => {
  it('answers 202 at once; the worker sends the event again to the current URL, once, with the same event id', async () => {
    // Setup: a failed delivery whose destination has moved since; its binding no longer takes EMAIL_SENT.
    const first = await delivered(
      hubspotConnection,
      (await ctx.db.prisma.connection.findUniqueOrThrow({ where: { id: hubspotConnection } })).accountId,
      'moved',
    );
    await ctx.db.prisma.forwardingDestination.update({ where: { id: first.destinationId }, data: { url: `${receiver.url}/moved/new` } });
    receiver.answerNext(1, { status: 503 }, '/moved/new');

    // Action
    const res = await replay(first.destinationId, first.deliveryId, writeScopedToHubspot);

    // Assertions: queued, then one attempt (a 503 is not retried for a replay) linked to the original.
    expect(res.status).toBe(202);
    expect(res.body).toEqual({ queued: true, deliveryId: Number(first.deliveryId) });
    const rows = await eventually(async () => {
      const found = await ctx.db.query<{ id: string; replay_of_delivery_id: string; status: string; http_status: number; destination_url: string }>(
        'SELECT id::text, replay_of_delivery_id::text, status::text, http_status, destination_url FROM deliveries WHERE request_id = $1 AND id <> $2',
        [first.requestId, first.deliveryId],
      );
      return found.length > 0 ? found : undefined;
    });
    await new Promise((resolve) => setTimeout(resolve, 500)); // room for a retry, were there one
    const [sent] = receiver.on('/moved/new');
    expect(receiver.on('/moved/new')).toHaveLength(1);
    expect(receiver.on('/moved/old')).toHaveLength(0);
    expect(rows).toEqual([
      { id: expect.any(String), replay_of_delivery_id: first.deliveryId, status: 'error', http_status: 503, destination_url: `${receiver.url}/moved/new` },
    ]);
    expect(sent!.body.toString('utf8')).toBe(first.body);
    expect(sent!.headers).toMatchObject({
      'content-type': 'application/json; charset=utf-8',
      [FORWARDING_HEADERS.eventId]: String(first.requestId),
      [FORWARDING_HEADERS.eventType]: 'EMAIL_SENT',
      [FORWARDING_HEADERS.sourceId]: String(first.sourceId),
    });
    expect(await ctx.db.query('SELECT 1 FROM pending_deliveries WHERE request_id = $1', [first.requestId])).toEqual([]);

    // The list shows the link.
    const listed = await apiFetch<{ data: Array<{ id: number; replayOfDeliveryId: number | null }> }>(
      `${ctx.server.baseUrl}/api/v1/destinations/${first.destinationId}/deliveries?from=${encodeURIComponent(new Date(Date.now() - 3_600_000).toISOString())}&to=${encodeURIComponent(new Date(Date.now() + 60_000).toISOString())}`,
      { headers: { authorization: `Bearer ${keys.acmeRead}` } },
    );
    expect(listed.body.data.map((d) => d.replayOfDeliveryId)).toEqual([Number(first.deliveryId), null]);
  });

  it('needs the write scope, checked before anything is looked up', async () => {
    for (const [destination, delivery] of [
      [globexDestination, globexDelivery],
      [999_999, '999999'],
      ['abc', 'def'],
    ] as const) {
      const res = await replay(destination, delivery, keys.acmeRead);
      expect(res.status).toBe(403);
      expect(res.body).toEqual({ statusCode: 403, message: 'API key requires the "write" scope', error: 'Forbidden' });
    }
  });

  it("answers 404 naming the destination when the key cannot reach it, another account's included", async () => {
    for (const [destination, message] of [
      [globexDestination, `Destination ${globexDestination} not found`],
      [999_999, 'Destination 999999 not found'],
      ['abc', 'Destination abc not found'],
    ] as const) {
      const res = await replay(destination, globexDelivery, keys.acmeWrite);
      expect(res.status).toBe(404);
      expect(res.body).toEqual({ statusCode: 404, message, error: 'Not Found' });
    }
  });

  it("answers 404 naming the delivery when it is not one of the destination's", async () => {
    const mine = await delivered(hubspotConnection, (await ctx.db.prisma.connection.findUniqueOrThrow({ where: { id: hubspotConnection } })).accountId, 'mine');
    for (const delivery of [globexDelivery, '999999999', 'xyz']) {
      const res = await replay(mine.destinationId, delivery, keys.acmeWrite);
      expect(res.status).toBe(404);
      expect(res.body).toEqual({ statusCode: 404, message: `Delivery ${delivery} not found`, error: 'Not Found' });
    }
    expect(await ctx.db.query('SELECT 1 FROM pending_deliveries WHERE destination_id = $1', [mine.destinationId])).toEqual([]);
  });
});
