import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig, type Config } from '../../src/config.js';

const CWD = '/srv/pipeline';

/** 32 bytes 0x00..0x1f, in the two accepted spellings. */
const KEY_BYTES = Buffer.from(Array.from({ length: 32 }, (_, i) => i));
const HEX_KEY = KEY_BYTES.toString('hex');
const BASE64_KEY = KEY_BYTES.toString('base64');

function configErrorFor(env: NodeJS.ProcessEnv): ConfigError {
  try {
    loadConfig(env, CWD);
  } catch (error) {
    if (error instanceof ConfigError) return error;
    throw error;
  }
  throw new Error(`expected loadConfig to reject ${JSON.stringify(Object.keys(env))}`);
}

/** The variable names a ConfigError complains about, in order. */
function namedVariables(error: ConfigError): string[] {
  return error.problems.map((problem) => problem.slice(0, problem.indexOf(':')));
}

const DEFAULTS: Config = {
  retention: { history: 90, body: 30, audit: 400 },
  port: 3000,
  host: '0.0.0.0',
  databaseUrl: undefined,
  dataDir: path.resolve(CWD, '.data'),
  baseUrl: 'http://localhost:3000',
  ingressUrl: 'http://localhost:3000',
  docsUrl: 'http://localhost:3000/docs',
  encryptionKey: undefined,
  supportTokens: [],
  outboundAllowPrivate: false,
  trustProxyHops: 0,
  logLevel: 'info',
  workerMonitoring: false,
  workerConcurrency: 256,
  queryTimeoutMs: 20_000,
  rateLimits: { perIp: 120, perAccount: 120, outreach: 600 },
  // The embedded database's default: the sandbox stands in for every outside system.
  crmUrls: {
    HUBSPOT: 'http://localhost:3000/sandbox/hubspot',
    SALESFORCE: 'http://localhost:3000/sandbox/salesforce-login',
    CLOSE: 'http://localhost:3000/sandbox/close',
    ATTIO: 'http://localhost:3000/sandbox/attio',
  },
  crmBudgets: { HUBSPOT: 100, SALESFORCE: 10, CLOSE: 10, ATTIO: 25 },
  crmAuthorizeUrls: {
    HUBSPOT: 'http://localhost:3000/sandbox/hubspot-app',
    CLOSE: 'http://localhost:3000/sandbox/close-app',
    ATTIO: 'http://localhost:3000/sandbox/attio-app',
  },
  // The sandbox CRMs' own app: a connect link works offline.
  crmApps: {
    HUBSPOT: { clientId: 'sandbox-hubspot-client', clientSecret: 'sandbox-hubspot-secret' },
    SALESFORCE: { clientId: 'sandbox-salesforce-client', clientSecret: 'sandbox-salesforce-secret' },
    CLOSE: { clientId: 'sandbox-close-client', clientSecret: 'sandbox-close-secret' },
    ATTIO: { clientId: 'sandbox-attio-client', clientSecret: 'sandbox-attio-secret' },
  },
  connectStateKey: undefined,
  blocklistPushUrls: { smartlead: 'http://localhost:3000/sandbox/smartlead', instantly: 'http://localhost:3000/sandbox/instantly' },
  blocklistRefreshMinutes: 60,
  backfill: {
    intervalMinutes: 15,
    lookbackDays: 7,
    urls: { heyreach: 'http://localhost:3000/sandbox/heyreach', lemlist: 'http://localhost:3000/sandbox/lemlist' },
    budgets: { smartlead: 60, instantly: 20, heyreach: 300, lemlist: 20, emailbison: 600 },
  },
  forwarding: { retrySchedule: [5, 60, 300, 1_800, 7_200, 18_000], concurrency: 64, maxInFlight: 500 },
  relays: { smtpUrl: 'smtp://127.0.0.1:2525', from: 'Pipeline Sync <pipeline-sync@localhost>', retrySchedule: [60, 300, 900, 3_600, 10_800, 21_600] },
  webhooks: { retrySchedule: [5, 300, 1_800, 7_200, 18_000, 36_000, 36_000], concurrency: 64, maxInFlight: 32 },
  sandbox: { origin: 'http://localhost:3000', smtpPort: 2525 },
};

