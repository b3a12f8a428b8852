import { execFile } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { promisify } from 'node:util';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { DEMO_FIXTURE } from '../../src/admin/demo.js';
import { FixtureError } from '../../src/admin/fixture.js';
import { seedFixture } from '../../src/admin/seed.js';
import { hashApiKey, openSecret } from '../../src/domain/secrets.js';
import { createTestDatabase, TEST_ENCRYPTION_KEY, type TestDatabase } from '../support/database.js';
import { childEnv, tsxCommand } from '../support/processes.js';

const run = promisify(execFile);
let db: TestDatabase;
let demo: { accounts: Array<Record<string, unknown>> };

beforeEach(async () => {
  db = await createTestDatabase();
  demo = JSON.parse(await readFile(DEMO_FIXTURE, 'utf8'));
});
afterEach(async () => {
  await db.drop();
});

const TABLES = [
  'accounts',
  'connections',
  'sources',
  'destinations',
  'destination_bindings',
  'reply_relays',
  'blocklists',
  'blocklist_entries',
  'api_keys',
  'webhook_endpoints',
  'requests',
  'syncs',
  'deliveries',
] as const;

async function rowCounts(): Promise<Record<string, number>> {
  const counts: Record<string, number> = {};
  for (const table of TABLES) counts[table] = Number((await db.query<{ n: string }>(`SELECT count(*) AS n FROM ${table}`))[0]!.n);
  return counts;
}

/** Sequencer API keys the fixture below stores; none may ever be readable in the database. */
const SEQUENCER_KEYS = { smartlead: 'smartlead-test-key-0123456789abcdef', instantly: 'instantly-test-key-0123456789abcdef' } as const;

/** One connection of each kind of CRM setting: HubSpot and Salesforce with rate limits and sourced lists, one with neither. */
function crmSettingsFixture() {
  return {
    accounts: [
      {
        connections: [
          {
            ref: 'hubspot',
            crm: 'HUBSPOT',
            crmRateLimit: { requestsPer10s: 150 },
            blocklists: [
              {
                ref: 'hubspot-domains',
                listName: 'Customers',
                platform: 'smartlead',
                blockType: 'DOMAIN',
                crmSource: { listId: 101 },
                sequencer: { apiKey: SEQUENCER_KEYS.smartlead, clientId: 4242 },
              },
            ],
          },
          {
            ref: 'salesforce',
            crm: 'SALESFORCE',
            crmRateLimit: { maxConcurrency: 5 },
            blocklists: [
              {
                ref: 'salesforce-leads',
                listName: 'Opted out',
                platform: 'instantly',
                blockType: 'ADDRESS',
                crmSource: { object: 'Lead' },
                sequencer: { apiKey: SEQUENCER_KEYS.instantly },
              },
            ],
          },
          {
            ref: 'plain',
            crm: 'HUBSPOT',
            blocklists: [{ ref: 'manual', listName: 'Manual', platform: 'lemlist', blockType: 'ADDRESS', hasCrmSource: false }],
          },
        ],
      },
    ],
  };
}

