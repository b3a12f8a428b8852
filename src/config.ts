import path from 'node:path';
import { z } from 'zod';
import type { CrmDefinition } from './connectors/crm/definition.js';
import { CRM_KINDS, type CrmKind } from './connectors/crm/kinds.js';
import type { OAuthApp } from './connectors/crm/oauth.js';
import { CRMS } from './connectors/crm/registry.js';
import type { SequencerPlatform } from './connectors/sequencers/platforms.js';
import { HISTORY_SEQUENCERS, PUSH_SEQUENCERS } from './connectors/sequencers/registry.js';
import { sandboxApp } from './sandbox/demo.js';
import { sandboxDefaultPath, type SandboxVariable } from './sandbox/system-table.js';

/**
 * Every environment variable the service reads, parsed and validated in one place.
 * The README's configuration table lists the same names; keep the two together.
 */
export interface Config {
  port: number;
  host: string;
  /** Unset: the service runs an embedded PostgreSQL under `dataDir`. */
  databaseUrl: string | undefined;
  dataDir: string;
  baseUrl: string;
  ingressUrl: string;
  docsUrl: string;
  /** 32-byte key for secrets at rest; unset with the embedded database, which keeps one under `dataDir`. */
  encryptionKey: Buffer | undefined;
  /** SUPPORT_TOKENS: the staff tokens of the support explorer, each with the name its audit rows carry. */
  supportTokens: StaffToken[];
  outboundAllowPrivate: boolean;
  /** How many proxies in front of us append to X-Forwarded-For (0: the socket's address is the client). */
  trustProxyHops: number;
  logLevel: LogLevel;
  workerMonitoring: boolean;
  /** Jobs one worker process's `jobs` lane runs at once, a connection's sync drain among them (graphile-worker concurrency; its local queue is twice that). */
  workerConcurrency: number;
  queryTimeoutMs: number;
  /** Requests per 60 s; 0 turns a limit off. */
  rateLimits: { perIp: number; perAccount: number; outreach: number };
  /** Each CRM's API, without a trailing slash: the variable its definition's `endpoint` names (HUBSPOT_BASE_URL, SALESFORCE_LOGIN_URL, ...). */
  crmUrls: Record<CrmKind, string>;
  /** Each CRM's request budget for connections that name none (its definition names the variable: src/connectors/crm/<kind>/definition.ts). */
  crmBudgets: Record<CrmKind, number>;
  /**
   * Where customers consent to connect a CRM, for the CRMs whose OAuth names a host of its own (its
   * definition's `oauth.authorize.endpoint`: HUBSPOT_APP_URL); the others consent at their `crmUrls` host.
   */
  crmAuthorizeUrls: Partial<Record<CrmKind, string>>;
  /** The service's app at each CRM (its definition's `oauth.app` variables: HUBSPOT_CLIENT_ID, ...); a CRM without one cannot be connected by OAuth here. */
  crmApps: Partial<Record<CrmKind, OAuthApp>>;
  /** CONNECT_STATE_KEY: signs connect links; unset, a key derived from the encryption key does. */
  connectStateKey: Buffer | undefined;
  /** Each sequencer's block-list API, for those block lists are pushed to: the variable its push's `endpoint` names (SMARTLEAD_BASE_URL, ...). */
  blocklistPushUrls: Partial<Record<SequencerPlatform, string>>;
  /** Minutes between a synced block list's incremental rounds. */
  blocklistRefreshMinutes: number;
  /** What the backfill asks the sequencers for, and how often (src/jobs/backfills__*.ts). */
  backfill: BackfillConfig;
  forwarding: ForwardingConfig;
  relays: RelayConfig;
  webhooks: WebhookConfig;
  /** SANDBOX: the stand-ins for every outside system, served under `<BASE_URL>/sandbox/`; null when off. */
  sandbox: SandboxConfig | null;
  /** Days each kind of history is kept before its partitions are dropped (RETENTION_DAYS, RAW_BODY_RETENTION_DAYS, AUDIT_RETENTION_DAYS). */
  retention: { history: number; body: number; audit: number };
}

