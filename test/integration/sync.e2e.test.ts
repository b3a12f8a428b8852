/**
 * From a sequencer's POST to a record in the CRM: every sample payload of every platform goes in at the
 * ingress and comes out as CRM writes on the emulators (real HTTP) and a sync row visible through
 * GET /api/v1/syncs, with the real worker in between.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readSample, sampleFiles } from '../../src/connectors/sequencers/samples.js';
import { openSecret, sealSecret } from '../../src/domain/secrets.js';
import { syncsDrain } from '../../src/jobs/syncs__drain.js';
import { startHubspotEmulator, type HubspotEmulator } from '../../src/emulators/hubspot.js';
import { startSalesforceEmulator, type SalesforceEmulator } from '../../src/emulators/salesforce.js';
import { INGRESS, seedTestAccounts, type TestKeys } from '../support/accounts.js';
import { TEST_ENCRYPTION_KEY } from '../support/database.js';
import { apiFetch } from '../support/openapi.js';
import { apiGet, around } from '../support/rest.js';
import { useTestServer } from '../support/server.js';
import { eventually, startTestWorker } from '../support/worker.js';

const ctx = useTestServer();
const PLATFORMS = ['smartlead', 'instantly', 'heyreach', 'lemlist'] as const;

let hubspot: HubspotEmulator;
let salesforce: SalesforceEmulator;
let worker: { stop(): Promise<void> };
let keys: TestKeys;
let hubspotConnection: number;
let salesforceConnection: number;
/** An ingress code per platform on the HubSpot connection, and one per platform on Salesforce. */
const codes: Record<string, { hubspot: string; salesforce: string }> = {};

beforeAll(async () => {
  const ids = await seedTestAccounts(ctx.db.prisma);
  keys = ids.keys;
  hubspotConnection = ids.connections['acme-hubspot']!;
  salesforceConnection = ids.connections['acme-salesforce']!;
  hubspot = await startHubspotEmulator({ accessToken: 'e2e-hubspot-token' });
  salesforce = await startSalesforceEmulator({ accessToken: 'e2e-sf-token' });
  const seal = (credentials: unknown) => sealSecret(TEST_ENCRYPTION_KEY, JSON.stringify(credentials));
  await ctx.db.prisma.connection.update({ where: { id: hubspotConnection }, data: { credentialsEncrypted: seal({ accessToken: 'e2e-hubspot-token' }) } });
  await ctx.db.prisma.connection.update({
    where: { id: salesforceConnection },
    data: { credentialsEncrypted: seal({ instanceUrl: salesforce.instanceUrl, accessToken: 'e2e-sf-token' }) },
  });
  for (const platform of PLATFORMS) {
    codes[platform] = { hubspot: `e2eHubspot${platform}01`, salesforce: `e2eSalesforce${platform}01` };
    await ctx.db.prisma.source.create({ data: { connectionId: hubspotConnection, platform, ingressCode: codes[platform].hubspot } });
    await ctx.db.prisma.source.create({ data: { connectionId: salesforceConnection, platform, ingressCode: codes[platform].salesforce } });
  }
  worker = await startTestWorker(ctx.db.url, { urls: { HUBSPOT: hubspot.url, SALESFORCE: salesforce.loginUrl } });
});

afterAll(async () => {
  await worker?.stop();
  await hubspot?.close();
  await salesforce?.close();
});

async function ingest(code: string, body: string): Promise<number> {
  const res = await fetch(`${ctx.server.baseUrl}/webhooks/${code}`, { method: 'POST', body, headers: { 'content-type': 'application/json' } });
  expect(res.status).toBe(200);
  return ((await res.json()) as { requestId: number }).requestId;
}

interface SyncOutcome {
  id: string;
  status: string;
  event_type: string;
  to_email: string;
  error: unknown;
}

function outcomeOf(requestId: number, ms = 20_000): Promise<SyncOutcome> {
  return eventually(
    async () => {
      const [row] = await ctx.db.query<SyncOutcome>('SELECT id, status, event_type, to_email, error FROM syncs WHERE request_id = $1 AND status IS NOT NULL', [
        requestId,
      ]);
      return row;
    },
    ms,
    `the sync of request ${requestId}`,
  );
}

