/**
 * Close behind the real worker (issue 32): every sample payload of every sequencer written into the Close
 * emulator over real HTTP, a refused API key failing the pipeline with `sync.failed`, a 429 pausing the
 * connection for two worker processes until its Retry-After, and a worker killed at a random CRM call of
 * a campaign's round leaving every contact, lead, activity and task in Close once.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readSample, sampleFiles } from '../../src/connectors/sequencers/samples.js';
import { sealSecret } from '../../src/domain/secrets.js';
import { startCloseEmulator, type CloseEmulator } from '../../src/emulators/close.js';
import { seedTestAccounts } from '../support/accounts.js';
import { campaignBodies, campaignCompanies, EVENTS_PER_LEAD, EVERY_OPTION, type Campaign } from '../support/campaign.js';
import { TEST_ENCRYPTION_KEY } from '../support/database.js';
import { killPoint } from '../support/kill-point.js';
import { useTestServer } from '../support/server.js';
import { startService, type ServiceProcess } from '../support/service-process.js';
import { eventually, startTestWorker } from '../support/worker.js';

const ctx = useTestServer();
const PLATFORMS = ['smartlead', 'instantly', 'heyreach', 'lemlist'] as const;
const KEY = 'close-pipeline-key';
let close: CloseEmulator;
let accountId: number;

beforeAll(async () => {
  const ids = await seedTestAccounts(ctx.db.prisma);
  accountId = ids.accounts.acme!;
  close = await startCloseEmulator({
    apiKeys: [KEY],
    users: [{ id: 'user_rep000000000000000000002', email: 'rep@seller.test', first_name: 'Rita', last_name: 'Rep' }],
  });
});

afterAll(async () => {
  await close?.close();
});

/** A Close connection of the test account with `credentials`, and a Smartlead source (every option on unless told). */
async function closeSource(code: string, credentials: unknown, options: Record<string, boolean> = EVERY_OPTION, platform = 'smartlead') {
  const connection = await ctx.db.prisma.connection.create({
    data: { accountId, crm: 'CLOSE', credentialsEncrypted: sealSecret(TEST_ENCRYPTION_KEY, JSON.stringify(credentials)) },
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

describe('every sample payload, into Close, with the real worker', () => {
  let worker: { stop(): Promise<void> };
  const codes: Record<string, string> = {};

  beforeAll(async () => {
    for (const platform of PLATFORMS) codes[platform] = (await closeSource(`closeE2e${platform}01`, { apiKey: KEY }, EVERY_OPTION, platform)).code;
    worker = await startTestWorker(ctx.db.url, { urls: { CLOSE: close.url } });
  });

  afterAll(async () => {
    await worker?.stop();
  });

  const samples = PLATFORMS.flatMap((platform) => sampleFiles(platform).map((file) => [platform, file, readSample(platform, file)] as const));

  it('writes each of them: a contact found or created, an activity, a task; no email Close would send', async () => {
    const requestIds: number[] = [];
    for (const [platform, , body] of samples) requestIds.push(await ingest(codes[platform]!, body));

    const rows = await outcomes(requestIds);

    expect(rows.filter((r) => r.status === 'error')).toEqual([]);
    const written = await ctx.db.query<{ crm_state: Record<string, unknown>; event_type: string }>(
      'SELECT crm_state, event_type FROM syncs WHERE request_id = ANY($1::bigint[])',
      [requestIds],
    );
    for (const { crm_state: state, event_type: type } of written) {
      expect(close.contacts.has(String(state.contactId)), type).toBe(true);
      expect(close.activities.get(String(state.activityId))?.contact_id, type).toBe(state.contactId);
      expect(close.tasks.has(String(state.taskId)), type).toBe(true);
    }
    const emails = [...close.activities.values()].filter((a) => a._type === 'Email');
    expect(new Set(emails.map((a) => a.status))).toEqual(new Set(['sent', 'inbox']));
    expect(close.mailSent).toEqual([]);
  }, 60_000);

  it('records a refused API key as an error without the key, and marks the pipeline failing once with sync.failed', async () => {
    const { code, connectionId, sourceId } = await closeSource('closeRevokedKey01', { apiKey: 'revoked-close-key' });
    const body = readSample('smartlead', 'EMAIL_SENT.json');

    const first = await outcomes([await ingest(code, body)]);
    const second = await outcomes([await ingest(code, body)]);

    for (const [row] of [first, second]) {
      expect(row?.status).toBe('error');
      expect(JSON.stringify(row?.error)).not.toContain('revoked-close-key');
    }
    const events = await ctx.db.query<{ type: string; data: Record<string, unknown> }>('SELECT type, data FROM platform_events WHERE source_id = $1', [
      sourceId,
    ]);
    expect(events).toEqual([
      {
        type: 'sync.failed',
        data: { connectionId, crm: 'CLOSE', sourceId, sourcePlatform: 'smartlead', reason: 'crm_authentication_failed', remediation: expect.any(String) },
      },
    ]);
  }, 60_000);
});

describe('a 429 from Close', () => {
  let workers: ServiceProcess[] = [];

  beforeAll(async () => {
    const env = {
      DATABASE_URL: ctx.db.url,
      ENCRYPTION_KEY: TEST_ENCRYPTION_KEY.toString('hex'),
      OUTBOUND_ALLOW_PRIVATE: 'true',
      CLOSE_BASE_URL: close.url,
      LOG_LEVEL: 'info',
    };
    workers = [startService('worker', env), startService('worker', env)];
    await Promise.all(workers.map((w) => w.waitFor('"msg":"started"')));
  }, 60_000);

  afterAll(async () => {
    await Promise.all(workers.map((w) => w.stop()));
  });

  it('pauses the connection for both worker processes until its Retry-After', async () => {
    const { code } = await closeSource('closePaused01', { apiKey: KEY }, { createOrUpdateTask: true });
    const first = close.requests.length;
    close.failNext(1, { status: 429, retryAfter: 3, path: '/api/v1/' });

    const requestIds: number[] = [];
    for (let i = 0; i < 4; i += 1) {
      const body = JSON.stringify({ event_type: 'EMAIL_SENT', to_email: `paused-${i}@prospect.test`, subject: 'Hello', sent_message: { text: 'Hi' } });
      requestIds.push(await ingest(code, body));
    }
    const rows = await outcomes(requestIds);

    expect(rows.map((r) => r.status)).toEqual(requestIds.map(() => 'success'));
    const calls = close.requests.slice(first).filter((r) => r.path.startsWith('/api/v1/'));
    const refused = calls.findIndex((r) => r.status === 429);
    expect(refused).toBeGreaterThanOrEqual(0);
    const at = calls[refused]!.at;
    // A call the other worker had already sent may land a moment later; none starts until the Retry-After has passed.
    expect(calls.filter((r) => r.at > at + 250 && r.at < at + 2_900)).toEqual([]);
    expect(calls.some((r) => r.at >= at + 2_900)).toBe(true);
  }, 60_000);
});

describe('a worker killed in the middle of a round', () => {
  const CAMPAIGN: Campaign = { leads: 12, leadsPerCompany: 3, tag: 'closecrash', sender: 'rep@seller.test' };
  const EVENTS = CAMPAIGN.leads * EVENTS_PER_LEAD;
  /** The round's first calls: the users, the shared search, the companies' searches and the first creates. */
  const CALLS = 12;
  const PHASES = ['before', 'unanswered', 'answered'] as const;

  it('loses nothing and writes nothing in Close twice', async () => {
    // Setup: a campaign's events (five per lead, in waves), all waiting for the worker.
    const { code } = await closeSource('closeCrash01', { apiKey: KEY });
    const requestIds: number[] = [];
    for (const body of campaignBodies(CAMPAIGN)) requestIds.push(await ingest(code, body));
    const point = killPoint('Close call and phase', 1, CALLS * PHASES.length);
    const [call, phase] = [Math.ceil(point / PHASES.length), PHASES[point % PHASES.length]!];
    const victim = startService('worker', {
      DATABASE_URL: ctx.db.url,
      ENCRYPTION_KEY: TEST_ENCRYPTION_KEY.toString('hex'),
      CLOSE_BASE_URL: close.url,
      OUTBOUND_ALLOW_PRIVATE: 'true',
      LOG_LEVEL: 'info',
    });
    close.interceptNth(call, phase, () => victim.child.kill('SIGKILL'));

    // Action: the worker dies at that call; another takes over.
    await victim.exited;
    const rescuer = await startTestWorker(ctx.db.url, { urls: { CLOSE: close.url } }, { staleAfterMs: 1_000 });
    let rows: Awaited<ReturnType<typeof outcomes>>;
    try {
      rows = await outcomes(requestIds, 60_000);
    } finally {
      await rescuer.stop();
    }

    // Assertions: one outcome per request, and every Close object once.
    expect(rows.filter((r) => r.status !== 'success' || r.n !== '1')).toEqual([]);
    const contacts = [...close.contacts.values()].filter((c) => c.emails[0]?.email.startsWith('lead-closecrash-'));
    expect(contacts).toHaveLength(CAMPAIGN.leads);
    const leads = new Set(contacts.map((c) => c.lead_id));
    expect(leads.size).toBe(campaignCompanies(CAMPAIGN));
    const ours = new Set(contacts.map((c) => c.id));
    expect([...close.activities.values()].filter((a) => ours.has(String(a.contact_id)))).toHaveLength(EVENTS);
    expect([...close.tasks.values()].filter((t) => ours.has(String(t.contact_id)))).toHaveLength(EVENTS);
    expect(close.mailSent).toEqual([]);
  }, 120_000);
});