const ALL_VARIABLES = [
  'PORT',
  'HOST',
  'DATABASE_URL',
  'DATA_DIR',
  'BASE_URL',
  'INGRESS_URL',
  'DOCS_URL',
  'ENCRYPTION_KEY',
  'SUPPORT_TOKENS',
  'OUTBOUND_ALLOW_PRIVATE',
  'TRUST_PROXY',
  'LOG_LEVEL',
  'WORKER_MONITORING',
  'QUERY_TIMEOUT_MS',
  'RATE_LIMIT_PER_IP',
  'RATE_LIMIT_PER_ACCOUNT',
  'RATE_LIMIT_OUTREACH',
  'HUBSPOT_BASE_URL',
  'SALESFORCE_LOGIN_URL',
  'SMARTLEAD_BASE_URL',
  'INSTANTLY_BASE_URL',
  'BLOCKLIST_REFRESH_MINUTES',
  'BACKFILL_INTERVAL_MINUTES',
  'BACKFILL_LOOKBACK_DAYS',
  'EMAILBISON_REQUESTS_PER_MINUTE',
  'SMARTLEAD_REQUESTS_PER_MINUTE',
  'INSTANTLY_EMAILS_REQUESTS_PER_MINUTE',
  'HEYREACH_BASE_URL',
  'HEYREACH_REQUESTS_PER_MINUTE',
  'LEMLIST_BASE_URL',
  'LEMLIST_REQUESTS_PER_2S',
  'SMTP_URL',
  'SMTP_FROM',
  'REPLY_RELAY_RETRY_SCHEDULE',
  'FORWARDING_RETRY_SCHEDULE',
  'FORWARDING_CONCURRENCY',
  'FORWARDING_MAX_IN_FLIGHT',
  'WEBHOOK_RETRY_SCHEDULE',
  'WEBHOOK_CONCURRENCY',
  'WEBHOOK_MAX_IN_FLIGHT',
  'HUBSPOT_REQUESTS_PER_10S',
  'SALESFORCE_MAX_CONCURRENCY',
  'SANDBOX',
  'SANDBOX_SMTP_PORT',
  'CONNECT_STATE_KEY',
  'HUBSPOT_APP_URL',
  'HUBSPOT_CLIENT_ID',
  'HUBSPOT_CLIENT_SECRET',
  'SALESFORCE_CLIENT_ID',
  'SALESFORCE_CLIENT_SECRET',
] as const;

