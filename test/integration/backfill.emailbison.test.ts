/**
 * The backfill end to end (issue 33), with EmailBison: 1,000 campaign events of 250 leads, a tenth of
 * their webhooks dropped before the ingress; one round of the real worker fetches the missing ones from
 * the EmailBison emulator's history (real HTTP), and every event then has exactly one sync and one
 * activity in the HubSpot emulator, the fetched ones marked; a second round adds nothing; a dropped
 * webhook that arrives at last is recorded as a duplicate of its fetched twin, not synced.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { seedFixture } from '../../src/admin/seed.js';
import { startEmailBisonEmulator, type EmailBisonEmulator } from '../../src/emulators/emailbison.js';
import { startHubspotEmulator, type HubspotEmulator } from '../../src/emulators/hubspot.js';
import { backfillsRun } from '../../src/jobs/backfills__run.js';
import { TEST_ENCRYPTION_KEY } from '../support/database.js';
import { auditRows, explorer } from '../support/onboarding.js';
import { apiFetch } from '../support/openapi.js';
import { useTestServer } from '../support/server.js';
import { eventually, startTestWorker } from '../support/worker.js';

const ctx = useTestServer();
const TOKEN = '9|backfillEmailBisonToken';
const HUBSPOT_TOKEN = 'backfill-hubspot-token';
const KEY = 'svcapi_backfillEmailBisonReader00001';
const CODE = 'backfillEmailBison01';
const LEADS = 250;

let hubspot: HubspotEmulator;
let emailbison: EmailBisonEmulator;
let worker: { stop(): Promise<void> };
let sourceId: number;
let refusedId: number;
let accountId: number;
const REFUSED_TOKEN = '9|revokedEmailBisonToken';
const REFUSED_CODE = 'backfillRefusedSource01';
/** Every event's webhook body, and whether the test delivered it. */
const events: Array<{ body: Record<string, unknown>; delivered: boolean }> = [];

beforeAll(async () => {
  hubspot = await startHubspotEmulator({ accessToken: HUBSPOT_TOKEN });
  emailbison = await startEmailBisonEmulator();
  emailbison.addWorkspace(TOKEN);
  const seeded = await seedFixture(
    ctx.db.prisma,
    {
      accounts: [
        {
          ref: 'acme',
          connections: [
            {
              crm: 'HUBSPOT',
              credentials: { accessToken: HUBSPOT_TOKEN },
              crmRateLimit: { requestsPer10s: 250 },
              sources: [
                { ref: 'bison', platform: 'emailbison', ingressCode: CODE, sequencer: { apiKey: TOKEN, baseUrl: emailbison.url } },
                // A token the instance refuses: its rounds fail.
                { ref: 'refused', platform: 'emailbison', ingressCode: REFUSED_CODE, sequencer: { apiKey: REFUSED_TOKEN, baseUrl: emailbison.url } },
              ],
            },
          ],
          apiKeys: [{ name: 'reader', key: KEY }],
        },
      ],
    },
    TEST_ENCRYPTION_KEY,
  );
  sourceId = seeded.sources.bison!;
  refusedId = seeded.sources.refused!;
  accountId = seeded.accounts.acme!;
  // Two rounds of 500 calls within a minute: above the default budget (600 a minute), within the emulator's 3,000.
  worker = await startTestWorker(ctx.db.url, { urls: { HUBSPOT: hubspot.url } }, { backfill: { budgets: { emailbison: 2_000 } } });
  // Four events a lead, an hour ago: two campaign emails, the lead's reply and the rep's answer.
  const at = (minutes: number) => new Date(Date.now() - 60 * 60_000 + minutes * 60_000);
  for (let i = 0; i < LEADS; i++) {
    const lead = emailbison.addLead(TOKEN, {
      email: `lead${i}@prospect${i % 7}.test`,
      first_name: `Lead${i}`,
      last_name: null,
      company: null,
      campaign: { id: 77, name: 'Q4' },
    });
    const first = emailbison.send(TOKEN, lead.id, { subject: 'Quick question', body: '<p>Hi</p>', at: at(1) });
    const second = emailbison.send(TOKEN, lead.id, { subject: 'Following up', body: '<p>Again</p>', step: 2, at: at(2) });
    const scheduled = (body: Record<string, unknown>) => ((body.data as Record<string, unknown>).scheduled_email as { id: number }).id;
    const reply = emailbison.reply(TOKEN, lead.id, { text: 'Tell me more', at: at(3), to: scheduled(second) });
    const answer = emailbison.reply(TOKEN, lead.id, { text: 'Here you go', at: at(4), manual: true });
    // A tenth dropped, never a lead's first email (a lead the source never heard of has no history to ask for).
    [first, second, reply, answer].forEach((body, n) => events.push({ body, delivered: n === 0 || (i * 4 + n) % 10 !== 3 }));
  }
  const delivered = events.filter((e) => e.delivered);
  for (let i = 0; i < delivered.length; i += 50) await Promise.all(delivered.slice(i, i + 50).map((e) => post(e.body)));
  await syncsSettled(delivered.length);
}, 120_000);