/** How long history is kept, in days, where nothing says otherwise (src/db/history/). */
export const DEFAULT_RETENTION = { history: 90, body: 30, audit: 400 } as const;

/** The sandbox (src/sandbox/): its origin and the port of its SMTP server. */
interface SandboxConfig {
  /** `<BASE_URL>`'s origin: the only origin outbound calls may reach on loopback (and webhooks over http). */
  origin: string;
  /** SANDBOX_SMTP_PORT: where its SMTP server listens (on 127.0.0.1), the inbox the sandbox page shows. */
  smtpPort: number;
}

/** A support staff member's explorer token. */
export interface StaffToken {
  name: string;
  token: string;
}

/**
 * An outside system's base URL as a definition names it (a CRM's API, a sequencer's block-list API):
 * the environment variable that sets it, its production default, and what it is. `loadConfig` reads the
 * variable (an http(s) URL; with the sandbox on and the variable unset, the path its row of
 * src/sandbox/system-table.ts serves, which is why the variable must have a row there).
 */
export interface EndpointVariable {
  env: SandboxVariable;
  default: string;
  /** What the URL reaches, as the README's configuration table says it: `HubSpot API`. */
  description: string;
}

/** Where block lists are pushed and how often they are fetched again (src/jobs/blocklists__*.ts). */
export interface BlocklistConfig {
  /** Each push sequencer's API base URL, by platform (its push's `endpoint` variable); absent: the endpoint's default. */
  pushUrls: Partial<Record<SequencerPlatform, string>>;
  /** Minutes between a synced list's incremental rounds (BLOCKLIST_REFRESH_MINUTES). */
  refreshMinutes: number;
}

/** The sequencers' production APIs and the documented refresh, where a worker is given none (tests). */
export const DEFAULT_BLOCKLISTS: BlocklistConfig = {
  pushUrls: Object.fromEntries(PUSH_SEQUENCERS.flatMap(({ platform, blocklistPush: { endpoint } }) => (endpoint ? [[platform, endpoint.default]] : []))),
  refreshMinutes: 60,
};

/** The backfill of missed webhooks (src/jobs/backfills__*.ts). */
export interface BackfillConfig {
  /** BACKFILL_INTERVAL_MINUTES: minutes between a source's rounds. */
  intervalMinutes: number;
  /** BACKFILL_LOOKBACK_DAYS: the leads seen, and the messages asked for, this many days back. */
  lookbackDays: number;
  /**
   * Each history sequencer's API base URL where it is not its block-list push's (those read `blocklistPushUrls`:
   * SMARTLEAD_BASE_URL, ...); absent: the push's, its default, or the account's own.
   */
  urls: Partial<Record<SequencerPlatform, string>>;
  /** Each history sequencer's requests per window and account (its `history.budget.env`); absent: its documented limit. */
  budgets: Partial<Record<SequencerPlatform, number>>;
  /** Each history sequencer's budget window in ms; absent: its documented one (bench:backfill compresses time with it). */
  windows?: Partial<Record<SequencerPlatform, number>>;
}

/** The documented defaults, where a worker is given none (tests). */
export const DEFAULT_BACKFILL: BackfillConfig = { intervalMinutes: 15, lookbackDays: 7, urls: {}, budgets: {} };

/** How events are forwarded to customer URLs (src/jobs/deliveries__send.ts). */
export interface ForwardingConfig {
  /** Seconds to wait before each retry of a failed attempt: attempts = retries + 1. */
  retrySchedule: number[];
  /** Destinations one worker process sends to at once (each one's sending loop holds a slot). */
  concurrency: number;
  /** Requests in flight to one destination at once. */
  maxInFlight: number;
}

/** How reply relays send their emails (src/jobs/relay_executions__send.ts). */
export interface RelayConfig {
  /** `smtp://user:pass@host:587`; unset, every relay attempt fails with "SMTP is not configured" (and is retried). */
  smtpUrl: string | undefined;
  /** The sender of every relay email: an address, or `Name <address>`. */
  from: string;
  /** Seconds to wait before each retry of a transient SMTP failure: attempts = retries + 1. */
  retrySchedule: number[];
}