describe('loadConfig defaults', () => {
  it('returns every documented default for an empty environment', () => {
    expect(loadConfig({}, CWD)).toEqual(DEFAULTS);
  });

  it('treats every variable set to the empty string as unset', () => {
    const env = Object.fromEntries(ALL_VARIABLES.map((name) => [name, '']));

    expect(loadConfig(env, CWD)).toEqual(DEFAULTS);
  });

  it('ignores variables it does not know', () => {
    expect(loadConfig({ NODE_ENV: 'production', PATH: '/usr/bin', UNRELATED: 'x' }, CWD)).toEqual(DEFAULTS);
  });

  it.each([
    ['./.data', '/srv/pipeline/.data'],
    ['data', '/srv/pipeline/data'],
    ['state/../store', '/srv/pipeline/store'],
    ['../shared-data', '/srv/shared-data'],
    ['/var/lib/pipeline', '/var/lib/pipeline'],
  ])('resolves DATA_DIR=%s against the working directory to %s', (dataDir, expected) => {
    expect(loadConfig({ DATA_DIR: dataDir }, CWD).dataDir).toBe(expected);
  });

  it('derives BASE_URL, INGRESS_URL and DOCS_URL from PORT when none is set', () => {
    const config = loadConfig({ PORT: '8080' }, CWD);

    expect(config).toMatchObject({
      port: 8080,
      baseUrl: 'http://localhost:8080',
      ingressUrl: 'http://localhost:8080',
      docsUrl: 'http://localhost:8080/docs',
    });
  });

  it('defaults INGRESS_URL and DOCS_URL to the configured BASE_URL', () => {
    const config = loadConfig({ BASE_URL: 'https://pipeline.example.com/app' }, CWD);

    expect(config).toMatchObject({
      baseUrl: 'https://pipeline.example.com/app',
      ingressUrl: 'https://pipeline.example.com/app',
      docsUrl: 'https://pipeline.example.com/app/docs',
    });
  });

  it('uses INGRESS_URL and DOCS_URL when they are set', () => {
    const config = loadConfig({ BASE_URL: 'https://api.example.com', INGRESS_URL: 'https://in.example.com', DOCS_URL: 'https://docs.example.com/guide' }, CWD);

    expect(config).toMatchObject({
      baseUrl: 'https://api.example.com',
      ingressUrl: 'https://in.example.com',
      docsUrl: 'https://docs.example.com/guide',
    });
  });

  it('strips a trailing slash from an explicit DOCS_URL like every other URL', () => {
    expect(loadConfig({ DOCS_URL: 'https://docs.example.com/' }, CWD).docsUrl).toBe('https://docs.example.com');
  });

  it('strips trailing slashes from BASE_URL before deriving INGRESS_URL and DOCS_URL', () => {
    const config = loadConfig({ BASE_URL: 'https://pipeline.example.com/app//' }, CWD);

    expect(config).toMatchObject({
      baseUrl: 'https://pipeline.example.com/app',
      ingressUrl: 'https://pipeline.example.com/app',
      docsUrl: 'https://pipeline.example.com/app/docs',
    });
  });

  it.each([
    ['BASE_URL', (c: Config) => c.baseUrl],
    ['INGRESS_URL', (c: Config) => c.ingressUrl],
    ['HUBSPOT_BASE_URL', (c: Config) => c.crmUrls.HUBSPOT],
    ['SALESFORCE_LOGIN_URL', (c: Config) => c.crmUrls.SALESFORCE],
    ['SMARTLEAD_BASE_URL', (c: Config) => c.blocklistPushUrls.smartlead],
    ['INSTANTLY_BASE_URL', (c: Config) => c.blocklistPushUrls.instantly],
  ] as const)('strips trailing slashes from %s', (name, field) => {
    const config = loadConfig({ [name]: 'http://127.0.0.1:4010/emulator/' }, CWD);

    expect(field(config)).toBe('http://127.0.0.1:4010/emulator');
  });

  it.each([
    ['HUBSPOT_BASE_URL', (c: Config) => c.crmUrls.HUBSPOT, 'http://127.0.0.1:4001'],
    ['SALESFORCE_LOGIN_URL', (c: Config) => c.crmUrls.SALESFORCE, 'http://127.0.0.1:4002'],
    ['SMARTLEAD_BASE_URL', (c: Config) => c.blocklistPushUrls.smartlead, 'https://smartlead.emulator.test'],
    ['INSTANTLY_BASE_URL', (c: Config) => c.blocklistPushUrls.instantly, 'https://instantly.emulator.test'],
  ] as const)('takes %s over the connector default', (name, field, url) => {
    expect(field(loadConfig({ [name]: url }, CWD))).toBe(url);
  });
});

