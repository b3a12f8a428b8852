import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { FixtureError, formatPath, parseFixture, type Fixture } from '../../src/admin/fixture.js';

function problemsOf(input: unknown): string[] {
  try {
    parseFixture(input);
  } catch (error) {
    if (error instanceof FixtureError) return error.problems;
    throw error;
  }
  throw new Error('expected parseFixture to reject the fixture');
}

/** Exact strings match exactly; regular expressions match a problem whose wording comes from zod. */
function problemMatchers(expected: (string | RegExp)[]): unknown[] {
  return expected.map((e) => (typeof e === 'string' ? e : expect.stringMatching(e)));
}

const CAPABILITY_DEFAULTS = { canUseApi: true, canUserAccount: true, canBlockList: true, canUseWebhooks: true };
const SOURCE_CONFIG_DEFAULTS = { createOrUpdateCompany: false, createOrUpdateTask: false, assignContactOwner: false, crmObjectType: null };

/** A connection with one destination `d1` and one reply relay `r1`, for reference tests. */
function connectionWith(ref: string, extra: Record<string, unknown> = {}) {
  return {
    ref,
    crm: 'HUBSPOT',
    destinations: [{ ref: `${ref}-d1`, url: 'https://hooks.example.com/1' }],
    replyRelays: [{ ref: `${ref}-r1`, ccEmail: 'rep@example.com' }],
    ...extra,
  };
}

describe('parseFixture defaults', () => {
  it('parses the minimal fixture {accounts: [{}]} with every account default', () => {
    expect(parseFixture({ accounts: [{}] })).toStrictEqual({
      accounts: [{ email: null, capabilities: CAPABILITY_DEFAULTS, connections: [], apiKeys: [], webhookEndpoints: [] }],
    });
  });

  it('fills in the default of every field the README names, and nothing else', () => {
    const input = {
      accounts: [
        {
          connections: [
            {
              crm: 'HUBSPOT',
              destinations: [{ ref: 'dest', url: 'https://hooks.example.com/in' }],
              replyRelays: [{ ref: 'relay', ccEmail: 'rep@example.com' }],
              blocklists: [{ listName: 'Customers', platform: 'smartlead', blockType: 'DOMAIN', crmSource: { listId: '7' } }],
              sources: [
                {
                  platform: 'smartlead',
                  destinations: [{ destination: 'dest' }],
                  requests: [
                    {
                      body: { event_type: 'EMAIL_SENT' },
                      sync: { status: 'success', eventType: 'EMAIL_SENT', toEmail: 'jane@prospect.test' },
                      deliveries: [{ destination: 'dest', status: 'success' }],
                    },
                    { body: null },
                  ],
                },
              ],
            },
          ],
          apiKeys: [{ name: 'Read key' }],
          webhookEndpoints: [{ url: 'https://ops.example.com/hook' }],
        },
      ],
    };

    const expected: Fixture = {
      accounts: [
        {
          email: null,
          capabilities: CAPABILITY_DEFAULTS,
          connections: [
            {
              crm: 'HUBSPOT',
              status: 'ready',
              organizationId: null,
              organizationDomain: null,
              apiEnabled: true,
              syncEnabled: true,
              deleted: false,
              destinations: [{ ref: 'dest', url: 'https://hooks.example.com/in', description: '' }],
              replyRelays: [{ ref: 'relay', description: '', ccEmail: 'rep@example.com', delayMinutes: 0, bodyTemplates: [], categoryAllowlist: [] }],
              blocklists: [
                {
                  listName: 'Customers',
                  platform: 'smartlead',
                  blockType: 'DOMAIN',
                  status: 'CREATED',
                  isEnabled: true,
                  hasCrmSource: true,
                  crmSource: { listId: '7' },
                  entries: [],
                },
              ],
              sources: [
                {
                  platform: 'smartlead',
                  config: SOURCE_CONFIG_DEFAULTS,
                  destinations: [{ destination: 'dest', eventTypes: [], isDelayed: false }],
                  requests: [
                    {
                      body: { event_type: 'EMAIL_SENT' },
                      sync: { status: 'success', eventType: 'EMAIL_SENT', toEmail: 'jane@prospect.test' },
                      deliveries: [{ destination: 'dest', status: 'success', httpStatus: null }],
                    },
                    { body: null, deliveries: [] },
                  ],
                },
              ],
            },
          ],
          apiKeys: [{ name: 'Read key', scopes: ['read'], connectionScope: 'account', revoked: false }],
          webhookEndpoints: [{ url: 'https://ops.example.com/hook', description: '', enabledEvents: [], isActive: true }],
        },
      ],
    };
    expect(parseFixture(input)).toStrictEqual(expected);
  });

  it('defaults each capability and source config flag separately when the object is partial', () => {
    const fixture = parseFixture({
      accounts: [
        {
          capabilities: { canUseApi: false },
          connections: [{ crm: 'HUBSPOT', sources: [{ platform: 'smartlead', config: { crmObjectType: 'deal' } }] }],
        },
      ],
    });

    expect(fixture.accounts[0]?.capabilities).toEqual({ ...CAPABILITY_DEFAULTS, canUseApi: false });
    expect(fixture.accounts[0]?.connections[0]?.sources[0]?.config).toEqual({ ...SOURCE_CONFIG_DEFAULTS, crmObjectType: 'deal' });
  });

  it('keeps explicit values instead of the defaults', () => {
    const connection = {
      crm: 'SALESFORCE',
      status: 'disconnected',
      organizationId: '00D000000000001',
      organizationDomain: 'acme.test',
      apiEnabled: false,
      syncEnabled: false,
      deleted: true,
      credentials: { instanceUrl: 'https://acme.my.salesforce.com', accessToken: 'tok' },
    };
    const apiKey = { name: 'Writer', key: 'svcapi_0123456789abcdef', scopes: ['read', 'write'], revoked: true };

    const account = parseFixture({ accounts: [{ email: 'owner@acme.test', connections: [connection], apiKeys: [apiKey] }] }).accounts[0];

    expect(account?.email).toBe('owner@acme.test');
    expect(account?.connections[0]).toMatchObject(connection);
    expect(account?.apiKeys[0]).toEqual({ ...apiKey, connectionScope: 'account' });
  });

  it.each([
    ['2024-03-01T12:00:00Z', '2024-03-01T12:00:00.000Z'],
    ['2024-03-01T12:00:00.250Z', '2024-03-01T12:00:00.250Z'],
    ['2024-03-01T14:00:00+02:00', '2024-03-01T12:00:00.000Z'],
  ])('turns createdAt %s into the Date %s', (createdAt, iso) => {
    const connection = parseFixture({ accounts: [{ connections: [{ crm: 'HUBSPOT', createdAt }] }] }).accounts[0]?.connections[0];

    expect(connection?.createdAt).toBeInstanceOf(Date);
    expect(connection?.createdAt?.toISOString()).toBe(iso);
  });

  it.each(['2024-03-01', '2024-03-01T12:00:00', 'yesterday', '2024-13-01T00:00:00Z'])('rejects createdAt %j', (createdAt) => {
    expect(problemsOf({ accounts: [{ connections: [{ crm: 'HUBSPOT', createdAt }] }] })).toEqual([
      'accounts[0].connections[0].createdAt: must be an ISO 8601 date-time',
    ]);
  });

  it('accepts a sync that never recorded a result (status null)', () => {
    const input = {
      accounts: [
        {
          connections: [
            {
              crm: 'HUBSPOT',
              sources: [{ platform: 'smartlead', requests: [{ body: {}, sync: { status: null, eventType: 'EMAIL_SENT', toEmail: 'a@b.test' } }] }],
            },
          ],
        },
      ],
    };

    expect(parseFixture(input).accounts[0]?.connections[0]?.sources[0]?.requests[0]?.sync?.status).toBeNull();
  });

  it('accepts exactly 50 categoryAllowlist entries', () => {
    const categoryAllowlist = Array.from({ length: 50 }, (_, i) => ({ id: String(i), name: `Category ${i}` }));
    const input = { accounts: [{ connections: [{ crm: 'HUBSPOT', replyRelays: [{ ccEmail: 'rep@example.com', categoryAllowlist }] }] }] };

    expect(parseFixture(input).accounts[0]?.connections[0]?.replyRelays[0]?.categoryAllowlist).toHaveLength(50);
  });

  it('accepts a connection-scoped key pointing at a connection of its own account', () => {
    const input = {
      accounts: [{ connections: [{ ref: 'c1', crm: 'HUBSPOT' }], apiKeys: [{ name: 'k', connectionScope: 'connection', connection: 'c1' }] }],
    };

    expect(parseFixture(input).accounts[0]?.apiKeys[0]).toMatchObject({ connectionScope: 'connection', connection: 'c1' });
  });
});

