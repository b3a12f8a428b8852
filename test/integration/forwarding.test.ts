/**
 * Forwarding, end to end: events POSTed at the ingress reach the customer's URLs (a destination
 * emulator over real HTTP) through the real worker, with one delivery row per attempt. Each test has a
 * source and destinations of its own (createPipeline), so no test sees another's traffic.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../../src/db/embedded.js';
import { sealSecret } from '../../src/domain/secrets.js';
import { FORWARDING_HEADERS } from '../../src/jobs/deliveries__send.js';
import type { DestinationEmulator } from '../../src/emulators/destination.js';
import type { HubspotEmulator } from '../../src/emulators/hubspot.js';
import type { TestKeys } from '../support/accounts.js';
import { TEST_ENCRYPTION_KEY } from '../support/database.js';
import {
  createPipeline,
  startForwardingRig,
  deliveriesOf,
  deliveriesTo,
  eventIdsOf,
  ingest as ingestAt,
  pendingCount,
  receivedOn,
  settled,
  smartleadEvent,
  syncOf,
  UNREADABLE_SMARTLEAD,
  type TestBinding,
} from '../support/forwarding.js';
import { apiFetch } from '../support/openapi.js';
import { apiGet, around } from '../support/rest.js';
import { useTestServer } from '../support/server.js';
import { eventually, startTestWorker } from '../support/worker.js';

const ctx = useTestServer();
/** Each attempt's deadline in this file: a hanging destination costs half a second per attempt. */
const ATTEMPT_TIMEOUT_MS = 500;
const HUBSPOT_TOKEN = 'fwd-hubspot-token';

let hubspot: HubspotEmulator;
let receiver: DestinationEmulator;
let worker: { stop(): Promise<void> };
let connectionId: number;
let accountId: number;
let keys: TestKeys;

beforeAll(async () => {
  const rig = await startForwardingRig(ctx.db, HUBSPOT_TOKEN);
  ({ connectionId, hubspot, receiver } = rig);
  keys = rig.ids.keys;
  accountId = rig.ids.accounts['acme']!;
  // Three attempts (two retries 0.2 s apart, jittered), half a second each at most.
  worker = await startTestWorker(
    ctx.db.url,
    { urls: { HUBSPOT: hubspot.url } },
    { forwarding: { retrySchedule: [0.2, 0.2], attemptTimeoutMs: ATTEMPT_TIMEOUT_MS } },
  );
});

afterAll(async () => {
  await worker?.stop();
  await hubspot?.close();
  await receiver?.close();
});

/** A source of its own bound to destinations of its own on the receiver, under `/${name}/${i}`. */
function pipeline(name: string, bindings: TestBinding[], connection = connectionId) {
  return createPipeline(ctx.db.prisma, { connectionId: connection, name: `fwd${name}`, baseUrl: receiver.url, bindings });
}

function ingest(code: string, body: string, contentType: string | null = 'application/json'): Promise<number> {
  return ingestAt(ctx.server.baseUrl, code, body, contentType);
}

/** Waits until `destinationId` has `n` delivery rows (and returns them). */
function rowsOf(destinationId: number, n: number, ms?: number) {
  return eventually(
    async () => {
      const rows = await deliveriesTo(ctx.db, destinationId);
      return rows.length >= n ? rows : undefined;
    },
    ms,
    `${n} deliveries to destination ${destinationId}`,
  );
}