describe('loadConfig accepted values', () => {
  it.each([
    ['0', 0],
    ['1', 1],
    ['8080', 8080],
    ['65535', 65535],
  ])('accepts PORT=%s', (value, expected) => {
    expect(loadConfig({ PORT: value }, CWD).port).toBe(expected);
  });

  it.each([
    ['1', 1],
    ['600000', 600_000],
  ])('accepts QUERY_TIMEOUT_MS=%s', (value, expected) => {
    expect(loadConfig({ QUERY_TIMEOUT_MS: value }, CWD).queryTimeoutMs).toBe(expected);
  });

  it.each(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const)('accepts LOG_LEVEL=%s', (level) => {
    expect(loadConfig({ LOG_LEVEL: level }, CWD).logLevel).toBe(level);
  });

  it.each([
    ['OUTBOUND_ALLOW_PRIVATE', 'outboundAllowPrivate'],
    ['WORKER_MONITORING', 'workerMonitoring'],
  ] as const)('reads %s as a boolean from true/false/1/0', (name, field) => {
    expect(loadConfig({ [name]: 'true' }, CWD)[field]).toBe(true);
    expect(loadConfig({ [name]: '1' }, CWD)[field]).toBe(true);
    expect(loadConfig({ [name]: 'false' }, CWD)[field]).toBe(false);
    expect(loadConfig({ [name]: '0' }, CWD)[field]).toBe(false);
  });

  it.each([
    ['false', 0],
    ['0', 0],
    ['true', 1],
    ['1', 1],
    ['2', 2],
  ])('reads TRUST_PROXY=%s as %i proxy hops', (value, hops) => {
    expect(loadConfig({ TRUST_PROXY: value }, CWD).trustProxyHops).toBe(hops);
  });

  it('reads the forwarding settings: a retry schedule in seconds (fractions allowed), destinations at once, requests in flight', () => {
    const config = loadConfig({ FORWARDING_RETRY_SCHEDULE: ' 0.2, 1 ,30', FORWARDING_CONCURRENCY: '8', FORWARDING_MAX_IN_FLIGHT: '50' }, CWD);
    expect(config.forwarding).toEqual({ retrySchedule: [0.2, 1, 30], concurrency: 8, maxInFlight: 50 });
    expect(loadConfig({ FORWARDING_RETRY_SCHEDULE: '0' }, CWD).forwarding.retrySchedule).toEqual([0]);
  });

  it('reads WORKER_CONCURRENCY', () => {
    expect(loadConfig({ WORKER_CONCURRENCY: '4' }, CWD).workerConcurrency).toBe(4);
  });

  it('reads the three rate limits, 0 turning one off', () => {
    expect(loadConfig({ RATE_LIMIT_PER_IP: '0', RATE_LIMIT_PER_ACCOUNT: '5', RATE_LIMIT_OUTREACH: '7' }, CWD).rateLimits).toEqual({
      perIp: 0,
      perAccount: 5,
      outreach: 7,
    });
  });

  it('uses HOST as given', () => {
    expect(loadConfig({ HOST: '127.0.0.1' }, CWD).host).toBe('127.0.0.1');
  });

  it.each(['postgres://app:pw@db.internal:5432/pipeline', 'postgresql://app@db.internal/pipeline?sslmode=require'])(
    'accepts DATABASE_URL=%s together with ENCRYPTION_KEY',
    (url) => {
      expect(loadConfig({ DATABASE_URL: url, ENCRYPTION_KEY: HEX_KEY }, CWD).databaseUrl).toBe(url);
    },
  );

  it.each(['smtp://mail.example.com:25', 'smtps://user:pw@mail.example.com:465'])('accepts SMTP_URL=%s', (url) => {
    expect(loadConfig({ SMTP_URL: url }, CWD).relays.smtpUrl).toBe(url);
  });

  it('splits SUPPORT_TOKENS on commas, trimming blanks and dropping empty entries', () => {
    const config = loadConfig({ SUPPORT_TOKENS: ' staff-token-aaaaaaaa , staff-token-bbbbbbbbbb,, ' }, CWD);

    expect(config.supportTokens).toEqual([
      { name: 'token:staf', token: 'staff-token-aaaaaaaa' },
      { name: 'token:staf', token: 'staff-token-bbbbbbbbbb' },
    ]);
  });

  it('accepts a staff token of exactly 16 characters', () => {
    expect(loadConfig({ SUPPORT_TOKENS: '0123456789abcdef' }, CWD).supportTokens).toEqual([{ name: 'token:0123', token: '0123456789abcdef' }]);
  });

  it('names a staff token written name:token, and checks the token part for length', () => {
    expect(loadConfig({ SUPPORT_TOKENS: 'rita@support:0123456789abcdef,0123456789abcdef' }, CWD).supportTokens).toEqual([
      { name: 'rita@support', token: '0123456789abcdef' },
      { name: 'token:0123', token: '0123456789abcdef' },
    ]);
    expect(() => loadConfig({ SUPPORT_TOKENS: 'rita:short' }, CWD)).toThrow(/at least 16 characters/);
  });
});