describe('seedFixture with a valid fixture', () => {
  it('writes every entity and maps every ref to its id', async () => {
    const result = await seedFixture(db.prisma, demo, TEST_ENCRYPTION_KEY);

    expect(result.accounts).toEqual({ acme: expect.any(Number), globex: expect.any(Number) });
    expect(Object.keys(result.connections)).toEqual(['acme-hubspot', 'acme-salesforce', 'acme-close', 'acme-attio', 'acme-old-pipedrive', 'globex-hubspot']);
    expect(Object.keys(result.sources)).toEqual([
      'acme-smartlead',
      'acme-heyreach',
      'acme-instantly',
      'acme-close-smartlead',
      'acme-attio-heyreach',
      'globex-lemlist',
    ]);
    expect(Object.keys(result.destinations)).toEqual(['acme-crm-mirror', 'acme-replies-slack']);
    expect(Object.keys(result.replyRelays)).toEqual(['acme-rep']);
    expect(Object.keys(result.blocklists)).toEqual(['acme-domains', 'acme-addresses', 'acme-close-unsubscribed']);
    expect(Object.keys(result.apiKeys)).toEqual(['acme-read', 'acme-write', 'acme-hubspot-only', 'acme-revoked', 'globex-read']);
    expect(result.webhookEndpoints['acme-ops']).toMatch(/^svcwh_[A-Za-z0-9]{24}$/);
    expect(await rowCounts()).toEqual({
      accounts: 2,
      connections: 6,
      sources: 6,
      destinations: 2,
      destination_bindings: 2,
      reply_relays: 1,
      blocklists: 3,
      blocklist_entries: 2,
      api_keys: 5,
      webhook_endpoints: 1,
      requests: 5,
      syncs: 5,
      deliveries: 3,
    });
    // The SYNCED list's entries are already on the sequencer.
    expect(await db.query('SELECT count(*)::int AS n FROM blocklist_entries WHERE pushed_at IS NOT NULL')).toEqual([{ n: 2 }]);
    const source = await db.prisma.source.findUniqueOrThrow({ where: { id: result.sources['acme-smartlead']! } });
    expect(source).toMatchObject({
      ingressCode: 'demoSmartleadAcme01',
      createOrUpdateCompany: true,
      createOrUpdateTask: true,
      replyRelayId: result.replyRelays['acme-rep'],
    });
    const legacy = await db.prisma.source.findUniqueOrThrow({ where: { id: result.sources['acme-heyreach']! } });
    expect([legacy.legacyId1, legacy.legacyId2]).toEqual(['demoLegacyAcme', 'heyreach01']);
    const deleted = await db.prisma.connection.findUniqueOrThrow({ where: { id: result.connections['acme-old-pipedrive']! } });
    expect(deleted.deletedAt).toBeInstanceOf(Date);
  });

  it('stores secrets only sealed or hashed', async () => {
    const result = await seedFixture(db.prisma, demo, TEST_ENCRYPTION_KEY);

    const connection = await db.prisma.connection.findUniqueOrThrow({ where: { id: result.connections['acme-hubspot']! } });
    expect(connection.credentialsEncrypted).not.toContain('demo-hubspot-access-token');
    expect(JSON.parse(openSecret(TEST_ENCRYPTION_KEY, connection.credentialsEncrypted!))).toEqual({
      accessToken: 'demo-hubspot-access-token',
      refreshToken: 'demo-hubspot-refresh-token',
    });
    const key = await db.prisma.apiKey.findUniqueOrThrow({ where: { id: result.apiKeys['acme-read']! } });
    expect(key.keyHash).toBe(hashApiKey('svcapi_demoReadKeyAcme0000000000000001'));
    expect(key.keyPrefix).toBe('svcapi_demo');
    const dump = JSON.stringify(await db.query('SELECT * FROM api_keys')) + JSON.stringify(await db.query('SELECT * FROM webhook_endpoints'));
    expect(dump).not.toContain('svcapi_demoReadKeyAcme0000000000000001');
    const endpoint = await db.prisma.webhookEndpoint.findFirstOrThrow();
    expect(openSecret(TEST_ENCRYPTION_KEY, endpoint.secretEncrypted)).toBe(result.generatedSecrets['acme-ops']);
    expect(result.generatedSecrets['acme-ops']).toMatch(/^svcwhsec_/);
  });

  it('stores CRM rate limits and CRM sources as written, null when absent', async () => {
    // Setup
    const fixture = crmSettingsFixture();
    // Action
    const result = await seedFixture(db.prisma, fixture, TEST_ENCRYPTION_KEY);
    // Assertions
    expect(await db.query('SELECT id, crm_rate_limit FROM connections ORDER BY id')).toEqual([
      { id: result.connections.hubspot, crm_rate_limit: { requestsPer10s: 150 } },
      { id: result.connections.salesforce, crm_rate_limit: { maxConcurrency: 5 } },
      { id: result.connections.plain, crm_rate_limit: null },
    ]);
    expect(await db.query('SELECT id, has_crm_source, crm_source FROM blocklists ORDER BY id')).toEqual([
      { id: result.blocklists['hubspot-domains'], has_crm_source: true, crm_source: { listId: '101' } },
      // The default opt-out checkbox is stored, so later readers need not know the default.
      { id: result.blocklists['salesforce-leads'], has_crm_source: true, crm_source: { object: 'Lead', field: 'HasOptedOutOfEmail' } },
      { id: result.blocklists['manual'], has_crm_source: false, crm_source: null },
    ]);
  });

  it('stores a sequencer API key only sealed, and its client id in the clear', async () => {
    const result = await seedFixture(db.prisma, crmSettingsFixture(), TEST_ENCRYPTION_KEY);

    const rows = await db.query<{ id: number; client_id: string | null; sequencer_credentials_encrypted: string | null }>(
      'SELECT id, client_id, sequencer_credentials_encrypted FROM blocklists ORDER BY id',
    );
    expect(rows.map((r) => [r.id, r.client_id])).toEqual([
      [result.blocklists['hubspot-domains'], '4242'],
      [result.blocklists['salesforce-leads'], null],
      [result.blocklists['manual'], null],
    ]);
    const [smartlead, instantly, manual] = rows.map((r) => r.sequencer_credentials_encrypted);
    expect(JSON.parse(openSecret(TEST_ENCRYPTION_KEY, smartlead!))).toEqual({ apiKey: SEQUENCER_KEYS.smartlead });
    expect(JSON.parse(openSecret(TEST_ENCRYPTION_KEY, instantly!))).toEqual({ apiKey: SEQUENCER_KEYS.instantly });
    expect(manual).toBeNull();
    // Each seal has its own IV: equal keys never give equal envelopes.
    expect(smartlead).not.toBe(instantly);
    const dump = (await Promise.all(TABLES.map(async (table) => JSON.stringify(await db.query(`SELECT * FROM ${table}`))))).join('\n');
    expect(dump).not.toContain(SEQUENCER_KEYS.smartlead);
    expect(dump).not.toContain(SEQUENCER_KEYS.instantly);
  });

  it('keys are scoped, revoked and given scopes as the fixture says', async () => {
    const result = await seedFixture(db.prisma, demo, TEST_ENCRYPTION_KEY);

    const keys = await db.prisma.apiKey.findMany({ orderBy: { id: 'asc' } });
    const byName = Object.fromEntries(keys.map((k) => [k.name, k]));
    expect(byName['Demo read key']).toMatchObject({ scopes: ['read'], connectionScope: 'account', connectionId: null, revokedAt: null });
    expect(byName['Demo write key']).toMatchObject({ scopes: ['read', 'write'] });
    expect(byName['HubSpot-only key']).toMatchObject({ connectionScope: 'connection', connectionId: result.connections['acme-hubspot'] });
    expect(byName['Revoked key']!.revokedAt).toBeInstanceOf(Date);
  });

  it('generates and reports a key that the fixture leaves out', async () => {
    const result = await seedFixture(
      db.prisma,
      { accounts: [{ ref: 'a', apiKeys: [{ name: 'no ref' }, { ref: 'k', name: 'with ref' }] }] },
      TEST_ENCRYPTION_KEY,
    );

    expect(result.generatedSecrets).toEqual({
      'accounts[0].apiKeys[0]': expect.stringMatching(/^svcapi_[A-Za-z0-9]{32}$/),
      k: expect.stringMatching(/^svcapi_/),
    });
    const stored = await db.prisma.apiKey.findUniqueOrThrow({ where: { id: result.apiKeys.k! } });
    expect(stored.keyHash).toBe(hashApiKey(result.generatedSecrets.k!));
  });

  it('stores history: request bodies as sent, syncs with a null status kept null, deliveries with the destination URL', async () => {
    await seedFixture(db.prisma, demo, TEST_ENCRYPTION_KEY);

    const statuses = await db.query<{ status: string | null }>('SELECT status FROM syncs ORDER BY id');
    expect(statuses.map((s) => s.status)).toEqual(['success', 'warning', 'error', null, 'success']);
    const request = await db.prisma.request.findFirstOrThrow({ orderBy: { id: 'asc' } });
    const { body } = await db.prisma.requestBody.findFirstOrThrow({ where: { requestId: request.id, createdAt: request.createdAt } });
    expect(JSON.parse(body)).toMatchObject({ event_type: 'EMAIL_SENT', to_email: 'jane@prospect.test' });
    expect(request.path).toBe('demoSmartleadAcme01');
    const delivery = await db.prisma.delivery.findFirstOrThrow({ where: { status: 'error' } });
    expect(delivery).toMatchObject({
      destinationUrl: 'https://hooks.acme.test/replies',
      httpStatus: 502,
      eventType: 'EMAIL_REPLY',
      toEmail: 'jane@prospect.test',
    });
  });
});