describe('parseFixture rejects', () => {
  const one = (connection: Record<string, unknown>) => ({ accounts: [{ connections: [connection] }] });

  it.each<[string, unknown, (string | RegExp)[]]>([
    ['a fixture that is not an object', null, [/^\(root\): /]],
    ['a fixture without accounts', {}, [/^accounts: /]],
    ['a fixture with no account', { accounts: [] }, ['accounts: must list at least one account']],
    ['an unknown top-level key', { accounts: [{}], users: [] }, [/^\(root\): .*"users"/]],
    ['an unknown key on an account', { accounts: [{ name: 'Acme' }] }, [/^accounts\[0\]: .*"name"/]],
    ['an unknown key on a connection', one({ crm: 'HUBSPOT', region: 'eu' }), [/^accounts\[0\]\.connections\[0\]: .*"region"/]],
    ['an unknown capability', { accounts: [{ capabilities: { canFly: true } }] }, [/^accounts\[0\]\.capabilities: .*"canFly"/]],
    ['an invalid account email', { accounts: [{ email: 'not-an-email' }] }, ['accounts[0].email: must be an email address']],
    [
      'a lowercase crm',
      { accounts: [{ connections: [{ crm: 'HUBSPOT' }, { crm: 'hubspot' }] }] },
      ['accounts[0].connections[1].crm: must be an uppercase CRM identifier such as HUBSPOT'],
    ],
    ['a connection without crm', one({}), [/^accounts\[0\]\.connections\[0\]\.crm: /]],
    ['an unknown connection status', one({ crm: 'HUBSPOT', status: 'paused' }), [/^accounts\[0\]\.connections\[0\]\.status: /]],
    [
      'a capitalised source platform',
      one({ crm: 'HUBSPOT', sources: [{ platform: 'Smartlead' }] }),
      ['accounts[0].connections[0].sources[0].platform: must be a lowercase platform name'],
    ],
    [
      'a blocklist platform with a space',
      one({ crm: 'HUBSPOT', blocklists: [{ listName: 'l', platform: 'smart lead', blockType: 'DOMAIN' }] }),
      ['accounts[0].connections[0].blocklists[0].platform: must be a lowercase platform name'],
    ],
    [
      'an unknown blockType',
      one({ crm: 'HUBSPOT', blocklists: [{ listName: 'l', platform: 'smartlead', blockType: 'EMAIL' }] }),
      [/^accounts\[0\]\.connections\[0\]\.blocklists\[0\]\.blockType: /],
    ],
    [
      'an ingress code shorter than 8 characters',
      one({ crm: 'HUBSPOT', sources: [{ platform: 'smartlead', ingressCode: 'short' }] }),
      ['accounts[0].connections[0].sources[0].ingressCode: must be 8 to 128 letters, digits, _ or -'],
    ],
    [
      'an ingress code with a slash',
      one({ crm: 'HUBSPOT', sources: [{ platform: 'smartlead', ingressCode: 'abcd/efgh' }] }),
      ['accounts[0].connections[0].sources[0].ingressCode: must be 8 to 128 letters, digits, _ or -'],
    ],
    [
      'legacyIds with one element',
      one({ crm: 'HUBSPOT', sources: [{ platform: 'smartlead', legacyIds: ['only'] }] }),
      [/^accounts\[0\]\.connections\[0\]\.sources\[0\]\.legacyIds/],
    ],
    [
      'a forwarding destination over ftp',
      one({ crm: 'HUBSPOT', destinations: [{ url: 'ftp://hooks.example.com' }] }),
      ['accounts[0].connections[0].destinations[0].url: must be an http:// or https:// URL'],
    ],
    [
      'a webhook endpoint over http',
      { accounts: [{ webhookEndpoints: [{ url: 'https://ok.example.com' }, { url: 'http://ops.example.com/hook' }] }] },
      ['accounts[0].webhookEndpoints[1].url: must be an https:// URL'],
    ],
    [
      'an unknown webhook event',
      { accounts: [{ webhookEndpoints: [{ url: 'https://ops.example.com', enabledEvents: ['sync.started'] }] }] },
      [/^accounts\[0\]\.webhookEndpoints\[0\]\.enabledEvents\[0\]: /],
    ],
    [
      'a malformed webhook secret',
      { accounts: [{ webhookEndpoints: [{ url: 'https://ops.example.com', secret: 'whsec_0123456789abcdef' }] }] },
      ['accounts[0].webhookEndpoints[0].secret: must be svcwhsec_ followed by at least 16 letters or digits'],
    ],
    [
      '51 categoryAllowlist entries',
      one({
        crm: 'HUBSPOT',
        replyRelays: [{ ccEmail: 'rep@example.com', categoryAllowlist: Array.from({ length: 51 }, (_, i) => ({ id: String(i), name: `C${i}` })) }],
      }),
      ['accounts[0].connections[0].replyRelays[0].categoryAllowlist: has at most 50 entries'],
    ],
    [
      'an invalid ccEmail',
      one({ crm: 'HUBSPOT', replyRelays: [{ ccEmail: 'rep-at-example.com' }] }),
      ['accounts[0].connections[0].replyRelays[0].ccEmail: must be an email address'],
    ],
    [
      'a negative delayMinutes',
      one({ crm: 'HUBSPOT', replyRelays: [{ ccEmail: 'rep@example.com', delayMinutes: -1 }] }),
      [/^accounts\[0\]\.connections\[0\]\.replyRelays\[0\]\.delayMinutes: /],
    ],
    [
      'a malformed API key',
      { accounts: [{ apiKeys: [{ name: 'k', key: 'svcapi_short' }] }] },
      ['accounts[0].apiKeys[0].key: must be svcapi_ followed by at least 16 letters or digits'],
    ],
    ['an API key without scopes', { accounts: [{ apiKeys: [{ name: 'k', scopes: [] }] }] }, [/^accounts\[0\]\.apiKeys\[0\]\.scopes: /]],
    ['an unknown API key scope', { accounts: [{ apiKeys: [{ name: 'k', scopes: ['admin'] }] }] }, [/^accounts\[0\]\.apiKeys\[0\]\.scopes\[0\]: /]],
    [
      'a request without a body',
      one({ crm: 'HUBSPOT', sources: [{ platform: 'smartlead', requests: [{}] }] }),
      ['accounts[0].connections[0].sources[0].requests[0].body: is required'],
    ],
    [
      'an unknown sync status',
      one({ crm: 'HUBSPOT', sources: [{ platform: 'smartlead', requests: [{ body: {}, sync: { status: 'pending', eventType: 'E', toEmail: 'a@b.test' } }] }] }),
      [/^accounts\[0\]\.connections\[0\]\.sources\[0\]\.requests\[0\]\.sync\.status: /],
    ],
    [
      'a delivery httpStatus below 100',
      one(
        connectionWith('c', {
          sources: [{ platform: 'smartlead', requests: [{ body: {}, deliveries: [{ destination: 'c-d1', status: 'error', httpStatus: 99 }] }] }],
        }),
      ),
      [/^accounts\[0\]\.connections\[0\]\.sources\[0\]\.requests\[0\]\.deliveries\[0\]\.httpStatus: /],
    ],
  ])('%s', (_case, input, expected) => {
    expect(problemsOf(input)).toEqual(problemMatchers(expected));
  });
});

