/**
 * What every CRM behind the real worker must do (issue 32), as one suite a CRM's test file runs with its
 * emulator: every sample payload of every sequencer written, a refused credential failing the pipeline with
 * `sync.failed`, a 429 pausing the connection for two worker processes until its Retry-After, and a worker
 * killed (SIGKILL) at a random CRM call of a campaign's round (one of its first calls, or one of its
 * activity, note or task creates, between their write-ahead and their answer) leaving every CRM object once.
 * And the surfaces that name a CRM: `/api/v1/account/status` for a working, a refusing and a disconnected
 * connection, `POST /api/v1/syncs/:id/retry` of a sync the CRM refused, and the support explorer's lineage
 * of a sync, its CRM steps by the ids the emulator holds.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CrmKind } from '../../src/connectors/crm/kinds.js';
import { readSample, sampleFiles } from '../../src/connectors/sequencers/samples.js';
import { sealSecret } from '../../src/domain/secrets.js';
import type { Fault } from '../../src/emulators/faults.js';
import type { CallMatch, InterceptPhase } from '../../src/emulators/loopback.js';
import { seedTestAccounts, type TestKeys } from './accounts.js';
import { campaignBodies, EVENTS_PER_LEAD, EVERY_OPTION, type Campaign } from './campaign.js';
import { TEST_ENCRYPTION_KEY } from './database.js';
import { killCallAndPhase } from './kill-point.js';
import { explorer } from './onboarding.js';
import { apiFetch } from './openapi.js';
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
  /** What the emulator holds for the person of `email` (see {@link Held}). */
  held(emulator: E, email: string): Held;
}

/**
 * What a CRM's emulator holds for one person: how many people have the email, the activities (or notes) and
 * tasks on the first, and the ids of that person, its lead or company, and its first activity (or note) and
 * task, under the names a sync's crm_state gives them.
 */
interface Held {
  people: number;
  activities: number;
  tasks: number;
  ids: Record<string, string | undefined>;
}

/** A connection's entry in `GET /api/v1/account/status`, and a blocker (the fields the suite reads). */
interface ConnectionStatus {
  connectionId: number;
  crm: string;
  ready: boolean;
  crmConnection: { status: string; crm: string };
  sources: { status: string; count: number; platforms: string[] };
}
interface StatusNotice {
  code: string;
  connectionId: number;
  crm: string;
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
  let keys: TestKeys;

  beforeAll(async () => {
    const seeded = await seedTestAccounts(ctx.db.prisma);
    accountId = seeded.accounts.acme!;
    keys = seeded.keys;
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

  /** `GET /api/v1/account/status` with the account's read key (checked against the OpenAPI document): its readiness, and one connection's part of it. */
  async function accountStatus(connectionId: number) {
    const res = await apiFetch<{ ready: boolean; connections: ConnectionStatus[]; blockers: StatusNotice[] }>(`${ctx.server.baseUrl}/api/v1/account/status`, {
      headers: { authorization: `Bearer ${keys.acmeRead}` },
    });
    expect(res.status).toBe(200);
    return {
      ready: res.body.ready,
      connection: res.body.connections.find((c) => c.connectionId === connectionId),
      blockers: res.body.blockers.filter((b) => b.connectionId === connectionId),
    };
  }

  /** The platform events of a source as `GET /api/v1/events` lists them (the last hour), oldest first: type and data. */
  async function listedEvents(sourceId: number) {
    const window = `from=${new Date(Date.now() - 3_600_000).toISOString()}&to=${new Date(Date.now() + 60_000).toISOString()}`;
    const res = await apiFetch<{ data: Array<{ type: string; data: Record<string, unknown> }> }>(`${ctx.server.baseUrl}/api/v1/events?${window}&limit=100`, {
      headers: { authorization: `Bearer ${keys.acmeRead}` },
    });
    expect(res.status).toBe(200);
    return res.body.data
      .filter((e) => e.data.sourceId === sourceId)
      .reverse()
      .map((e) => ({ type: e.type, data: e.data }));
  }

  /** A sent email to `email`, as Smartlead posts it. */
  const sentTo = (email: string) => JSON.stringify({ event_type: 'EMAIL_SENT', to_email: email, subject: 'Hello', sent_message: { text: 'Hi' } });

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
      // The API shows the failing pipeline as its sync.failed event; /account/status reads readiness from
      // the stored setup alone (spec: a blocker is a disconnected CRM, sync off or no source), so a
      // connection whose credentials the CRM refuses is still ready there, with no blocker.
      expect(await listedEvents(sourceId)).toEqual(events);
      const refusing = await accountStatus(connectionId);
      expect(refusing.connection).toMatchObject({
        connectionId,
        crm: spec.crm,
        ready: true,
        crmConnection: { status: 'ready', crm: spec.crm },
        sources: { status: 'ready', count: 1, platforms: ['smartlead'] },
      });
      expect(refusing.blockers).toEqual([]);
      // Support staff then disconnect it: the blocker names the connection and its CRM, and the account is not ready.
      const disconnected = await explorer(ctx.server.baseUrl, 'mutation ($id: Int!) { disconnectConnection(id: $id) { id status } }', { id: connectionId });
      expect(disconnected.body).toEqual({ data: { disconnectConnection: { id: connectionId, status: 'disconnected' } } });
      const blocked = await accountStatus(connectionId);
      expect(blocked.ready).toBe(false);
      expect(blocked.connection).toMatchObject({ connectionId, crm: spec.crm, ready: false, crmConnection: { status: 'disconnected', crm: spec.crm } });
      expect(blocked.blockers).toEqual([expect.objectContaining({ code: 'crm_disconnected', connectionId, crm: spec.crm })]);
    }, 60_000);