describe('loadConfig ENCRYPTION_KEY', () => {
  it.each([
    ['64 lowercase hex characters', HEX_KEY],
    ['64 uppercase hex characters', HEX_KEY.toUpperCase()],
    ['44 base64 characters with padding', BASE64_KEY],
    ['43 base64 characters without padding', BASE64_KEY.replace(/=$/, '')],
  ])('decodes %s to the 32 key bytes', (_form, value) => {
    const key = loadConfig({ ENCRYPTION_KEY: value }, CWD).encryptionKey;

    expect(key).toBeInstanceOf(Buffer);
    expect(key?.length).toBe(32);
    expect(key?.equals(KEY_BYTES)).toBe(true);
  });

  it('decodes a base64 key containing + and /', () => {
    const bytes = Buffer.alloc(32, 0xfb);
    const value = bytes.toString('base64');
    expect(value).toMatch(/[+/]/);

    expect(loadConfig({ ENCRYPTION_KEY: value }, CWD).encryptionKey?.equals(bytes)).toBe(true);
  });

  it.each([
    ['63 hex characters', HEX_KEY.slice(1)],
    ['65 hex characters', `${HEX_KEY}0`],
    ['64 characters that are not all hex', `${HEX_KEY.slice(0, 63)}g`],
    ['44 base64 characters without padding (33 bytes)', 'A'.repeat(44)],
    ['42 base64 characters', BASE64_KEY.slice(0, 42)],
    ['a base64 key for 16 bytes', Buffer.alloc(16, 1).toString('base64')],
    ['a passphrase', 'correct horse battery staple'],
  ])('rejects %s', (_form, value) => {
    const error = configErrorFor({ ENCRYPTION_KEY: value });

    expect(namedVariables(error)).toEqual(['ENCRYPTION_KEY']);
    expect(error.problems[0]).toContain('32 bytes');
  });

  it('is required when DATABASE_URL is set', () => {
    const error = configErrorFor({ DATABASE_URL: 'postgres://app@db.internal/pipeline' });

    expect(namedVariables(error)).toEqual(['ENCRYPTION_KEY']);
    expect(error.problems[0]).toContain('required when DATABASE_URL is set');
  });

  it('is required when DATABASE_URL is set even if ENCRYPTION_KEY is the empty string', () => {
    const error = configErrorFor({ DATABASE_URL: 'postgres://app@db.internal/pipeline', ENCRYPTION_KEY: '' });

    expect(namedVariables(error)).toEqual(['ENCRYPTION_KEY']);
  });

  it('is optional with the embedded database', () => {
    expect(loadConfig({ ENCRYPTION_KEY: HEX_KEY }, CWD).databaseUrl).toBeUndefined();
    expect(loadConfig({}, CWD).encryptionKey).toBeUndefined();
  });
});