describe('parseFixture reference checks', () => {
  it.each<[string, unknown, string[]]>([
    [
      'a connection-scoped API key without a connection',
      { accounts: [{ connections: [{ ref: 'c1', crm: 'HUBSPOT' }], apiKeys: [{ name: 'k', connectionScope: 'connection' }] }] },
      ['accounts[0].apiKeys[0].connection: is required when connectionScope is "connection"'],
    ],
    [
      'an account-scoped API key naming a connection',
      { accounts: [{ connections: [{ ref: 'c1', crm: 'HUBSPOT' }], apiKeys: [{ name: 'k', connection: 'c1' }] }] },
      ['accounts[0].apiKeys[0].connection: is only allowed when connectionScope is "connection"'],
    ],
    [
      'an API key naming a connection of another account',
      {
        accounts: [
          { ref: 'acme', connections: [{ ref: 'acme-hubspot', crm: 'HUBSPOT' }] },
          {
            ref: 'globex',
            connections: [{ ref: 'globex-hubspot', crm: 'HUBSPOT' }],
            apiKeys: [{ name: 'k', connectionScope: 'connection', connection: 'acme-hubspot' }],
          },
        ],
      },
      ['accounts[1].apiKeys[0].connection: "acme-hubspot" is not a connection of this account'],
    ],
    [
      'an API key naming an unknown connection',
      { accounts: [{ apiKeys: [{ name: 'k', connectionScope: 'connection', connection: 'nowhere' }] }] },
      ['accounts[0].apiKeys[0].connection: "nowhere" is not a connection of this account'],
    ],
    [
      'a binding to a destination of another connection',
      {
        accounts: [
          {
            connections: [
              connectionWith('c1'),
              connectionWith('c2', { sources: [{ platform: 'smartlead', destinations: [{ destination: 'c2-d1' }, { destination: 'c1-d1' }] }] }),
            ],
          },
        ],
      },
      ['accounts[0].connections[1].sources[0].destinations[1].destination: "c1-d1" is not a destination of this connection'],
    ],
    [
      'a binding to a ref that is not a destination',
      { accounts: [{ connections: [connectionWith('c1', { sources: [{ ref: 's1', platform: 'smartlead', destinations: [{ destination: 'c1-r1' }] }] })] }] },
      ['accounts[0].connections[0].sources[0].destinations[0].destination: "c1-r1" is not a destination of this connection'],
    ],
    [
      'a source binding the same destination twice',
      {
        accounts: [
          {
            connections: [
              connectionWith('c1', {
                sources: [{ platform: 'smartlead', destinations: [{ destination: 'c1-d1' }, { destination: 'c1-d1', isDelayed: true }] }],
              }),
            ],
          },
        ],
      },
      ['accounts[0].connections[0].sources[0].destinations: binds the same destination twice'],
    ],
    [
      'an unknown reply relay',
      { accounts: [{ connections: [connectionWith('c1', { sources: [{ platform: 'smartlead', replyRelay: 'missing-relay' }] })] }] },
      ['accounts[0].connections[0].sources[0].replyRelay: "missing-relay" is not a reply relay of this connection'],
    ],
    [
      'a reply relay of another connection',
      { accounts: [{ connections: [connectionWith('c1'), connectionWith('c2', { sources: [{ platform: 'smartlead', replyRelay: 'c1-r1' }] })] }] },
      ['accounts[0].connections[1].sources[0].replyRelay: "c1-r1" is not a reply relay of this connection'],
    ],
    [
      'a delivery to a destination of another connection',
      {
        accounts: [
          {
            connections: [
              connectionWith('c1'),
              connectionWith('c2', {
                sources: [{ platform: 'smartlead', requests: [{ body: {}, deliveries: [{ destination: 'c1-d1', status: 'success' }] }] }],
              }),
            ],
          },
        ],
      },
      ['accounts[0].connections[1].sources[0].requests[0].deliveries[0].destination: "c1-d1" is not a destination of this connection'],
    ],
    [
      'two connections with the same ref',
      {
        accounts: [
          {
            connections: [
              { ref: 'dup', crm: 'HUBSPOT' },
              { ref: 'dup', crm: 'SALESFORCE' },
            ],
          },
        ],
      },
      ['accounts[0].connections[1].ref: "dup" is already the ref of accounts[0].connections[0]'],
    ],
    [
      'the same ref on objects of different kinds',
      { accounts: [{ ref: 'acme', connections: [{ ref: 'acme', crm: 'HUBSPOT' }] }] },
      ['accounts[0].connections[0].ref: "acme" is already the ref of accounts[0]'],
    ],
    [
      'the same ref in two accounts',
      { accounts: [{ apiKeys: [{ ref: 'key', name: 'a' }] }, { webhookEndpoints: [{ ref: 'key', url: 'https://ops.example.com' }] }] },
      ['accounts[1].webhookEndpoints[0].ref: "key" is already the ref of accounts[0].apiKeys[0]'],
    ],
    [
      'a duplicate destination, relay, blocklist or source ref',
      {
        accounts: [
          {
            connections: [
              {
                ref: 'x',
                crm: 'HUBSPOT',
                destinations: [{ ref: 'x', url: 'https://a.example.com' }],
                replyRelays: [{ ref: 'x', ccEmail: 'rep@example.com' }],
                blocklists: [{ ref: 'x', listName: 'l', platform: 'smartlead', blockType: 'ADDRESS', hasCrmSource: false }],
                sources: [{ ref: 'x', platform: 'smartlead' }],
              },
            ],
          },
        ],
      },
      [
        'accounts[0].connections[0].destinations[0].ref: "x" is already the ref of accounts[0].connections[0]',
        'accounts[0].connections[0].replyRelays[0].ref: "x" is already the ref of accounts[0].connections[0]',
        'accounts[0].connections[0].blocklists[0].ref: "x" is already the ref of accounts[0].connections[0]',
        'accounts[0].connections[0].sources[0].ref: "x" is already the ref of accounts[0].connections[0]',
      ],
    ],
    [
      'the same ingress code on two sources of one connection',
      {
        accounts: [
          {
            connections: [
              {
                crm: 'HUBSPOT',
                sources: [
                  { platform: 'smartlead', ingressCode: 'sameCode01' },
                  { platform: 'instantly', ingressCode: 'sameCode01' },
                ],
              },
            ],
          },
        ],
      },
      ['accounts[0].connections[0].sources[1].ingressCode: "sameCode01" is already used by accounts[0].connections[0].sources[0].ingressCode'],
    ],
    [
      'the same ingress code in two accounts',
      {
        accounts: [
          { connections: [{ crm: 'HUBSPOT', sources: [{ platform: 'smartlead', ingressCode: 'sameCode01' }] }] },
          { connections: [{ crm: 'HUBSPOT', sources: [{ platform: 'lemlist', ingressCode: 'sameCode01' }] }] },
        ],
      },
      ['accounts[1].connections[0].sources[0].ingressCode: "sameCode01" is already used by accounts[0].connections[0].sources[0].ingressCode'],
    ],
    [
      'the same legacy ids on two sources',
      {
        accounts: [
          {
            connections: [
              {
                crm: 'HUBSPOT',
                sources: [
                  { platform: 'heyreach', legacyIds: ['a', 'b'] },
                  { platform: 'heyreach', legacyIds: ['a', 'b'] },
                ],
              },
            ],
          },
        ],
      },
      ['accounts[0].connections[0].sources[1].legacyIds: "a/b" is already used by accounts[0].connections[0].sources[0].legacyIds'],
    ],
    [
      'the same API key value twice',
      { accounts: [{ apiKeys: [{ name: 'a', key: 'svcapi_0123456789abcdef' }] }, { apiKeys: [{ name: 'b', key: 'svcapi_0123456789abcdef' }] }] },
      ['accounts[1].apiKeys[0].key: "svcapi_0123456789abcdef" is already used by accounts[0].apiKeys[0].key'],
    ],
  ])('rejects %s', (_case, input, expected) => {
    expect(problemsOf(input)).toEqual(expected);
  });

  it('accepts the same legacy first id with different second ids', () => {
    const input = {
      accounts: [
        {
          connections: [
            {
              crm: 'HUBSPOT',
              sources: [
                { platform: 'heyreach', legacyIds: ['a', 'b'] },
                { platform: 'heyreach', legacyIds: ['a', 'c'] },
              ],
            },
          ],
        },
      ],
    };

    expect(parseFixture(input).accounts[0]?.connections[0]?.sources).toHaveLength(2);
  });

  it('accepts bindings, relays and deliveries that point inside their own connection', () => {
    const input = {
      accounts: [
        {
          connections: [
            connectionWith('c1', {
              sources: [
                {
                  platform: 'smartlead',
                  destinations: [{ destination: 'c1-d1', eventTypes: ['EMAIL_REPLY'] }],
                  replyRelay: 'c1-r1',
                  requests: [{ body: {}, deliveries: [{ destination: 'c1-d1', status: 'error', httpStatus: 500, error: { message: 'boom' } }] }],
                },
              ],
            }),
          ],
        },
      ],
    };

    expect(parseFixture(input).accounts[0]?.connections[0]?.sources[0]?.replyRelay).toBe('c1-r1');
  });
});