afterAll(async () => {
  await worker?.stop();
  await Promise.all([hubspot?.close(), emailbison?.close()]);
});

async function post(body: unknown, code = CODE): Promise<void> {
  const res = await fetch(`${ctx.server.baseUrl}/webhooks/${code}`, {
    method: 'POST',
    body: JSON.stringify(body),
    headers: { 'content-type': 'application/json' },
  });
  expect(res.status).toBe(200);
}

/** Waits until `count` syncs of the source have an outcome and none waits. */
function syncsSettled(count: number) {
  return eventually(
    async () => {
      const [row] = await ctx.db.query<{ done: number; waiting: number }>(
        `SELECT (SELECT count(*)::int FROM syncs WHERE source_id = $1 AND status IS NOT NULL) AS done,
                (SELECT count(*)::int FROM pending_syncs p JOIN requests r ON r.id = p.request_id WHERE r.source_id = $1) AS waiting`,
        [sourceId],
      );
      return row!.done >= count && row!.waiting === 0 ? row : undefined;
    },
    90_000,
    `${count} syncs`,
  );
}

async function runRound(source = sourceId): Promise<void> {
  const before = await roundsDone(source);
  await ctx.db.query(`SELECT graphile_worker_loops.add_job($1, json_build_object('sourceId', $2::int), queue_name => 'backfill:' || $2)`, [
    backfillsRun.identifier,
    source,
  ]);
  await eventually(async () => ((await roundsDone(source)) > before ? true : undefined), 60_000, 'a backfill round');
}

async function roundsDone(source: number): Promise<number> {
  const [row] = await ctx.db.query<{ rounds: number }>(`SELECT COALESCE((SELECT rounds FROM source_backfills WHERE source_id = $1), 0) AS rounds`, [source]);
  return row!.rounds;
}

async function counts() {
  const [row] = await ctx.db.query<{ requests: number; fetched: number; duplicates: number; syncs: number; perRequest: number; errors: number }>(
    `SELECT (SELECT count(*)::int FROM requests WHERE source_id = $1) AS requests,
            (SELECT count(*)::int FROM requests WHERE source_id = $1 AND fetched) AS fetched,
            (SELECT count(*)::int FROM requests WHERE source_id = $1 AND duplicate_of IS NOT NULL) AS duplicates,
            (SELECT count(*)::int FROM syncs WHERE source_id = $1) AS syncs,
            (SELECT count(*)::int FROM syncs WHERE source_id = $1 AND status <> 'success') AS errors,
            (SELECT COALESCE(max(n), 0)::int FROM (SELECT count(*) AS n FROM syncs WHERE source_id = $1 GROUP BY request_id) per) AS "perRequest"`,
    [sourceId],
  );
  return row!;
}