describe('seedFixture with an invalid fixture', () => {
  it('writes nothing and names every bad path', async () => {
    // eslint-disable-next-line @typescript-eslint/no-explicit-any -- a deliberately broken copy of the demo, edited freely
    const bad = structuredClone(demo) as any;
    bad.accounts[0].connections[1].crm = 'salesforce';
    bad.accounts[0].connections[0].blocklists[0].blockType = 'EMAIL';
    bad.accounts[0].webhookEndpoints[0].url = 'http://ops.acme.test/events';

    const error = await seedFixture(db.prisma, bad, TEST_ENCRYPTION_KEY).catch((e: unknown) => e);

    expect(error).toBeInstanceOf(FixtureError);
    expect((error as FixtureError).problems).toEqual([
      'accounts[0].connections[0].blocklists[0].blockType: Invalid option: expected one of "ADDRESS"|"DOMAIN"',
      'accounts[0].connections[1].crm: must be an uppercase CRM identifier such as HUBSPOT',
      'accounts[0].webhookEndpoints[0].url: must be an https:// URL',
    ]);
    expect(Object.values(await rowCounts()).every((n) => n === 0)).toBe(true);
  });

  it('lists every reference problem together', async () => {
    // eslint-disable-next-line @typescript-eslint/no-explicit-any -- as above
    const bad = structuredClone(demo) as any;
    bad.accounts[0].connections[0].sources[0].destinations[0].destination = 'nope';
    bad.accounts[0].connections[0].sources[0].replyRelay = 'nobody';
    bad.accounts[1].apiKeys[0] = { name: 'k', connectionScope: 'connection', connection: 'acme-hubspot' };
    bad.accounts[1].connections[0].credentials = { token: 'x' };
    bad.accounts[0].connections[0].crmRateLimit = { maxConcurrency: 5 };
    delete bad.accounts[0].connections[0].blocklists[1].crmSource;

    const error = (await seedFixture(db.prisma, bad, TEST_ENCRYPTION_KEY).catch((e: unknown) => e)) as FixtureError;

    expect(error.problems).toEqual([
      'accounts[0].connections[0].crmRateLimit: a HUBSPOT connection takes {requestsPer10s}, not {maxConcurrency}',
      'accounts[0].connections[0].blocklists[1].crmSource: is required when hasCrmSource is true (a HUBSPOT connection takes {listId})',
      'accounts[1].connections[0].credentials.accessToken: is required (a string)',
      'accounts[1].connections[0].credentials: Unrecognized key: "token"',
      'accounts[0].connections[0].sources[0].destinations[0].destination: "nope" is not a destination of this connection',
      'accounts[0].connections[0].sources[0].replyRelay: "nobody" is not a reply relay of this connection',
      'accounts[1].apiKeys[0].connection: "acme-hubspot" is not a connection of this account',
    ]);
  });
});

