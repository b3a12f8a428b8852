/**
 * Onboarding in the explorer (issue 30), sources and connection settings: staff create a source, whose
 * answer is what GET /api/v1/sources shows (its ingress URL to paste into the sequencer) and whose URL
 * accepts an event that is stored; imports keep their ingress (the legacy form is for imports only);
 * staff change a source and a connection's settings, and delete a source only while it has no history.
 * Every mutation writes an audit row; bad input is a 400 naming each field; API keys are refused.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { seedFixture, type SeedResult } from '../../src/admin/seed.js';
import { TEST_ENCRYPTION_KEY } from '../support/database.js';
import { auditRows, explorer, refusal } from '../support/onboarding.js';
import { apiGet } from '../support/rest.js';
import { useTestServer } from '../support/server.js';

const ctx = useTestServer();
const staff = (query: string, variables?: Record<string, unknown>) => explorer(ctx.server.baseUrl, query, variables);
let seeded: SeedResult;
let key: string;

/** A source as GET /api/v1/sources shows it, in GraphQL. */
const REST_SOURCE = `id url platform connectionId crm config { createOrUpdateCompany createOrUpdateTask assignContactOwner crmObjectType }
  forwarding { url description eventTypes isDelayed } replyRelaySummary { id description ccEmail delayMinutes } createdAt`;

/** The GraphQL source in the REST shape (the route renames two fields). */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- answers are checked field by field
function asRest({ forwarding, replyRelaySummary, ...source }: Record<string, any>) {
  return { ...source, destinations: forwarding, replyRelay: replyRelaySummary };
}

async function restSource(id: number) {
  const { body } = await apiGet<{ sources: Array<{ id: number }> }>(ctx.server.baseUrl, '/sources', key);
  return body.sources.find((s) => s.id === id);
}

const CREATE = `mutation ($input: CreateSourceInput!) { createSource(input: $input) { ${REST_SOURCE} } }`;

beforeAll(async () => {
  seeded = await seedFixture(
    ctx.db.prisma,
    {
      accounts: [
        {
          ref: 'acme',
          connections: [
            {
              ref: 'hub',
              crm: 'HUBSPOT',
              replyRelays: [{ ref: 'rep', description: 'Dana', ccEmail: 'dana@acme.test', delayMinutes: 5 }],
              sources: [
                {
                  ref: 'busy',
                  platform: 'smartlead',
                  legacyIds: ['oldSystem', 'source7'],
                  requests: [{ body: { event_type: 'EMAIL_SENT' }, sync: { status: 'success', eventType: 'EMAIL_SENT', toEmail: 'a@b.test' } }],
                },
              ],
            },
            { ref: 'sf', crm: 'SALESFORCE', replyRelays: [{ ref: 'sf-rep', ccEmail: 'sam@acme.test' }] },
          ],
          apiKeys: [{ ref: 'write', name: 'Write key', scopes: ['read', 'write'] }],
        },
      ],
    },
    TEST_ENCRYPTION_KEY,
  );
  key = seeded.generatedSecrets.write!;
});

