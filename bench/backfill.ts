/**
 * `npm run bench:backfill`: how long the backfill takes to close a source's gap of missed webhooks within
 * each sequencer's published limits, against the floor those limits allow (issue 33).
 *
 * For each sequencer case, on one throwaway embedded PostgreSQL: a source with BENCH_LEADS (10,000) leads of
 * one campaign, four messages each (two campaign emails, the lead's reply, the rep's answer), whose webhooks
 * all arrived but BENCH_MISSING (2 %): the leads and the keys of the arrived messages are in the source's
 * tables as the sync drain leaves them (written by SQL, which is what 40,000 received webhooks would
 * leave), and the sequencer's emulator (src/emulators, real HTTP) holds every message. The real worker
 * (in this process, production settings) runs one round of the real backfill job, and the CRM (the HubSpot
 * emulator, no budget) takes what it synthesises.
 *
 * Time is compressed: the account's budget keeps the sequencer's published count per window, the window
 * divided by the case's speed-up (BENCH_SPEEDUP overrides every case's), so a round that takes half an hour
 * at the real limits runs in a minute or two with the same bursts; the emulators answer far above it (the
 * budget under test is ours). Printed per case: the calls the round made, the round's time and the gap's (the
 * last missing event synced), the floor (a window budget lets a window's calls go at once: the windows the
 * calls fill, but the last) and their ratio, and both at the published limits (times the speed-up). Targets: every missing event synthesised once, nothing
 * else; the round within 1.25x of its floor. The exit status is 1 when one is missed.
 *
 * Environment: BENCH_LEADS (10000), BENCH_MISSING (0.02), BENCH_SPEEDUP (each case's own), BENCH_CASES (all:
 * a comma-separated list of platforms).
 */
import pg from 'pg';
import { seedFixture } from '../src/admin/seed.js';
import { messageKeyOf } from '../src/connectors/sequencers/message-key.js';
import { SEQUENCERS } from '../src/connectors/sequencers/registry.js';
import type { SequencerPlatform } from '../src/connectors/sequencers/platforms.js';
import { installJobSchema } from '../src/db/job-schema.js';
import { query, rows, sql } from '../src/db/sql.js';
import { startEmailBisonEmulator } from '../src/emulators/emailbison.js';
import { startHeyReachEmulator } from '../src/emulators/heyreach.js';
import { startLemlistEmulator } from '../src/emulators/lemlist.js';
import { startSequencerEmulator } from '../src/emulators/sequencer.js';
import { startHubspotEmulator } from '../src/emulators/hubspot.js';
import { backfillsRun } from '../src/jobs/backfills__run.js';
import { createLogger } from '../src/logger.js';
import { startWorker, workerPoolSize, workerSettings } from '../src/worker.js';
import { cleanups, envNumber, fmt, log, out, ratio, runBench, throwawayDatabase } from './support.js';

const LEADS = Math.round(envNumber('BENCH_LEADS', 10_000));
const MISSING = envNumber('BENCH_MISSING', 0.02);
const SPEEDUP = process.env.BENCH_SPEEDUP ? Number(process.env.BENCH_SPEEDUP) : undefined;
const ONLY = process.env.BENCH_CASES?.split(',').map((s) => s.trim());
const ENCRYPTION_KEY = Buffer.alloc(32, 7);
const HUBSPOT_TOKEN = 'bench-backfill-hubspot';
const TARGET_RATIO = 1.25;

/** A sequencer under test: its emulator with `leads` leads and their four messages, its published limit. */
interface Case {
  platform: SequencerPlatform;
  /** Its budget window is divided by this unless BENCH_SPEEDUP says otherwise: a round of a minute or two here. */
  speedup: number;
  /** Its published limit for the calls a round makes (the history's budget). */
  published: { requests: number; windowMs: number };
  /** What the round must call at least for `leads` leads of one campaign. */
  calls(leads: number): number;
  start(leads: number): Promise<Sequencer>;
}

interface Sequencer {
  /** The source's `sequencer` account. */
  account: Record<string, string>;
  /** The API's base URL, for a sequencer the service reaches at one (not EmailBison's instances). */
  url?: string;
  /** Every message's webhook body, lead by lead, four a lead. */
  webhooks: Record<string, unknown>[];
  /** History calls the emulator answered. */
  calls(): number;
  close(): Promise<void>;
}

