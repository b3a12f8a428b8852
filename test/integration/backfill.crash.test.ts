/**
 * A worker process killed (SIGKILL) in the middle of a backfill round, at a random call to the sequencer:
 * before its answer came or after it. Another worker takes the round over: every event the webhooks
 * dropped becomes exactly one fetched request, one sync and one CRM activity; nothing of what the dead
 * round recorded is lost or made twice (each page's requests and their keys commit in one statement).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { seedFixture } from '../../src/admin/seed.js';
import { startEmailBisonEmulator, type EmailBisonEmulator } from '../../src/emulators/emailbison.js';
import { startHubspotEmulator, type HubspotEmulator } from '../../src/emulators/hubspot.js';
import { backfillsRun } from '../../src/jobs/backfills__run.js';
import { TEST_ENCRYPTION_KEY } from '../support/database.js';
import { killCallAndPhase } from '../support/kill-point.js';
import { useTestServer } from '../support/server.js';
import { startService } from '../support/service-process.js';
import { eventually, startTestWorker } from '../support/worker.js';

const ctx = useTestServer();
const TOKEN = '9|crashEmailBisonToken';
const HUBSPOT_TOKEN = 'backfill-crash-hubspot';
const CODE = 'backfillCrashSource01';
const LEADS = 40;
const PHASES = ['before', 'answered'] as const;

let hubspot: HubspotEmulator;
let emailbison: EmailBisonEmulator;
let sourceId: number;
const bodies: Array<{ body: Record<string, unknown>; delivered: boolean }> = [];

beforeAll(async () => {
  hubspot = await startHubspotEmulator({ accessToken: HUBSPOT_TOKEN });
  emailbison = await startEmailBisonEmulator();
  emailbison.addWorkspace(TOKEN);
  const seeded = await seedFixture(
    ctx.db.prisma,
    {
      accounts: [
        {
          connections: [
            {
              crm: 'HUBSPOT',
              credentials: { accessToken: HUBSPOT_TOKEN },
              sources: [{ ref: 'bison', platform: 'emailbison', ingressCode: CODE, sequencer: { apiKey: TOKEN, baseUrl: emailbison.url } }],
            },
          ],
        },
      ],
    },
    TEST_ENCRYPTION_KEY,
  );
  sourceId = seeded.sources.bison!;
  const at = (minutes: number) => new Date(Date.now() - 30 * 60_000 + minutes * 60_000);
  for (let i = 0; i < LEADS; i++) {
    const lead = emailbison.addLead(TOKEN, {
      email: `crash${i}@prospect.test`,
      first_name: null,
      last_name: null,
      company: null,
      campaign: { id: 9, name: 'Crash' },
    });
    const sent = emailbison.send(TOKEN, lead.id, { subject: 'Hello', body: '<p>Hi</p>', at: at(1) });
    const id = ((sent.data as Record<string, unknown>).scheduled_email as { id: number }).id;
    // Half the leads' replies and answers never reach the ingress.
    bodies.push({ body: sent, delivered: true });
    bodies.push({ body: emailbison.reply(TOKEN, lead.id, { text: 'Sure', at: at(2), to: id }), delivered: i % 2 === 0 });
    bodies.push({ body: emailbison.reply(TOKEN, lead.id, { text: 'Great', at: at(3), manual: true }), delivered: i % 2 === 0 });
  }
  const worker = await startTestWorker(ctx.db.url, { urls: { HUBSPOT: hubspot.url } });
  try {
    for (const { body } of bodies.filter((b) => b.delivered)) {
      const res = await fetch(`${ctx.server.baseUrl}/webhooks/${CODE}`, { method: 'POST', body: JSON.stringify(body) });
      expect(res.status).toBe(200);
    }
    await eventually(async () => ((await synced()) === bodies.filter((b) => b.delivered).length ? true : undefined), 60_000, 'the delivered events synced');
  } finally {
    await worker.stop();
  }
}, 120_000);

afterAll(async () => {
  await Promise.all([hubspot?.close(), emailbison?.close()]);
});

async function synced(): Promise<number> {
  const [row] = await ctx.db.query<{ n: number }>('SELECT count(*)::int AS n FROM syncs WHERE source_id = $1 AND status IS NOT NULL', [sourceId]);
  return row!.n;
}

describe('a worker killed in the middle of a backfill round', () => {
  it('loses nothing and fetches nothing twice', async () => {
    const { call, phase } = killCallAndPhase('EmailBison call and phase', LEADS * 2, PHASES);
    const victim = startService('worker', {
      DATABASE_URL: ctx.db.url,
      ENCRYPTION_KEY: TEST_ENCRYPTION_KEY.toString('hex'),
      HUBSPOT_BASE_URL: hubspot.url,
      OUTBOUND_ALLOW_PRIVATE: 'true',
      LOG_LEVEL: 'info',
    });
    emailbison.interceptNth(call, phase, () => victim.child.kill('SIGKILL'));
    await ctx.db.query(`SELECT graphile_worker_loops.add_job($1, json_build_object('sourceId', $2::int), queue_name => 'backfill:' || $2)`, [
      backfillsRun.identifier,
      sourceId,
    ]);
    await victim.exited;

    // Another worker frees the dead one's round and runs it again.
    const rescuer = await startTestWorker(ctx.db.url, { urls: { HUBSPOT: hubspot.url } }, { staleAfterMs: 1_000 });
    try {
      await eventually(
        async () => {
          const [row] = await ctx.db.query<{ rounds: number }>('SELECT rounds FROM source_backfills WHERE source_id = $1', [sourceId]);
          return (row?.rounds ?? 0) > 0 && (await synced()) === bodies.length ? true : undefined;
        },
        90_000,
        'the round finished and every event synced',
      );
    } finally {
      await rescuer.stop();
    }

    const dropped = bodies.filter((b) => !b.delivered).length;
    const [counts] = await ctx.db.query<{ requests: number; fetched: number; keys: number; syncs: number; once: boolean }>(
      `SELECT (SELECT count(*)::int FROM requests WHERE source_id = $1) AS requests,
              (SELECT count(*)::int FROM requests WHERE source_id = $1 AND fetched) AS fetched,
              (SELECT count(*)::int FROM message_keys WHERE source_id = $1) AS keys,
              (SELECT count(*)::int FROM syncs WHERE source_id = $1 AND status = 'success') AS syncs,
              (SELECT bool_and(n = 1) FROM (SELECT count(*) AS n FROM syncs WHERE source_id = $1 GROUP BY request_id) per) AS once`,
      [sourceId],
    );
    expect(counts).toEqual({ requests: bodies.length, fetched: dropped, keys: bodies.length, syncs: bodies.length, once: true });
    expect(hubspot.emails.size).toBe(bodies.length);
  }, 150_000);
});