describe('loadConfig rejected values', () => {
  it.each([
    ['PORT', 'abc', 'must be a whole number'],
    ['PORT', '-1', 'must be a whole number'],
    ['PORT', '3000.5', 'must be a whole number'],
    ['PORT', ' 3000', 'must be a whole number'],
    ['PORT', '70000', 'must be at most 65535'],
    ['QUERY_TIMEOUT_MS', '0', 'must be at least 1'],
    ['QUERY_TIMEOUT_MS', '600001', 'must be at most 600000'],
    ['QUERY_TIMEOUT_MS', '20s', 'must be a whole number'],
    ['LOG_LEVEL', 'loud', 'must be one of'],
    ['LOG_LEVEL', 'INFO', 'must be one of'],
    ['OUTBOUND_ALLOW_PRIVATE', 'yes', 'must be true or false'],
    ['TRUST_PROXY', 'on', 'must be true, false or a number of proxy hops'],
    ['TRUST_PROXY', '-1', 'must be true, false or a number of proxy hops'],
    ['RATE_LIMIT_PER_IP', '-5', 'must be a whole number'],
    ['RATE_LIMIT_PER_ACCOUNT', '1.5', 'must be a whole number'],
    ['RATE_LIMIT_OUTREACH', 'many', 'must be a whole number'],
    ['WORKER_MONITORING', 'TRUE', 'must be true or false'],
    ['WORKER_CONCURRENCY', '0', 'must be at least 1'],
    ['WORKER_CONCURRENCY', '1001', 'must be at most 1000'],
    ['BASE_URL', 'ftp://x', 'must be an http:// or https:// URL'],
    ['BASE_URL', 'localhost:3000', 'must be an http:// or https:// URL'],
    ['INGRESS_URL', 'not a url', 'must be an http:// or https:// URL'],
    ['DOCS_URL', 'file:///docs', 'must be an http:// or https:// URL'],
    ['HUBSPOT_BASE_URL', 'ws://api.hubapi.com', 'must be an http:// or https:// URL'],
    ['SALESFORCE_LOGIN_URL', 'login.salesforce.com', 'must be an http:// or https:// URL'],
    ['SMARTLEAD_BASE_URL', 'ftp://server.smartlead.ai', 'must be an http:// or https:// URL'],
    ['INSTANTLY_BASE_URL', 'api.instantly.ai', 'must be an http:// or https:// URL'],
    ['BASE_URL', 'https://user:pw@x.test', 'without credentials, query or fragment'],
    ['BASE_URL', 'https://x.test/?a=b', 'without credentials, query or fragment'],
    ['INGRESS_URL', 'https://x.test/#frag', 'without credentials, query or fragment'],
    ['DATABASE_URL', 'mysql://x', 'must be a postgres:// or postgresql:// connection URL'],
    ['DATABASE_URL', 'postgres://', 'must be a postgres:// or postgresql:// connection URL'],
    ['DATABASE_URL', 'db.internal:5432', 'must be a postgres:// or postgresql:// connection URL'],
    ['SUPPORT_TOKENS', 'short', 'at least 16 characters'],
    ['SUPPORT_TOKENS', '0123456789abcdef,0123456789abcde', 'at least 16 characters'],
    ['ENCRYPTION_KEY', 'abcd', '32 bytes'],
    ['SMTP_URL', 'http://x', 'must be an smtp:// or smtps:// URL'],
    ['SMTP_URL', 'mail.example.com:25', 'must be an smtp:// or smtps:// URL'],
    ['SMTP_FROM', 'not an address', 'must be an email address, or Name <address>'],
    ['SMTP_FROM', 'Rep <rep@x.test>\r\nBcc: all@x.test', 'must be an email address, or Name <address>'],
    ['REPLY_RELAY_RETRY_SCHEDULE', '1,,2', 'must be comma-separated seconds, e.g. 5,60,300'],
    ['FORWARDING_RETRY_SCHEDULE', '5;60', 'comma-separated seconds'],
    ['FORWARDING_RETRY_SCHEDULE', '5,,60', 'comma-separated seconds'],
    ['FORWARDING_RETRY_SCHEDULE', '-5', 'comma-separated seconds'],
    ['FORWARDING_RETRY_SCHEDULE', '90000', 'at most 86400 seconds'],
    ['FORWARDING_RETRY_SCHEDULE', Array.from({ length: 21 }, () => '1').join(','), 'at most 20 retries'],
    ['FORWARDING_CONCURRENCY', '0', 'must be at least 1'],
    ['FORWARDING_MAX_IN_FLIGHT', '5001', 'must be at most 5000'],
  ])('rejects %s=%j with a problem naming the variable', (name, value, message) => {
    // A valid key beside a DATABASE_URL, so the only problem is the value under test.
    const key = name === 'DATABASE_URL' ? { ENCRYPTION_KEY: 'a'.repeat(64) } : {};
    const error = configErrorFor({ [name]: value, ...key });

    expect(error).toBeInstanceOf(Error);
    expect(error.name).toBe('ConfigError');
    expect(error.problems).toHaveLength(1);
    expect(error.problems[0]).toMatch(new RegExp(`^${name}: `));
    expect(error.problems[0]).toContain(message);
    expect(error.message).toContain(`  - ${error.problems[0]}`);
  });

  it('reports several bad variables together in one error', () => {
    const error = configErrorFor({
      PORT: '70000',
      LOG_LEVEL: 'loud',
      OUTBOUND_ALLOW_PRIVATE: 'yes',
      BASE_URL: 'ftp://x',
      DATABASE_URL: 'mysql://x',
      SUPPORT_TOKENS: 'short',
      ENCRYPTION_KEY: 'abcd',
      SMTP_URL: 'http://x',
    });

    expect(namedVariables(error).sort()).toEqual(
      ['PORT', 'LOG_LEVEL', 'OUTBOUND_ALLOW_PRIVATE', 'BASE_URL', 'DATABASE_URL', 'SUPPORT_TOKENS', 'ENCRYPTION_KEY', 'SMTP_URL'].sort(),
    );
    for (const problem of error.problems) expect(error.message).toContain(problem);
  });

  it('reports a missing ENCRYPTION_KEY together with the other bad variables', () => {
    const error = configErrorFor({ PORT: 'abc', DATABASE_URL: 'postgres://app@db.internal/pipeline' });

    expect(namedVariables(error).sort()).toEqual(['ENCRYPTION_KEY', 'PORT']);
  });
});