describe('createSource', () => {
  it('answers what REST shows, with the ingress URL that then accepts an event, and audits it', async () => {
    // Action
    const created = await staff(CREATE, {
      input: { connectionId: seeded.connections.hub, platform: 'smartlead', config: { createOrUpdateCompany: true }, replyRelayId: seeded.replyRelays.rep },
    });

    // Assertions: the REST resource, the paste URL of a generated code
    expect(created.body.errors).toBeUndefined();
    const source = created.body.data!.createSource;
    expect(source).toMatchObject({
      platform: 'smartlead',
      connectionId: seeded.connections.hub,
      crm: 'HUBSPOT',
      config: { createOrUpdateCompany: true, createOrUpdateTask: false, assignContactOwner: false, crmObjectType: null },
      forwarding: [],
      replyRelaySummary: { id: seeded.replyRelays.rep, description: 'Dana', ccEmail: 'dana@acme.test', delayMinutes: 5 },
    });
    expect(source.url).toMatch(/^http:\/\/api\.test\.local\/webhooks\/[A-Za-z0-9_-]{24}$/);
    expect(await restSource(source.id)).toEqual(asRest(source));

    // The URL accepts an event, stored as a request of the new source.
    const posted = await fetch(`${ctx.server.baseUrl}${new URL(source.url as string).pathname}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ event_type: 'EMAIL_SENT', to_email: 'jane@prospect.test', from_email: 'sales@acme.test' }),
    });
    expect(posted.status).toBe(200);
    const stored = await ctx.db.query<{ connection_id: number; body: string }>(
      'SELECT r.connection_id, b.body FROM requests r JOIN request_bodies b ON b.request_id = r.id WHERE r.source_id = $1',
      [source.id],
    );
    expect(stored).toEqual([{ connection_id: seeded.connections.hub, body: expect.stringContaining('jane@prospect.test') }]);

    const [audit] = await auditRows(ctx.db, 'createSource');
    expect(audit).toMatchObject({ staff: 'token:staf', result: { data: { createSource: { id: source.id } } } });
    expect(audit!.arguments.variables).toEqual({ input: expect.objectContaining({ platform: 'smartlead' }) });
  });

  it('names every bad field in one 400, and writes nothing', async () => {
    const before = await ctx.db.query('SELECT id FROM sources');
    const bad = await staff(CREATE, {
      input: {
        connectionId: 987654,
        platform: 'Smartlead',
        config: { crmObjectType: '' },
        imported: { legacyIds: ['only-one'] },
      },
    });
    expect(bad.body.errors?.[0]?.extensions).toMatchObject({ code: 'BAD_REQUEST' });
    expect(bad.body.errors?.[0]?.extensions?.messages).toEqual([
      'input.platform: must be a lowercase platform name',
      expect.stringMatching(/^input\.imported\.legacyIds: /),
      expect.stringMatching(/^input\.config\.crmObjectType: /),
      'input.connectionId: no connection 987654',
    ]);
    // A relay of another connection is not this source's.
    const relay = await staff(CREATE, { input: { connectionId: seeded.connections.hub, platform: 'lemlist', replyRelayId: seeded.replyRelays['sf-rep'] } });
    expect(refusal(relay)).toEqual({
      message: `input.replyRelayId: ${seeded.replyRelays['sf-rep']} is not a reply relay of this connection`,
      code: 'BAD_REQUEST',
    });
    expect(await ctx.db.query('SELECT id FROM sources')).toEqual(before);
    expect((await auditRows(ctx.db, 'createSource')).slice(-2).map((row) => row.result)).toEqual([
      { errors: [expect.stringMatching(/^input\.platform: /)] },
      { errors: [expect.stringMatching(/^input\.replyRelayId: /)] },
    ]);
  });

  it('keeps an imported source’s ingress, the legacy form included, and refuses one already in use', async () => {
    const legacy = await staff(CREATE, {
      input: { connectionId: seeded.connections.sf, platform: 'heyreach', imported: { legacyIds: ['oldSystem', 'source8'] } },
    });
    expect(legacy.body.data!.createSource.url).toBe('http://api.test.local/webhooks/oldSystem/source8');
    const posted = await fetch(`${ctx.server.baseUrl}/webhooks/oldSystem/source8`, { method: 'POST', body: '{"event_type":"message_sent"}' });
    expect(posted.status).toBe(200);

    const code = await staff(CREATE, { input: { connectionId: seeded.connections.sf, platform: 'instantly', imported: { ingressCode: 'importedCode_0001' } } });
    expect(code.body.data!.createSource.url).toBe('http://api.test.local/webhooks/importedCode_0001');

    const taken = await staff(CREATE, {
      input: {
        connectionId: seeded.connections.sf,
        platform: 'instantly',
        imported: { ingressCode: 'importedCode_0001', legacyIds: ['oldSystem', 'source7'] },
      },
    });
    expect(taken.body.errors?.[0]?.extensions?.messages).toEqual(['input.imported.ingressCode: already in use', 'input.imported.legacyIds: already in use']);
  });
});

describe('updateSource', () => {
  it('changes the platform, the sync options and the relay, and answers what REST shows', async () => {
    const created = (await staff(CREATE, { input: { connectionId: seeded.connections.hub, platform: 'instantly', replyRelayId: seeded.replyRelays.rep } })).body
      .data!.createSource;
    const update = `mutation ($id: Int!, $input: UpdateSourceInput!) { updateSource(id: $id, input: $input) { ${REST_SOURCE} } }`;

    const changed = await staff(update, {
      id: created.id,
      input: { platform: 'lemlist', config: { createOrUpdateTask: true, crmObjectType: 'contact' }, replyRelayId: null },
    });

    expect(changed.body.errors).toBeUndefined();
    const source = changed.body.data!.updateSource;
    expect(source).toMatchObject({
      url: created.url,
      platform: 'lemlist',
      config: { createOrUpdateCompany: false, createOrUpdateTask: true, assignContactOwner: false, crmObjectType: 'contact' },
      replyRelaySummary: null,
    });
    expect(await restSource(created.id)).toEqual(asRest(source));
    // null clears the object type; what is left out stays.
    const cleared = await staff(update, { id: created.id, input: { config: { crmObjectType: null } } });
    expect(cleared.body.data!.updateSource.config).toEqual({
      createOrUpdateCompany: false,
      createOrUpdateTask: true,
      assignContactOwner: false,
      crmObjectType: null,
    });

    expect(refusal(await staff(update, { id: created.id, input: { platform: 'Lemlist' } }))).toEqual({
      message: 'input.platform: must be a lowercase platform name',
      code: 'BAD_REQUEST',
    });
    expect(refusal(await staff(update, { id: created.id, input: {} })).message).toBe('input: give a platform, a sync option or a replyRelayId to change');
    expect(refusal(await staff(update, { id: 987654, input: { platform: 'lemlist' } }))).toEqual({ message: 'Source 987654 not found', code: 'NOT_FOUND' });
    expect((await auditRows(ctx.db, 'updateSource')).map((row) => Object.keys(row.result))).toEqual([['data'], ['data'], ['errors'], ['errors'], ['errors']]);
  });
});

describe('deleteSource', () => {
  const remove = 'mutation ($id: Int!) { deleteSource(id: $id) { id deleted } }';

  it('deletes a source that never received an event', async () => {
    const { id } = (await staff(CREATE, { input: { connectionId: seeded.connections.sf, platform: 'smartlead' } })).body.data!.createSource;
    expect((await staff(remove, { id })).body.data).toEqual({ deleteSource: { id, deleted: true } });
    expect(await restSource(id)).toBeUndefined();
    expect(refusal(await staff(remove, { id }))).toEqual({ message: `Source ${id} not found`, code: 'NOT_FOUND' });
  });

  it('keeps a source with history (its syncs would go with it), saying what to do instead', async () => {
    const busy = seeded.sources.busy!;
    const answer = await staff(remove, { id: busy });
    expect(refusal(answer)).toEqual({ message: expect.stringMatching(new RegExp(`^Source ${busy} has received events .* and is kept`)), code: 'CONFLICT' });
    expect(await ctx.db.query('SELECT id FROM syncs WHERE source_id = $1', [busy])).toHaveLength(1);
    expect((await auditRows(ctx.db, 'deleteSource')).map((row) => Object.keys(row.result))).toEqual([['data'], ['errors'], ['errors']]);
  });
});

describe('updateConnectionSettings', () => {
  const settings = `mutation ($id: Int!, $input: ConnectionSettingsInput!) {
    updateConnectionSettings(id: $id, input: $input) { id syncEnabled capabilities { sync } sources { id config { assignContactOwner createOrUpdateCompany } } } }`;

  it('sets sync, the CRM budget and every source’s options, and audits it', async () => {
    const hub = seeded.connections.hub!;
    const answer = await staff(settings, {
      id: hub,
      input: { syncEnabled: false, crmRateLimit: { requestsPer10s: 50 }, sourceConfig: { assignContactOwner: true } },
    });

    expect(answer.body.errors).toBeUndefined();
    const connection = answer.body.data!.updateConnectionSettings;
    expect(connection).toMatchObject({ id: hub, syncEnabled: false, capabilities: { sync: false } });
    expect(connection.sources.length).toBeGreaterThan(1);
    for (const source of connection.sources) expect(source.config.assignContactOwner).toBe(true);
    const [row] = await ctx.db.query('SELECT sync_enabled, crm_rate_limit FROM connections WHERE id = $1', [hub]);
    expect(row).toEqual({ sync_enabled: false, crm_rate_limit: { requestsPer10s: 50 } });

    // null: the service's defaults again.
    await staff(settings, { id: hub, input: { crmRateLimit: null, syncEnabled: true } });
    expect(await ctx.db.query('SELECT sync_enabled, crm_rate_limit FROM connections WHERE id = $1', [hub])).toEqual([
      { sync_enabled: true, crm_rate_limit: null },
    ]);
    expect((await auditRows(ctx.db, 'updateConnectionSettings')).slice(0, 2).map((r) => Object.keys(r.result))).toEqual([['data'], ['data']]);
  });

  it('checks the budget with the CRM’s own schema, naming the field', async () => {
    const hubspot = await staff(settings, { id: seeded.connections.hub, input: { crmRateLimit: { maxConcurrency: 5 } } });
    expect(refusal(hubspot)).toEqual({ message: 'input.crmRateLimit: a HUBSPOT connection takes {requestsPer10s}, not {maxConcurrency}', code: 'BAD_REQUEST' });
    const salesforce = await staff(settings, {
      id: seeded.connections.sf,
      input: { crmRateLimit: { maxConcurrency: 26 }, sourceConfig: { crmObjectType: '' } },
    });
    expect(salesforce.body.errors?.[0]?.extensions?.messages).toEqual([
      'input.crmRateLimit.maxConcurrency: must be an integer from 1 to 25',
      expect.stringMatching(/^input\.sourceConfig\.crmObjectType: /),
    ]);
    expect(refusal(await staff(settings, { id: seeded.connections.sf, input: { crmRateLimit: 10 } })).message).toBe('input.crmRateLimit: must be an object');
    expect(refusal(await staff(settings, { id: 987654, input: { syncEnabled: true } }))).toEqual({ message: 'Connection 987654 not found', code: 'NOT_FOUND' });
  });
});

describe('API keys', () => {
  it('are refused: the explorer answers 401 and writes nothing, and REST has no such route', async () => {
    const before = await ctx.db.query('SELECT id FROM sources ORDER BY id');
    const audited = (await ctx.db.query('SELECT id FROM audit_log')).length;

    const answer = await explorer(ctx.server.baseUrl, CREATE, { input: { connectionId: seeded.connections.hub, platform: 'smartlead' } }, key);

    expect(answer.status).toBe(401);
    expect(refusal(answer).code).toBe('UNAUTHENTICATED');
    const rest = await fetch(`${ctx.server.baseUrl}/api/v1/sources`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ connectionId: seeded.connections.hub, platform: 'smartlead' }),
    });
    expect(rest.status).toBe(404);
    expect(await ctx.db.query('SELECT id FROM sources ORDER BY id')).toEqual(before);
    expect(await ctx.db.query('SELECT id FROM audit_log')).toHaveLength(audited);
  });
});