/** How platform events reach webhook endpoints (src/jobs/webhook_deliveries__send.ts). */
export interface WebhookConfig {
  /** Seconds to wait before each retry of a failed attempt: attempts = retries + 1. */
  retrySchedule: number[];
  /** Endpoints one worker process sends to at once (each one's sending loop holds a slot of the webhooks lane). */
  concurrency: number;
  /** Requests in flight to one endpoint at once. */
  maxInFlight: number;
}

/** Svix's schedule: after the immediate first attempt, 5 s, 5 min, 30 min, 2 h, 5 h, 10 h and 10 h (eight attempts over about a day). */
export const DEFAULT_WEBHOOK_RETRY_SCHEDULE = [5, 300, 1_800, 7_200, 18_000, 36_000, 36_000];

/** SMTP_FROM's default. */
export const DEFAULT_SMTP_FROM = 'Pipeline Sync <pipeline-sync@localhost>';

/** The documented relay retry schedule: seven attempts over about ten hours. */
export const DEFAULT_RELAY_RETRY_SCHEDULE = [60, 300, 900, 3_600, 10_800, 21_600];

/** The documented retry schedule: seven attempts over about seven and a half hours. */
export const DEFAULT_FORWARDING_RETRY_SCHEDULE = [5, 60, 300, 1_800, 7_200, 18_000];

export type LogLevel = 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';

/** Thrown with one line per bad variable, so an operator fixes them all in one go. */
export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(`Invalid configuration:\n${problems.map((p) => `  - ${p}`).join('\n')}`);
    this.name = 'ConfigError';
  }
}

/**
 * Parses the environment into a {@link Config}.
 * @throws ConfigError naming every variable with a bad value; a secret's value is never echoed.
 */
