import { beforeAll, describe, expect, it } from 'vitest';
import { INGRESS, seedTestAccounts, type TestAccounts, type TestKeys } from '../support/accounts.js';
import { apiGet } from '../support/rest.js';
import { useTestServer } from '../support/server.js';

const ctx = useTestServer();
let ids: TestAccounts;
let keys: TestKeys;
beforeAll(async () => {
  ids = await seedTestAccounts(ctx.db.prisma);
  keys = ids.keys;
});
const get = (path: string, key: string = keys.acmeRead) => apiGet(ctx.server.baseUrl, path, key);

describe('GET /api/v1/me', () => {
  it('describes the account, the key, its connections and all eleven links', async () => {
    const res = await get('/me');

    expect(res.status).toBe(200);
    expect(res.body.account).toEqual({ id: ids.accounts.acme, email: 'owner@acme.test' });
    expect(res.body.apiKey).toEqual({ name: 'Acme read key', scopes: ['read'], connectionScope: 'account', connectionId: null });
    expect(res.body.connections).toEqual([
      { id: ids.connections['acme-hubspot'], crm: 'HUBSPOT', organizationId: '24681357', organizationDomain: 'acme.test' },
      { id: ids.connections['acme-salesforce'], crm: 'SALESFORCE', organizationId: '00D5g000000TEST', organizationDomain: null },
    ]);
    expect(Object.keys(res.body.links)).toEqual([
      'accountStatus',
      'accountMetrics',
      'connections',
      'destinations',
      'requests',
      'destinationsReplyRelays',
      'sources',
      'contactsOutreach',
      'syncs',
      'documentation',
      'openapi',
    ]);
    expect(res.body.links.openapi.href).toBe('http://api.test.local/api/v1/openapi.json');
    expect(res.body.links.documentation.href).toBe('http://api.test.local/docs');
  });

  it('gives a connection-scoped key exactly its connection', async () => {
    const res = await get('/me', keys.acmeHubspotOnly);
    expect(res.body.apiKey).toMatchObject({ connectionScope: 'connection', connectionId: ids.connections['acme-hubspot'] });
    expect(res.body.connections.map((c: { id: number }) => c.id)).toEqual([ids.connections['acme-hubspot']]);
  });
});

describe('GET /api/v1/connections', () => {
  it('lists accessible connections in id order with capabilities; deleted ones vanish', async () => {
    const res = await get('/connections');
    expect(res.body.connections).toEqual([
      {
        id: ids.connections['acme-hubspot'],
        crm: 'HUBSPOT',
        status: 'ready',
        organizationId: '24681357',
        organizationDomain: 'acme.test',
        capabilities: { sync: true, destinations: true, blocklists: true },
        createdAt: expect.any(String),
      },
      {
        id: ids.connections['acme-salesforce'],
        crm: 'SALESFORCE',
        status: 'disconnected',
        organizationId: '00D5g000000TEST',
        organizationDomain: null,
        capabilities: { sync: true, destinations: true, blocklists: true },
        createdAt: expect.any(String),
      },
    ]);
  });

  it('shows capabilities from the account flags', async () => {
    const res = await get('/connections', keys.globexRead);
    expect(res.body.connections).toEqual([expect.objectContaining({ crm: 'HUBSPOT', capabilities: { sync: true, destinations: false, blocklists: false } })]);
  });

  it('hides connections whose API access is off', async () => {
    await ctx.db.prisma.connection.update({ where: { id: ids.connections['acme-salesforce']! }, data: { apiEnabled: false } });
    try {
      const res = await get('/connections');
      expect(res.body.connections.map((c: { id: number }) => c.id)).toEqual([ids.connections['acme-hubspot']]);
    } finally {
      await ctx.db.prisma.connection.update({ where: { id: ids.connections['acme-salesforce']! }, data: { apiEnabled: true } });
    }
  });
});

describe('GET /api/v1/sources', () => {
  it('renders paste URLs (code and legacy forms), config, bindings and the reply relay', async () => {
    const res = await get('/sources');
    const [smartlead, heyreach, instantly] = res.body.sources;

    expect(res.body.sources).toHaveLength(3);
    expect(smartlead).toEqual({
      id: ids.sources['acme-smartlead'],
      url: `http://api.test.local/webhooks/${INGRESS.acmeSmartlead}`,
      platform: 'smartlead',
      connectionId: ids.connections['acme-hubspot'],
      crm: 'HUBSPOT',
      config: { createOrUpdateCompany: true, createOrUpdateTask: true, assignContactOwner: false, crmObjectType: null },
      destinations: [
        { url: 'https://hooks.acme.test/pipeline', description: 'Mirror of every event into the data warehouse', eventTypes: [], isDelayed: false },
        { url: 'https://hooks.acme.test/replies', description: 'Replies to the sales Slack channel', eventTypes: ['EMAIL_REPLY'], isDelayed: true },
      ],
      replyRelay: { id: ids.replyRelays['acme-rep'], description: 'Copy Dana on interested replies', ccEmail: 'dana.rep@acme.test', delayMinutes: 5 },
      createdAt: expect.any(String),
    });
    expect(heyreach.url).toBe(`http://api.test.local/webhooks/${INGRESS.acmeHeyreachLegacy.join('/')}`);
    expect(heyreach.replyRelay).toBeNull();
    expect(instantly.config.crmObjectType).toBe('Lead');
  });

  it('never shows another account’s sources', async () => {
    const res = await get('/sources', keys.globexRead);
    expect(res.body.sources.map((s: { id: number }) => s.id)).toEqual([ids.sources['globex-lemlist']]);
  });
});