/** The i-th lead's email, and its messages' times: three hours ago, a lead a second apart, minutes between its messages. */
const email = (i: number) => `lead${i}@company${i % 997}.test`;
const at = (lead: number, minutes: number) => new Date(Date.now() - 3 * 3_600_000 + (lead % 60) * 1_000 + minutes * 60_000);
/** Emulators answer at many times their published limit: the budget under test is ours. */
const GENEROUS = 1_000_000;

const CASES: Case[] = [
  {
    platform: 'smartlead',
    speedup: 100,
    published: { requests: 60, windowMs: 60_000 },
    // A lead's message history: one call.
    calls: (leads) => leads,
    async start(leads) {
      const key = 'bench-smartlead-key';
      const emulator = await startSequencerEmulator({ smartleadKeys: [key], smartleadRequestsPerMinute: GENEROUS });
      const webhooks: Record<string, unknown>[] = [];
      for (let i = 0; i < leads; i++) {
        const { id } = emulator.smartleadLead(key, { email: email(i), firstName: `Lead${i}`, lastName: null, campaignId: 7, campaignName: 'Bench' });
        const first = emulator.smartleadSend(key, id, { subject: 'Quick question', body: '<p>Hi</p>', at: at(i, 1) });
        const reply = emulator.smartleadReply(key, id, { text: 'Tell me more', at: at(i, 30) });
        const second = emulator.smartleadSend(key, id, { subject: 'Following up', body: '<p>Again</p>', step: 2, at: at(i, 60) });
        webhooks.push(first, reply, second, emulator.smartleadReply(key, id, { text: 'Thanks', at: at(i, 90) }));
      }
      return {
        account: { apiKey: key },
        url: emulator.url,
        webhooks,
        calls: () => emulator.requests.filter((r) => r.vendor === 'smartlead').length,
        close: () => emulator.close(),
      };
    },
  },
  {
    platform: 'instantly',
    speedup: 20,
    published: { requests: 20, windowMs: 60_000 },
    // The campaign's emails, 100 a call.
    calls: (leads) => Math.ceil((4 * leads) / 100),
    async start(leads) {
      const key = 'bench-instantly-key';
      const emulator = await startSequencerEmulator({ instantlyKeys: [key], instantlyEmailsPerMinute: GENEROUS });
      const webhooks: Record<string, unknown>[] = [];
      const mail = (i: number, minutes: number, kind: 'sent' | 'received', subject: string) =>
        emulator.instantlyEmail(key, { campaignId: 'cmp-bench', lead: email(i), subject, text: subject, at: at(i, minutes), kind });
      for (let i = 0; i < leads; i++)
        webhooks.push(
          mail(i, 1, 'sent', 'Quick question'),
          mail(i, 30, 'sent', 'Following up'),
          mail(i, 60, 'received', 'Re: Following up'),
          mail(i, 90, 'sent', 'Here you go'),
        );
      return {
        account: { apiKey: key },
        url: emulator.url,
        webhooks,
        calls: () => emulator.requests.filter((r) => r.vendor === 'instantly' && r.method === 'GET').length,
        close: () => emulator.close(),
      };
    },
  },
  {
    platform: 'heyreach',
    speedup: 1,
    published: { requests: 300, windowMs: 60_000 },
    // The campaign's conversations, 100 a call.
    calls: (leads) => Math.ceil(leads / 100),
    async start(leads) {
      const key = 'bench-heyreach-key';
      const emulator = await startHeyReachEmulator({ requestsPerMinute: GENEROUS });
      emulator.addKey(key);
      const webhooks: Record<string, unknown>[] = [];
      for (let i = 0; i < leads; i++) {
        const { conversationId } = emulator.addLead(key, {
          profileUrl: `https://www.linkedin.com/in/lead-${i}`,
          firstName: `Lead${i}`,
          lastName: 'Bench',
          campaignId: 7,
          campaignName: 'Bench',
        });
        const say = (minutes: number, from: 'ME' | 'CORRESPONDENT', text: string) => emulator.message(key, conversationId, { text, at: at(i, minutes), from });
        webhooks.push(say(1, 'ME', 'Hi'), say(30, 'ME', 'Following up'), say(60, 'CORRESPONDENT', 'Tell me more'), say(90, 'ME', 'Here you go'));
      }
      return {
        account: { apiKey: key },
        url: emulator.url,
        webhooks,
        calls: () => emulator.requests.filter((r) => r.method === 'POST').length,
        close: () => emulator.close(),
      };
    },
  },
  {
    platform: 'lemlist',
    speedup: 1,
    published: { requests: 20, windowMs: 2_000 },
    // The campaign's activities, 100 a call, until a page comes short.
    calls: (leads) => Math.floor((4 * leads) / 100) + 1,
    async start(leads) {
      const key = 'bench-lemlist-key';
      const emulator = await startLemlistEmulator({ requestsPer2s: GENEROUS });
      emulator.addKey(key);
      const webhooks: Record<string, unknown>[] = [];
      for (let i = 0; i < leads; i++) {
        const { leadId } = emulator.addLead(key, { email: email(i), firstName: `Lead${i}`, campaignId: 'cam_bench', campaignName: 'Bench' });
        const act = (type: string, minutes: number, text?: string) => emulator.activity(key, leadId, { type, at: at(i, minutes), ...(text ? { text } : {}) });
        webhooks.push(
          act('emailsSent', 1, 'Hi'),
          act('emailsOpened', 30),
          act('emailsReplied', 60, 'Tell me more'),
          act('linkedinSent', 90, 'Connecting here too'),
        );
      }
      return {
        account: { apiKey: key },
        url: emulator.url,
        webhooks,
        calls: () => emulator.requests.filter((r) => r.path.endsWith('/activities')).length,
        close: () => emulator.close(),
      };
    },
  },
  {
    platform: 'emailbison',
    speedup: 15,
    // A fifth of the 3,000 a minute public clients name (EmailBison publishes none): our budget.
    published: { requests: 600, windowMs: 60_000 },
    // A lead's sent emails and its replies: a page each.
    calls: (leads) => 2 * leads,
    async start(leads) {
      const emulator = await startEmailBisonEmulator({ requestsPerMinute: GENEROUS });
      const token = '9|benchEmailBison';
      emulator.addWorkspace(token);
      const webhooks: Record<string, unknown>[] = [];
      for (let i = 0; i < leads; i++) {
        const lead = emulator.addLead(token, { email: email(i), first_name: `Lead${i}`, last_name: null, company: null, campaign: { id: 7, name: 'Bench' } });
        const first = emulator.send(token, lead.id, { subject: 'Quick question', body: '<p>Hi</p>', at: at(i, 1) });
        const second = emulator.send(token, lead.id, { subject: 'Following up', body: '<p>Again</p>', step: 2, at: at(i, 30) });
        const sentId = ((second.data as Record<string, unknown>).scheduled_email as { id: number }).id;
        webhooks.push(
          first,
          second,
          emulator.reply(token, lead.id, { text: 'Tell me more', at: at(i, 60), to: sentId }),
          emulator.reply(token, lead.id, { text: 'Here', at: at(i, 90), manual: true }),
        );
      }
      return {
        account: { apiKey: token, baseUrl: emulator.url },
        webhooks,
        calls: () => emulator.requests.filter((r) => r.method === 'GET').length,
        close: () => emulator.close(),
      };
    },
  },
];