export function loadConfig(env: NodeJS.ProcessEnv = process.env, cwd = process.cwd()): Config {
  const parsed = envSchema.safeParse(env);
  const problems = parsed.success ? [] : parsed.error.issues.map((issue) => `${issue.path.join('.')}: ${issue.message}`);
  // Checked on the raw values too, so a missing key is reported with every other problem at once.
  if (isSet(env.DATABASE_URL) && !isSet(env.ENCRYPTION_KEY)) {
    problems.push(
      'ENCRYPTION_KEY: required when DATABASE_URL is set, so that every process shares one key ' +
        "(generate one with: node -e \"console.log(require('crypto').randomBytes(32).toString('base64'))\")",
    );
  }
  problems.push(...appProblems(env));
  if (parsed.success && parsed.data.RAW_BODY_RETENTION_DAYS > parsed.data.RETENTION_DAYS) {
    problems.push('RAW_BODY_RETENTION_DAYS: must not be longer than RETENTION_DAYS (a body is kept no longer than its request)');
  }
  if (!parsed.success || problems.length > 0) throw new ConfigError(problems);
  const e = parsed.data;
  const baseUrl = stripTrailingSlash(e.BASE_URL ?? `http://localhost:${e.PORT}`);
  // The sandbox is the embedded database's default: a demo on a laptop reaches no real CRM.
  const sandbox = (e.SANDBOX ?? e.DATABASE_URL === undefined) ? { origin: new URL(baseUrl).origin, smtpPort: e.SANDBOX_SMTP_PORT } : null;
  // With the sandbox on, outside systems not named explicitly are the sandbox's: the path its router serves them at.
  const outside = (name: SandboxVariable, value: string) => (sandbox && !isSet(env[name]) ? `${baseUrl}${sandboxDefaultPath(name)}` : value);
  // The variables the definitions name (see definitionVariables), by their name.
  const named: Readonly<Record<string, unknown>> = e;
  const endpoint = ({ env: name }: EndpointVariable) => outside(name, stripTrailingSlash(named[name] as string));
  return {
    port: e.PORT,
    host: e.HOST,
    databaseUrl: e.DATABASE_URL,
    dataDir: path.resolve(cwd, e.DATA_DIR),
    baseUrl,
    ingressUrl: stripTrailingSlash(e.INGRESS_URL ?? baseUrl),
    docsUrl: stripTrailingSlash(e.DOCS_URL ?? `${baseUrl}/docs`),
    encryptionKey: e.ENCRYPTION_KEY,
    supportTokens: e.SUPPORT_TOKENS,
    outboundAllowPrivate: e.OUTBOUND_ALLOW_PRIVATE,
    trustProxyHops: e.TRUST_PROXY,
    logLevel: e.LOG_LEVEL,
    workerMonitoring: e.WORKER_MONITORING,
    workerConcurrency: e.WORKER_CONCURRENCY,
    queryTimeoutMs: e.QUERY_TIMEOUT_MS,
    rateLimits: { perIp: e.RATE_LIMIT_PER_IP, perAccount: e.RATE_LIMIT_PER_ACCOUNT, outreach: e.RATE_LIMIT_OUTREACH },
    crmUrls: byKind((kind) => endpoint(CRMS[kind].endpoint)),
    crmBudgets: byKind((kind) => named[CRMS[kind].budget.env] as number),
    crmAuthorizeUrls: Object.fromEntries(
      CRM_KINDS.flatMap((kind) => {
        const own = CRMS[kind].oauth.authorize.endpoint;
        return own ? [[kind, endpoint(own)]] : [];
      }),
    ),
    crmApps: Object.fromEntries(
      CRM_KINDS.flatMap((kind) => {
        const { clientIdEnv, clientSecretEnv } = CRMS[kind].oauth.app;
        const clientId = named[clientIdEnv] as string | undefined;
        const clientSecret = named[clientSecretEnv] as string | undefined;
        // With the sandbox on and no app named, the sandbox CRMs' own app.
        if (clientId === undefined) return sandbox ? [[kind, sandboxApp(kind)]] : [];
        return [[kind, { clientId, ...(clientSecret === undefined ? {} : { clientSecret }) }]];
      }),
    ),
    connectStateKey: e.CONNECT_STATE_KEY,
    blocklistPushUrls: Object.fromEntries(
      PUSH_SEQUENCERS.flatMap(({ platform, blocklistPush: push }) => (push.endpoint ? [[platform, endpoint(push.endpoint)]] : [])),
    ),
    blocklistRefreshMinutes: e.BLOCKLIST_REFRESH_MINUTES,
    backfill: {
      intervalMinutes: e.BACKFILL_INTERVAL_MINUTES,
      lookbackDays: e.BACKFILL_LOOKBACK_DAYS,
      // A history read where the block list is pushed is one variable, one setting: the push's (blocklistPushUrls).
      urls: Object.fromEntries(
        HISTORY_SEQUENCERS.flatMap(({ platform, history: h, blocklistPush }) =>
          h.endpoint && h.endpoint !== blocklistPush?.endpoint ? [[platform, endpoint(h.endpoint)]] : [],
        ),
      ),
      budgets: Object.fromEntries(HISTORY_SEQUENCERS.map(({ platform, history: h }) => [platform, named[h.budget.env] as number])),
    },
    forwarding: {
      retrySchedule: e.FORWARDING_RETRY_SCHEDULE ?? DEFAULT_FORWARDING_RETRY_SCHEDULE,
      concurrency: e.FORWARDING_CONCURRENCY,
      maxInFlight: e.FORWARDING_MAX_IN_FLIGHT,
    },
    relays: {
      smtpUrl: e.SMTP_URL ?? (sandbox ? `smtp://127.0.0.1:${sandbox.smtpPort}` : undefined),
      from: e.SMTP_FROM,
      retrySchedule: e.REPLY_RELAY_RETRY_SCHEDULE ?? DEFAULT_RELAY_RETRY_SCHEDULE,
    },
    webhooks: {
      retrySchedule: e.WEBHOOK_RETRY_SCHEDULE ?? DEFAULT_WEBHOOK_RETRY_SCHEDULE,
      concurrency: e.WEBHOOK_CONCURRENCY,
      maxInFlight: e.WEBHOOK_MAX_IN_FLIGHT,
    },
    sandbox,
    retention: { history: e.RETENTION_DAYS, body: e.RAW_BODY_RETENTION_DAYS, audit: e.AUDIT_RETENTION_DAYS },
  };
}