describe('seedFixture atomicity', () => {
  it('rolls everything back when a write fails half-way', async () => {
    // Setup: the database refuses the last kind of row the seed writes (webhook endpoints)
    await db.query(`CREATE FUNCTION refuse() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'refused'; END $$`);
    await db.query('CREATE TRIGGER refuse BEFORE INSERT ON webhook_endpoints FOR EACH ROW EXECUTE FUNCTION refuse()');

    await expect(seedFixture(db.prisma, demo, TEST_ENCRYPTION_KEY)).rejects.toThrow(/refused/);

    expect(Object.values(await rowCounts()).every((n) => n === 0)).toBe(true);
  });
});

describe('seedFixture twice', () => {
  it('fails on the duplicate ingress codes and keys, and never half-applies', async () => {
    await seedFixture(db.prisma, demo, TEST_ENCRYPTION_KEY);
    const before = await rowCounts();
    // A fixture whose first account is new and whose second collides: nothing of it may land.
    const mixed = { accounts: [{ ref: 'fresh', connections: [{ crm: 'HUBSPOT', sources: [{ platform: 'smartlead' }] }] }, demo.accounts[1]] };

    const error = await seedFixture(db.prisma, mixed, TEST_ENCRYPTION_KEY).catch((e: unknown) => e);

    expect(error).toBeInstanceOf(FixtureError);
    expect((error as FixtureError).problems).toEqual([
      'accounts[1].connections[0].sources[0].ingressCode: already in use',
      'accounts[1].apiKeys[0].key: already in use',
    ]);
    expect(await rowCounts()).toEqual(before);
  });
});

describe('npm run admin -- seed (the command)', () => {
  const env = () => childEnv({ DATABASE_URL: db.url, ENCRYPTION_KEY: TEST_ENCRYPTION_KEY.toString('hex'), LOG_LEVEL: 'silent' });
  const admin = (...args: string[]) => {
    const [command, argv] = tsxCommand('src/admin/cli.ts', ...args);
    return run(command, argv, { env: env() });
  };

  it('prints only the ref map as JSON on stdout', async () => {
    const { stdout } = await admin('seed', DEMO_FIXTURE);

    const printed = JSON.parse(stdout);
    expect(printed.accounts).toEqual({ acme: expect.any(Number), globex: expect.any(Number) });
    expect(printed.webhookEndpoints['acme-ops']).toMatch(/^svcwh_/);
  });

  it('exits 1 with path-named messages on stderr and nothing on stdout for an invalid file', async () => {
    const error = (await admin('seed', 'test/fixtures/invalid-fixture.json').catch((e: unknown) => e)) as {
      code: number;
      stdout: string;
      stderr: string;
    };

    expect(error.code).toBe(1);
    expect(error.stdout).toBe('');
    expect(error.stderr).toContain('accounts[0].connections[0].crm: must be an uppercase CRM identifier such as HUBSPOT');
    expect(error.stderr).not.toMatch(/\n\s+at /); // no stack trace
  });
});