const samples = PLATFORMS.flatMap((platform) => sampleFiles(platform).map((file) => [platform, file, readSample(platform, file)] as const));

describe('every sample payload, into HubSpot', () => {
  it.each(samples)('%s %s', async (platform, _file, body) => {
    const before = { contacts: hubspot.contacts.size, activities: hubspot.emails.size + hubspot.notes.size };

    const requestId = await ingest(codes[platform]!.hubspot, body);
    const sync = await outcomeOf(requestId);

    expect(sync.status, JSON.stringify(sync.error)).toBe('success');
    expect(sync.event_type).toMatch(/^[A-Z_]+$/);
    expect(sync.to_email).not.toBe('');
    // The contact exists under its identity, and the event was logged against it.
    const contact = [...hubspot.contacts.values()].find((c) => c.properties.email === sync.to_email || c.properties.hs_linkedin_url === sync.to_email);
    expect(contact, `contact ${sync.to_email}`).toBeDefined();
    expect(hubspot.contacts.size - before.contacts).toBeLessThanOrEqual(1);
    expect(hubspot.emails.size + hubspot.notes.size).toBeGreaterThan(before.activities);
    // What the CRM steps created is stored with the outcome, for any later run of this sync.
    const [stored] = await ctx.db.query<{ crm_state: Record<string, unknown> }>('SELECT crm_state FROM syncs WHERE id = $1', [sync.id]);
    expect(stored?.crm_state).toMatchObject({ contactId: contact?.id, activityId: expect.any(String) });
    expect(stored?.crm_state).not.toHaveProperty('activityPending');
    // And the sync is visible through the API.
    const page = await apiGet(ctx.server.baseUrl, `/syncs?${around()}&connectionId=${hubspotConnection}&limit=500`, keys.acmeRead);
    expect(page.body.data.find((s: { id: number }) => s.id === Number(sync.id))).toMatchObject({
      status: 'success',
      eventType: sync.event_type,
      toEmail: sync.to_email,
      platform,
    });
  });
});

describe('into Salesforce', () => {
  it.each(samples.filter(([, file]) => /SENT|Sent|sent/.test(file)))('%s %s', async (platform, _file, body) => {
    const requestId = await ingest(codes[platform]!.salesforce, body);
    const sync = await outcomeOf(requestId);
    expect(sync.status, JSON.stringify(sync.error)).toBe('success');
  });
});

describe('failures are recorded, never dropped', () => {
  it('records a payload that cannot be read as an error that says why', async () => {
    const requestId = await ingest(codes.smartlead!.hubspot, '{"event_type":"EMAIL_SENT","campaign_name":"no lead in here"}');
    const sync = await outcomeOf(requestId);
    expect(sync.status).toBe('error');
    expect(sync.error).toMatchObject({ message: expect.stringMatching(/^The payload could not be read: /) });
  });

  it('records the CRM refusing the credentials, with its answer, and marks the pipeline failing once', async () => {
    const code = 'e2eRevokedHubspot01';
    const connection = await ctx.db.prisma.connection.create({
      data: {
        accountId: (await ctx.db.prisma.connection.findUniqueOrThrow({ where: { id: hubspotConnection } })).accountId,
        crm: 'HUBSPOT',
        credentialsEncrypted: sealSecret(TEST_ENCRYPTION_KEY, JSON.stringify({ accessToken: 'revoked-token' })),
      },
    });
    const source = await ctx.db.prisma.source.create({ data: { connectionId: connection.id, platform: 'smartlead', ingressCode: code } });
    const body = readSample('smartlead', 'EMAIL_SENT.json');

    for (let i = 0; i < 2; i += 1) {
      const sync = await outcomeOf(await ingest(code, body));
      expect(sync.status).toBe('error');
      expect(JSON.stringify(sync.error)).not.toContain('revoked-token');
    }

    const events = await ctx.db.query<{ type: string; data: Record<string, unknown> }>('SELECT type, data FROM platform_events WHERE source_id = $1', [
      source.id,
    ]);
    expect(events).toEqual([
      {
        type: 'sync.failed',
        data: {
          connectionId: connection.id,
          crm: 'HUBSPOT',
          sourceId: source.id,
          sourcePlatform: 'smartlead',
          reason: 'crm_authentication_failed',
          remediation: expect.any(String),
        },
      },
    ]);
  });
});

