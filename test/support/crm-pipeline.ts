/**
 * What every CRM behind the real worker must do (issue 32), as one suite a CRM's test file runs with its
 * emulator: every sample payload of every sequencer written, a refused credential failing the pipeline with
 * `sync.failed`, a 429 pausing the connection for two worker processes until its Retry-After, and a worker
 * killed (SIGKILL) at a random CRM call of a campaign's round (one of its first calls, or one of its
 * activity, note or task creates, between their write-ahead and their answer) leaving every CRM object once.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CrmKind } from '../../src/connectors/crm/kinds.js';
import { readSample, sampleFiles } from '../../src/connectors/sequencers/samples.js';
import { sealSecret } from '../../src/domain/secrets.js';
import type { Fault } from '../../src/emulators/faults.js';
import type { CallMatch, InterceptPhase } from '../../src/emulators/loopback.js';
import { seedTestAccounts } from './accounts.js';
import { campaignBodies, EVENTS_PER_LEAD, EVERY_OPTION, type Campaign } from './campaign.js';
import { TEST_ENCRYPTION_KEY } from './database.js';
import { killPoint } from './kill-point.js';
import { useTestServer } from './server.js';
import { startService, type ServiceProcess } from './service-process.js';
import { eventually, startTestWorker } from './worker.js';

/** What the suite needs of a CRM's emulator. */
interface PipelineEmulator {
  url: string;
  requests: Array<{ path: string; status: number; at: number }>;
  failNext(n: number, fault: Fault): void;
  interceptNth(n: number, phase: InterceptPhase, action: () => void, match?: CallMatch): void;
}

export interface CrmPipelineSpec<E extends PipelineEmulator> {
  crm: CrmKind;
  /** `Close`: in test names. */
  name: string;
  /** The environment variable of the CRM's API a worker process reads (`CLOSE_BASE_URL`). */
  baseUrlEnv: string;
  /** Where the CRM's API calls go (`/api/v1/`), apart from its OAuth pages. */
  apiPrefix: string;
  /**
   * The creates the connector writes ahead (the event's activity or note, the follow-up task): an event with
   * every option on makes {@link CREATES_PER_EVENT} of them, the crash test's kill points after the round's first calls.
   */
  creates: CallMatch;
  start(): Promise<E & { close(): Promise<void> }>;
  credentials: unknown;
  /** Credentials the emulator refuses, and the secret in them no error may show. */
  refused: { credentials: unknown; secret: string };
  /** How long a 429 with `retryAfter: 3` keeps every call away (Retry-After seconds, or an HTTP date's whole seconds). */
  pausedMs: number;
  /** Checks a sample's sync against what the emulator holds (its crm_state). */
  checkSample(emulator: E, state: Record<string, unknown>, eventType: string): void;
  /** Checks the campaign's objects are each in the emulator once; `tag` marks the campaign's leads and companies. */
  checkCampaign(emulator: E, campaign: Campaign, events: number): void;
}

const PLATFORMS = ['smartlead', 'instantly', 'heyreach', 'lemlist'] as const;
/** The round's first calls a kill may fall on, whatever they are (the owner, lookups, asserts, the first contacts' and companies' creates). */
const CALLS = 12;
/** With every option on, an event's creates written ahead: its activity (or note) and its follow-up task. */
const CREATES_PER_EVENT = 2;
const PHASES = ['before', 'unanswered', 'answered'] as const;
/** How long the killed worker may take to reach its kill point (a round of the campaign takes a few seconds). */
const KILL_WITHIN_MS = 45_000;