describe('parseFixture lists every problem together', () => {
  it('reports every schema problem in one FixtureError', () => {
    const input = {
      accounts: [
        {
          email: 'nope',
          connections: [{ crm: 'HUBSPOT' }, { crm: 'hubspot', sources: [{ platform: 'Smartlead' }], destinations: [{ url: 'ftp://x' }] }],
          webhookEndpoints: [{ url: 'http://ops.example.com' }],
        },
        { apiKeys: [{ name: 'k', key: 'bad' }] },
      ],
      extra: true,
    };

    const expected = problemMatchers([
      'accounts[0].email: must be an email address',
      'accounts[0].connections[1].crm: must be an uppercase CRM identifier such as HUBSPOT',
      'accounts[0].connections[1].sources[0].platform: must be a lowercase platform name',
      'accounts[0].connections[1].destinations[0].url: must be an http:// or https:// URL',
      'accounts[0].webhookEndpoints[0].url: must be an https:// URL',
      'accounts[1].apiKeys[0].key: must be svcapi_ followed by at least 16 letters or digits',
      /^\(root\): .*"extra"/,
    ]);

    const problems = problemsOf(input);

    expect(problems).toHaveLength(expected.length);
    expect(problems).toEqual(expect.arrayContaining(expected));
  });

  it('reports every reference problem in one FixtureError', () => {
    const input = {
      accounts: [
        {
          ref: 'acme',
          connections: [
            connectionWith('c1', {
              sources: [{ ref: 'acme', platform: 'smartlead', ingressCode: 'code0001', destinations: [{ destination: 'nope' }], replyRelay: 'nope' }],
            }),
          ],
          apiKeys: [{ name: 'k', connectionScope: 'connection' }],
        },
        { connections: [{ crm: 'HUBSPOT', sources: [{ platform: 'smartlead', ingressCode: 'code0001' }] }] },
      ],
    };

    expect(problemsOf(input)).toEqual([
      'accounts[0].connections[0].sources[0].ref: "acme" is already the ref of accounts[0]',
      'accounts[0].connections[0].sources[0].destinations[0].destination: "nope" is not a destination of this connection',
      'accounts[0].connections[0].sources[0].replyRelay: "nope" is not a reply relay of this connection',
      'accounts[0].apiKeys[0].connection: is required when connectionScope is "connection"',
      'accounts[1].connections[0].sources[0].ingressCode: "code0001" is already used by accounts[0].connections[0].sources[0].ingressCode',
    ]);
  });

  it('throws a FixtureError whose message lists each problem on its own line', () => {
    // Setup
    const input = { accounts: [{ connections: [{ crm: 'hubspot' }], webhookEndpoints: [{ url: 'http://x.example.com' }] }] };

    // Action
    let thrown: unknown;
    try {
      parseFixture(input);
    } catch (error) {
      thrown = error;
    }

    // Assertions
    expect(thrown).toBeInstanceOf(FixtureError);
    const error = thrown as FixtureError;
    expect(error.name).toBe('FixtureError');
    expect(error.message).toBe(
      [
        'Invalid fixture:',
        '  accounts[0].connections[0].crm: must be an uppercase CRM identifier such as HUBSPOT',
        '  accounts[0].webhookEndpoints[0].url: must be an https:// URL',
      ].join('\n'),
    );
  });
});