describe('loadConfig never echoes a secret', () => {
  const dbPassword = 'Pa55w0rdFromVault';
  const staffToken = 'staff-token-0123456789abcdef';

  it.each([
    ['a malformed ENCRYPTION_KEY', { ENCRYPTION_KEY: 'correct-horse-battery-staple-secret' }, ['correct-horse-battery-staple-secret']],
    ['an ENCRYPTION_KEY one hex digit short', { ENCRYPTION_KEY: HEX_KEY.slice(1) }, [HEX_KEY.slice(1)]],
    ['an ENCRYPTION_KEY one base64 digit short', { ENCRYPTION_KEY: BASE64_KEY.slice(0, 42) }, [BASE64_KEY.slice(0, 42)]],
    ['SUPPORT_TOKENS with a short token', { SUPPORT_TOKENS: `${staffToken},tooShortSecret` }, [staffToken, 'tooShortSecret']],
    ['a DATABASE_URL of the wrong kind', { DATABASE_URL: `mysql://admin:${dbPassword}@db.internal/app` }, [dbPassword]],
    ['a DATABASE_URL without ENCRYPTION_KEY', { DATABASE_URL: `postgres://admin:${dbPassword}@db.internal/app` }, [dbPassword]],
    [
      'a valid DATABASE_URL and a bad ENCRYPTION_KEY',
      { DATABASE_URL: `postgres://admin:${dbPassword}@db.internal/app`, ENCRYPTION_KEY: 'not-the-right-shape-at-all' },
      [dbPassword, 'not-the-right-shape-at-all'],
    ],
    [
      'a valid secret next to a bad variable',
      { ENCRYPTION_KEY: HEX_KEY, SUPPORT_TOKENS: staffToken, DATABASE_URL: `postgres://admin:${dbPassword}@db/app`, PORT: 'x' },
      [HEX_KEY, staffToken, dbPassword],
    ],
  ])('keeps the value out of the error for %s', (_case, env, secrets) => {
    const error = configErrorFor(env);
    const text = `${error.message}\n${error.problems.join('\n')}\n${error.stack ?? ''}`;

    for (const secret of secrets) expect(text).not.toContain(secret);
  });
});

describe('loadConfig SANDBOX', () => {
  const external = { DATABASE_URL: 'postgres://app@db.internal/pipeline', ENCRYPTION_KEY: 'a'.repeat(64) };

  it('is off with DATABASE_URL: the real systems, no SMTP', () => {
    const config = loadConfig(external, CWD);
    expect(config).toMatchObject({
      sandbox: null,
      crmUrls: { HUBSPOT: 'https://api.hubapi.com', SALESFORCE: 'https://login.salesforce.com' },
      blocklistPushUrls: { smartlead: 'https://server.smartlead.ai', instantly: 'https://api.instantly.ai' },
      relays: { smtpUrl: undefined },
    });
  });

  it('can be asked for with DATABASE_URL, and turned off without it', () => {
    expect(loadConfig({ ...external, SANDBOX: 'true', BASE_URL: 'https://pipeline.example.com/' }, CWD)).toMatchObject({
      sandbox: { origin: 'https://pipeline.example.com', smtpPort: 2525 },
      crmUrls: { HUBSPOT: 'https://pipeline.example.com/sandbox/hubspot' },
    });
    expect(loadConfig({ SANDBOX: 'false' }, CWD)).toMatchObject({
      sandbox: null,
      crmUrls: { HUBSPOT: 'https://api.hubapi.com' },
      relays: { smtpUrl: undefined },
    });
  });

  it('leaves a system named explicitly where it is', () => {
    const config = loadConfig({ HUBSPOT_BASE_URL: 'http://127.0.0.1:9000/', SMTP_URL: 'smtp://mail.internal:25', SANDBOX_SMTP_PORT: '2600' }, CWD);
    expect(config).toMatchObject({
      sandbox: { smtpPort: 2600 },
      crmUrls: { HUBSPOT: 'http://127.0.0.1:9000', SALESFORCE: 'http://localhost:3000/sandbox/salesforce-login' },
      relays: { smtpUrl: 'smtp://mail.internal:25' },
    });
  });

  it.each(['yes', '2'])('rejects SANDBOX=%s', (value) => {
    expect(namedVariables(configErrorFor({ SANDBOX: value }))).toEqual(['SANDBOX']);
  });
});