describe('a failure no retry changes (issue 20)', () => {
  it('records the sync as an error after three runs, with a readable message, counted in the pipeline health', async () => {
    // Setup: PostgreSQL refuses this lead's sync row every time, as it refused values it cannot hold.
    await ctx.db.query(`CREATE FUNCTION refuse_poison() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN IF NEW.to_email = 'poison@prospect.test' THEN RAISE EXCEPTION 'value refused for the test' USING ERRCODE = '22023'; END IF; RETURN NEW; END $$`);
    await ctx.db.query('CREATE TRIGGER refuse_poison BEFORE INSERT OR UPDATE ON syncs FOR EACH ROW EXECUTE FUNCTION refuse_poison()');
    try {
      const sent = JSON.parse(readSample('smartlead', 'EMAIL_SENT.json')) as Record<string, unknown>;
      const started = Date.now();
      // Action
      const requestId = await ingest(
        codes.smartlead!.hubspot,
        JSON.stringify({ ...sent, to_email: 'poison@prospect.test', sl_lead_email: 'poison@prospect.test' }),
      );
      const sync = await outcomeOf(requestId, 40_000);
      // Assertions
      expect(sync.status).toBe('error');
      expect(sync.error).toEqual({
        message: 'The sync failed on our side and will not be retried automatically: value refused for the test',
      });
      expect(Date.now() - started).toBeLessThan(40_000);
      expect(await ctx.db.query('SELECT 1 FROM pending_syncs WHERE request_id = $1', [requestId])).toEqual([]);
      const [health] = await ctx.db.query<{ last_reason: string }>(
        'SELECT last_reason FROM pipeline_health h JOIN requests r ON r.source_id = h.source_id WHERE r.id = $1',
        [requestId],
      );
      expect(health?.last_reason).toBe('internal_error');
    } finally {
      await ctx.db.query('DROP TRIGGER refuse_poison ON syncs');
      await ctx.db.query('DROP FUNCTION refuse_poison()');
    }
  }, 60_000);
});

describe('outside text PostgreSQL cannot hold (issue 20)', () => {
  it('accepts escaped NULs and lone surrogates in values and keys, records the sync, and writes U+FFFD where they were', async () => {
    const sent = JSON.parse(readSample('smartlead', 'EMAIL_SENT.json')) as Record<string, unknown>;
    // JSON's escapes, as a sequencer would send them: the raw body is plain ASCII.
    const body = JSON.stringify({ ...sent, to_name: 'Nul\u0000Name', subject: 'Half \ud800 a pair', 'key\u0000with nul': 'x' });
    expect(body).toContain('\\u0000');
    const sync = await outcomeOf(await ingest(codes.smartlead!.hubspot, body));
    expect(sync.status, JSON.stringify(sync.error)).toBe('success');
    const contact = [...hubspot.contacts.values()].find((c) => c.properties.email === sent.to_email);
    expect(JSON.stringify(contact?.properties)).not.toMatch(/\\u0000/);
  });

  it('stores a CRM answer that carries a NUL as the sync error', async () => {
    // A connection of its own, so the refusal meets this sync's call and no other test's.
    const token = 'nul-answer-hubspot-token';
    hubspot.accessTokens.add(token);
    const hubspotConnectionRow = await ctx.db.prisma.connection.findUniqueOrThrow({ where: { id: hubspotConnection } });
    const connection = await ctx.db.prisma.connection.create({
      data: {
        accountId: hubspotConnectionRow.accountId,
        crm: 'HUBSPOT',
        credentialsEncrypted: sealSecret(TEST_ENCRYPTION_KEY, JSON.stringify({ accessToken: token })),
      },
    });
    await ctx.db.prisma.source.create({ data: { connectionId: connection.id, platform: 'smartlead', ingressCode: 'e2eNulAnswer000001' } });
    hubspot.failNext(1, { status: 400, token, body: { status: 'error', category: 'VALIDATION_ERROR', message: 'Property value\u0000 is invalid' } });
    const sync = await outcomeOf(await ingest('e2eNulAnswer000001', readSample('smartlead', 'EMAIL_SENT.json')));
    expect(sync.status).toBe('error');
    expect(JSON.stringify(sync.error)).toContain('Property value\ufffd is invalid');
  });
});