describe('a backfill round', () => {
  it('fetches every dropped event once: one sync and one CRM activity per event, the fetched ones marked', async () => {
    const dropped = events.filter((e) => !e.delivered).length;
    expect(dropped).toBe(100);
    expect(hubspot.emails.size).toBe(events.length - dropped);

    await runRound();
    await syncsSettled(events.length);

    expect(await counts()).toEqual({ requests: events.length, fetched: dropped, duplicates: 0, syncs: events.length, perRequest: 1, errors: 0 });
    expect(hubspot.emails.size).toBe(events.length);
    // The round asked for each lead's two lists, within its budget.
    expect(emailbison.requests.filter((r) => r.method === 'GET' && r.status === 200)).toHaveLength(LEADS * 2);
    const [progress] = await ctx.db.query<{ messages_seen: string; events_synthesised: string; failures: number; last_error: string | null }>(
      'SELECT messages_seen, events_synthesised, failures, last_error FROM source_backfills WHERE source_id = $1',
      [sourceId],
    );
    expect(progress).toEqual({ messages_seen: String(events.length), events_synthesised: String(dropped), failures: 0, last_error: null });

    // REST shows them as fetched, and counts them.
    const now = new Date();
    const window = `from=${new Date(now.getTime() - 86_400_000).toISOString()}&to=${new Date(now.getTime() + 60_000).toISOString()}`;
    const metrics = await apiFetch(`${ctx.server.baseUrl}/api/v1/requests/metrics?${window}&sourceId=${sourceId}`, {
      headers: { authorization: `Bearer ${KEY}` },
    });
    expect(metrics.body).toEqual({ count: events.length, fetched: dropped });
    const page = await apiFetch(`${ctx.server.baseUrl}/api/v1/requests?${window}&sourceId=${sourceId}&limit=5`, {
      headers: { authorization: `Bearer ${KEY}` },
    });
    const newest = (page.body as { data: Array<{ fetched: boolean; duplicateOf: number | null }> }).data;
    expect(newest.every((r) => r.fetched && r.duplicateOf === null)).toBe(true);
  }, 120_000);

  it('adds nothing when it runs again', async () => {
    const before = await counts();
    await runRound();
    expect(await counts()).toEqual(before);
    expect(hubspot.emails.size).toBe(events.length);
  }, 90_000);

  it('records a webhook that arrives after its fetched twin as a duplicate, never synced', async () => {
    const late = events.find((e) => !e.delivered)!;
    await post(late.body);
    const duplicate = await eventually(
      async () => {
        const [row] = await ctx.db.query<{ id: string; duplicate_of: string | null; waiting: boolean }>(
          `SELECT r.id, r.duplicate_of, EXISTS (SELECT 1 FROM pending_syncs p WHERE p.request_id = r.id) AS waiting
             FROM requests r WHERE r.source_id = $1 AND NOT r.fetched ORDER BY r.id DESC LIMIT 1`,
          [sourceId],
        );
        return row && !row.waiting ? row : undefined;
      },
      30_000,
      'the late webhook handled',
    );
    const [twin] = await ctx.db.query<{ id: string; fetched: boolean }>('SELECT id, fetched FROM requests WHERE id = $1', [duplicate.duplicate_of]);
    expect(twin).toMatchObject({ fetched: true });
    expect(await ctx.db.query('SELECT 1 FROM syncs WHERE request_id = $1', [duplicate.id])).toHaveLength(0);
    expect(hubspot.emails.size).toBe(events.length);
  }, 60_000);

  it('records a round the sequencer refuses on the source, never the key, and warns in /account/status from the third', async () => {
    const status = () => apiFetch(`${ctx.server.baseUrl}/api/v1/account/status`, { headers: { authorization: `Bearer ${KEY}` } });
    // One event, so that the source knows a lead to ask about.
    await post(events[0]!.body, REFUSED_CODE);
    await eventually(
      async () => ((await ctx.db.query('SELECT 1 FROM source_leads WHERE source_id = $1', [refusedId])).length > 0 ? true : undefined),
      30_000,
      'the lead',
    );
    for (let round = 1; round <= 3; round++) {
      expect((await status()).body.warnings.map((w: { code: string }) => w.code)).not.toContain('backfill_failing');
      await runRound(refusedId);
    }
    const warning = (await status()).body.warnings.find((w: { code: string }) => w.code === 'backfill_failing');
    expect(warning).toMatchObject({ message: expect.stringContaining('backfill keeps failing'), docUrl: expect.stringMatching(/#backfill-failing$/) });

    const answer = await explorer(
      ctx.server.baseUrl,
      'query ($a: Int!) { sources(accountId: $a) { id hasSequencerAccount backfill { failures lastError rounds eventsSynthesised paused } } }',
      { a: accountId },
    );
    expect(answer.body.errors).toBeUndefined();
    const refused = (answer.body.data!.sources as Array<{ id: number; backfill: Record<string, unknown> }>).find((s) => s.id === refusedId)!;
    expect(refused).toMatchObject({ hasSequencerAccount: true, backfill: { failures: 3, rounds: 3, eventsSynthesised: 0, paused: false } });
    expect(refused.backfill.lastError).toBe('EmailBison answered 401: Unauthenticated. (check the sequencer API key)');
    expect(JSON.stringify(answer.body)).not.toContain(REFUSED_TOKEN);
  }, 90_000);

  it('pauses and resumes a source for staff (audited): a paused source gets no round', async () => {
    const paused = await explorer(ctx.server.baseUrl, 'mutation ($s: Int!) { pauseBackfill(sourceId: $s) { sourceId paused } }', { s: refusedId });
    expect(paused.body.data!.pauseBackfill).toEqual({ sourceId: refusedId, paused: true });
    await ctx.db.query('UPDATE source_backfills SET last_round_started_at = NULL WHERE source_id = $1', [refusedId]);
    await ctx.db.query(`SELECT graphile_worker_loops.add_job('backfills__schedule', '{}'::json)`);
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    const [queued] = await ctx.db.query<{ n: number }>(`SELECT count(*)::int AS n FROM graphile_worker_loops._private_jobs WHERE key = 'backfill:' || $1`, [
      refusedId,
    ]);
    expect(queued!.n).toBe(0);
    // Paused, the failing source warns no more.
    const status = await apiFetch(`${ctx.server.baseUrl}/api/v1/account/status`, { headers: { authorization: `Bearer ${KEY}` } });
    expect(status.body.warnings.map((w: { code: string }) => w.code)).not.toContain('backfill_failing');

    const resumed = await explorer(ctx.server.baseUrl, 'mutation ($s: Int!) { resumeBackfill(sourceId: $s) { paused } }', { s: refusedId });
    expect(resumed.body.data!.resumeBackfill).toEqual({ paused: false });
    expect((await auditRows(ctx.db, 'pauseBackfill')).length).toBe(1);
    const none = await explorer(ctx.server.baseUrl, 'mutation { pauseBackfill(sourceId: 987654) { paused } }');
    expect(none.body.errors?.[0]?.message).toBe('Source 987654 has no backfill (it holds no sequencer account)');
  }, 30_000);
});
