/**
 * Forwarding with OUTBOUND_ALLOW_PRIVATE off, as in production: a destination URL that points at a
 * private, loopback, link-local or reserved address (literally, or through a name that resolves to one)
 * gets one error delivery saying so, no HTTP status, no retry, and not a byte of the event.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DestinationEmulator } from '../../src/emulators/destination.js';
import type { HubspotEmulator } from '../../src/emulators/hubspot.js';
import { createPipeline, startForwardingRig, deliveriesTo, ingest, settled, smartleadEvent } from '../support/forwarding.js';
import { useTestServer } from '../support/server.js';
import { startTestWorker } from '../support/worker.js';

const ctx = useTestServer();
const HUBSPOT_TOKEN = 'ssrf-hubspot-token';

let hubspot: HubspotEmulator;
let receiver: DestinationEmulator;
let worker: { stop(): Promise<void> };
let connectionId: number;
let port: string;

beforeAll(async () => {
  const rig = await startForwardingRig(ctx.db, HUBSPOT_TOKEN);
  ({ connectionId, hubspot, receiver } = rig);
  port = new URL(receiver.url).port;
  // The CRM client keeps its own setting (startTestWorker's crm.outboundAllowPrivate), so syncs still
  // reach the HubSpot emulator; only forwarding is held to public addresses. A short attempt timeout
  // turns an address that should have been refused but was tried (10.0.0.1 answers nobody) into a
  // quick, visible failure rather than a hang.
  worker = await startTestWorker(
    ctx.db.url,
    { urls: { HUBSPOT: hubspot.url } },
    { outboundAllowPrivate: false, forwarding: { retrySchedule: [0.2, 0.2], attemptTimeoutMs: 1_000 } },
  );
});

afterAll(async () => {
  await worker?.stop();
  await hubspot?.close();
  await receiver?.close();
});

/** Destination URLs, by what makes each one private; `{port}` is the emulator's. */
const REFUSED: Array<[string, string]> = [
  ['loopback IPv4 literal', 'http://127.0.0.1:{port}/hook?token=abc'],
  ['private 10/8 literal', 'http://10.0.0.1/hook'],
  ['link-local cloud metadata address', 'http://169.254.169.254/latest/meta-data/'],
  ['loopback IPv6 literal', 'http://[::1]:{port}/hook'],
  ['name resolving to loopback', 'http://localhost:{port}/hook'],
  ['IPv4-mapped IPv6 loopback', 'http://[::ffff:127.0.0.1]:{port}/hook'],
  ['loopback written as one decimal number', 'http://2130706433:{port}/hook'],
  ['unspecified address', 'http://0.0.0.0:{port}/hook'],
];

describe('a destination at a private address', () => {
  it.each(REFUSED.map(([what, url], i) => ({ what, url, i })))('is refused, not retried: $what ($url)', async ({ url, i }) => {
    // Setup
    const target = url.replace('{port}', port);
    const { destinations, code } = await createPipeline(ctx.db.prisma, {
      connectionId,
      name: `ssrfCase${i}`,
      baseUrl: receiver.url,
      bindings: [{ url: target }],
    });
    const before = receiver.received.length;

    // Action
    const requestId = await ingest(ctx.server.baseUrl, code, smartleadEvent('EMAIL_SENT', `ssrf${i}@prospect.test`));
    // A retry would be written with the refused attempt: settled means there is none.
    await settled(ctx.db, [requestId]);

    // Assertions
    const rows = await deliveriesTo(ctx.db, destinations[0]!.id);
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({ status: 'error', http_status: null, destination_url: target });
    const error = rows[0]!.error!;
    expect(error).toEqual({ message: expect.stringMatching(/refused: the address is private, loopback or reserved/) });
    // The message names the origin, never the path or query (they may carry keys).
    expect(error.message).not.toMatch(/hook|meta-data|token=/);
    expect(receiver.received.length - before).toBe(0);
  });
});