/** A HubSpot connection of acme's whose token the CRM refuses (401), until the test adds it to the emulator. */
async function refusedConnection(token: string): Promise<number> {
  const connection = await ctx.db.prisma.connection.create({
    data: { accountId, crm: 'HUBSPOT', status: 'ready', credentialsEncrypted: sealSecret(TEST_ENCRYPTION_KEY, JSON.stringify({ accessToken: token })) },
  });
  return connection.id;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('which bindings an event goes to', () => {
  it('goes to the bindings listing its canonical type and to every empty list; an unreadable payload to empty lists only', async () => {
    // Setup
    const { destinations, code } = await pipeline('Filter', [
      { eventTypes: ['EMAIL_REPLY'] },
      { eventTypes: [] },
      { eventTypes: ['EMAIL_REPLY'], isDelayed: true },
      { eventTypes: [], isDelayed: true },
      { eventTypes: ['EMAIL_SENT', 'EMAIL_OPEN'] },
    ]);
    const [replies, all, delayedReplies, delayedAll, sentOrOpen] = destinations.map((d) => d.path);

    // Action
    const sent = await ingest(code, smartleadEvent('EMAIL_SENT', 'filter.sent@prospect.test'));
    const reply = await ingest(code, smartleadEvent('EMAIL_REPLY', 'filter.reply@prospect.test', { reply_message: { text: 'Yes please' } }));
    // An older Smartlead name of the same canonical type.
    const olderReply = await ingest(code, smartleadEvent('EMAIL_REPLIED', 'filter.older@prospect.test'));
    const unreadable = await ingest(code, UNREADABLE_SMARTLEAD);
    await settled(ctx.db, [sent, reply, olderReply, unreadable]);

    // Assertions
    const idsAt = (path: string | undefined) => eventIdsOf(receiver.on(path!)).sort();
    const ids = (...requestIds: number[]) => requestIds.map(String).sort();
    expect(idsAt(replies)).toEqual(ids(reply, olderReply));
    expect(idsAt(all)).toEqual(ids(sent, reply, olderReply, unreadable));
    expect(idsAt(delayedReplies)).toEqual(ids(reply, olderReply));
    expect(idsAt(delayedAll)).toEqual(ids(sent, reply, olderReply, unreadable));
    expect(idsAt(sentOrOpen)).toEqual(ids(sent));
    // The canonical type in the header and the row, whatever name the sequencer used.
    const older = receiver.on(replies!).find((r) => r.headers[FORWARDING_HEADERS.eventId] === String(olderReply));
    expect(older!.headers[FORWARDING_HEADERS.eventType]).toBe('EMAIL_REPLY');
    // One row per attempt, none for the events a binding does not forward.
    const rows = await Promise.all(destinations.map((d) => deliveriesTo(ctx.db, d.id)));
    expect(rows.map((r) => r.length)).toEqual([2, 4, 2, 4, 1]);
    expect(rows.flat().every((r) => r.status === 'success' && r.http_status === 200)).toBe(true);
    const unreadableRows = rows.flat().filter((r) => r.request_id === String(unreadable));
    expect(unreadableRows.map((r) => [r.destination_id, r.event_type, r.to_email])).toEqual([
      [destinations[1]!.id, 'UNKNOWN', ''],
      [destinations[3]!.id, 'UNKNOWN', ''],
    ]);
    expect((await syncOf(ctx.db, unreadable))!.status).toBe('error');
  });
});

describe('immediate and delayed bindings', () => {
  it('sends the immediate binding the event before the CRM answers, and the delayed one only once the sync has recorded its outcome', async () => {
    // Setup
    const { destinations, code } = await pipeline('Delayed', [{ isDelayed: false }, { isDelayed: true }]);
    const [immediate, delayed] = destinations;
    hubspot.slow(1_000);
    try {
      // Action
      const requestId = await ingest(code, smartleadEvent('EMAIL_SENT', 'delayed@prospect.test'));

      // Assertions: the immediate destination has it while the CRM is still busy with it.
      await receivedOn(receiver, immediate!.path, 1, 5_000);
      expect((await syncOf(ctx.db, requestId))?.status ?? null).toBeNull();
      expect(receiver.on(delayed!.path)).toEqual([]);
      expect(await deliveriesTo(ctx.db, delayed!.id)).toEqual([]);

      const sync = await eventually(async () => {
        const row = await syncOf(ctx.db, requestId);
        return row?.status ? row : undefined;
      });
      expect(sync.status).toBe('success');
      const [received] = await receivedOn(receiver, delayed!.path);
      expect(received!.headers[FORWARDING_HEADERS.eventId]).toBe(String(requestId));
      expect(received!.at).toBeGreaterThan(sync.updated_at.getTime());
      await settled(ctx.db, [requestId]);
      expect((await deliveriesOf(ctx.db, requestId)).map((d) => [d.destination_id, d.status])).toEqual([
        [immediate!.id, 'success'],
        [delayed!.id, 'success'],
      ]);
    } finally {
      hubspot.slow(0);
    }
  });

  it('sends the delayed binding an event the CRM refused (sync status error)', async () => {
    // Setup
    const refused = await refusedConnection('fwd-refused-token');
    const { destinations, code } = await pipeline('Refused', [{ isDelayed: true }, { eventTypes: ['EMAIL_SENT'], isDelayed: true }], refused);

    // Action
    const requestId = await ingest(code, smartleadEvent('EMAIL_SENT', 'refused@prospect.test'));
    await settled(ctx.db, [requestId]);

    // Assertions
    expect((await syncOf(ctx.db, requestId))!.status).toBe('error');
    for (const destination of destinations) {
      expect(eventIdsOf(receiver.on(destination.path))).toEqual([String(requestId)]);
    }
    expect((await deliveriesOf(ctx.db, requestId)).map((d) => d.status)).toEqual(['success', 'success']);
  });

  it('does not forward again when a failed sync is retried (POST /api/v1/syncs/:id/retry)', async () => {
    // Setup: a sync the CRM refused, already forwarded to both bindings.
    const token = 'fwd-retry-token';
    const refused = await refusedConnection(token);
    const { destinations, code } = await pipeline('SyncRetry', [{ isDelayed: false }, { isDelayed: true }], refused);
    const requestId = await ingest(code, smartleadEvent('EMAIL_REPLY', 'sync.retry@prospect.test'));
    await settled(ctx.db, [requestId]);
    const failed = (await syncOf(ctx.db, requestId))!;
    expect(failed.status).toBe('error');
    expect(destinations.map((d) => receiver.on(d.path).length)).toEqual([1, 1]);

    // Action: the customer reconnects, then retries the sync.
    hubspot.accessTokens.add(token);
    const res = await apiFetch(`${ctx.server.baseUrl}/api/v1/syncs/${failed.id}/retry`, {
      method: 'POST',
      headers: { authorization: `Bearer ${keys.acmeWrite}` },
    });
    expect(res.status).toBe(200);
    await eventually(async () => ((await syncOf(ctx.db, requestId))!.status === 'success' ? true : undefined), 15_000, 'the retried sync');

    // Assertions: the retry's outcome wrote no attempt (it would be in the same transaction), and sent nothing.
    expect(await pendingCount(ctx.db, [requestId])).toBe(0);
    await sleep(500);
    expect(destinations.map((d) => receiver.on(d.path).length)).toEqual([1, 1]);
    expect(await deliveriesOf(ctx.db, requestId)).toHaveLength(2);
  });
});

describe('what a destination receives', () => {
  it('is POSTed to the destination byte for byte, with its content type and the event headers', async () => {
    const { sourceId, destinations, code } = await pipeline('Bytes', [{}]);
    const body = '{ "event_type":"EMAIL_SENT",  "to_email":"Jane@Prospect.test", "note":"caf\u00e9 \u2014 \ud83d\udc4b" }';
    const requestId = await ingest(code, body, 'application/json; charset=utf-8');

    const [delivery] = await rowsOf(destinations[0]!.id, 1);
    expect(delivery).toMatchObject({
      destination_id: destinations[0]!.id,
      status: 'success',
      http_status: 200,
      event_type: 'EMAIL_SENT',
      to_email: 'jane@prospect.test',
    });
    const [received] = receiver.on(destinations[0]!.path);
    expect(received!.method).toBe('POST');
    expect(received!.body.equals(Buffer.from(body, 'utf8'))).toBe(true);
    expect(received!.headers).toMatchObject({
      'content-type': 'application/json; charset=utf-8',
      [FORWARDING_HEADERS.eventId]: String(requestId),
      [FORWARDING_HEADERS.eventType]: 'EMAIL_SENT',
      [FORWARDING_HEADERS.platform]: 'smartlead',
      [FORWARDING_HEADERS.sourceId]: String(sourceId),
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

  it('repeats odd whitespace, escapes and non-ASCII byte for byte, under the text/plain content type the sequencer sent', async () => {
    // Setup
    const { destinations, code } = await pipeline('OddBytes', [{}, { isDelayed: true }]);
    const body =
      '\r\n\t { "event_type" : "EMAIL_REPLY",\t"to_email":"Zo\u00eb@Prospect.test",\r\n' +
      '  "reply_message": {"text": "Gr\u00fc\u00dfe \u2014 \u65e5\u672c\u8a9e \ud83d\ude80\u200b"},\n' +
      '  "escaped": "\\u00e9\\n\\"q\\" \\/ \\u0000", "number": 1.50e+2, "dup": 1, "dup": 2, "nbsp": "a\u00a0b",\t"empty": {} }  \n\n';

    // Action
    const requestId = await ingest(code, body, 'text/plain; charset=utf-8');
    await settled(ctx.db, [requestId]);

    // Assertions
    for (const destination of destinations) {
      const [received] = receiver.on(destination.path);
      expect(received!.body.toString('hex')).toBe(Buffer.from(body, 'utf8').toString('hex'));
      expect(received!.headers['content-type']).toBe('text/plain; charset=utf-8');
      expect(received!.headers['content-length']).toBe(String(Buffer.byteLength(body)));
      expect(received!.headers[FORWARDING_HEADERS.eventType]).toBe('EMAIL_REPLY');
    }
  });

  it('goes as application/json when the sequencer sent no content type', async () => {
    // Setup
    const { destinations, code } = await pipeline('NoType', [{}]);

    // Action
    const requestId = await ingest(code, smartleadEvent('EMAIL_OPEN', 'notype@prospect.test'), null);
    await settled(ctx.db, [requestId]);

    // Assertions
    expect(receiver.on(destinations[0]!.path)[0]!.headers['content-type']).toBe('application/json');
  });

  it('repeats a body of nearly 1 MB (the ingress limit) byte for byte', async () => {
    // Setup
    const { destinations, code } = await pipeline('Large', [{}]);
    const filler = 'Gr\u00fc\u00dfe \ud83d\udc4b '.repeat(77_000);
    const body = smartleadEvent('EMAIL_SENT', 'large@prospect.test', { note: filler });
    expect(Buffer.byteLength(body)).toBeGreaterThan(1_000_000);
    expect(Buffer.byteLength(body)).toBeLessThan(1024 * 1024);

    // Action
    const requestId = await ingest(code, body);
    await settled(ctx.db, [requestId]);

    // Assertions
    const [received] = receiver.on(destinations[0]!.path);
    expect(received!.body.equals(Buffer.from(body, 'utf8'))).toBe(true);
    expect((await deliveriesTo(ctx.db, destinations[0]!.id)).map((r) => r.status)).toEqual(['success']);
  });

  it("carries the event's headers only, never the sequencer's own request headers", async () => {
    // Setup
    const { sourceId, destinations, code } = await pipeline('Headers', [{ isDelayed: true }]);

    // Action
    const res = await fetch(`${ctx.server.baseUrl}/webhooks/${code}`, {
      method: 'POST',
      body: smartleadEvent('EMAIL_LINK_CLICK', 'headers@prospect.test'),
      headers: { 'content-type': 'application/json', authorization: 'Bearer sequencer-secret', cookie: 'session=abc', 'x-smartlead-signature': 'sig-123' },
    });
    const { requestId } = (await res.json()) as { requestId: number };
    await settled(ctx.db, [requestId]);

    // Assertions
    const [received] = receiver.on(destinations[0]!.path);
    expect(received!.headers).toMatchObject({
      [FORWARDING_HEADERS.eventId]: String(requestId),
      [FORWARDING_HEADERS.eventType]: 'EMAIL_LINK_CLICK',
      [FORWARDING_HEADERS.platform]: 'smartlead',
      [FORWARDING_HEADERS.sourceId]: String(sourceId),
      [FORWARDING_HEADERS.attempt]: '1',
    });
    expect(received!.headers.authorization).toBeUndefined();
    expect(received!.headers.cookie).toBeUndefined();
    expect(received!.headers['x-smartlead-signature']).toBeUndefined();
  });
});

describe('a burst of events', () => {
  it('reaches each destination once per event, some at the second attempt, with one success row each', async () => {
    // Setup: answers take a moment (attempts overlap), and the immediate destination's first ten fail.
    const { destinations, code } = await pipeline('Burst', [{}, { isDelayed: true }]);
    const [immediate, delayed] = destinations;
    for (const destination of destinations) receiver.answerAlways({ delayMs: 50 }, destination.path);
    receiver.answerNext(10, { status: 503, delayMs: 50 }, immediate!.path);

    // Action
    const requestIds: number[] = [];
    for (let i = 0; i < 30; i += 1) requestIds.push(await ingest(code, smartleadEvent('EMAIL_SENT', `burst${i}@prospect.test`, { sequence_number: i })));
    await settled(ctx.db, requestIds);

    // Assertions
    for (const [destination, failures] of [
      [immediate!, 10],
      [delayed!, 0],
    ] as const) {
      const rows = await deliveriesTo(ctx.db, destination.id);
      expect(rows).toHaveLength(requestIds.length + failures);
      const successes = rows.filter((r) => r.status === 'success').map((r) => Number(r.request_id));
      expect(successes.sort((a, b) => a - b)).toEqual(requestIds);
      const received = receiver.on(destination.path);
      expect(received).toHaveLength(rows.length);
      // Each event id always came with its own body.
      const bodyOf = new Map<string, string>();
      for (const r of received) {
        const id = String(r.headers[FORWARDING_HEADERS.eventId]);
        expect(bodyOf.get(id) ?? r.body.toString('utf8')).toBe(r.body.toString('utf8'));
        bodyOf.set(id, r.body.toString('utf8'));
      }
      expect([...bodyOf.keys()].map(Number).sort((a, b) => a - b)).toEqual(requestIds);
    }
  });
});

describe('retries', () => {
  it('makes three attempts in all (the schedule has two retries) when the destination keeps answering 500', async () => {
    // Setup
    const { destinations, code } = await pipeline('Always500', [{}]);
    const [destination] = destinations;
    const answer = JSON.stringify({ error: 'internal', detail: 'database unavailable' });
    receiver.answerAlways({ status: 500, body: answer }, destination!.path);

    // Action
    const requestId = await ingest(code, smartleadEvent('EMAIL_SENT', 'always500@prospect.test'));
    const rows = await rowsOf(destination!.id, 3);
    await settled(ctx.db, [requestId]);

    // Assertions
    expect(await deliveriesTo(ctx.db, destination!.id)).toHaveLength(3);
    expect(rows.map((r) => [r.status, r.http_status, r.error])).toEqual(
      Array(3).fill(['error', 500, { message: 'HTTP 500 from the destination', body: answer }]),
    );
    const received = receiver.on(destination!.path);
    expect(received.map((r) => r.headers[FORWARDING_HEADERS.attempt])).toEqual(['1', '2', '3']);
    expect(eventIdsOf(received)).toEqual(Array(3).fill(String(requestId)));
    expect(new Set(received.map((r) => r.body.toString('hex'))).size).toBe(1);
  });

  it.each([
    [408, 'Request Timeout'],
    [503, 'busy'],
  ])('stops at the first success: %i then 200 makes two rows, an error then a success', async (status, answer) => {
    // Setup
    const { destinations, code } = await pipeline(`Then200x${status}`, [{}]);
    const [destination] = destinations;
    receiver.answerNext(1, { status, body: answer }, destination!.path);

    // Action
    const requestId = await ingest(code, smartleadEvent('EMAIL_SENT', `then200.${status}@prospect.test`));
    await rowsOf(destination!.id, 2);
    await settled(ctx.db, [requestId]);

    // Assertions
    const rows = await deliveriesTo(ctx.db, destination!.id);
    expect(rows.map((r) => [r.status, r.http_status, r.error])).toEqual([
      ['error', status, { message: `HTTP ${status} from the destination`, body: answer }],
      ['success', 200, null],
    ]);
    expect(receiver.on(destination!.path).map((r) => r.headers[FORWARDING_HEADERS.attempt])).toEqual(['1', '2']);
  });

  it('counts any 2xx as a success', async () => {
    // Setup
    const { destinations, code } = await pipeline('Any2xx', [{}, {}, {}]);
    const statuses = [201, 202, 204];
    for (const [i, status] of statuses.entries()) receiver.answerAlways({ status, body: '' }, destinations[i]!.path);

    // Action
    const requestId = await ingest(code, smartleadEvent('EMAIL_SENT', 'any2xx@prospect.test'));
    await settled(ctx.db, [requestId]);

    // Assertions
    const rows = await deliveriesOf(ctx.db, requestId);
    expect(rows.map((r) => [r.destination_id, r.status, r.http_status, r.error])).toEqual(
      statuses.map((status, i) => [destinations[i]!.id, 'success', status, null]),
    );
  });

  it("waits as long as a 429's Retry-After asks, though the schedule says 0.2 s", async () => {
    // Setup: 2 s, beyond anything the 0.2 s schedule (retries are woken on whole seconds) can give.
    const { destinations, code } = await pipeline('RetryAfter', [{}]);
    const [destination] = destinations;
    receiver.answerNext(1, { status: 429, headers: { 'retry-after': '2' }, body: 'slow down' }, destination!.path);

    // Action
    const requestId = await ingest(code, smartleadEvent('EMAIL_SENT', 'retryafter@prospect.test'));
    await rowsOf(destination!.id, 2);
    await settled(ctx.db, [requestId]);

    // Assertions
    const [first, second] = receiver.on(destination!.path);
    // 10 ms of slack for the database's millisecond rounding of the due time.
    expect(second!.at - first!.at).toBeGreaterThanOrEqual(1_990);
    const rows = await deliveriesTo(ctx.db, destination!.id);
    expect(rows.map((r) => [r.status, r.http_status])).toEqual([
      ['error', 429],
      ['success', 200],
    ]);
  });

  it('makes one attempt on a final 4xx: 404 and 410 are not retried', async () => {
    // Setup
    const { destinations, code } = await pipeline('Final4xx', [{}, {}]);
    const [gone404, gone410] = destinations;
    receiver.answerAlways({ status: 404, body: 'no such hook' }, gone404!.path);
    receiver.answerAlways({ status: 410, body: '' }, gone410!.path);

    // Action
    const requestId = await ingest(code, smartleadEvent('EMAIL_SENT', 'final4xx@prospect.test'));
    // A retry would be written with the failed attempt: settled means none was.
    await settled(ctx.db, [requestId]);

    // Assertions
    expect(receiver.on(gone404!.path)).toHaveLength(1);
    expect(receiver.on(gone410!.path)).toHaveLength(1);
    expect((await deliveriesOf(ctx.db, requestId)).map((r) => [r.destination_id, r.status, r.http_status, r.error])).toEqual([
      [gone404!.id, 'error', 404, { message: 'HTTP 404 from the destination', body: 'no such hook' }],
      [gone410!.id, 'error', 410, { message: 'HTTP 410 from the destination' }],
    ]);
  });

  it('does not follow a redirect: a 302 is a final error, and nothing reaches its Location', async () => {
    // Setup
    const { destinations, code } = await pipeline('Redirect', [{}]);
    const [destination] = destinations;
    receiver.answerAlways({ status: 302, headers: { location: `${receiver.url}/fwdRedirectMoved/here` }, body: '' }, destination!.path);

    // Action
    const requestId = await ingest(code, smartleadEvent('EMAIL_SENT', 'redirect@prospect.test'));
    await settled(ctx.db, [requestId]);

    // Assertions
    expect(receiver.on(destination!.path)).toHaveLength(1);
    expect(receiver.on('/fwdRedirectMoved')).toEqual([]);
    const rows = await deliveriesTo(ctx.db, destination!.id);
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({ status: 'error', http_status: 302, error: { message: expect.stringMatching(/redirects are not followed/) } });
  });

  it('records an attempt that timed out with no HTTP status, retries it, and delays neither the other destination nor the CRM', async () => {
    // Setup
    const { destinations, code } = await pipeline('Hang', [{}, {}]);
    const [hanging, healthy] = destinations;
    receiver.answerAlways({ hang: true }, hanging!.path);

    // Action
    const requestId = await ingest(code, smartleadEvent('EMAIL_SENT', 'hang@prospect.test'));
    const [healthyRow] = await rowsOf(healthy!.id, 1);
    const hangRowsThen = await deliveriesTo(ctx.db, hanging!.id);
    const hangRows = await rowsOf(hanging!.id, 3);
    await settled(ctx.db, [requestId]);

    // Assertions: the healthy destination had its event before the hanging one's first attempt ended.
    expect(healthyRow).toMatchObject({ status: 'success', http_status: 200 });
    expect(hangRowsThen).toEqual([]);
    expect(await deliveriesTo(ctx.db, hanging!.id)).toHaveLength(3);
    expect(hangRows.map((r) => [r.status, r.http_status])).toEqual(Array(3).fill(['error', null]));
    for (const row of hangRows) expect(row.error).toEqual({ message: expect.stringMatching(new RegExp(`timed out after ${ATTEMPT_TIMEOUT_MS} ms`)) });
    expect(receiver.on(hanging!.path).map((r) => r.headers[FORWARDING_HEADERS.attempt])).toEqual(['1', '2', '3']);
    expect(await deliveriesTo(ctx.db, healthy!.id)).toHaveLength(1);
    // The CRM sync recorded its outcome while the hanging destination was still being tried.
    const sync = (await syncOf(ctx.db, requestId))!;
    expect(sync.status).toBe('success');
    expect(sync.updated_at.getTime()).toBeLessThan(hangRows[2]!.created_at.getTime());
  });

  it('records a refused connection with no HTTP status, and retries it', async () => {
    // Setup: nothing listens on this port.
    const port = await freePort();
    const { destinations, code } = await pipeline('Refusing', [{ url: `http://127.0.0.1:${port}/hook` }]);

    // Action
    const requestId = await ingest(code, smartleadEvent('EMAIL_SENT', 'refusing@prospect.test'));
    await rowsOf(destinations[0]!.id, 3);
    await settled(ctx.db, [requestId]);

    // Assertions
    const rows = await deliveriesTo(ctx.db, destinations[0]!.id);
    expect(rows.map((r) => [r.status, r.http_status, r.error])).toEqual(
      Array(3).fill(['error', null, { message: `POST http://127.0.0.1:${port} failed: ECONNREFUSED` }]),
    );
  });
});

describe('a failure on our side (issue 20)', () => {
  it("records an attempt we cannot record as an error delivery after three tries, and never holds up the destination's other events", async () => {
    // Setup: the database refuses to record this one event's success (a failure no retry changes).
    const { destinations, code } = await pipeline('Poison', [{}]);
    const [destination] = destinations;
    await ctx.db.query(`CREATE FUNCTION refuse_poison_delivery() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF NEW.to_email = 'poison.delivery@prospect.test' AND NEW.status = 'success' THEN RAISE EXCEPTION 'refused by the test'; END IF;
        RETURN NEW;
      END $$`);
    await ctx.db.query('CREATE TRIGGER refuse_poison_delivery BEFORE INSERT ON deliveries FOR EACH ROW EXECUTE FUNCTION refuse_poison_delivery()');
    try {
      // Action
      const poison = await ingest(code, smartleadEvent('EMAIL_SENT', 'poison.delivery@prospect.test'));
      const others = [
        await ingest(code, smartleadEvent('EMAIL_SENT', 'after.poison.1@prospect.test')),
        await ingest(code, smartleadEvent('EMAIL_SENT', 'after.poison.2@prospect.test')),
      ];
      await rowsOf(destination!.id, 3);
      await settled(ctx.db, [poison, ...others]);

      // Assertions: the other two delivered, the poison recorded once as our failure, nothing left pending.
      const rows = await deliveriesTo(ctx.db, destination!.id);
      expect(rows.map((r) => [r.request_id, r.status, r.http_status, r.error]).sort()).toEqual(
        [
          [String(others[0]), 'success', 200, null],
          [String(others[1]), 'success', 200, null],
          [
            String(poison),
            'error',
            null,
            { message: 'Failed on our side and not retried automatically (the destination may have received it): refused by the test' },
          ],
        ].sort(),
      );
      expect(await pendingCount(ctx.db, [poison, ...others])).toBe(0);
      // At least once: the destination got the poison on each of its three tries, with the same event id.
      expect(eventIdsOf(receiver.on(destination!.path)).filter((id) => id === String(poison))).toHaveLength(3);
      const listed = await apiGet(ctx.server.baseUrl, `/deliveries?destinationId=${destination!.id}&status=error&${around()}`, keys.acmeRead);
      expect(listed.status).toBe(200);
      expect(listed.body.data.map((d: { httpStatus: number | null; error: unknown }) => [d.httpStatus, d.error])).toEqual([
        [null, { message: 'Failed on our side and not retried automatically (the destination may have received it): refused by the test' }],
      ]);
    } finally {
      await ctx.db.query('DROP TRIGGER refuse_poison_delivery ON deliveries');
      await ctx.db.query('DROP FUNCTION refuse_poison_delivery()');
    }
  });
});

describe("a delivery's error", () => {
  it("keeps at most 1 KB of the destination's answer, and nothing of the request's headers", async () => {
    // Setup: 5 KB of two-byte characters after one ASCII byte, so 1 KB ends in the middle of one.
    const { destinations, code } = await pipeline('BigError', [{}]);
    const [destination] = destinations;
    const answer = `x${'\u00e9'.repeat(2_560)}`;
    receiver.answerNext(1, { status: 500, body: answer }, destination!.path);

    // Action
    const requestId = await ingest(code, smartleadEvent('EMAIL_SENT', 'bigerror@prospect.test'));
    await rowsOf(destination!.id, 2);
    await settled(ctx.db, [requestId]);

    // Assertions
    const [failed] = await deliveriesTo(ctx.db, destination!.id);
    const error = failed!.error!;
    expect(Object.keys(error).sort()).toEqual(['body', 'message']);
    expect(Buffer.byteLength(error.body!)).toBeLessThanOrEqual(1024);
    // Cut on a character boundary: the whole characters of the first 1 KB, no replacement character.
    expect(error.body).toBe(`x${'\u00e9'.repeat(511)}`);
    const stored = JSON.stringify(error).toLowerCase();
    for (const leak of ['service-', 'user-agent', 'pipeline-sync-service', 'content-type', 'bigerror@prospect.test']) expect(stored).not.toContain(leak);
  });
});

describe('the REST routes', () => {
  it("list a destination's real deliveries: GET /destinations/:id/deliveries and GET /deliveries?destinationId=", async () => {
    // Setup: one event forwarded at the second attempt.
    const { sourceId, destinations, code } = await pipeline('Rest', [{}]);
    const [destination] = destinations;
    receiver.answerNext(1, { status: 502, body: 'bad gateway' }, destination!.path);
    const requestId = await ingest(code, smartleadEvent('EMAIL_REPLY', 'Rest@Prospect.test'));
    await rowsOf(destination!.id, 2);
    await settled(ctx.db, [requestId]);

    // Action
    const byPath = await apiGet(ctx.server.baseUrl, `/destinations/${destination!.id}/deliveries?${around()}`, keys.acmeRead);
    const byQuery = await apiGet(ctx.server.baseUrl, `/deliveries?destinationId=${destination!.id}&${around()}`, keys.acmeRead);
    const errorsOnly = await apiGet(ctx.server.baseUrl, `/deliveries?destinationId=${destination!.id}&status=error&${around()}`, keys.acmeRead);

    // Assertions
    const rows = await deliveriesTo(ctx.db, destination!.id);
    const expected = [
      { status: 'success', httpStatus: 200, error: null },
      { status: 'error', httpStatus: 502, error: { message: 'HTTP 502 from the destination', body: 'bad gateway' } },
    ].map((outcome, i) => ({
      id: Number(rows[1 - i]!.id),
      destinationId: destination!.id,
      destinationUrl: destination!.url,
      connectionId,
      sourceId,
      eventType: 'EMAIL_REPLY',
      toEmail: 'rest@prospect.test',
      payloadId: requestId,
      createdAt: rows[1 - i]!.created_at.toISOString(),
      ...outcome,
    }));
    for (const res of [byPath, byQuery]) {
      expect(res.status).toBe(200);
      // Fields added to the document later do not break this test: the rows are matched, not equalled.
      expect(res.body).toMatchObject({ data: expected, hasMore: false, nextCursor: null });
    }
    expect(errorsOnly.body.data).toMatchObject([expected[1]]);
  });
});
