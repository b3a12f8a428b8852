/**
 * The support explorer's `request(id)`: a request of any account with its sync next to its forwarding
 * deliveries and the attempts still due, after real traffic through the ingress and the worker.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startDestinationEmulator, type DestinationEmulator } from '../../src/emulators/destination.js';
import { seedTestAccounts } from '../support/accounts.js';
import { SUPPORT_TOKEN, useTestServer } from '../support/server.js';
import { eventually, startTestWorker } from '../support/worker.js';

const ctx = useTestServer();
let receiver: DestinationEmulator;
let worker: { stop(): Promise<void> };
let code: string;
let destinations: number[];

beforeAll(async () => {
  const ids = await seedTestAccounts(ctx.db.prisma);
  const connectionId = ids.connections['globex-hubspot']!;
  receiver = await startDestinationEmulator();
  // No CRM credentials: the sync records its error at once, which is an outcome like any other.
  await ctx.db.prisma.connection.update({ where: { id: connectionId }, data: { credentialsEncrypted: null } });
  code = 'detailLemlist01';
  const source = await ctx.db.prisma.source.create({ data: { connectionId, platform: 'smartlead', ingressCode: code } });
  destinations = [];
  for (const [i, isDelayed] of [false, true].entries()) {
    const destination = await ctx.db.prisma.forwardingDestination.create({ data: { connectionId, url: `${receiver.url}/detail/${i}` } });
    await ctx.db.prisma.destinationBinding.create({ data: { sourceId: source.id, destinationId: destination.id, isDelayed } });
    destinations.push(destination.id);
  }
  receiver.answerAlways({ status: 500 }, '/detail/1');
  worker = await startTestWorker(ctx.db.url, {}, { forwarding: { retrySchedule: [3600] } });
});

afterAll(async () => {
  await worker?.stop();
  await receiver?.close();
});

function graphql(query: string, variables: Record<string, unknown>, authorization = `Bearer ${SUPPORT_TOKEN}`) {
  return fetch(`${ctx.server.baseUrl}/graphql`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization },
    body: JSON.stringify({ query, variables }),
  });
}

const DETAIL = `query ($id: BigInt!) { request(id: $id) {
  id accountId contentType
  sync { id status error }
  deliveries { destinationId status httpStatus replayOfDeliveryId }
  pendingDeliveries { destinationId attempt dueAt }
  relayExecutions { status }
} }`;

describe('request(id) for support staff', () => {
  it('shows the sync next to every delivery, and the retry still due', async () => {
    // Setup: one event; its sync fails at once (no credentials), the immediate destination takes it,
    // the delayed one answers 500 and waits an hour for its retry.
    const res = await fetch(`${ctx.server.baseUrl}/webhooks/${code}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{"event_type":"EMAIL_SENT","to_email":"ann@prospect.test"}',
    });
    const { requestId } = (await res.json()) as { requestId: number };
    await eventually(async () => {
      const rows = await ctx.db.query('SELECT 1 FROM deliveries WHERE request_id = $1', [requestId]);
      return rows.length === 2 ? true : undefined;
    });

    // Action
    const answer = await graphql(DETAIL, { id: String(requestId) });

    // Assertions
    const { data } = (await answer.json()) as { data: { request: Record<string, unknown> } };
    expect(data.request).toMatchObject({
      id: requestId,
      contentType: 'application/json',
      sync: { status: 'error', error: { message: 'The connection holds no CRM credentials: reconnect the CRM' } },
      deliveries: expect.arrayContaining([
        { destinationId: destinations[0], status: 'success', httpStatus: 200, replayOfDeliveryId: null },
        { destinationId: destinations[1], status: 'error', httpStatus: 500, replayOfDeliveryId: null },
      ]),
      pendingDeliveries: [{ destinationId: destinations[1], attempt: 2, dueAt: expect.any(String) }],
      // Its source has no reply relay.
      relayExecutions: [],
    });
    const due = Date.parse((data.request.pendingDeliveries as Array<{ dueAt: string }>)[0]!.dueAt);
    expect(due).toBeGreaterThan(Date.now() + 45 * 60_000);
  });

  it('answers a missing request with an error naming it', async () => {
    const answer = await graphql(DETAIL, { id: '987654321' });
    const body = (await answer.json()) as { errors: Array<{ message: string; extensions: { code: string } }> };
    expect(body.errors[0]).toMatchObject({ message: 'Request 987654321 not found', extensions: { code: 'NOT_FOUND' } });
  });
});