describe('loadConfig CRM apps (connect links, issue 30)', () => {
  const external = { DATABASE_URL: 'postgres://app@db.internal/pipeline', ENCRYPTION_KEY: 'a'.repeat(64) };
  const hubspotApp = { HUBSPOT_CLIENT_ID: '0c1d2e3f-aaaa-bbbb-cccc-000000000001', HUBSPOT_CLIENT_SECRET: 'hs-app-secret-value' };

  it('has no app without the variables and the sandbox: no CRM can be connected by OAuth', () => {
    expect(loadConfig(external, CWD)).toMatchObject({ crmApps: {}, crmAuthorizeUrls: { HUBSPOT: 'https://app.hubspot.com' }, connectStateKey: undefined });
  });

  it('reads each app, a Salesforce app without its secret among them', () => {
    const config = loadConfig({ ...external, ...hubspotApp, SALESFORCE_CLIENT_ID: '3MVG9consumer.key', HUBSPOT_APP_URL: 'https://app-eu1.hubspot.com/' }, CWD);
    expect(config.crmApps).toEqual({
      HUBSPOT: { clientId: hubspotApp.HUBSPOT_CLIENT_ID, clientSecret: hubspotApp.HUBSPOT_CLIENT_SECRET },
      SALESFORCE: { clientId: '3MVG9consumer.key' },
    });
    expect(config.crmAuthorizeUrls).toEqual({ HUBSPOT: 'https://app-eu1.hubspot.com', CLOSE: 'https://app.close.com', ATTIO: 'https://app.attio.com' });
  });

  it('keeps a named app over the sandbox one', () => {
    expect(loadConfig(hubspotApp, CWD).crmApps.HUBSPOT).toEqual({ clientId: hubspotApp.HUBSPOT_CLIENT_ID, clientSecret: hubspotApp.HUBSPOT_CLIENT_SECRET });
  });

  it.each([
    ['a HubSpot client id without its secret', { HUBSPOT_CLIENT_ID: 'id' }, ['HUBSPOT_CLIENT_SECRET']],
    ['a secret without its client id', { HUBSPOT_CLIENT_SECRET: 'secret', SALESFORCE_CLIENT_SECRET: 'secret' }, ['HUBSPOT_CLIENT_ID', 'SALESFORCE_CLIENT_ID']],
    ['a client id with a space', { SALESFORCE_CLIENT_ID: 'two words' }, ['SALESFORCE_CLIENT_ID']],
    ['a short CONNECT_STATE_KEY', { CONNECT_STATE_KEY: 'abc' }, ['CONNECT_STATE_KEY']],
  ])('refuses %s, naming the variables', (_case, env, names) => {
    expect(namedVariables(configErrorFor({ ...external, ...env })).sort()).toEqual(names);
  });

  it('never echoes a client secret', () => {
    const error = configErrorFor({ ...external, HUBSPOT_CLIENT_SECRET: 'do-not-print-me', SALESFORCE_CLIENT_SECRET: 'with space' });
    expect(`${error.message}\n${error.problems.join('\n')}`).not.toMatch(/do-not-print-me|with space/);
  });

  it('decodes CONNECT_STATE_KEY like ENCRYPTION_KEY', () => {
    expect(loadConfig({ ...external, CONNECT_STATE_KEY: 'b'.repeat(64) }, CWD).connectStateKey?.equals(Buffer.alloc(32, 0xbb))).toBe(true);
  });
});

describe('retention', () => {
  it('takes days for history, raw bodies and the audit log', () => {
    expect(loadConfig({ RETENTION_DAYS: '365', RAW_BODY_RETENTION_DAYS: '7', AUDIT_RETENTION_DAYS: '730' }, CWD).retention).toEqual({
      history: 365,
      body: 7,
      audit: 730,
    });
  });

  it.each([
    [{ RETENTION_DAYS: '30' }, 'RETENTION_DAYS'],
    [{ RAW_BODY_RETENTION_DAYS: '0' }, 'RAW_BODY_RETENTION_DAYS'],
    [{ AUDIT_RETENTION_DAYS: 'ninety' }, 'AUDIT_RETENTION_DAYS'],
  ])('refuses %o, shorter than an API window or not a day count', (env, variable) => {
    expect(namedVariables(configErrorFor(env))).toEqual([variable]);
  });

  it('refuses raw bodies kept longer than their requests', () => {
    const error = configErrorFor({ RETENTION_DAYS: '60', RAW_BODY_RETENTION_DAYS: '61' });

    expect(error.problems).toEqual(['RAW_BODY_RETENTION_DAYS: must not be longer than RETENTION_DAYS (a body is kept no longer than its request)']);
  });
});