describe('parseFixture crmRateLimit', () => {
  const rateLimitOf = (connection: Record<string, unknown>) =>
    parseFixture({ accounts: [{ connections: [connection] }] }).accounts[0]?.connections[0]?.crmRateLimit;

  it.each<[string, Record<string, unknown>]>([
    ['a HubSpot connection its requestsPer10s', { crm: 'HUBSPOT', crmRateLimit: { requestsPer10s: 150 } }],
    ['a Salesforce connection its maxConcurrency', { crm: 'SALESFORCE', crmRateLimit: { maxConcurrency: 5 } }],
    ['the lowest HubSpot limit', { crm: 'HUBSPOT', crmRateLimit: { requestsPer10s: 1 } }],
    ['the highest HubSpot limit', { crm: 'HUBSPOT', crmRateLimit: { requestsPer10s: 250 } }],
    ['the highest Salesforce concurrency', { crm: 'SALESFORCE', crmRateLimit: { maxConcurrency: 25 } }],
  ])('keeps %s as written', (_case, connection) => {
    expect(rateLimitOf(connection)).toStrictEqual(connection.crmRateLimit);
  });

  it('leaves it out when absent (the service defaults apply)', () => {
    expect(rateLimitOf({ crm: 'HUBSPOT' })).toBeUndefined();
  });

  const second = (connection: Record<string, unknown>) => ({ accounts: [{ connections: [{ crm: 'HUBSPOT' }, connection] }] });
  it.each<[string, unknown, string[]]>([
    [
      'a HubSpot connection with the Salesforce setting',
      second({ crm: 'HUBSPOT', crmRateLimit: { maxConcurrency: 5 } }),
      ['accounts[0].connections[1].crmRateLimit: a HUBSPOT connection takes {requestsPer10s}, not {maxConcurrency}'],
    ],
    [
      'a Salesforce connection with the HubSpot setting',
      second({ crm: 'SALESFORCE', crmRateLimit: { requestsPer10s: 100 } }),
      ['accounts[0].connections[1].crmRateLimit: a SALESFORCE connection takes {maxConcurrency}, not {requestsPer10s}'],
    ],
    [
      'a HubSpot connection with both settings',
      second({ crm: 'HUBSPOT', crmRateLimit: { requestsPer10s: 100, maxConcurrency: 5 } }),
      ['accounts[0].connections[1].crmRateLimit: a HUBSPOT connection takes {requestsPer10s}, not {maxConcurrency}'],
    ],
    ['an empty object', second({ crm: 'HUBSPOT', crmRateLimit: {} }), ['accounts[0].connections[1].crmRateLimit.requestsPer10s: is required']],
    [
      'a CRM without a rate limit of its own',
      second({ crm: 'PIPEDRIVE', crmRateLimit: { requestsPer10s: 10 } }),
      ['accounts[0].connections[1].crmRateLimit: is only supported on HUBSPOT, SALESFORCE, CLOSE, and ATTIO connections'],
    ],
  ])('rejects %s', (_case, input, expected) => {
    expect(problemsOf(input)).toEqual(expected);
  });

  it.each<[string, unknown, string]>([
    ['requestsPer10s', 0, 'accounts[0].connections[0].crmRateLimit.requestsPer10s: must be an integer from 1 to 250'],
    ['requestsPer10s', 251, 'accounts[0].connections[0].crmRateLimit.requestsPer10s: must be an integer from 1 to 250'],
    ['requestsPer10s', 1.5, 'accounts[0].connections[0].crmRateLimit.requestsPer10s: must be an integer from 1 to 250'],
    ['requestsPer10s', '100', 'accounts[0].connections[0].crmRateLimit.requestsPer10s: must be an integer from 1 to 250'],
    ['maxConcurrency', -1, 'accounts[0].connections[0].crmRateLimit.maxConcurrency: must be an integer from 1 to 25'],
    ['maxConcurrency', 26, 'accounts[0].connections[0].crmRateLimit.maxConcurrency: must be an integer from 1 to 25'],
    ['maxConcurrency', null, 'accounts[0].connections[0].crmRateLimit.maxConcurrency: must be an integer from 1 to 25'],
  ])('rejects %s %j', (key, value, expected) => {
    const crm = key === 'requestsPer10s' ? 'HUBSPOT' : 'SALESFORCE';
    expect(problemsOf({ accounts: [{ connections: [{ crm, crmRateLimit: { [key]: value } }] }] })).toEqual([expected]);
  });

  it('rejects an unknown setting', () => {
    expect(problemsOf({ accounts: [{ connections: [{ crm: 'HUBSPOT', crmRateLimit: { requestsPerSecond: 10 } }] }] })).toEqual([
      'accounts[0].connections[0].crmRateLimit: a HUBSPOT connection takes {requestsPer10s}, not {requestsPerSecond}',
    ]);
  });
});