describe('lead category signals', () => {
  it('stores the category of a LEAD_CATEGORY_UPDATED once per request, even when its job runs again', async () => {
    const body = readSample('smartlead', 'LEAD_CATEGORY_UPDATED.json');
    const requestId = await ingest(codes.smartlead!.hubspot, body);
    expect((await outcomeOf(requestId)).status).toBe('success');
    // The sync again, as after a crash between its steps: the recorded outcome ends it, nothing is added.
    const [{ connection_id: connectionId } = { connection_id: 0 }] = await ctx.db.query<{ connection_id: number }>(
      'INSERT INTO pending_syncs (request_id, connection_id) SELECT id, connection_id FROM requests WHERE id = $1 RETURNING connection_id',
      [requestId],
    );
    await ctx.db.query("SELECT graphile_worker.add_job($1, json_build_object('connectionId', $2::int))", [syncsDrain.identifier, connectionId]);
    await eventually(
      async () => {
        const [row] = await ctx.db.query<{ n: string }>(
          'SELECT (SELECT count(*) FROM pending_syncs WHERE request_id = $2) + (SELECT count(*) FROM graphile_worker._private_jobs j JOIN graphile_worker._private_tasks t ON t.id = j.task_id WHERE t.identifier = $1) AS n',
          [syncsDrain.identifier, requestId],
        );
        return row?.n === '0' ? true : undefined;
      },
      10_000,
      'the outbox and the job queue to drain',
    );
    const signals = await ctx.db.query('SELECT platform, contact, category_id, category_name FROM lead_category_signals WHERE request_id = $1', [requestId]);
    expect(signals).toEqual([{ platform: 'smartlead', contact: 'jane@acme.test', category_id: '1', category_name: 'Interested' }]);
  });
});

describe("an older release's job per event (a rolling deploy)", () => {
  it('moves its request into the sync outbox, and the drain writes it', async () => {
    // Setup: a request an older ingress stored with a syncs__run job, and no waiting sync.
    const body = readSample('smartlead', 'EMAIL_SENT.json');
    const requestId = await ingest(codes.smartlead!.hubspot, body);
    await outcomeOf(requestId);
    const [again] = await ctx.db.query<{ id: string }>(
      // An older release kept the body on the request row.
      `INSERT INTO requests (account_id, source_id, connection_id, path, body)
       SELECT r.account_id, r.source_id, r.connection_id, r.path, b.body FROM requests r JOIN request_bodies b ON b.request_id = r.id WHERE r.id = $1 RETURNING id`,
      [requestId],
    );

    // Action
    await ctx.db.query("SELECT graphile_worker.add_job('syncs__run', json_build_object('requestId', $1::bigint))", [again!.id]);

    // Assertions
    expect((await outcomeOf(Number(again!.id))).status).toBe('success');
  });
});