/** An unset variable and an empty one mean the same: take the default. */
const optional = <T extends z.ZodType>(schema: T) => z.preprocess((value) => (value === '' ? undefined : value), schema.optional());

const withDefault = <T extends z.ZodType>(schema: T, fallback: string) =>
  z.preprocess((value) => (value === undefined || value === '' ? fallback : value), schema);

const httpUrl = z.url({ protocol: /^https?$/, error: 'must be an http:// or https:// URL' });

// Public base addresses are prefixes of every URL we print: no credentials, query or fragment in them.
const baseUrlSchema = httpUrl.refine(
  (value) => {
    if (!URL.canParse(value)) return true; // already reported as not a URL
    const url = new URL(value);
    return url.username === '' && url.password === '' && url.search === '' && url.hash === '';
  },
  { error: 'must be a base address without credentials, query or fragment' },
);

const boolean = z.enum(['true', 'false', '1', '0'], { error: 'must be true or false' }).transform((v) => v === 'true' || v === '1');

// false/0: no proxy; true/1: one proxy (the right-most X-Forwarded-For entry is the client); N: N proxies.
// Never "trust everything": the left-most entry is whatever the client wrote, so limits keyed on it
// could be dodged at will.
const proxyHops = z
  .string()
  .regex(/^(true|false|\d{1,2})$/, { error: 'must be true, false or a number of proxy hops' })
  .transform((v) => (v === 'true' ? 1 : v === 'false' ? 0 : Number(v)));

const integer = (min: number, max: number) =>
  z
    .string()
    .regex(/^\d+$/, { error: 'must be a whole number' })
    .transform(Number)
    .pipe(
      z
        .number()
        .min(min, { error: `must be at least ${min}` })
        .max(max, { error: `must be at most ${max}` }),
    );

// Seconds between attempts, e.g. `5,60,300`: fractions allowed (tests and demos run it in milliseconds).
const retrySchedule = z
  .string()
  .regex(/^\s*\d+(\.\d+)?(\s*,\s*\d+(\.\d+)?)*\s*$/, { error: 'must be comma-separated seconds, e.g. 5,60,300' })
  .transform((value) => value.split(',').map((s) => Number(s.trim())))
  .refine((waits) => waits.every((seconds) => seconds <= 86_400), { error: 'each wait must be at most 86400 seconds (a day)' })
  .refine((waits) => waits.length <= 20, { error: 'must have at most 20 retries' });

// `address` or `Name <address>`, on one line (it becomes the From header).
const mailbox = z.string().regex(/^(?:[^<>\r\n]*<[^<>\s@]+@[^<>\s@]+>|[^<>\s@]+@[^<>\s@]+)$/, {
  error: 'must be an email address, or Name <address>',
});

const postgresUrl = z.string().refine((value) => /^postgres(ql)?:\/\/./.test(value) && URL.canParse(value), {
  error: 'must be a postgres:// or postgresql:// connection URL',
});

// The key is a secret: messages describe the expected form and never echo the value.
const encryptionKey = z.string().transform((value, ctx) => {
  if (/^[0-9a-fA-F]{64}$/.test(value)) return Buffer.from(value, 'hex');
  if (/^[A-Za-z0-9+/]{43}=?$/.test(value)) return Buffer.from(value, 'base64');
  ctx.addIssue({ code: 'custom', message: 'must be 32 bytes, written as 64 hex characters or 44 base64 characters' });
  return z.NEVER;
});

// An OAuth app's client id or secret: one line, no spaces. A secret: messages never echo it.
const appValue = z.string().regex(/^[\x21-\x7e]{1,512}$/, { error: 'must be 1 to 512 printable characters without spaces' });