describe('parseFixture Close and Attio connections', () => {
  const list = (blockType: 'ADDRESS' | 'DOMAIN', crmSource: Record<string, unknown>) => ({
    listName: 'Do not contact',
    platform: 'smartlead',
    blockType,
    crmSource,
  });
  const connectionOf = (connection: Record<string, unknown>) => parseFixture({ accounts: [{ connections: [connection] }] }).accounts[0]?.connections[0];

  it.each<[string, Record<string, unknown>]>([
    [
      'a Close connection with an API key, its requestsPerSecond and the unsubscribed emails',
      { crm: 'CLOSE', credentials: { apiKey: 'api_0123456789abcdef' }, crmRateLimit: { requestsPerSecond: 20 }, blocklists: [list('ADDRESS', {})] },
    ],
    [
      'a Close connection with OAuth credentials, the highest requestsPerSecond and a Smart View',
      {
        crm: 'CLOSE',
        credentials: {
          accessToken: 'oa2_access',
          refreshToken: 'oa2_refresh',
          clientId: 'oa2client_1',
          clientSecret: 'oa2secret',
          expiresAt: '2026-11-28T09:15:00Z',
        },
        crmRateLimit: { requestsPerSecond: 1_000 },
        blocklists: [list('DOMAIN', { smartViewId: 'save_AbC123' })],
      },
    ],
    [
      'an Attio connection with its token, the highest requestsPerSecond and a list by slug',
      {
        crm: 'ATTIO',
        credentials: { accessToken: 'attio_token' },
        crmRateLimit: { requestsPerSecond: 100 },
        blocklists: [list('ADDRESS', { listId: 'do-not-contact' })],
      },
    ],
    [
      'an Attio connection with the lowest requestsPerSecond and a list by id',
      {
        crm: 'ATTIO',
        credentials: { accessToken: 'attio_token' },
        crmRateLimit: { requestsPerSecond: 1 },
        blocklists: [list('DOMAIN', { listId: '8ba4a8a1-1c1a-4a3e-9a3e-2a6f1b1c2d3e' })],
      },
    ],
  ])('keeps %s as written', (_case, connection) => {
    const parsed = connectionOf(connection);
    expect(parsed?.credentials).toStrictEqual(connection.credentials);
    expect(parsed?.crmRateLimit).toStrictEqual(connection.crmRateLimit);
    expect(parsed?.blocklists.map((b) => b.crmSource)).toStrictEqual((connection.blocklists as Array<{ crmSource: unknown }>).map((b) => b.crmSource));
  });

  const second = (connection: Record<string, unknown>) => ({ accounts: [{ connections: [{ crm: 'HUBSPOT' }, connection] }] });
  const at = 'accounts[0].connections[1]';
  it.each<[string, Record<string, unknown>, (string | RegExp)[]]>([
    [
      'a Close requestsPerSecond of 0',
      { crm: 'CLOSE', crmRateLimit: { requestsPerSecond: 0 } },
      [`${at}.crmRateLimit.requestsPerSecond: must be an integer from 1 to 1000`],
    ],
    [
      'a Close requestsPerSecond above 1,000',
      { crm: 'CLOSE', crmRateLimit: { requestsPerSecond: 1_001 } },
      [`${at}.crmRateLimit.requestsPerSecond: must be an integer from 1 to 1000`],
    ],
    [
      'a fractional Close requestsPerSecond',
      { crm: 'CLOSE', crmRateLimit: { requestsPerSecond: 2.5 } },
      [`${at}.crmRateLimit.requestsPerSecond: must be an integer from 1 to 1000`],
    ],
    [
      'a Close connection with the HubSpot setting',
      { crm: 'CLOSE', crmRateLimit: { requestsPer10s: 100 } },
      [`${at}.crmRateLimit: a CLOSE connection takes {requestsPerSecond}, not {requestsPer10s}`],
    ],
    [
      'an Attio requestsPerSecond above its 100',
      { crm: 'ATTIO', crmRateLimit: { requestsPerSecond: 101 } },
      [`${at}.crmRateLimit.requestsPerSecond: must be an integer from 1 to 100`],
    ],
    [
      'an unknown Close credential key',
      { crm: 'CLOSE', credentials: { apiKey: 'api_0123456789abcdef', password: 'x' } },
      [/^accounts\[0\]\.connections\[1\]\.credentials: .*"password"/],
    ],
    [
      'a Close connection with both an API key and an OAuth token',
      { crm: 'CLOSE', credentials: { apiKey: 'api_0123456789abcdef', accessToken: 'oa2_access' } },
      [`${at}.credentials.apiKey: is required: an apiKey, or an OAuth accessToken (not both)`],
    ],
    [
      'an Attio connection with a Close API key',
      { crm: 'ATTIO', credentials: { apiKey: 'api_0123456789abcdef' } },
      [`${at}.credentials.accessToken: is required (a string)`, /^accounts\[0\]\.connections\[1\]\.credentials: .*"apiKey"/],
    ],
    [
      'a Close Smart View that is not one',
      { crm: 'CLOSE', blocklists: [list('ADDRESS', { smartViewId: 'my view' })] },
      [`${at}.blocklists[0].crmSource.smartViewId: must be a Smart View id (save_...)`],
    ],
    ['an Attio list without its id', { crm: 'ATTIO', blocklists: [list('ADDRESS', {})] }, [`${at}.blocklists[0].crmSource.listId: is required`]],
  ])('rejects %s', (_case, connection, expected) => {
    expect(problemsOf(second(connection))).toEqual(problemMatchers(expected));
  });
});