describe('pipeline health under concurrent syncs', () => {
  it('counts every error of a burst once, announces the failure once, and the recovery once', async () => {
    const code = 'e2eBurstHubspot01';
    const source = await ctx.db.prisma.source.create({ data: { connectionId: hubspotConnection, platform: 'smartlead', ingressCode: code } });
    const unreadable = '{"event_type":"EMAIL_SENT","campaign_name":"no lead in here"}';

    // Twelve at once: the worker records them in shared batches, and each one counts.
    const burst = await Promise.all(Array.from({ length: 12 }, () => ingest(code, unreadable)));
    for (const requestId of burst) expect((await outcomeOf(requestId)).status).toBe('error');
    const health = () =>
      ctx.db.query<{ state: string; consecutive_errors: number }>('SELECT state, consecutive_errors FROM pipeline_health WHERE source_id = $1', [source.id]);
    expect(await health()).toEqual([{ state: 'failing', consecutive_errors: 12 }]);

    const good = await Promise.all(Array.from({ length: 3 }, () => ingest(code, readSample('smartlead', 'EMAIL_SENT.json'))));
    for (const requestId of good) expect((await outcomeOf(requestId)).status).toBe('success');
    expect(await health()).toEqual([{ state: 'healthy', consecutive_errors: 0 }]);

    const events = await ctx.db.query<{ type: string; reason: string | null }>(
      "SELECT type, data->>'reason' AS reason FROM platform_events WHERE source_id = $1 ORDER BY id",
      [source.id],
    );
    expect(events).toEqual([
      { type: 'sync.failed', reason: 'payloads_unreadable' },
      { type: 'sync.recovered', reason: null },
    ]);
  });

  it('creates a pipeline health row once, not an id per batch', async () => {
    const code = 'e2eHealthIdsHubspot01';
    await ctx.db.prisma.source.create({ data: { connectionId: hubspotConnection, platform: 'smartlead', ingressCode: code } });
    const body = readSample('smartlead', 'EMAIL_OPEN.json');
    const sequence = async () => Number((await ctx.db.query<{ last: string }>('SELECT last_value AS last FROM pipeline_health_id_seq'))[0]!.last);
    const before = await sequence();

    // One after another: each sync is recorded in a batch of its own.
    for (let i = 0; i < 5; i += 1) expect((await outcomeOf(await ingest(code, body))).status).toBe('success');

    expect(await sequence()).toBe(before + 1);
  });
});

describe('POST /api/v1/syncs/:id/retry', () => {
  const retry = (id: string | number, key: string) =>
    apiFetch(`${ctx.server.baseUrl}/api/v1/syncs/${id}/retry`, { method: 'POST', headers: { authorization: `Bearer ${key}` } });

  it('needs the write scope, checked before the sync is looked up', async () => {
    for (const id of ['1', '999999999', 'abc']) {
      const res = await retry(id, keys.acmeRead);
      expect(res.status, id).toBe(403);
      expect(res.body).toEqual({ statusCode: 403, message: 'API key requires the "write" scope', error: 'Forbidden' });
    }
  });

  it("answers 404 for a missing sync or another account's", async () => {
    expect((await retry(999999999, keys.acmeWrite)).body).toEqual({ statusCode: 404, message: 'Sync 999999999 not found', error: 'Not Found' });
    const globexSource = await ctx.db.prisma.source.findFirstOrThrow({ where: { ingressCode: INGRESS.globexLemlist } });
    const [other] = await ctx.db.query<{ id: string }>('SELECT id FROM syncs WHERE source_id = $1 LIMIT 1', [globexSource.id]);
    const id = other?.id ?? (await outcomeOf(await ingest(INGRESS.globexLemlist, readSample('lemlist', 'emailsSent.json')))).id;
    expect((await retry(id, keys.acmeWrite)).status).toBe(404);
  });

  it('answers 409 for a sync that is not an error', async () => {
    const sync = await outcomeOf(await ingest(codes.smartlead!.hubspot, readSample('smartlead', 'EMAIL_OPEN.json')));
    expect(sync.status).toBe('success');
    expect((await retry(sync.id, keys.acmeWrite)).body).toEqual({ statusCode: 409, message: 'Sync is not eligible for retry', error: 'Conflict' });
  });

  it('answers 409 for a CRM without sync retry', async () => {
    const account = (await ctx.db.prisma.connection.findUniqueOrThrow({ where: { id: hubspotConnection } })).accountId;
    const connection = await ctx.db.prisma.connection.create({ data: { accountId: account, crm: 'PIPEDRIVE' } });
    const source = await ctx.db.prisma.source.create({ data: { connectionId: connection.id, platform: 'smartlead', ingressCode: 'e2ePipedriveSource01' } });
    const sync = await outcomeOf(await ingest('e2ePipedriveSource01', readSample('smartlead', 'EMAIL_SENT.json')));
    expect(sync).toMatchObject({ status: 'error', error: { message: 'Writing to PIPEDRIVE is not supported' } });
    expect((await retry(sync.id, keys.acmeWrite)).status).toBe(409);
    await ctx.db.prisma.source.delete({ where: { id: source.id } });
  });

  it('re-runs a failed sync once the cause is fixed, keeps its id, and announces the recovery', async () => {
    const account = (await ctx.db.prisma.connection.findUniqueOrThrow({ where: { id: hubspotConnection } })).accountId;
    const connection = await ctx.db.prisma.connection.create({
      data: { accountId: account, crm: 'HUBSPOT', credentialsEncrypted: sealSecret(TEST_ENCRYPTION_KEY, JSON.stringify({ accessToken: 'not-yet-valid' })) },
    });
    const source = await ctx.db.prisma.source.create({ data: { connectionId: connection.id, platform: 'smartlead', ingressCode: 'e2eRetrySource01' } });
    const failed = await outcomeOf(await ingest('e2eRetrySource01', readSample('smartlead', 'EMAIL_REPLY.json')));
    expect(failed.status).toBe('error');
    // The customer reconnects: the CRM now accepts the token.
    hubspot.accessTokens.add('not-yet-valid');

    const res = await retry(failed.id, keys.acmeWrite);

    expect(res.status).toBe(200);
    expect(res.body).toEqual({ queued: true, syncId: Number(failed.id) });
    const recovered = await eventually(async () => {
      const [row] = await ctx.db.query<SyncOutcome>("SELECT id, status, event_type, to_email, error FROM syncs WHERE id = $1 AND status <> 'error'", [
        failed.id,
      ]);
      return row;
    });
    expect(recovered).toMatchObject({ status: 'success', error: null });
    expect(await ctx.db.query('SELECT count(*)::int AS n FROM syncs WHERE source_id = $1', [source.id])).toEqual([{ n: 1 }]);
    const events = await ctx.db.query<{ type: string }>('SELECT type FROM platform_events WHERE source_id = $1 ORDER BY id', [source.id]);
    expect(events.map((e) => e.type)).toEqual(['sync.failed', 'sync.recovered']);
  });
});