const tokenList = z.string().transform((value, ctx) => {
  const tokens = value
    .split(',')
    .map((t) => t.trim())
    .filter((t) => t.length > 0)
    .map(staffToken);
  if (tokens.some((t) => t.token.length < 16)) {
    ctx.addIssue({ code: 'custom', message: 'each staff token must be at least 16 characters' });
    return z.NEVER;
  }
  return tokens;
});

/**
 * `name:token` names the staff member its audit rows carry; a bare token is named by its first four
 * characters (`token:abcd`), enough to tell tokens apart and too little to guess one.
 */
function staffToken(entry: string): StaffToken {
  const named = /^([A-Za-z0-9._@-]{1,64}):(.+)$/.exec(entry);
  if (named) return { name: named[1]!, token: named[2]! };
  return { name: `token:${entry.slice(0, 4)}`, token: entry };
}

/**
 * The variables the registries' definitions name, in the order the README's table lists them: each CRM's
 * API (`endpoint`), each CRM's budget (`budget`: 0 up to its `max`), each push sequencer's block-list API
 * (`blocklistPush.endpoint`), each CRM's consent host where it has its own (`oauth.authorize.endpoint`)
 * and its app's client id and secret (`oauth.app`). A CRM or a sequencer adds its variables here by its
 * registry line.
 */
function definitionVariables(): Record<string, z.ZodType<string | number | undefined>> {
  const url = ({ env, default: fallback }: EndpointVariable): [string, z.ZodType<string>] => [env, withDefault(httpUrl, fallback)];
  const budget = ({ env, default: fallback, max }: CrmDefinition['budget']): [string, z.ZodType<number>] => [
    env,
    withDefault(integer(0, max), String(fallback)),
  ];
  return Object.fromEntries<z.ZodType<string | number | undefined>>([
    ...CRM_KINDS.map((kind) => url(CRMS[kind].endpoint)),
    ...CRM_KINDS.map((kind) => budget(CRMS[kind].budget)),
    ...PUSH_SEQUENCERS.flatMap(({ blocklistPush }) => (blocklistPush.endpoint ? [url(blocklistPush.endpoint)] : [])),
    // A history's endpoint is its push's where it has one: one variable, one row.
    ...HISTORY_SEQUENCERS.flatMap(({ history, blocklistPush }) =>
      history.endpoint && history.endpoint !== blocklistPush?.endpoint ? [url(history.endpoint)] : [],
    ),
    ...HISTORY_SEQUENCERS.map(({ history: { budget } }): [string, z.ZodType<number>] => [
      budget.env,
      withDefault(integer(1, 100_000), String(budget.requests)),
    ]),
    ...CRM_KINDS.flatMap((kind) => {
      const own = CRMS[kind].oauth.authorize.endpoint;
      return own ? [url(own)] : [];
    }),
    ...CRM_KINDS.flatMap((kind) => [CRMS[kind].oauth.app.clientIdEnv, CRMS[kind].oauth.app.clientSecretEnv].map((env) => [env, optional(appValue)] as const)),
  ]);
}

/**
 * An app's client id or secret without the other (raw values, so that each is reported with every other
 * problem): a secret alone is a mistake, and an id alone for a CRM whose exchange needs the secret too.
 */
function appProblems(env: NodeJS.ProcessEnv): string[] {
  return CRM_KINDS.flatMap((kind) => {
    const { clientIdEnv, clientSecretEnv, secretRequired } = CRMS[kind].oauth.app;
    const [id, secret] = [isSet(env[clientIdEnv]), isSet(env[clientSecretEnv])];
    if (secret && !id) return [`${clientIdEnv}: required with ${clientSecretEnv} (the ${CRMS[kind].name} app's client id)`];
    if (id && !secret && secretRequired) return [`${clientSecretEnv}: required with ${clientIdEnv} (the ${CRMS[kind].name} app's client secret)`];
    return [];
  });
}

