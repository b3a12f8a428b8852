/**
 * The ingress (POST /webhooks/<code> and the legacy two-id form): every accepted POST is committed as a
 * request row together with its waiting sync before the answer; everything else gets the spec's error shape.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { INGRESS, seedTestAccounts, type TestKeys } from '../support/accounts.js';
import { apiGet, around } from '../support/rest.js';
import { useTestServer } from '../support/server.js';

const ctx = useTestServer();
const SMARTLEAD = `/webhooks/${INGRESS.acmeSmartlead}`;
const [LEGACY_ID1, LEGACY_ID2] = INGRESS.acmeHeyreachLegacy;
let keys: TestKeys;
let acmeHubspot: number;
let smartleadSource: number;
let deletedSource: number;

beforeAll(async () => {
  const ids = await seedTestAccounts(ctx.db.prisma);
  keys = ids.keys;
  acmeHubspot = ids.connections['acme-hubspot']!;
  smartleadSource = ids.sources['acme-smartlead']!;
  deletedSource = (
    await ctx.db.prisma.source.create({
      data: { connectionId: ids.connections['acme-old-pipedrive']!, platform: 'lemlist', ingressCode: 'ingressOnDeletedConn1' },
    })
  ).id;
});

function post(path: string, body: string, headers: Record<string, string> = { 'content-type': 'application/json' }) {
  return fetch(`${ctx.server.baseUrl}${path}`, { method: 'POST', body, headers });
}

async function jobsFor(requestId: number): Promise<{ task_identifier: string; payload: unknown }[]> {
  return ctx.db.query(
    `SELECT t.identifier AS task_identifier, j.payload FROM graphile_worker._private_jobs j JOIN graphile_worker._private_tasks t ON t.id = j.task_id WHERE (j.payload->>'requestId')::bigint = $1`,
    [requestId],
  );
}

/** The request's waiting sync (its connection's, due now) in the outbox. */
async function waitingSyncOf(requestId: number): Promise<{ connection_id: number; retry: boolean }[]> {
  return ctx.db.query('SELECT connection_id, retry FROM pending_syncs WHERE request_id = $1', [requestId]);
}

/** The drain jobs queued for a connection, waiting. */
async function drainsOf(connectionId: number): Promise<unknown[]> {
  const rows = await ctx.db.query<{ payload: unknown }>(
    `SELECT j.payload FROM graphile_worker._private_jobs j JOIN graphile_worker._private_tasks t ON t.id = j.task_id
      WHERE t.identifier = 'syncs__drain' AND (j.payload->>'connectionId')::int = $1`,
    [connectionId],
  );
  return rows.map((r) => r.payload);
}