// Last in this file: it expires every Salesforce session of the emulator.
describe('OAuth refresh under concurrency', () => {
  it('refreshes once for a burst of Salesforce syncs that all find the session expired, and stores the rotated refresh token', async () => {
    const account = (await ctx.db.prisma.connection.findUniqueOrThrow({ where: { id: salesforceConnection } })).accountId;
    const credentials = {
      instanceUrl: salesforce.instanceUrl,
      accessToken: 'e2e-sf-token',
      refreshToken: 'sf-refresh-initial',
      clientId: salesforce.clientId,
      clientSecret: salesforce.clientSecret,
    };
    const connection = await ctx.db.prisma.connection.create({
      data: { accountId: account, crm: 'SALESFORCE', credentialsEncrypted: sealSecret(TEST_ENCRYPTION_KEY, JSON.stringify(credentials)) },
    });
    await ctx.db.prisma.source.create({ data: { connectionId: connection.id, platform: 'smartlead', ingressCode: 'e2eRefreshBurst01' } });
    salesforce.rotateRefreshTokens = true;
    salesforce.expireAccessTokens();
    const refreshesBefore = salesforce.tokenRefreshes.length;
    const body = readSample('smartlead', 'EMAIL_SENT.json');

    // Twenty at once: they run side by side in the worker, and each one meets the expired session.
    const requests = await Promise.all(Array.from({ length: 20 }, () => ingest('e2eRefreshBurst01', body)));
    for (const requestId of requests) {
      const sync = await outcomeOf(requestId);
      expect(sync.status, JSON.stringify(sync.error)).toBe('success');
    }

    // One refresh-token grant: a second one with the rotated-away token would have been refused.
    expect(salesforce.tokenRefreshes.length - refreshesBefore).toBe(1);
    const [row] = await ctx.db.query<{ sealed: string }>('SELECT credentials_encrypted AS sealed FROM connections WHERE id = $1', [connection.id]);
    const stored = JSON.parse(openSecret(TEST_ENCRYPTION_KEY, row!.sealed)) as typeof credentials;
    expect(stored.refreshToken).not.toBe('sf-refresh-initial');
    expect(salesforce.refreshTokens.has(stored.refreshToken)).toBe(true);
    expect(salesforce.accessTokens.has(stored.accessToken)).toBe(true);
  });
});