describe('parseFixture blocklists[].crmSource', () => {
  const list = (extra: Record<string, unknown>) => ({ listName: 'Do not contact', platform: 'smartlead', blockType: 'DOMAIN', ...extra });
  const fixtureWith = (crm: string, blocklist: Record<string, unknown>) => ({ accounts: [{ connections: [{ crm, blocklists: [list(blocklist)] }] }] });
  const parsedList = (crm: string, blocklist: Record<string, unknown>) => parseFixture(fixtureWith(crm, blocklist)).accounts[0]?.connections[0]?.blocklists[0];
  const sourceOf = (crm: string, blocklist: Record<string, unknown>) => parsedList(crm, blocklist)?.crmSource;

  it.each<[string, string, Record<string, unknown>, Record<string, unknown>]>([
    ['a HubSpot list id', 'HUBSPOT', { listId: '42' }, { listId: '42' }],
    ['a HubSpot list id written as a number, as a string', 'HUBSPOT', { listId: 42 }, { listId: '42' }],
    [
      'Salesforce Contacts, with the standard opt-out field by default',
      'SALESFORCE',
      { object: 'Contact' },
      { object: 'Contact', field: 'HasOptedOutOfEmail' },
    ],
    ['Salesforce Leads, with the standard opt-out field by default', 'SALESFORCE', { object: 'Lead' }, { object: 'Lead', field: 'HasOptedOutOfEmail' }],
    ['Salesforce Leads with a custom checkbox', 'SALESFORCE', { object: 'Lead', field: 'Do_Not_Contact__c' }, { object: 'Lead', field: 'Do_Not_Contact__c' }],
    ['Salesforce Accounts with their checkbox', 'SALESFORCE', { object: 'Account', field: 'ns__Blocked__c' }, { object: 'Account', field: 'ns__Blocked__c' }],
  ])('keeps %s', (_case, crm, crmSource, expected) => {
    expect(sourceOf(crm, { crmSource })).toStrictEqual(expected);
  });

  it('needs none without a CRM source, on any CRM', () => {
    expect(sourceOf('HUBSPOT', { hasCrmSource: false })).toBeUndefined();
    expect(parsedList('PIPEDRIVE', { hasCrmSource: false })).toMatchObject({ hasCrmSource: false });
  });

  it('reads Salesforce Contacts for an ADDRESS list', () => {
    expect(sourceOf('SALESFORCE', { blockType: 'ADDRESS', crmSource: { object: 'Contact' } })).toEqual({ object: 'Contact', field: 'HasOptedOutOfEmail' });
  });

  const at = 'accounts[0].connections[0].blocklists[0]';
  it.each<[string, string, Record<string, unknown>, string[]]>([
    [
      'a HubSpot list without one (hasCrmSource defaults to true)',
      'HUBSPOT',
      {},
      [`${at}.crmSource: is required when hasCrmSource is true (a HUBSPOT connection takes {listId})`],
    ],
    [
      'a Salesforce list without one',
      'SALESFORCE',
      { hasCrmSource: true },
      [`${at}.crmSource: is required when hasCrmSource is true (a SALESFORCE connection takes {object, field?})`],
    ],
    [
      'a CRM source on a list that has none',
      'HUBSPOT',
      { hasCrmSource: false, crmSource: { listId: '1' } },
      [`${at}.crmSource: is only allowed when hasCrmSource is true`],
    ],
    [
      'a Salesforce source on a HubSpot connection (and no field is made up for it)',
      'HUBSPOT',
      { crmSource: { object: 'Contact' } },
      [`${at}.crmSource: a HUBSPOT connection takes {listId}, not {object}`],
    ],
    [
      'a HubSpot source on a Salesforce connection',
      'SALESFORCE',
      { crmSource: { listId: '1' } },
      [`${at}.crmSource: a SALESFORCE connection takes {object, field?}, not {listId}`],
    ],
    ['a Salesforce source without its object', 'SALESFORCE', { crmSource: { field: 'HasOptedOutOfEmail' } }, [`${at}.crmSource.object: is required`]],
    ['a HubSpot source without its list id', 'HUBSPOT', { crmSource: {} }, [`${at}.crmSource.listId: is required`]],
    [
      'Salesforce Accounts without a field',
      'SALESFORCE',
      { crmSource: { object: 'Account' } },
      [`${at}.crmSource.field: is required for Account (it has no standard opt-out checkbox)`],
    ],
    [
      'Salesforce Accounts for an ADDRESS list',
      'SALESFORCE',
      { blockType: 'ADDRESS', crmSource: { object: 'Account', field: 'Blocked__c' } },
      [`${at}.crmSource.object: an ADDRESS list reads Email, which Account does not have (use Contact or Lead)`],
    ],
    [
      'a CRM source on a CRM that has none',
      'PIPEDRIVE',
      { crmSource: { listId: '1' } },
      [`${at}.crmSource: is only supported on HUBSPOT, SALESFORCE, CLOSE, and ATTIO connections`],
    ],
    [
      'a list of a CRM without CRM sources that keeps the default hasCrmSource',
      'PIPEDRIVE',
      {},
      [`${at}.hasCrmSource: CRM sources are only supported on HUBSPOT, SALESFORCE, CLOSE, and ATTIO connections (set hasCrmSource to false)`],
    ],
    ['another Salesforce object', 'SALESFORCE', { crmSource: { object: 'Opportunity' } }, [`${at}.crmSource.object: must be Contact, Lead or Account`]],
    [
      'a field that is not an API name (it is named in SOQL)',
      'SALESFORCE',
      { crmSource: { object: 'Contact', field: "HasOptedOutOfEmail = true OR Name != ''" } },
      [`${at}.crmSource.field: must be the API name of a checkbox field (letters, digits and _)`],
    ],
    ['a list id that is not digits', 'HUBSPOT', { crmSource: { listId: 'my-list' } }, [`${at}.crmSource.listId: must be a HubSpot list id (digits)`]],
    ['a list id of 0', 'HUBSPOT', { crmSource: { listId: 0 } }, [`${at}.crmSource.listId: must be a HubSpot list id (digits)`]],
    ['a fractional list id', 'HUBSPOT', { crmSource: { listId: 4.2 } }, [`${at}.crmSource.listId: must be a HubSpot list id (digits)`]],
  ])('rejects %s', (_case, crm, blocklist, expected) => {
    expect(problemsOf(fixtureWith(crm, blocklist))).toEqual(expected);
  });

  it('rejects an unknown key', () => {
    expect(problemsOf(fixtureWith('HUBSPOT', { crmSource: { listId: '1', folder: 'x' } }))).toEqual([
      'accounts[0].connections[0].blocklists[0].crmSource: a HUBSPOT connection takes {listId}, not {folder}',
    ]);
  });
});

