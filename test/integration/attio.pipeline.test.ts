/**
 * Attio behind the real worker (issue 32): every sample payload of every sequencer written into the Attio
 * emulator over real HTTP, a refused token failing the pipeline with `sync.failed`, a 429 (its Retry-After an
 * HTTP date) pausing the connection for two worker processes, and a worker killed at a random CRM call of a
 * campaign's round leaving every person, company, note and task in Attio once.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readSample, sampleFiles } from '../../src/connectors/sequencers/samples.js';
import { sealSecret } from '../../src/domain/secrets.js';
import { startAttioEmulator, type AttioEmulator } from '../../src/emulators/attio.js';
import { seedTestAccounts } from '../support/accounts.js';
import { campaignBodies, campaignCompanies, EVENTS_PER_LEAD, EVERY_OPTION, type Campaign } from '../support/campaign.js';
import { TEST_ENCRYPTION_KEY } from '../support/database.js';
import { killPoint } from '../support/kill-point.js';
import { useTestServer } from '../support/server.js';
import { startService, type ServiceProcess } from '../support/service-process.js';
import { eventually, startTestWorker } from '../support/worker.js';

const ctx = useTestServer();
const PLATFORMS = ['smartlead', 'instantly', 'heyreach', 'lemlist'] as const;
const KEY = 'attio-pipeline-token';
let attio: AttioEmulator;
let accountId: number;

beforeAll(async () => {
  const ids = await seedTestAccounts(ctx.db.prisma);
  accountId = ids.accounts.acme!;
  attio = await startAttioEmulator({ tokens: [KEY] });
});

afterAll(async () => {
  await attio?.close();
});

/** An Attio connection of the test account with `credentials`, and a Smartlead source (every option on unless told). */
async function attioSource(code: string, credentials: unknown, options: Record<string, boolean> = EVERY_OPTION, platform = 'smartlead') {
  const connection = await ctx.db.prisma.connection.create({
    data: { accountId, crm: 'ATTIO', credentialsEncrypted: sealSecret(TEST_ENCRYPTION_KEY, JSON.stringify(credentials)) },
  });
  const source = await ctx.db.prisma.source.create({ data: { connectionId: connection.id, platform, ingressCode: code, ...options } });
  return { connectionId: connection.id, sourceId: source.id, code };
}

async function ingest(code: string, body: string): Promise<number> {
  const res = await fetch(`${ctx.server.baseUrl}/webhooks/${code}`, { method: 'POST', body, headers: { 'content-type': 'application/json' } });
  expect(res.status).toBe(200);
  return ((await res.json()) as { requestId: number }).requestId;
}

/** Every request's sync outcome, once all have one. */
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

describe('every sample payload, into Attio, with the real worker', () => {
  let worker: { stop(): Promise<void> };
  const codes: Record<string, string> = {};

  beforeAll(async () => {
    for (const platform of PLATFORMS) codes[platform] = (await attioSource(`attioE2e${platform}01`, { accessToken: KEY }, EVERY_OPTION, platform)).code;
    worker = await startTestWorker(ctx.db.url, { urls: { ATTIO: attio.url } });
  });

  afterAll(async () => {
    await worker?.stop();
  });

  const samples = PLATFORMS.flatMap((platform) => sampleFiles(platform).map((file) => [platform, file, readSample(platform, file)] as const));

  it('writes each of them: a person asserted or found, a note, a task', async () => {
    const requestIds: number[] = [];
    for (const [platform, , body] of samples) requestIds.push(await ingest(codes[platform]!, body));

    const rows = await outcomes(requestIds);

    expect(rows.filter((r) => r.status === 'error')).toEqual([]);
    const written = await ctx.db.query<{ crm_state: Record<string, unknown>; event_type: string }>(
      'SELECT crm_state, event_type FROM syncs WHERE request_id = ANY($1::bigint[])',
      [requestIds],
    );
    for (const { crm_state: state, event_type: type } of written) {
      expect(attio.records.people.has(String(state.recordId)), type).toBe(true);
      expect(attio.notes.get(String(state.noteId))?.parent_record_id, type).toBe(state.recordId);
      expect(attio.tasks.has(String(state.taskId)), type).toBe(true);
    }
  }, 60_000);

  it('records a refused token as an error without the token, and marks the pipeline failing once with sync.failed', async () => {
    const { code, connectionId, sourceId } = await attioSource('attioRevokedToken01', { accessToken: 'revoked-attio-token' });
    const body = readSample('smartlead', 'EMAIL_SENT.json');

    const first = await outcomes([await ingest(code, body)]);
    const second = await outcomes([await ingest(code, body)]);

    for (const [row] of [first, second]) {
      expect(row?.status).toBe('error');
      expect(JSON.stringify(row?.error)).not.toContain('revoked-attio-token');
    }
    const events = await ctx.db.query<{ type: string; data: Record<string, unknown> }>('SELECT type, data FROM platform_events WHERE source_id = $1', [
      sourceId,
    ]);
    expect(events).toEqual([
      {
        type: 'sync.failed',
        data: { connectionId, crm: 'ATTIO', sourceId, sourcePlatform: 'smartlead', reason: 'crm_authentication_failed', remediation: expect.any(String) },
      },
    ]);
  }, 60_000);
});

