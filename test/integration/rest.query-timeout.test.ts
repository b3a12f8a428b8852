import { beforeAll, describe, expect, it } from 'vitest';
import { INGRESS, seedTestAccounts, type TestKeys } from '../support/accounts.js';
import { apiGet } from '../support/rest.js';
import { useTestServer } from '../support/server.js';
import { eventually } from '../support/worker.js';

// A 1 ms limit: any real count over 100,000 rows exceeds it.
const ctx = useTestServer({ QUERY_TIMEOUT_MS: '1' });
const W = `from=${encodeURIComponent(new Date(Date.now() - 20 * 86_400_000).toISOString())}&to=${encodeURIComponent(new Date(Date.now() + 60_000).toISOString())}`;

let keys: TestKeys;

beforeAll(async () => {
  const ids = await seedTestAccounts(ctx.db.prisma);
  keys = ids.keys;
  const [account, connection, source] = [ids.accounts.acme, ids.connections['acme-hubspot'], ids.sources['acme-smartlead']];
  await ctx.db.query(
    `INSERT INTO requests (account_id, source_id, connection_id, path, body, created_at)
     SELECT $1, $3, $2, $4, '{}', now() - (g || ' seconds')::interval FROM generate_series(1, 100000) g`,
    [account, connection, source, INGRESS.acmeSmartlead],
  );
  await ctx.db.query(
    `INSERT INTO syncs (account_id, connection_id, source_id, request_id, platform, status, event_type, to_email, created_at, updated_at)
     SELECT account_id, connection_id, source_id, id, 'smartlead', 'success', 'EMAIL_SENT', 'a@b.test', created_at, created_at
       FROM requests WHERE path = $1 AND body = '{}'`,
    [INGRESS.acmeSmartlead],
  );
});

describe('the query time limit', () => {
  it.each([
    ['/syncs/metrics', 'Narrow the from/to window or pass connectionId.'],
    ['/requests/metrics', 'Narrow the from/to window or pass sourceId.'],
    ['/account/metrics', 'Narrow the from/to window or pass connectionId.'],
  ])('cancels %s in PostgreSQL and answers the 504 with its hint', async (path, hint) => {
    const res = await apiGet(ctx.server.baseUrl, `${path}?${W}`, keys.acmeRead);

    expect(res.status).toBe(504);
    expect(res.body).toEqual({ statusCode: 504, message: `Request exceeded the 0.001s query time limit. ${hint}`, error: 'Gateway Timeout' });
    // Cancelled in the server, not merely abandoned by the client: nothing of it still runs (its backend may
    // take a moment, on a busy machine, to report itself idle after the error it sent).
    const running = () =>
      ctx.db.query(
        `SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND state = 'active' AND query ILIKE '%count(*)%' AND pid <> pg_backend_pid()`,
      );
    await eventually(async () => ((await running()).length === 0 ? true : undefined), 1_000, 'the cancelled query to end');
  });

  it('cancels /contacts/outreach over 100,000 matching rows and answers the 504 with its hint', async () => {
    const res = await apiGet(ctx.server.baseUrl, '/contacts/outreach?email=A@b.test', keys.acmeRead);

    expect(res.status).toBe(504);
    expect(res.body).toEqual({
      statusCode: 504,
      message: 'Request exceeded the 0.001s query time limit. Pass fewer identities (email and profileUrl values).',
      error: 'Gateway Timeout',
    });
  });

  it('leaves light routes alone', async () => {
    const res = await apiGet(ctx.server.baseUrl, '/sources', keys.acmeRead);
    expect(res.status).toBe(200);
  });
});
