/**
 * Property (issue 20): the ingress, end to end, under arbitrary bodies, content types and sizes: each
 * POST is accepted (200) or refused with the spec's status and error shape (400, 404, 413), never a 5xx,
 * and every accepted one ends with a recorded sync outcome, whatever its body holds. fast-check prints
 * the seed of any failure.
 */
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { INGRESS, seedTestAccounts } from '../support/accounts.js';
import { useTestServer } from '../support/server.js';
import { eventually, startTestWorker } from '../support/worker.js';

const ctx = useTestServer();
let worker: { stop(): Promise<void> };
/** Cases, and the time the property may take at most (whichever comes first). */
const RUNS = { numRuns: 60, interruptAfterTimeLimit: 8_000 };

beforeAll(async () => {
  const ids = await seedTestAccounts(ctx.db.prisma);
  // No CRM credentials: each sync records its outcome without a CRM call, which is what is checked here.
  await ctx.db.prisma.connection.update({ where: { id: ids.connections['acme-hubspot']! }, data: { credentialsEncrypted: null } });
  worker = await startTestWorker(ctx.db.url);
});
afterAll(async () => {
  await worker?.stop();
});

/** JSON with strings of any code units (NULs, lone surrogates), as JSON.stringify writes them. */
/** Text that PostgreSQL cannot hold and JSON must escape, often: NULs, lone surrogates, quotes, control characters. */
const nasty = fc.string({
  unit: fc.oneof(fc.constantFrom('\u0000', '\ud800', '\udfff', '"', '\\', '\n', 'a'), fc.string({ unit: 'binary', minLength: 1, maxLength: 1 })),
  maxLength: 12,
});
/** A Smartlead-like event with such text in a field the sync stores (type, contact, lead category) or carries. */
const anyJson = fc
  .tuple(fc.jsonValue({ maxDepth: 3 }), nasty, fc.constantFrom('event_type', 'to_email', 'lead_category', 'subject'))
  .map(([value, text, field]) => {
    const event: Record<string, unknown> = { event_type: 'EMAIL_SENT', to_email: 'p@x.test', subject: 'Hi', value };
    if (field === 'to_email') event.to_email = `p${text}@x.test`;
    else if (field === 'lead_category')
      Object.assign(event, { event_type: 'LEAD_CATEGORY_UPDATED', lead_category: { new_id: 1, new_name: `Interested${text}` } });
    else event[field] = text;
    return JSON.stringify(event);
  });
const body = fc.oneof(
  anyJson,
  fc.jsonValue().map((v) => JSON.stringify(v) ?? 'null'),
  fc.string({ unit: 'binary', maxLength: 200 }),
  fc.uint8Array({ maxLength: 300 }).map((bytes) => Buffer.from(bytes)),
  fc.integer({ min: 1, max: 4096 }).map((n) => `{"event_type":"EMAIL_SENT","to_email":"p@x.test","pad":"${'x'.repeat(n * 100)}"}`),
  fc.constantFrom('', ' ', '{}', '[]', 'null', '{"a":', `{"big":"${'y'.repeat(1024 * 1024)}"}`),
);
const contentType = fc.option(
  fc.constantFrom('application/json', 'text/plain', 'application/x-www-form-urlencoded', 'application/json; charset=latin1', '', 'x/y'),
  {
    nil: undefined,
  },
);
const path = fc.constantFrom(
  `/webhooks/${INGRESS.acmeSmartlead}`,
  `/webhooks/${INGRESS.acmeSmartlead}/`,
  '/webhooks/noSuchCode000000001',
  `/webhooks/${INGRESS.acmeSmartlead}?x=1`,
);

describe('the ingress under arbitrary requests', () => {
  it('accepts or refuses each with the spec status and shape, and every accepted one gets a sync outcome', async () => {
    const accepted: number[] = [];
    await fc.assert(
      fc.asyncProperty(path, body, contentType, async (where, payload, type) => {
        const res = await fetch(`${ctx.server.baseUrl}${where}`, {
          method: 'POST',
          body: payload,
          headers: type === undefined ? {} : { 'content-type': type },
        });
        const answer = (await res.json()) as Record<string, unknown>;
        expect([200, 400, 404, 413]).toContain(res.status);
        if (res.status === 200) {
          expect(answer).toEqual({ received: true, requestId: expect.any(Number) });
          accepted.push(answer.requestId as number);
        } else expect(answer).toEqual({ statusCode: res.status, message: expect.any(String), error: expect.any(String) });
      }),
      RUNS,
    );
    expect(accepted.length).toBeGreaterThan(5);
    // Every accepted request ends with a recorded outcome (the syncs of this connection record theirs at once).
    await eventually(
      async () => {
        const rows = await ctx.db.query<{ n: string }>('SELECT count(*) AS n FROM syncs WHERE request_id = ANY($1::bigint[]) AND status IS NOT NULL', [
          accepted,
        ]);
        return Number(rows[0]!.n) === accepted.length ? true : undefined;
      },
      20_000,
      `a sync outcome for each of ${accepted.length} accepted requests`,
    );
    // ... and none of them by the last resort for failures on our side: hostile text is handled, not survived.
    const internal = await ctx.db.query(
      "SELECT request_id FROM syncs WHERE request_id = ANY($1::bigint[]) AND error->>'message' LIKE 'The sync failed on our side%'",
      [accepted],
    );
    expect(internal).toEqual([]);
  }, 60_000);
});