const envSchema = z.object({
  PORT: withDefault(integer(0, 65535), '3000'),
  HOST: withDefault(z.string().min(1), '0.0.0.0'),
  DATABASE_URL: optional(postgresUrl),
  DATA_DIR: withDefault(z.string().min(1), './.data'),
  BASE_URL: optional(baseUrlSchema),
  INGRESS_URL: optional(baseUrlSchema),
  DOCS_URL: optional(httpUrl),
  ENCRYPTION_KEY: optional(encryptionKey),
  CONNECT_STATE_KEY: optional(encryptionKey),
  SUPPORT_TOKENS: withDefault(tokenList, ''),
  OUTBOUND_ALLOW_PRIVATE: withDefault(boolean, 'false'),
  TRUST_PROXY: withDefault(proxyHops, 'false'),
  LOG_LEVEL: withDefault(
    z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'], {
      error: 'must be one of fatal, error, warn, info, debug, trace, silent',
    }),
    'info',
  ),
  WORKER_MONITORING: withDefault(boolean, 'false'),
  WORKER_CONCURRENCY: withDefault(integer(1, 1_000), '256'),
  QUERY_TIMEOUT_MS: withDefault(integer(1, 600_000), '20000'),
  RATE_LIMIT_PER_IP: withDefault(integer(0, 1_000_000_000), '120'),
  RATE_LIMIT_PER_ACCOUNT: withDefault(integer(0, 1_000_000_000), '120'),
  RATE_LIMIT_OUTREACH: withDefault(integer(0, 1_000_000_000), '600'),
  // HUBSPOT_BASE_URL, SALESFORCE_LOGIN_URL, HUBSPOT_REQUESTS_PER_10S, ..., SMARTLEAD_BASE_URL, ...: named by each CRM's
  // definition (src/connectors/crm/<kind>/definition.ts) and each sequencer's push (sequencers/<platform>/blocklist-push.ts).
  ...definitionVariables(),
  BLOCKLIST_REFRESH_MINUTES: withDefault(integer(1, 10_080), String(DEFAULT_BLOCKLISTS.refreshMinutes)),
  BACKFILL_INTERVAL_MINUTES: withDefault(integer(1, 1_440), String(DEFAULT_BACKFILL.intervalMinutes)),
  BACKFILL_LOOKBACK_DAYS: withDefault(integer(1, 30), String(DEFAULT_BACKFILL.lookbackDays)),
  FORWARDING_RETRY_SCHEDULE: optional(retrySchedule),
  FORWARDING_CONCURRENCY: withDefault(integer(1, 10_000), '64'),
  FORWARDING_MAX_IN_FLIGHT: withDefault(integer(1, 5_000), '500'),
  SMTP_URL: optional(z.string().refine((v) => /^smtps?:\/\//.test(v) && URL.canParse(v), { error: 'must be an smtp:// or smtps:// URL' })),
  SMTP_FROM: withDefault(mailbox, DEFAULT_SMTP_FROM),
  REPLY_RELAY_RETRY_SCHEDULE: optional(retrySchedule),
  WEBHOOK_RETRY_SCHEDULE: optional(retrySchedule),
  WEBHOOK_CONCURRENCY: withDefault(integer(1, 10_000), '64'),
  WEBHOOK_MAX_IN_FLIGHT: withDefault(integer(1, 1_000), '32'),
  SANDBOX: optional(boolean),
  SANDBOX_SMTP_PORT: withDefault(integer(1, 65535), '2525'),
  // At least the API's longest window (31 days): every window it answers is whole.
  RETENTION_DAYS: withDefault(integer(31, 36_500), String(DEFAULT_RETENTION.history)),
  RAW_BODY_RETENTION_DAYS: withDefault(integer(1, 36_500), String(DEFAULT_RETENTION.body)),
  AUDIT_RETENTION_DAYS: withDefault(integer(31, 36_500), String(DEFAULT_RETENTION.audit)),
});

/** A record over the CRM kinds. */
function byKind<T>(value: (kind: CrmKind) => T): Record<CrmKind, T> {
  return Object.fromEntries(CRM_KINDS.map((kind) => [kind, value(kind)])) as Record<CrmKind, T>;
}

function isSet(value: string | undefined): boolean {
  return value !== undefined && value !== '';
}

function stripTrailingSlash(url: string): string {
  return url.replace(/\/+$/, '');
}