describe('parseFixture blocklists[].sequencer', () => {
  const API_KEY = 'sl_0123456789abcdefSECRET';
  const fixtureWith = (platform: string, sequencer: unknown) => ({
    accounts: [{ connections: [{ crm: 'HUBSPOT', blocklists: [{ listName: 'l', platform, blockType: 'ADDRESS', hasCrmSource: false, sequencer }] }] }],
  });
  const sequencerOf = (platform: string, sequencer: unknown) =>
    parseFixture(fixtureWith(platform, sequencer)).accounts[0]?.connections[0]?.blocklists[0]?.sequencer;

  it.each<[string, string, Record<string, unknown>, Record<string, unknown>]>([
    ['a Smartlead key', 'smartlead', { apiKey: API_KEY }, { apiKey: API_KEY }],
    ['a Smartlead key and client id', 'smartlead', { apiKey: API_KEY, clientId: '1234' }, { apiKey: API_KEY, clientId: '1234' }],
    ['a Smartlead client id written as a number, as a string', 'smartlead', { apiKey: API_KEY, clientId: 1234 }, { apiKey: API_KEY, clientId: '1234' }],
    ['an Instantly key', 'instantly', { apiKey: API_KEY }, { apiKey: API_KEY }],
  ])('keeps %s', (_case, platform, sequencer, expected) => {
    expect(sequencerOf(platform, sequencer)).toStrictEqual(expected);
  });

  it('is optional (the list is then not pushed anywhere yet)', () => {
    expect(sequencerOf('smartlead', undefined)).toBeUndefined();
  });

  const at = 'accounts[0].connections[0].blocklists[0].sequencer';
  it.each<[string, string, unknown, (string | RegExp)[]]>([
    ['a client id for Instantly', 'instantly', { apiKey: API_KEY, clientId: '1234' }, [`${at}: the instantly sequencer takes {apiKey}, not {clientId}`]],
    [
      'a platform block lists are not pushed to',
      'lemlist',
      { apiKey: API_KEY },
      [`${at}: block lists are pushed only to smartlead, instantly, and emailbison, not lemlist`],
    ],
    ['no key', 'smartlead', { clientId: '1234' }, [`${at}.apiKey: is required (a string)`]],
    ['a key that is not a string', 'smartlead', { apiKey: 1234567890 }, [`${at}.apiKey: is required (a string)`]],
    ['an empty key', 'instantly', { apiKey: '' }, [`${at}.apiKey: must not be empty`]],
    ['a key with a space', 'smartlead', { apiKey: `${API_KEY} ` }, [`${at}.apiKey: must not contain spaces`]],
    ['a key longer than 512 characters', 'smartlead', { apiKey: `${API_KEY}${'x'.repeat(512)}` }, [`${at}.apiKey: must be at most 512 characters`]],
    ['a client id that is not digits', 'smartlead', { apiKey: API_KEY, clientId: 'acme' }, [`${at}.clientId: must be a Smartlead client id (digits)`]],
    ['a sequencer that is not an object', 'smartlead', API_KEY, [/^accounts\[0\]\.connections\[0\]\.blocklists\[0\]\.sequencer: /]],
  ])('rejects %s, never quoting the key', (_case, platform, sequencer, expected) => {
    const problems = problemsOf(fixtureWith(platform, sequencer));

    expect(problems).toEqual(problemMatchers(expected));
    expect(problems.join('\n')).not.toContain('SECRET');
  });

  it('rejects an unknown key', () => {
    expect(problemsOf(fixtureWith('smartlead', { apiKey: API_KEY, webhookSecret: 'x' }))).toEqual([
      expect.stringMatching(/^accounts\[0\]\.connections\[0\]\.blocklists\[0\]\.sequencer: .*"webhookSecret"/),
    ]);
  });
});

describe('formatPath', () => {
  it.each<[PropertyKey[], string]>([
    [[], '(root)'],
    [['accounts'], 'accounts'],
    [['accounts', 0], 'accounts[0]'],
    [['accounts', 0, 'connections', 1, 'crm'], 'accounts[0].connections[1].crm'],
    [['accounts', 0, 'apiKeys', 2, 'scopes', 0], 'accounts[0].apiKeys[2].scopes[0]'],
    [['matrix', 0, 1], 'matrix[0][1]'],
    [[0, 'name'], '[0].name'],
    [['accounts', 0, 'connections', 0, 'sources', 0, 'requests', 3, 'sync', 'status'], 'accounts[0].connections[0].sources[0].requests[3].sync.status'],
  ])('formats %j as %s', (path, expected) => {
    expect(formatPath(path)).toBe(expected);
  });

  it('writes a symbol key by its description', () => {
    expect(formatPath(['accounts', Symbol('meta')])).toBe('accounts.Symbol(meta)');
  });
});

describe('fixtures/demo.json', () => {
  const demo = parseFixture(JSON.parse(readFileSync(new URL('../../fixtures/demo.json', import.meta.url), 'utf8')));
  const connections = demo.accounts.flatMap((a) => a.connections);
  const sources = connections.flatMap((c) => c.sources);
  const requests = sources.flatMap((s) => s.requests);
  const apiKeys = demo.accounts.flatMap((a) => a.apiKeys);

  it.each<[string, () => number]>([
    ['accounts', () => demo.accounts.length],
    ['connections', () => connections.length],
    ['sources', () => sources.length],
    ['destinations', () => connections.flatMap((c) => c.destinations).length],
    ['bindings', () => sources.flatMap((s) => s.destinations).length],
    ['sources bound to a reply relay', () => sources.filter((s) => s.replyRelay !== undefined).length],
    ['replyRelays', () => connections.flatMap((c) => c.replyRelays).length],
    ['blocklists', () => connections.flatMap((c) => c.blocklists).length],
    ['blocklist entries', () => connections.flatMap((c) => c.blocklists).flatMap((b) => b.entries).length],
    ['account-scoped apiKeys', () => apiKeys.filter((k) => k.connectionScope === 'account').length],
    ['connection-scoped apiKeys', () => apiKeys.filter((k) => k.connectionScope === 'connection' && k.connection !== undefined).length],
    ['revoked apiKeys', () => apiKeys.filter((k) => k.revoked).length],
    ['webhookEndpoints', () => demo.accounts.flatMap((a) => a.webhookEndpoints).length],
    ['history requests', () => requests.length],
    ['requests with a sync', () => requests.filter((r) => r.sync !== undefined).length],
    ['syncs that never recorded a result', () => requests.filter((r) => r.sync !== undefined && r.sync.status === null).length],
    ['deliveries', () => requests.flatMap((r) => r.deliveries).length],
    ['legacy sources', () => sources.filter((s) => s.legacyIds !== undefined).length],
  ])('has at least one of: %s', (_kind, count) => {
    expect(count()).toBeGreaterThan(0);
  });

  it('has more than one account, so cross-account isolation can be demonstrated', () => {
    expect(demo.accounts.length).toBeGreaterThan(1);
  });

  it('records every sync status', () => {
    const statuses = new Set(requests.flatMap((r) => (r.sync ? [r.sync.status] : [])));

    expect(statuses).toEqual(new Set(['success', 'warning', 'error', null]));
  });
});