    it(`retries through POST /api/v1/syncs/:id/retry a sync ${spec.name} refused, and the retry writes the event once`, async () => {
      // Setup: the event's activity (or note) create answered 401 once, as a revoked credential is: the
      // person is written, the event is not, the sync ends in error.
      const { code, connectionId, sourceId } = await source(`${tag}Retry01`, spec.credentials);
      const email = `retry-${tag}@prospect.test`;
      emulator.failNext(1, { status: 401, path: spec.creates.path });
      const requestId = await ingest(code, sentTo(email));
      const [failed] = await outcomes([requestId]);
      expect(failed?.status).toBe('error');
      expect(spec.held(emulator, email)).toMatchObject({ people: 1, activities: 0, tasks: 0 });
      const [sync] = await ctx.db.query<{ id: number }>('SELECT id::int AS id FROM syncs WHERE request_id = $1', [requestId]);

      // Action: the retry, with a write key, the CRM taking calls again (the fault was used up).
      const res = await apiFetch(`${ctx.server.baseUrl}/api/v1/syncs/${sync!.id}/retry`, {
        method: 'POST',
        headers: { authorization: `Bearer ${keys.acmeWrite}` },
      });

      // Assertions: queued, then written on the person the first attempt wrote, the event once; the
      // pipeline failed and recovered; the connection is ready.
      expect(res.status).toBe(200);
      expect(res.body).toEqual({ queued: true, syncId: sync!.id });
      const retried = await eventually(
        async () => {
          const [row] = await ctx.db.query<{ status: string; attempts: number }>('SELECT status::text AS status, attempts FROM syncs WHERE id = $1', [
            sync!.id,
          ]);
          return row?.status === 'success' ? row : undefined;
        },
        15_000,
        'the retried sync written',
      );
      expect(retried.attempts).toBe(2);
      expect(spec.held(emulator, email)).toMatchObject({ people: 1, activities: 1, tasks: 1 });
      expect((await listedEvents(sourceId)).map((e) => [e.type, e.data.reason])).toEqual([
        ['sync.failed', 'crm_authentication_failed'],
        ['sync.recovered', undefined],
      ]);
      const healthy = await accountStatus(connectionId);
      expect(healthy.connection).toMatchObject({ connectionId, crm: spec.crm, ready: true, crmConnection: { status: 'ready', crm: spec.crm } });
      expect(healthy.blockers).toEqual([]);
    }, 30_000);

    it(`shows a sync's ${spec.name} steps in the support explorer's lineage, by the ids ${spec.name} holds`, async () => {
      const { code } = await source(`${tag}Lineage01`, spec.credentials);
      const email = `lineage-${tag}@prospect.test`;
      const requestId = await ingest(code, sentTo(email));
      const [row] = await outcomes([requestId]);
      expect(row?.status).toBe('success');

      const answer = await explorer(ctx.server.baseUrl, 'query ($id: BigInt!) { request(id: $id) { sync { status attempts crmState } } }', {
        id: String(requestId),
      });

      expect(answer.status).toBe(200);
      expect(answer.body.errors).toBeUndefined();
      const held = spec.held(emulator, email);
      expect(held).toMatchObject({ people: 1, activities: 1, tasks: 1 });
      expect(Object.values(held.ids).every((id) => typeof id === 'string')).toBe(true);
      expect(answer.body.data?.request.sync).toMatchObject({ status: 'success', attempts: 1, crmState: held.ids });
    }, 30_000);
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
      const { call: nth, phase } = killCallAndPhase(`${spec.name} call and phase`, CALLS + creates, PHASES);
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