describe('forwarding destinations and reply relays', () => {
  it('lists destinations with the union of binding event types, delay and bound sources', async () => {
    const res = await get('/destinations');
    expect(res.body.destinations).toEqual([
      {
        id: ids.destinations['acme-crm-mirror'],
        url: 'https://hooks.acme.test/pipeline',
        description: 'Mirror of every event into the data warehouse',
        connectionId: ids.connections['acme-hubspot'],
        eventTypes: [],
        isDelayed: false,
        sourceIds: [ids.sources['acme-smartlead']],
        createdAt: expect.any(String),
      },
      {
        id: ids.destinations['acme-replies-slack'],
        url: 'https://hooks.acme.test/replies',
        description: 'Replies to the sales Slack channel',
        connectionId: ids.connections['acme-hubspot'],
        eventTypes: ['EMAIL_REPLY'],
        isDelayed: true,
        sourceIds: [ids.sources['acme-smartlead']],
        createdAt: expect.any(String),
      },
    ]);
  });

  it('gets one destination, and 404s another account’s or an unknown one with the same message', async () => {
    const id = ids.destinations['acme-crm-mirror']!;
    expect((await get(`/destinations/${id}`)).body.id).toBe(id);
    for (const [key, path, message] of [
      [keys.globexRead, `/destinations/${id}`, `Destination ${id} not found`],
      [keys.acmeRead, '/destinations/999999', 'Destination 999999 not found'],
      [keys.acmeRead, '/destinations/abc', 'Destination abc not found'],
    ] as const) {
      const res = await get(path, key);
      expect(res.status).toBe(404);
      expect(res.body).toEqual({ statusCode: 404, message, error: 'Not Found' });
    }
  });

  it('gives an empty destination list to a key whose connections have none', async () => {
    expect((await get('/destinations', keys.globexRead)).body).toEqual({ destinations: [] });
  });

  it('lists reply relays with their allowlist and bound sources', async () => {
    const res = await get('/destinations/reply-relays');
    expect(res.body.replyRelays).toEqual([
      {
        id: ids.replyRelays['acme-rep'],
        connectionId: ids.connections['acme-hubspot'],
        description: 'Copy Dana on interested replies',
        ccEmail: 'dana.rep@acme.test',
        delayMinutes: 5,
        bodyTemplates: ['New reply from {{lead_email}}:\n\n{{reply_text}}'],
        categoryAllowlist: [
          { id: '1', name: 'Interested' },
          { id: '5', name: 'Meeting Request' },
        ],
        sourceIds: [ids.sources['acme-smartlead']],
        createdAt: expect.any(String),
      },
    ]);
    expect((await get('/destinations/reply-relays', keys.globexRead)).body).toEqual({ replyRelays: [] });
  });
});

describe('GET /api/v1/blocklists', () => {
  it('lists block lists with counts; a connectionId outside the key gives an empty list', async () => {
    const all = await get('/blocklists');
    expect(all.body.blocklists).toEqual([
      expect.objectContaining({
        id: ids.blocklists['acme-domains'],
        listName: 'Customers and partners',
        crm: 'HUBSPOT',
        blockType: 'DOMAIN',
        status: 'SYNCED',
        isEnabled: true,
        clientId: null,
        syncedCount: 2,
        pendingCount: 0,
      }),
      expect.objectContaining({ id: ids.blocklists['acme-addresses'], blockType: 'ADDRESS', status: 'CREATED', pendingCount: 0, lastFetchedAt: null }),
    ]);
    const other = await get(`/blocklists?connectionId=${ids.connections['globex-hubspot']}`);
    expect(other.body).toEqual({ blocklists: [] });
    const bad = await get('/blocklists?connectionId=abc');
    expect(bad.status).toBe(400);
  });
});

