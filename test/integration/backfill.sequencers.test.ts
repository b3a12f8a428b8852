/**
 * The backfill of every sequencer it reads (issue 33), through the real worker against each sequencer's
 * emulator (real HTTP): a campaign's leads, one message in four of theirs never posted; one round fetches
 * exactly those, each a fetched request with one sync, and a second round adds nothing. EmailBison's own
 * suite (backfill.emailbison.test.ts) goes further: duplicates, refusals, pause.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { seedFixture } from '../../src/admin/seed.js';
import { startHeyReachEmulator, type HeyReachEmulator } from '../../src/emulators/heyreach.js';
import { startHubspotEmulator, type HubspotEmulator } from '../../src/emulators/hubspot.js';
import { startLemlistEmulator, type LemlistEmulator } from '../../src/emulators/lemlist.js';
import { startSequencerEmulator, type SequencerEmulator } from '../../src/emulators/sequencer.js';
import { backfillsRun } from '../../src/jobs/backfills__run.js';
import { TEST_ENCRYPTION_KEY } from '../support/database.js';
import { useTestServer } from '../support/server.js';
import { eventually, startTestWorker } from '../support/worker.js';

const ctx = useTestServer();
const HUBSPOT_TOKEN = 'backfill-sequencers-hubspot';
const LEADS = 12;
const KEYS = { smartlead: 'bf-smartlead-key', instantly: 'bf-instantly-key', heyreach: 'bf-heyreach-key', lemlist: 'bf-lemlist-key' } as const;
type Platform = keyof typeof KEYS;

let hubspot: HubspotEmulator;
let sequencers: SequencerEmulator;
let heyreach: HeyReachEmulator;
let lemlist: LemlistEmulator;
let worker: { stop(): Promise<void> };
const sources: Record<string, number> = {};

const at = (lead: number, minutes: number) => new Date(Date.now() - 2 * 3_600_000 + lead * 1_000 + minutes * 60_000);
const email = (i: number) => `bf${i}@prospect${i % 3}.test`;

/** Each sequencer's four messages a lead, as the webhook bodies it posts. */
const MESSAGES: Record<Platform, (i: number) => Record<string, unknown>[]> = {
  smartlead: (i) => {
    const { id } = sequencers.smartleadLead(KEYS.smartlead, {
      email: email(i),
      firstName: `Lead${i}`,
      lastName: null,
      campaignId: 11,
      campaignName: 'Backfill',
    });
    return [
      sequencers.smartleadSend(KEYS.smartlead, id, { subject: 'Hello', body: '<p>Hi</p>', at: at(i, 1) }),
      sequencers.smartleadReply(KEYS.smartlead, id, { text: 'Tell me more', at: at(i, 10) }),
      sequencers.smartleadSend(KEYS.smartlead, id, { subject: 'More', body: '<p>More</p>', step: 2, at: at(i, 20) }),
      sequencers.smartleadReply(KEYS.smartlead, id, { text: 'Thanks', at: at(i, 30) }),
    ];
  },
  instantly: (i) =>
    (
      [
        [1, 'sent'],
        [10, 'received'],
        [20, 'sent'],
        [30, 'received'],
      ] as const
    ).map(([minutes, kind]) =>
      sequencers.instantlyEmail(KEYS.instantly, {
        campaignId: 'cmp-backfill',
        lead: email(i),
        subject: `Message ${minutes}`,
        text: `At ${minutes}`,
        at: at(i, minutes),
        kind,
      }),
    ),
  heyreach: (i) => {
    const { conversationId } = heyreach.addLead(KEYS.heyreach, {
      profileUrl: `https://www.linkedin.com/in/bf-${i}`,
      firstName: `Lead${i}`,
      lastName: 'Bf',
      campaignId: 21,
      campaignName: 'Backfill',
    });
    return (
      [
        [1, 'ME'],
        [10, 'CORRESPONDENT'],
        [20, 'ME'],
        [30, 'CORRESPONDENT'],
      ] as const
    ).map(([minutes, from]) => heyreach.message(KEYS.heyreach, conversationId, { text: `At ${minutes}`, at: at(i, minutes), from }));
  },
  lemlist: (i) => {
    const { leadId } = lemlist.addLead(KEYS.lemlist, { email: email(i), firstName: `Lead${i}`, campaignId: 'cam_backfill', campaignName: 'Backfill' });
    return (
      [
        ['emailsSent', 1],
        ['emailsOpened', 10],
        ['emailsReplied', 20],
        ['linkedinSent', 30],
      ] as const
    ).map(([type, minutes]) => lemlist.activity(KEYS.lemlist, leadId, { type, at: at(i, minutes), text: `At ${minutes}` }));
  },
};

const bodies: Record<string, Array<{ body: Record<string, unknown>; delivered: boolean }>> = {};