describe('a 429 from Attio', () => {
  let workers: ServiceProcess[] = [];

  beforeAll(async () => {
    const env = {
      DATABASE_URL: ctx.db.url,
      ENCRYPTION_KEY: TEST_ENCRYPTION_KEY.toString('hex'),
      OUTBOUND_ALLOW_PRIVATE: 'true',
      ATTIO_BASE_URL: attio.url,
      LOG_LEVEL: 'info',
    };
    workers = [startService('worker', env), startService('worker', env)];
    await Promise.all(workers.map((w) => w.waitFor('"msg":"started"')));
  }, 60_000);

  afterAll(async () => {
    await Promise.all(workers.map((w) => w.stop()));
  });

  it('pauses the connection for both worker processes until its Retry-After', async () => {
    const { code } = await attioSource('attioPaused01', { accessToken: KEY }, { createOrUpdateTask: true });
    const first = attio.requests.length;
    attio.failNext(1, { status: 429, retryAfter: 3, path: '/v2/' });

    const requestIds: number[] = [];
    for (let i = 0; i < 4; i += 1) {
      const body = JSON.stringify({ event_type: 'EMAIL_SENT', to_email: `paused-${i}@prospect.test`, subject: 'Hello', sent_message: { text: 'Hi' } });
      requestIds.push(await ingest(code, body));
    }
    const rows = await outcomes(requestIds);

    expect(rows.map((r) => r.status)).toEqual(requestIds.map(() => 'success'));
    const calls = attio.requests.slice(first).filter((r) => r.path.startsWith('/v2/'));
    const refused = calls.findIndex((r) => r.status === 429);
    expect(refused).toBeGreaterThanOrEqual(0);
    const at = calls[refused]!.at;
    // The Retry-After is an HTTP date (whole seconds): at least two seconds from the refusal. A call the other
    // worker had already sent may land a moment later; none starts before the date.
    expect(calls.filter((r) => r.at > at + 250 && r.at < at + 1_900)).toEqual([]);
    expect(calls.some((r) => r.at >= at + 1_900)).toBe(true);
  }, 60_000);
});

describe('a worker killed in the middle of a round', () => {
  const CAMPAIGN: Campaign = { leads: 12, leadsPerCompany: 3, tag: 'attiocrash', sender: 'rep@seller.test' };
  const EVENTS = CAMPAIGN.leads * EVENTS_PER_LEAD;
  /** The round's first calls: the members, the companies' and people's asserts and the first notes. */
  const CALLS = 12;
  const PHASES = ['before', 'unanswered', 'answered'] as const;

  it('loses nothing and writes nothing in Attio twice', async () => {
    // Setup: a campaign's events (five per lead, in waves), all waiting for the worker.
    const { code } = await attioSource('attioCrash01', { accessToken: KEY });
    const requestIds: number[] = [];
    for (const body of campaignBodies(CAMPAIGN)) requestIds.push(await ingest(code, body));
    const point = killPoint('Attio call and phase', 1, CALLS * PHASES.length);
    const [call, phase] = [Math.ceil(point / PHASES.length), PHASES[point % PHASES.length]!];
    const victim = startService('worker', {
      DATABASE_URL: ctx.db.url,
      ENCRYPTION_KEY: TEST_ENCRYPTION_KEY.toString('hex'),
      ATTIO_BASE_URL: attio.url,
      OUTBOUND_ALLOW_PRIVATE: 'true',
      LOG_LEVEL: 'info',
    });
    attio.interceptNth(call, phase, () => victim.child.kill('SIGKILL'));

    // Action: the worker dies at that call; another takes over.
    await victim.exited;
    const rescuer = await startTestWorker(ctx.db.url, { urls: { ATTIO: attio.url } }, { staleAfterMs: 1_000 });
    let rows: Awaited<ReturnType<typeof outcomes>>;
    try {
      rows = await outcomes(requestIds, 60_000);
    } finally {
      await rescuer.stop();
    }

    // Assertions: one outcome per request, and every Attio object once.
    expect(rows.filter((r) => r.status !== 'success' || r.n !== '1')).toEqual([]);
    const people = [...attio.records.people.values()].filter((p) => String(p.values.email_addresses?.[0]?.email_address).startsWith('lead-attiocrash-'));
    expect(people).toHaveLength(CAMPAIGN.leads);
    const companies = [...attio.records.companies.values()].filter((c) => String(c.values.domains?.[0]?.domain).includes('-attiocrash-'));
    expect(companies).toHaveLength(campaignCompanies(CAMPAIGN));
    const ours = new Set(people.map((p) => p.id.record_id));
    expect([...attio.notes.values()].filter((n) => ours.has(n.parent_record_id))).toHaveLength(EVENTS);
    expect([...attio.tasks.values()].filter((t) => ours.has(t.linked_records[0]?.target_record_id ?? ''))).toHaveLength(EVENTS);
  }, 120_000);
});