describe('GET /api/v1/account/status', () => {
  it('is not ready while a CRM is disconnected, with the blocker and its remediation', async () => {
    const res = await get('/account/status');
    expect(res.status).toBe(200);
    expect(res.body.ready).toBe(false);
    expect(res.body.blockers).toEqual([
      expect.objectContaining({
        code: 'crm_disconnected',
        connectionId: ids.connections['acme-salesforce'],
        crm: 'SALESFORCE',
        docUrl: 'http://api.test.local/docs#crm-disconnected',
      }),
    ]);
    const [hubspot, salesforce] = res.body.connections;
    expect(hubspot).toMatchObject({
      ready: true,
      sources: { status: 'ready', count: 2, platforms: ['heyreach', 'smartlead'] },
      destinations: { status: 'ready', count: 3, forwardingCount: 2, replyRelayCount: 1, eventTypes: ['EMAIL_REPLY'] },
      blocklists: { status: 'ready', enabledCount: 2, lastError: null },
    });
    expect(salesforce).toMatchObject({ ready: false, crmConnection: { status: 'disconnected' }, destinations: { status: 'not_configured', count: 0 } });
    expect(res.body.warnings.map((w: { code: string }) => w.code)).toEqual(['destinations_not_configured', 'blocklists_not_configured']);
  });

  it('is ready for a connection-scoped key on a healthy connection', async () => {
    const res = await get('/account/status', keys.acmeHubspotOnly);
    expect(res.body.ready).toBe(true);
    expect(res.body.connections).toHaveLength(1);
    expect(res.body.blockers).toEqual([]);
  });

  it('raises no_sources for a connection without a source', async () => {
    const empty = await ctx.db.prisma.connection.create({ data: { accountId: ids.accounts.globex!, crm: 'HUBSPOT' } });
    try {
      const res = await get('/account/status', keys.globexRead);
      expect(res.body.ready).toBe(false);
      expect(res.body.blockers).toEqual([expect.objectContaining({ code: 'no_sources', connectionId: empty.id })]);
      expect(res.body.connections[1].sources).toEqual({ status: 'not_configured', count: 0, platforms: [] });
    } finally {
      await ctx.db.prisma.connection.delete({ where: { id: empty.id } });
    }
  });

  it('raises sync_not_enabled and blocklists_error from stored data', async () => {
    const connection = ids.connections['acme-hubspot']!;
    await ctx.db.prisma.connection.update({ where: { id: connection }, data: { syncEnabled: false } });
    await ctx.db.prisma.blocklist.update({
      where: { id: ids.blocklists['acme-domains']! },
      data: { lastError: 'Smartlead said 401', lastAttemptedAt: new Date() },
    });
    try {
      const res = await get('/account/status', keys.acmeHubspotOnly);
      expect(res.body.blockers.map((b: { code: string }) => b.code)).toEqual(['sync_not_enabled']);
      expect(res.body.warnings.map((w: { code: string }) => w.code)).toEqual(['blocklists_error']);
      expect(res.body.connections[0].blocklists).toMatchObject({ status: 'error', lastError: 'Smartlead said 401' });
      const globex = await get('/account/status', keys.globexRead);
      expect(globex.body.connections[0].blocklists.status).toBe('disabled');
    } finally {
      await ctx.db.prisma.connection.update({ where: { id: connection }, data: { syncEnabled: true } });
      await ctx.db.prisma.blocklist.update({ where: { id: ids.blocklists['acme-domains']! }, data: { lastError: null, lastAttemptedAt: null } });
    }
  });
});

describe('out-of-range and odd input never reaches a 500', () => {
  const W = 'from=2026-01-01T00:00:00Z&to=2026-01-20T00:00:00Z';

  it('treats ids beyond any issued one as unknown', async () => {
    const source = await get(`/syncs?${W}&sourceId=2147483648`);
    expect(source.status).toBe(404);
    expect(source.body.message).toBe('Source 2147483648 not found');
    const destination = await get(`/deliveries?${W}&destinationId=99999999999999999999`);
    expect(destination.body.message).toBe('Destination 99999999999999999999 not found');
    const connection = await get(`/syncs?${W}&connectionId=99999999999`);
    expect(connection.body).toEqual({ data: [], hasMore: false, nextCursor: null });
    expect((await get('/blocklists?connectionId=99999999999')).body).toEqual({ blocklists: [] });
  });

  it('answers 400 to a window before 1970 (year 0 would fail in PostgreSQL)', async () => {
    const res = await get('/syncs?from=0000-01-01T00:00:00Z&to=0000-01-20T00:00:00Z');
    expect(res.status).toBe(400);
  });

  it('answers the JSON 404 to an undecodable or control-character path id', async () => {
    const undecodable = await get('/syncs/%ZZ');
    expect(undecodable.status).toBe(404);
    expect(undecodable.body).toEqual({ statusCode: 404, message: 'Cannot GET /api/v1/syncs/%ZZ', error: 'Not Found' });
    const control = await get('/syncs/1%00');
    expect(control.body.message).toBe('Sync 1 not found');
  });
});