describe('accepted POSTs', () => {
  it('stores the body as sent with its waiting sync and its connection drain (and its relay scheduling: the source has a reply relay), and answers with the request id', async () => {
    // As a sequencer sends it: key order, spacing and unicode kept byte for byte.
    const body = '{ "event_type": "EMAIL_SENT",\n  "to_email": "Jöse@Prospect.test", "subject": "Hi \\u00e9" }';

    const res = await post(SMARTLEAD, body);

    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/application\/json/);
    const answer = (await res.json()) as { received: boolean; requestId: number };
    expect(answer).toEqual({ received: true, requestId: expect.any(Number) });
    const [row] = await ctx.db.query<{ body: string; path: string; source_id: number; connection_id: number }>(
      'SELECT b.body, r.path, r.source_id, r.connection_id FROM requests r JOIN request_bodies b ON b.request_id = r.id AND b.created_at = r.created_at WHERE r.id = $1',
      [answer.requestId],
    );
    expect(row).toEqual({ body, path: INGRESS.acmeSmartlead, source_id: smartleadSource, connection_id: acmeHubspot });
    expect(await waitingSyncOf(answer.requestId)).toEqual([{ connection_id: acmeHubspot, retry: false }]);
    expect(await drainsOf(acmeHubspot)).toEqual([{ connectionId: acmeHubspot }]);
    expect(await jobsFor(answer.requestId)).toEqual([{ task_identifier: 'reply_relays__schedule', payload: { requestId: answer.requestId } }]);
    // Visible through the API like any request.
    const list = await apiGet(ctx.server.baseUrl, `/requests?${around()}&sourceId=${smartleadSource}`, keys.acmeRead);
    expect(list.body.data.map((r: { id: number }) => r.id)).toContain(answer.requestId);
  });

  it('accepts the legacy /webhooks/<id1>/<id2> form, a trailing slash and a query string, and any content type', async () => {
    const legacy = await post(`/webhooks/${LEGACY_ID1}/${LEGACY_ID2}`, '{"event_type":"message_sent"}', { 'content-type': 'text/plain' });
    expect(legacy.status).toBe(200);
    const { requestId } = (await legacy.json()) as { requestId: number };
    const [row] = await ctx.db.query<{ path: string }>('SELECT path FROM requests WHERE id = $1', [requestId]);
    expect(row!.path).not.toBe('');
    expect((await post(`${SMARTLEAD}/?source=smartlead`, '{}')).status).toBe(200);
  });

  it('accepts a body of exactly 1 MB', async () => {
    const filler = 'x'.repeat(1024 * 1024 - '{"a":""}'.length);
    const res = await post(SMARTLEAD, `{"a":"${filler}"}`);
    expect(res.status).toBe(200);
  });

  it('commits 300 concurrent POSTs, each once, each with its waiting sync and one relay scheduling job, and one drain for the connection', async () => {
    const before = Number((await ctx.db.query<{ n: string }>('SELECT count(*) AS n FROM requests'))[0]!.n);
    const answers = await Promise.all(
      Array.from({ length: 300 }, async (_, i) => {
        const res = await post(SMARTLEAD, JSON.stringify({ event_type: 'EMAIL_OPEN', to_email: `lead${i}@prospect.test`, n: i }));
        expect(res.status).toBe(200);
        return ((await res.json()) as { requestId: number }).requestId;
      }),
    );
    expect(new Set(answers).size).toBe(300);
    const after = Number((await ctx.db.query<{ n: string }>('SELECT count(*) AS n FROM requests'))[0]!.n);
    expect(after - before).toBe(300);
    const jobs = await ctx.db.query<{ n: string }>(
      `SELECT t.identifier, count(*)::int AS n FROM graphile_worker._private_jobs j JOIN graphile_worker._private_tasks t ON t.id = j.task_id
        WHERE (j.payload->>'requestId')::bigint = ANY($1::bigint[]) GROUP BY t.identifier ORDER BY t.identifier`,
      [answers],
    );
    expect(jobs).toEqual([{ identifier: 'reply_relays__schedule', n: 300 }]);
    const [waiting] = await ctx.db.query<{ n: number }>('SELECT count(*)::int AS n FROM pending_syncs WHERE request_id = ANY($1::bigint[])', [answers]);
    expect(waiting?.n).toBe(300);
    // A waiting drain is replaced, never doubled, by the batches that follow it.
    expect(await drainsOf(acmeHubspot)).toHaveLength(1);
    // Each answer names the row holding its own body.
    const rows = await ctx.db.query<{ id: string; body: string }>('SELECT request_id AS id, body FROM request_bodies WHERE request_id = ANY($1::bigint[])', [
      answers,
    ]);
    const bodyOf = new Map(rows.map((r) => [Number(r.id), JSON.parse(r.body) as { n: number }]));
    answers.forEach((id, i) => expect(bodyOf.get(id)!.n).toBe(i));
  });
});

describe('refused POSTs, in the spec error shape', () => {
  it.each([
    ['an unknown code', '/webhooks/noSuchCode000000001'],
    ['too many segments', '/webhooks/a/b/c'],
    ['a code with odd characters', '/webhooks/abc%20def'],
    ['a source of a deleted connection', '/webhooks/ingressOnDeletedConn1'],
    ['an unknown legacy pair', `/webhooks/${LEGACY_ID1}/nope`],
  ])('404 for %s', async (_case, path) => {
    const res = await post(path, '{"event_type":"EMAIL_SENT"}');
    expect(res.status).toBe(404);
    expect(await res.json()).toEqual({
      statusCode: 404,
      message: 'No source has this ingress URL: copy the url of the source from GET /api/v1/sources',
      error: 'Not Found',
    });
  });

  it('stores nothing for a refused POST', async () => {
    await post('/webhooks/ingressOnDeletedConn1', '{}');
    expect(await ctx.db.query('SELECT id FROM requests WHERE source_id = $1', [deletedSource])).toEqual([]);
  });

  it('413 for a body over 1 MB, declared or streamed', async () => {
    const big = 'a'.repeat(1024 * 1024 + 1);
    const res = await post(SMARTLEAD, big);
    expect(res.status).toBe(413);
    expect(await res.json()).toEqual({ statusCode: 413, message: 'Request body exceeds the 1 MB limit', error: 'Payload Too Large' });
  });

  it.each([
    ['not JSON', 'event_type=EMAIL_SENT', 'Request body is not valid JSON'],
    ['truncated JSON', '{"event_type":', 'Request body is not valid JSON'],
    ['empty', '', 'Request body is empty: send the event as JSON'],
  ])('400 for a body that is %s', async (_case, body, message) => {
    const res = await post(SMARTLEAD, body);
    expect(res.status).toBe(400);
    expect(await res.json()).toEqual({ statusCode: 400, message, error: 'Bad Request' });
  });

  it.each(['GET', 'PUT', 'DELETE', 'PATCH'])('JSON 404 for %s on an ingress URL, never HTML', async (method) => {
    const res = await fetch(`${ctx.server.baseUrl}${SMARTLEAD}`, { method });
    expect(res.status).toBe(404);
    expect(res.headers.get('content-type')).toMatch(/application\/json/);
    const body = (await res.json()) as { message: string };
    expect(body.message).toMatch(new RegExp(`^Cannot ${method} /webhooks/`));
  });
});
