/**
 * The support explorer's safety and audit (issue 17): named staff tokens, every staff mutation in the
 * audit log (who, what, arguments, result, when), query limits refusing deep and aliased documents
 * before they run, and the first document GraphiQL opens on being a valid one.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { seedFixture } from '../../src/admin/seed.js';
import { TEST_ENCRYPTION_KEY } from '../support/database.js';
import { explorerWelcome } from '../../src/http/explorer-welcome.js';
import { useTestServer } from '../support/server.js';

const RITA = 'rita-support-token-0123456789';
const ctx = useTestServer({ SUPPORT_TOKENS: `rita:${RITA},bare-staff-token-abcdef0123` });

async function explorer(query: string, token = RITA, variables?: Record<string, unknown>) {
  const res = await fetch(`${ctx.server.baseUrl}/graphql`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
    body: JSON.stringify({ query, ...(variables ? { variables } : {}) }),
  });
  return { status: res.status, body: (await res.json()) as { data?: Record<string, unknown>; errors?: Array<{ message: string }> } };
}

describe('direct lookups across accounts', () => {
  const ids: { syncs: number[]; events: string[] } = { syncs: [], events: [] };
  beforeAll(async () => {
    const account = (ref: string) => ({
      ref,
      connections: [
        {
          ref: `${ref}-hubspot`,
          crm: 'HUBSPOT',
          sources: [
            {
              ref: `${ref}-source`,
              platform: 'smartlead',
              requests: [{ createdAt: new Date().toISOString(), body: '{}', sync: { status: 'error', eventType: 'EMAIL_SENT', toEmail: `lead@${ref}.test` } }],
            },
          ],
        },
      ],
    });
    await seedFixture(ctx.db.prisma, { accounts: [account('one'), account('two')] }, TEST_ENCRYPTION_KEY);
    const syncs = await ctx.db.query<{ id: string; account_id: number; connection_id: number; source_id: number }>(
      'SELECT id::text, account_id, connection_id, source_id FROM syncs ORDER BY id',
    );
    ids.syncs = syncs.map((s) => Number(s.id));
    for (const s of syncs) {
      const [event] = await ctx.db.query<{ public_id: string }>(
        `INSERT INTO platform_events (public_id, account_id, type, summary, data, connection_id, source_id)
         VALUES ('svcevt_explorer' || $1, $2, 'sync.failed', 'failing', '{}', $3, $4) RETURNING public_id`,
        [s.id, s.account_id, s.connection_id, s.source_id],
      );
      ids.events.push(event!.public_id);
    }
  });

  it('finds a sync and a platform event of any account by id', async () => {
    expect(ids.syncs).toHaveLength(2);
    for (const [i, syncId] of ids.syncs.entries()) {
      const { body } = await explorer(`{ sync(id: ${syncId}) { id status toEmail } event(id: "${ids.events[i]}") { id type } }`);
      expect(body.errors).toBeUndefined();
      expect(body.data).toEqual({
        sync: { id: syncId, status: 'error', toEmail: `lead@${i === 0 ? 'one' : 'two'}.test` },
        event: { id: ids.events[i], type: 'sync.failed' },
      });
    }
    expect((await explorer('{ sync(id: 999999) { id } }')).body.errors?.[0]?.message).toBe('Sync 999999 not found');
  });
});

describe('the support explorer', () => {
  it('audits every staff mutation under the token’s name, with its arguments and its result (errors too)', async () => {
    const refused = await explorer('mutation Pause($id: Int!) { pauseBlocklist(id: $id) { id status } }', RITA, { id: 424242 });
    expect(refused.body.errors?.[0]?.message).toBe('Blocklist 424242 not found');
    await explorer('mutation { pauseBlocklist(id: 1) { id } }', 'bare-staff-token-abcdef0123');

    const { body } = await explorer('{ auditLog(limit: 5) { staff action arguments result createdAt } }');
    const entries = body.data?.auditLog as Array<{ staff: string; action: string; arguments: { variables: unknown }; result: unknown; createdAt: string }>;
    expect(entries.map((e) => [e.staff, e.action])).toEqual([
      ['token:bare', 'pauseBlocklist'],
      ['rita', 'pauseBlocklist'],
    ]);
    expect(entries[1]).toMatchObject({
      arguments: { variables: { id: 424242 } },
      result: { errors: ['Blocklist 424242 not found'] },
      createdAt: expect.any(String),
    });
    // Reads are not audited (only raw bodies will be).
    expect((await explorer('{ auditLog(limit: 5) { id } }')).body.data?.auditLog).toHaveLength(2);
  });

  it('refuses a too deep or too aliased document before it runs', async () => {
    // Source -> connection -> sources -> ... is a cycle: depth is what bounds it.
    const nest = (levels: number) => `{ accounts { connections { ${'sources { connection { '.repeat(levels)}id${' } }'.repeat(levels)} } } }`;
    expect((await explorer(nest(2))).body.errors).toBeUndefined();
    const tooDeep = await explorer(nest(8));
    expect(tooDeep.body.errors?.[0]?.message).toMatch(/depth/i);
    expect(tooDeep.body.data ?? null).toBeNull();
    const aliases = `{ ${Array.from({ length: 20 }, (_, i) => `a${i}: accounts { id }`).join(' ')} }`;
    const tooWide = await explorer(aliases);
    expect(tooWide.body.errors?.[0]?.message).toMatch(/alias/i);
    expect(tooWide.body.data ?? null).toBeNull();
  });

  it('opens on a first document that runs', async () => {
    for (const name of ['FailedSyncsOfAnAccount', 'LineageOfARequest', 'ResyncAfterAFix', 'RecentStaffActions']) {
      const res = await fetch(`${ctx.server.baseUrl}/graphql`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${RITA}` },
        body: JSON.stringify({ query: explorerWelcome(new Date()), operationName: name }),
      });
      expect(((await res.json()) as { errors?: unknown }).errors).toBeUndefined();
    }
    const page = await fetch(`${ctx.server.baseUrl}/graphql`, { headers: { accept: 'text/html' } });
    expect(await page.text()).toContain('FailedSyncsOfAnAccount');
  });
});

describe("staff twins of the customers' mutations", () => {
  it('retry a failed sync of any account, under the same eligibility, audited', async () => {
    const [sync] = await ctx.db.query<{ id: string }>("SELECT id::text FROM syncs WHERE to_email = 'lead@two.test'");
    const { body } = await explorer(`mutation { retrySync(id: ${sync!.id}) { queued syncId } }`);
    expect(body.data).toEqual({ retrySync: { queued: true, syncId: Number(sync!.id) } });
    const waiting = await ctx.db.query('SELECT p.retry FROM pending_syncs p JOIN syncs s ON s.request_id = p.request_id WHERE s.id = $1', [sync!.id]);
    expect(waiting).toEqual([{ retry: true }]);
    const [last] = (await explorer('{ auditLog(limit: 1) { staff action result } }')).body.data?.auditLog as Array<Record<string, unknown>>;
    expect(last).toEqual({ staff: 'rita', action: 'retrySync', result: { data: { retrySync: { queued: true, syncId: Number(sync!.id) } } } });
  });
});