beforeAll(async () => {
  hubspot = await startHubspotEmulator({ accessToken: HUBSPOT_TOKEN });
  sequencers = await startSequencerEmulator({ smartleadKeys: [KEYS.smartlead], instantlyKeys: [KEYS.instantly] });
  heyreach = await startHeyReachEmulator();
  heyreach.addKey(KEYS.heyreach);
  lemlist = await startLemlistEmulator();
  lemlist.addKey(KEYS.lemlist);
  const platforms = Object.keys(KEYS) as Platform[];
  const seeded = await seedFixture(
    ctx.db.prisma,
    {
      accounts: [
        {
          connections: [
            {
              crm: 'HUBSPOT',
              credentials: { accessToken: HUBSPOT_TOKEN },
              crmRateLimit: { requestsPer10s: 250 },
              sources: platforms.map((platform) => ({
                ref: platform,
                platform,
                ingressCode: `backfill-${platform}-01`,
                sequencer: { apiKey: KEYS[platform] },
              })),
            },
          ],
        },
      ],
    },
    TEST_ENCRYPTION_KEY,
  );
  Object.assign(sources, seeded.sources);
  worker = await startTestWorker(
    ctx.db.url,
    { urls: { HUBSPOT: hubspot.url } },
    {
      blocklists: { pushUrls: { smartlead: sequencers.url, instantly: sequencers.url } },
      backfill: { urls: { heyreach: heyreach.url, lemlist: lemlist.url } },
    },
  );
  for (const platform of platforms) {
    bodies[platform] = [];
    for (let i = 0; i < LEADS; i++) {
      // The lead's third message never posted; its first always (the source must know the lead).
      MESSAGES[platform](i).forEach((body, n) => bodies[platform]!.push({ body, delivered: n !== 2 }));
    }
    for (const { body } of bodies[platform].filter((b) => b.delivered)) {
      const res = await fetch(`${ctx.server.baseUrl}/webhooks/backfill-${platform}-01`, {
        method: 'POST',
        body: JSON.stringify(body),
        headers: { 'content-type': 'application/json' },
      });
      expect(res.status).toBe(200);
    }
  }
  for (const platform of platforms) await settled(platform, LEADS * 3);
}, 120_000);

afterAll(async () => {
  await worker?.stop();
  await Promise.all([hubspot?.close(), sequencers?.close(), heyreach?.close(), lemlist?.close()]);
});

function settled(platform: Platform, count: number) {
  return eventually(
    async () => {
      const [row] = await ctx.db.query<{ done: number; waiting: number }>(
        `SELECT (SELECT count(*)::int FROM syncs WHERE source_id = $1 AND status IS NOT NULL) AS done,
                (SELECT count(*)::int FROM pending_syncs p JOIN requests r ON r.id = p.request_id WHERE r.source_id = $1) AS waiting`,
        [sources[platform]],
      );
      return row!.done >= count && row!.waiting === 0 ? true : undefined;
    },
    60_000,
    `${count} ${platform} syncs`,
  );
}

async function round(platform: Platform): Promise<void> {
  const source = sources[platform]!;
  const [before] = await ctx.db.query<{ rounds: number }>('SELECT COALESCE((SELECT rounds FROM source_backfills WHERE source_id = $1), 0) AS rounds', [source]);
  await ctx.db.query(`SELECT graphile_worker_loops.add_job($1, json_build_object('sourceId', $2::int), queue_name => 'backfill:' || $2)`, [
    backfillsRun.identifier,
    source,
  ]);
  await eventually(
    async () => {
      const [row] = await ctx.db.query<{ rounds: number; error: string | null }>(
        'SELECT rounds, last_error AS error FROM source_backfills WHERE source_id = $1',
        [source],
      );
      return row && row.rounds > before!.rounds ? row : undefined;
    },
    60_000,
    `a ${platform} round`,
  ).then((row) => expect(row.error).toBeNull());
}

async function counts(platform: Platform) {
  const [row] = await ctx.db.query<{ requests: number; fetched: number; syncs: number; once: boolean }>(
    `SELECT (SELECT count(*)::int FROM requests WHERE source_id = $1) AS requests,
            (SELECT count(*)::int FROM requests WHERE source_id = $1 AND fetched) AS fetched,
            (SELECT count(*)::int FROM syncs WHERE source_id = $1 AND status IS NOT NULL) AS syncs,
            (SELECT COALESCE(bool_and(n = 1), true) FROM (SELECT count(*) AS n FROM syncs WHERE source_id = $1 GROUP BY request_id) per) AS once`,
    [sources[platform]],
  );
  return row!;
}

describe.each(Object.keys(KEYS) as Platform[])('the %s backfill', (platform) => {
  it('fetches each message its webhooks missed once, and nothing more on a second round', async () => {
    await round(platform);
    await settled(platform, LEADS * 4);
    expect(await counts(platform)).toEqual({ requests: LEADS * 4, fetched: LEADS, syncs: LEADS * 4, once: true });
    await round(platform);
    expect(await counts(platform)).toEqual({ requests: LEADS * 4, fetched: LEADS, syncs: LEADS * 4, once: true });
  }, 90_000);
});