await runBench('bench:backfill', async () => {
  const db = await throwawayDatabase();
  await installJobSchema(db.url);
  const hubspot = await startHubspotEmulator({ accessToken: HUBSPOT_TOKEN });
  cleanups.push(() => hubspot.close());
  let failed = false;
  out(`bench:backfill: ${fmt(LEADS)} leads a source, 4 messages a lead, ${(MISSING * 100).toFixed(1)} % of the webhooks missed`);
  for (const benchCase of CASES.filter((c) => !ONLY || ONLY.includes(c.platform))) {
    const ok = await runCase(db.url, hubspot.url, benchCase, SPEEDUP ?? benchCase.speedup);
    failed ||= !ok;
  }
  return failed ? 1 : 0;
});

/** One sequencer: seed, one round, figures. True when its targets hold. */
async function runCase(databaseUrl: string, hubspotUrl: string, benchCase: Case, speedup: number): Promise<boolean> {
  const name = SEQUENCERS[benchCase.platform].name;
  log(`${name}: generating ${fmt(LEADS * 4)} messages`);
  const sequencer = await benchCase.start(LEADS);
  const pool = new pg.Pool({ connectionString: databaseUrl, max: 4 });
  try {
    const prisma = (await import('../src/db/prisma.js')).createPrisma(databaseUrl);
    const seeded = await seedFixture(
      prisma,
      {
        accounts: [
          {
            connections: [
              {
                crm: 'HUBSPOT',
                credentials: { accessToken: HUBSPOT_TOKEN },
                sources: [{ ref: 'source', platform: benchCase.platform, sequencer: sequencer.account }],
              },
            ],
          },
        ],
      },
      ENCRYPTION_KEY,
    );
    await prisma.$disconnect();
    const sourceId = seeded.sources.source!;
    const missing = await seedArrived(pool, sourceId, benchCase.platform, sequencer.webhooks);
    log(`${name}: ${fmt(sequencer.webhooks.length - missing)} webhooks arrived (their keys and leads seeded), ${fmt(missing)} missed`);

    const windowMs = Math.round(benchCase.published.windowMs / speedup);
    const settings = workerSettings(256);
    const workerPool = new pg.Pool({ connectionString: databaseUrl, max: workerPoolSize(settings) });
    const runner = await startWorker(
      workerPool,
      createLogger('warn', process.stderr),
      {
        crm: {
          urls: { HUBSPOT: hubspotUrl, SALESFORCE: 'http://127.0.0.1:9', CLOSE: 'http://127.0.0.1:9', ATTIO: 'http://127.0.0.1:9' },
          outboundAllowPrivate: true,
          budgets: { HUBSPOT: 0, SALESFORCE: 0, CLOSE: 0, ATTIO: 0 },
        },
        outboundAllowPrivate: true,
        // The sequencer's API: where its block lists go (Smartlead, Instantly), else the backfill's own variable.
        ...(sequencer.url ? { blocklists: { pushUrls: { [benchCase.platform]: sequencer.url } } } : {}),
        backfill: { windows: { [benchCase.platform]: windowMs }, ...(sequencer.url ? { urls: { [benchCase.platform]: sequencer.url } } : {}) },
        encryptionKey: ENCRYPTION_KEY,
      },
      settings,
    );
    try {
      const started = performance.now();
      await query(
        pool,
        sql`SELECT graphile_worker_loops.add_job(${backfillsRun.identifier}, json_build_object('sourceId', ${sourceId}::int), queue_name => 'backfill:' || ${sourceId})`,
      );
      const roundMs = await until(pool, sql`SELECT rounds > 0 AS done FROM source_backfills WHERE source_id = ${sourceId}`, started);
      const [failure] = (await query<{ error: string | null }>(pool, sql`SELECT last_error AS error FROM source_backfills WHERE source_id = ${sourceId}`)).rows;
      if (failure?.error) {
        out(`${name}: the round failed: ${failure.error}`);
        return false;
      }
      const gapMs = await until(
        pool,
        sql`SELECT (SELECT count(*) FROM syncs WHERE source_id = ${sourceId} AND status IS NOT NULL) >= ${missing}
                   AND NOT EXISTS (SELECT 1 FROM pending_syncs p JOIN requests r ON r.id = p.request_id WHERE r.source_id = ${sourceId}) AS done`,
        started,
      );
      const [state] = (
        await query<{ synthesised: string; seen: string; error: string | null; requests: string; keys: string }>(
          pool,
          sql`SELECT b.events_synthesised AS synthesised, b.messages_seen AS seen, b.last_error AS error,
                     (SELECT count(*) FROM requests WHERE source_id = ${sourceId}) AS requests, (SELECT count(*) FROM message_keys WHERE source_id = ${sourceId}) AS keys
                FROM source_backfills b WHERE b.source_id = ${sourceId}`,
        )
      ).rows;
      const calls = sequencer.calls();
      const needed = benchCase.calls(LEADS);
      // A window budget lets its requests go at once, then the next ones a window later: the floor is the windows the calls fill but the last.
      const floorMs = Math.floor((needed - 1) / benchCase.published.requests) * windowMs;
      const within = floorMs === 0 ? 1 : roundMs / floorMs;
      out('');
      out(
        `${name} (limit ${fmt(benchCase.published.requests)} requests per ${benchCase.published.windowMs / 1000} s, run at ${speedup}x: per ${windowMs / 1000} s)`,
      );
      out(`  calls made        ${fmt(calls)} (at least ${fmt(needed)} needed)`);
      out(
        `  messages seen     ${fmt(Number(state!.seen))}; synthesised ${fmt(Number(state!.synthesised))} of ${fmt(missing)} missing; requests ${fmt(Number(state!.requests))}`,
      );
      out(
        `  round             ${(roundMs / 1000).toFixed(1)} s; floor ${(floorMs / 1000).toFixed(1)} s: ${floorMs === 0 ? 'every call fits one window' : ratio(roundMs, floorMs)}`,
      );
      out(`  gap closed        ${(gapMs / 1000).toFixed(1)} s (the last missing event synced)`);
      out(`  at the published limit: round ≈ ${minutes(roundMs * speedup)}, floor ${minutes(floorMs * speedup)}`);
      if (state!.error) out(`  last error        ${state!.error}`);
      const exact = Number(state!.synthesised) === missing && Number(state!.requests) === missing;
      out(
        `  targets           every missing event once: ${exact ? 'PASS' : 'FAIL'}; round within ${TARGET_RATIO}x of its floor: ${within <= TARGET_RATIO ? 'PASS' : 'FAIL'}`,
      );
      return exact && within <= TARGET_RATIO;
    } finally {
      await runner.stop();
      await workerPool.end();
    }
  } finally {
    await pool.end();
    await sequencer.close();
  }
}