export function crmPipelineSuite<E extends PipelineEmulator>(spec: CrmPipelineSpec<E>): void {
  const ctx = useTestServer();
  const tag = spec.crm.toLowerCase();
  let emulator: E & { close(): Promise<void> };
  let accountId: number;

  beforeAll(async () => {
    accountId = (await seedTestAccounts(ctx.db.prisma)).accounts.acme!;
    emulator = await spec.start();
  });

  afterAll(async () => {
    await emulator?.close();
  });

  /** A connection of the CRM with `credentials`, and a source (every option on unless told). */
  async function source(code: string, credentials: unknown, options: Record<string, boolean> = EVERY_OPTION, platform = 'smartlead') {
    const connection = await ctx.db.prisma.connection.create({
      data: { accountId, crm: spec.crm, credentialsEncrypted: sealSecret(TEST_ENCRYPTION_KEY, JSON.stringify(credentials)) },
    });
    const created = await ctx.db.prisma.source.create({ data: { connectionId: connection.id, platform, ingressCode: code, ...options } });
    return { connectionId: connection.id, sourceId: created.id, code };
  }

  async function ingest(code: string, body: string): Promise<number> {
    const res = await fetch(`${ctx.server.baseUrl}/webhooks/${code}`, { method: 'POST', body, headers: { 'content-type': 'application/json' } });
    expect(res.status).toBe(200);
    return ((await res.json()) as { requestId: number }).requestId;
  }

  /** Every request's sync outcome (and how many syncs it has), once all have one. */
  function outcomes(requestIds: number[], ms = 30_000): Promise<Array<{ status: string; error: unknown; n: string }>> {
    return eventually(
      async () => {
        const rows = await ctx.db.query<{ status: string | null; error: unknown; n: string }>(
          'SELECT status::text AS status, error, count(*) OVER (PARTITION BY request_id) AS n FROM syncs WHERE request_id = ANY($1::bigint[])',
          [requestIds],
        );
        return rows.length === requestIds.length && rows.every((r) => r.status !== null)
          ? (rows as Array<{ status: string; error: unknown; n: string }>)
          : undefined;
      },
      ms,
      `${requestIds.length} sync outcomes`,
    );
  }

  const serviceEnv = () => ({
    DATABASE_URL: ctx.db.url,
    ENCRYPTION_KEY: TEST_ENCRYPTION_KEY.toString('hex'),
    OUTBOUND_ALLOW_PRIVATE: 'true',
    [spec.baseUrlEnv]: emulator.url,
    LOG_LEVEL: 'info',
  });

  describe(`every sample payload, into ${spec.name}, with the real worker`, () => {
    let worker: { stop(): Promise<void> };
    const codes: Record<string, string> = {};

    beforeAll(async () => {
      for (const platform of PLATFORMS) codes[platform] = (await source(`${tag}E2e${platform}01`, spec.credentials, EVERY_OPTION, platform)).code;
      worker = await startTestWorker(ctx.db.url, { urls: { [spec.crm]: emulator.url } });
    });

    afterAll(async () => {
      await worker?.stop();
    });

    const samples = PLATFORMS.flatMap((platform) => sampleFiles(platform).map((file) => [platform, file, readSample(platform, file)] as const));

    it('writes each of them', async () => {
      const requestIds: number[] = [];
      for (const [platform, , body] of samples) requestIds.push(await ingest(codes[platform]!, body));

      const rows = await outcomes(requestIds);

      expect(rows.filter((r) => r.status === 'error')).toEqual([]);
      const written = await ctx.db.query<{ crm_state: Record<string, unknown>; event_type: string }>(
        'SELECT crm_state, event_type FROM syncs WHERE request_id = ANY($1::bigint[])',
        [requestIds],
      );
      for (const { crm_state: state, event_type: type } of written) spec.checkSample(emulator, state, type);
    }, 60_000);

    it('records refused credentials as an error naming no secret, and marks the pipeline failing once with sync.failed', async () => {
      const { code, connectionId, sourceId } = await source(`${tag}Refused01`, spec.refused.credentials);
      const body = readSample('smartlead', 'EMAIL_SENT.json');

      const first = await outcomes([await ingest(code, body)]);
      const second = await outcomes([await ingest(code, body)]);

      for (const [row] of [first, second]) {
        expect(row?.status).toBe('error');
        expect(JSON.stringify(row?.error)).not.toContain(spec.refused.secret);
      }
      const events = await ctx.db.query<{ type: string; data: Record<string, unknown> }>('SELECT type, data FROM platform_events WHERE source_id = $1', [
        sourceId,
      ]);
      expect(events).toEqual([
        {
          type: 'sync.failed',
          data: { connectionId, crm: spec.crm, sourceId, sourcePlatform: 'smartlead', reason: 'crm_authentication_failed', remediation: expect.any(String) },
        },
      ]);
    }, 60_000);
  });

  describe(`a 429 from ${spec.name}`, () => {
    let workers: ServiceProcess[] = [];

    beforeAll(async () => {
      workers = [startService('worker', serviceEnv()), startService('worker', serviceEnv())];
      await Promise.all(workers.map((w) => w.waitFor('"msg":"started"')));
    }, 60_000);

    afterAll(async () => {
      await Promise.all(workers.map((w) => w.stop()));
    });

    it('pauses the connection for both worker processes until its Retry-After', async () => {
      const { code } = await source(`${tag}Paused01`, spec.credentials, { createOrUpdateTask: true });
      const first = emulator.requests.length;
      emulator.failNext(1, { status: 429, retryAfter: 3, path: spec.apiPrefix });

      const requestIds: number[] = [];
      for (let i = 0; i < 4; i += 1) {
        const body = JSON.stringify({ event_type: 'EMAIL_SENT', to_email: `paused-${i}@prospect.test`, subject: 'Hello', sent_message: { text: 'Hi' } });
        requestIds.push(await ingest(code, body));
      }
      const rows = await outcomes(requestIds);

      expect(rows.map((r) => r.status)).toEqual(requestIds.map(() => 'success'));
      const calls = emulator.requests.slice(first).filter((r) => r.path.startsWith(spec.apiPrefix));
      const refused = calls.findIndex((r) => r.status === 429);
      expect(refused).toBeGreaterThanOrEqual(0);
      const at = calls[refused]!.at;
      // A call the other worker had already sent may land a moment later; none starts until the Retry-After has passed.
      expect(calls.filter((r) => r.at > at + 250 && r.at < at + spec.pausedMs)).toEqual([]);
      expect(calls.some((r) => r.at >= at + spec.pausedMs)).toBe(true);
    }, 60_000);
  });

  describe('a worker killed in the middle of a round', () => {
    const campaign: Campaign = { leads: 12, leadsPerCompany: 3, tag: `${tag}crash`, sender: 'rep@seller.test' };
    const events = campaign.leads * EVENTS_PER_LEAD;

    it(`loses nothing and writes nothing in ${spec.name} twice`, async () => {
      // Setup: a campaign's events (five per lead, in waves), all waiting for the worker.
      const { code } = await source(`${tag}Crash01`, spec.credentials);
      const requestIds: number[] = [];
      for (const body of campaignBodies(campaign)) requestIds.push(await ingest(code, body));
      // The kill point: one of the round's first CALLS calls, else one of its creates (each written ahead,
      // so a kill 'before' it is sent, 'unanswered' once carried out, or 'answered' falls between its
      // write-ahead and the answer recorded); every draw is a call the worker surely makes.
      const creates = events * CREATES_PER_EVENT;
      const point = killPoint(`${spec.name} call and phase`, 1, (CALLS + creates) * PHASES.length);
      const [nth, phase] = [Math.ceil(point / PHASES.length), PHASES[point % PHASES.length]!];
      const target = nth <= CALLS ? { n: nth, what: `call ${nth} of the round` } : { n: nth - CALLS, what: `create ${nth - CALLS} of ${creates}` };
      console.info(`[crash test] ${spec.name}: SIGKILL at ${target.what}, ${phase}`);
      const victim = startService('worker', serviceEnv());
      const kill = () => victim.child.kill('SIGKILL');
      if (nth <= CALLS) emulator.interceptNth(target.n, phase, kill);
      else emulator.interceptNth(target.n, phase, kill, spec.creates);

      // Action: the worker dies at that call; another takes over.
      let timer: NodeJS.Timeout | undefined;
      const killed = await Promise.race([
        victim.exited.then(() => true),
        new Promise<false>((resolve) => (timer = setTimeout(() => resolve(false), KILL_WITHIN_MS))),
      ]);
      clearTimeout(timer);
      if (!killed) await victim.stop();
      expect(killed, `the worker never reached ${target.what}`).toBe(true);
      const rescuer = await startTestWorker(ctx.db.url, { urls: { [spec.crm]: emulator.url } }, { staleAfterMs: 1_000 });
      let rows: Awaited<ReturnType<typeof outcomes>>;
      try {
        rows = await outcomes(requestIds, 60_000);
      } finally {
        await rescuer.stop();
      }

      // Assertions: one outcome per request, and every CRM object once.
      expect(rows.filter((r) => r.status !== 'success' || r.n !== '1')).toEqual([]);
      spec.checkCampaign(emulator, campaign, events);
    }, 120_000);
  });
}