/**
 * Writes what the arrived webhooks would have left (the lead of every message, the key of every arrived
 * one, owned by a request id that does not exist: nothing reads it back but the key's owner check), and
 * answers how many were missed: every 1/MISSING-th message, never a lead's first (its lead must be known).
 */
async function seedArrived(pool: pg.Pool, sourceId: number, platform: SequencerPlatform, webhooks: Record<string, unknown>[]): Promise<number> {
  const { parse } = SEQUENCERS[platform];
  const leads = new Map<string, { key: string; campaignId: string | null; leadId: string | null; contact: string }>();
  const keys: string[] = [];
  const every = Math.max(2, Math.round(1 / MISSING));
  let missing = 0;
  webhooks.forEach((body, i) => {
    const parsed = parse(body);
    if (!parsed.ok) throw new Error(`a generated webhook does not parse: ${parsed.reason}`);
    const event = parsed.event;
    const leadId = event.sequencerIds.leadId ?? null;
    leads.set(`${event.campaign.id}:${leadId ?? event.identity}`, {
      key: `${event.campaign.id ?? ''}:${leadId ?? event.identity}`,
      campaignId: event.campaign.id,
      leadId,
      contact: event.identity,
    });
    const key = messageKeyOf(event);
    if (key === null) throw new Error('a generated message has no key');
    if (i % 4 !== 0 && i % every === every - 1) missing += 1;
    else keys.push(key);
  });
  for (const chunk of chunks([...leads.values()], 5_000))
    await query(
      pool,
      sql`INSERT INTO source_leads (source_id, lead_key, campaign_id, lead_id, contact, last_seen_at)
          SELECT ${sourceId}, key, campaign_id, lead_id, contact, now() FROM ${rows('i', { key: 'text', campaignId: 'text', leadId: 'text', contact: 'text' }, chunk)}`,
    );
  for (const chunk of chunks(keys, 10_000))
    await query(
      pool,
      sql`INSERT INTO message_keys (source_id, key, request_id, fetched, created_at)
          SELECT ${sourceId}, key, -row_number() OVER (), false, now() FROM ${rows(
            'i',
            { key: 'text' },
            chunk.map((key) => ({ key })),
          )}`,
    );
  return missing;
}

function chunks<T>(items: T[], size: number): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < items.length; i += size) out.push(items.slice(i, i + size));
  return out;
}

/** Milliseconds from `started` until `probe` answers done (polled every 200 ms). */
async function until(pool: pg.Pool, probe: ReturnType<typeof sql>, started: number): Promise<number> {
  for (;;) {
    const { rows: answer } = await query<{ done: boolean }>(pool, probe);
    if (answer[0]?.done) return performance.now() - started;
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

function minutes(value: number): string {
  return value >= 120_000 ? `${(value / 60_000).toFixed(1)} min` : `${(value / 1000).toFixed(0)} s`;
}
