import { z } from 'zod';
import { crmDefinition } from '../connectors/crm/registry.js';
import {
  bindingSchema,
  blocklistSchema,
  checkSequencer,
  sequencerSchema,
  crmObject,
  destinationSchema,
  parseCrmRateLimit,
  parseCrmSource,
  type Problem,
  replyRelaySchema,
  sourceSchema,
} from './entities.js';

/**
 * The fixture format of ../shared/fixtures/README.md: what tests, benchmarks, demos and the first
 * `npm start` load. Each entity is its schema of ./entities.ts (shared with the explorer's staff
 * mutations) with its `ref`, its references and, for a fixture, its history. Parsing fills in every
 * default the README names; {@link parseFixture} then checks the references between objects and the
 * objects whose shape depends on a connection's CRM or a block list's platform, so nothing is written
 * from a fixture that is wrong anywhere.
 */

const ref = z.string().min(1).optional();
const dateTime = z.iso.datetime({ offset: true, error: 'must be an ISO 8601 date-time' }).transform((v) => new Date(v));
const optionalDate = dateTime.optional();

const capabilities = z
  .object({
    canUseApi: z.boolean().default(true),
    canUserAccount: z.boolean().default(true),
    canBlockList: z.boolean().default(true),
    canUseWebhooks: z.boolean().default(true),
  })
  .strict()
  .default({ canUseApi: true, canUserAccount: true, canBlockList: true, canUseWebhooks: true });

const delivery = z
  .object({
    destination: z.string().min(1),
    status: z.enum(['success', 'error']),
    httpStatus: z.number().int().min(100).max(599).nullable().default(null),
    error: z.unknown().optional(),
    createdAt: optionalDate,
  })
  .strict();

const historyRequest = z
  .object({
    createdAt: optionalDate,
    body: z.unknown().refine((v) => v !== undefined, { error: 'is required' }),
    sync: z
      .object({
        status: z.enum(['success', 'warning', 'error']).nullable(),
        eventType: z.string().min(1),
        toEmail: z.string().min(1),
        error: z.unknown().optional(),
        createdAt: optionalDate,
      })
      .strict()
      .optional(),
    deliveries: z.array(delivery).default([]),
  })
  .strict();

const sourceFixture = sourceSchema.extend({
  ref,
  // The sequencer account the backfill reads the source's messages with (sealed, never returned).
  sequencer: sequencerSchema.optional(),
  destinations: z.array(bindingSchema.extend({ destination: z.string().min(1) })).default([]),
  replyRelay: z.string().min(1).optional(),
  createdAt: optionalDate,
  requests: z.array(historyRequest).default([]),
});

const destinationFixture = destinationSchema.extend({ ref, createdAt: optionalDate });

const replyRelayFixture = replyRelaySchema.extend({ ref, createdAt: optionalDate });

/** A block list, with the state it is seeded in: its status, whether it runs, and the entries already fetched. */
const blocklistFixture = blocklistSchema.extend({
  ref,
  status: z.enum(['CREATED', 'FETCHING', 'SYNCING', 'SYNCED', 'SYNCING_NEW_CONTACTS']).default('CREATED'),
  isEnabled: z.boolean().default(true),
  entries: z.array(z.string().min(1)).default([]),
  createdAt: optionalDate,
});

const connectionSchema = z
  .object({
    ref,
    crm: z.string().regex(/^[A-Z][A-Z0-9_]*$/, { error: 'must be an uppercase CRM identifier such as HUBSPOT' }),
    status: z.enum(['ready', 'disconnected']).default('ready'),
    organizationId: z.string().min(1).nullable().default(null),
    organizationDomain: z.string().min(1).nullable().default(null),
    apiEnabled: z.boolean().default(true),
    syncEnabled: z.boolean().default(true),
    deleted: z.boolean().default(false),
    createdAt: optionalDate,
    credentials: z.record(z.string(), z.unknown()).optional(),
    crmRateLimit: crmObject.optional(),
    sources: z.array(sourceFixture).default([]),
    destinations: z.array(destinationFixture).default([]),
    replyRelays: z.array(replyRelayFixture).default([]),
    blocklists: z.array(blocklistFixture).default([]),
  })
  .strict();

const apiKeySchema = z
  .object({
    ref,
    name: z.string().min(1),
    key: z
      .string()
      .regex(/^svcapi_[A-Za-z0-9]{16,}$/, { error: 'must be svcapi_ followed by at least 16 letters or digits' })
      .optional(),
    // Every key can read; `write` is the one scope to ask for (as the spec says of new keys).
    scopes: z
      .array(z.enum(['read', 'write']))
      .min(1)
      .default(['read'])
      .transform((scopes) => (scopes.includes('write') ? ['read', 'write'] : ['read'])),
    connectionScope: z.enum(['account', 'connection']).default('account'),
    connection: z.string().min(1).optional(),
    revoked: z.boolean().default(false),
  })
  .strict();

const webhookEndpointSchema = z
  .object({
    ref,
    // https, as the API requires; the sandbox's own receiver (the demo with SANDBOX on) is the one http exception.
    url: z
      .url({ protocol: /^https?$/, error: 'must be an https:// URL' })
      .refine((url) => url.startsWith('https:') || new URL(url).pathname.startsWith('/sandbox/webhooks/'), {
        error: 'must be an https:// URL',
      }),
    description: z.string().default(''),
    enabledEvents: z.array(z.enum(['sync.failed', 'sync.recovered', 'test.ping'])).default([]),
    isActive: z.boolean().default(true),
    secret: z
      .string()
      .regex(/^svcwhsec_[A-Za-z0-9]{16,}$/, { error: 'must be svcwhsec_ followed by at least 16 letters or digits' })
      .optional(),
  })
  .strict();

const accountSchema = z
  .object({
    ref,
    email: z.email({ error: 'must be an email address' }).nullable().default(null),
    capabilities,
    connections: z.array(connectionSchema).default([]),
    apiKeys: z.array(apiKeySchema).default([]),
    webhookEndpoints: z.array(webhookEndpointSchema).default([]),
  })
  .strict();

const fixtureSchema = z.object({ accounts: z.array(accountSchema).min(1, { error: 'must list at least one account' }) }).strict();

export type Fixture = z.infer<typeof fixtureSchema>;
export type FixtureConnection = z.infer<typeof connectionSchema>;
export type FixtureSource = z.infer<typeof sourceFixture>;

/** The `ref` → id map the seed command prints, one object per entity kind. */
export interface RefMap {
  accounts: Record<string, number>;
  connections: Record<string, number>;
  sources: Record<string, number>;
  destinations: Record<string, number>;
  replyRelays: Record<string, number>;
  blocklists: Record<string, number>;
  apiKeys: Record<string, number>;
  webhookEndpoints: Record<string, string>;
}

export class FixtureError extends Error {
  constructor(readonly problems: string[]) {
    super(`Invalid fixture:\n${problems.map((p) => `  ${p}`).join('\n')}`);
    this.name = 'FixtureError';
  }
}

/**
 * Validates a fixture and fills in its defaults.
 * @throws FixtureError listing every problem, each naming its path (`accounts[0].connections[1].crm: ...`).
 */
export function parseFixture(input: unknown): Fixture {
  const parsed = fixtureSchema.safeParse(input);
  if (!parsed.success) {
    throw new FixtureError(parsed.error.issues.map((issue) => `${formatPath(issue.path)}: ${issue.message}`));
  }
  const problems: string[] = [];
  const fixture = {
    ...parsed.data,
    accounts: parsed.data.accounts.map((account, a) => ({
      ...account,
      connections: account.connections.map((connection, c) => {
        const shaped = parseCrmShapes(connection, `accounts[${a}].connections[${c}]`);
        problems.push(...shaped.problems);
        return shaped.connection;
      }),
    })),
  };
  problems.push(...checkReferences(fixture));
  if (problems.length > 0) throw new FixtureError(problems);
  return fixture;
}

/** Refs are unique within the fixture; bindings, relays and key connections point inside their owner; a block list's sequencer fits its platform. */
function checkReferences(fixture: Fixture): string[] {
  const problems: string[] = [];
  const seen = new Map<string, string>();
  const claim = (value: string | undefined, at: string) => {
    if (value === undefined) return;
    const first = seen.get(value);
    if (first) problems.push(`${at}.ref: "${value}" is already the ref of ${first}`);
    else seen.set(value, at);
  };
  const codes = new Map<string, string>();
  const claimCode = (code: string, at: string) => {
    const first = codes.get(code);
    if (first) problems.push(`${at}: "${code}" is already used by ${first}`);
    else codes.set(code, at);
  };

  fixture.accounts.forEach((account, a) => {
    const accountAt = `accounts[${a}]`;
    claim(account.ref, accountAt);
    const connectionRefs = new Set<string>();
    account.connections.forEach((connection, c) => {
      const at = `${accountAt}.connections[${c}]`;
      claim(connection.ref, at);
      if (connection.ref) connectionRefs.add(connection.ref);
      const destinationRefs = new Set(connection.destinations.map((d) => d.ref).filter(isDefined));
      const relayRefs = new Set(connection.replyRelays.map((r) => r.ref).filter(isDefined));
      connection.destinations.forEach((d, i) => claim(d.ref, `${at}.destinations[${i}]`));
      connection.replyRelays.forEach((r, i) => claim(r.ref, `${at}.replyRelays[${i}]`));
      connection.blocklists.forEach((b, i) => {
        claim(b.ref, `${at}.blocklists[${i}]`);
        checkSequencer(b).forEach(({ path, message }) => problems.push(`${formatPath([`${at}.blocklists[${i}]`, ...path])}: ${message}`));
      });
      connection.sources.forEach((source, s) => {
        const sourceAt = `${at}.sources[${s}]`;
        claim(source.ref, sourceAt);
        checkSequencer(source, 'history').forEach(({ path, message }) => problems.push(`${formatPath([sourceAt, ...path])}: ${message}`));
        if (source.ingressCode) claimCode(source.ingressCode, `${sourceAt}.ingressCode`);
        if (source.legacyIds) claimCode(source.legacyIds.join('/'), `${sourceAt}.legacyIds`);
        source.destinations.forEach((binding, b) => {
          if (!destinationRefs.has(binding.destination)) {
            problems.push(`${sourceAt}.destinations[${b}].destination: "${binding.destination}" is not a destination of this connection`);
          }
        });
        const bound = source.destinations.map((binding) => binding.destination);
        if (new Set(bound).size !== bound.length) problems.push(`${sourceAt}.destinations: binds the same destination twice`);
        if (source.replyRelay !== undefined && !relayRefs.has(source.replyRelay)) {
          problems.push(`${sourceAt}.replyRelay: "${source.replyRelay}" is not a reply relay of this connection`);
        }
        source.requests.forEach((request, r) =>
          request.deliveries.forEach((delivery, d) => {
            if (!destinationRefs.has(delivery.destination)) {
              problems.push(`${sourceAt}.requests[${r}].deliveries[${d}].destination: "${delivery.destination}" is not a destination of this connection`);
            }
          }),
        );
      });
    });
    account.apiKeys.forEach((key, k) => {
      const at = `${accountAt}.apiKeys[${k}]`;
      claim(key.ref, at);
      if (key.key) claimCode(key.key, `${at}.key`);
      if (key.connectionScope === 'connection' && key.connection === undefined) {
        problems.push(`${at}.connection: is required when connectionScope is "connection"`);
      }
      if (key.connectionScope === 'account' && key.connection !== undefined) {
        problems.push(`${at}.connection: is only allowed when connectionScope is "connection"`);
      }
      if (key.connection !== undefined && !connectionRefs.has(key.connection)) {
        problems.push(`${at}.connection: "${key.connection}" is not a connection of this account`);
      }
    });
    account.webhookEndpoints.forEach((endpoint, w) => claim(endpoint.ref, `${accountAt}.webhookEndpoints[${w}]`));
  });
  return problems;
}

/**
 * Checks a connection's CRM-specific objects (credentials, `crmRateLimit`, its block lists' `crmSource`)
 * against its CRM's definition (src/connectors/crm/<crm>/definition.ts), the schemas the connectors read,
 * and returns them parsed: ids as strings, Salesforce's default opt-out checkbox filled in.
 */
function parseCrmShapes(connection: FixtureConnection, connectionAt: string): { connection: FixtureConnection; problems: string[] } {
  const problems: string[] = [];
  const report = (at: PropertyKey[], found: Problem[]) =>
    found.forEach(({ path, message }) => problems.push(`${formatPath([connectionAt, ...at, ...path])}: ${message}`));
  const definition = crmDefinition(connection.crm);
  let credentials: Record<string, unknown> | undefined;
  if (definition && connection.credentials) {
    const parsed = definition.credentials.strict().safeParse(connection.credentials);
    if (parsed.success) credentials = parsed.data;
    else report(['credentials'], parsed.error.issues);
  }
  let crmRateLimit: Record<string, unknown> | undefined;
  if (connection.crmRateLimit) {
    const parsed = parseCrmRateLimit(connection.crm, connection.crmRateLimit);
    report([], parsed.problems);
    crmRateLimit = parsed.value;
  }
  const blocklists = connection.blocklists.map((list, i) => {
    const parsed = parseCrmSource(connection.crm, list);
    report(['blocklists', i], parsed.problems);
    return parsed.value === undefined ? list : { ...list, crmSource: parsed.value };
  });
  return { connection: { ...connection, blocklists, ...(credentials && { credentials }), ...(crmRateLimit && { crmRateLimit }) }, problems };
}

/** `['accounts', 0, 'connections', 1, 'crm']` → `accounts[0].connections[1].crm`. */
export function formatPath(path: readonly PropertyKey[]): string {
  return path.reduce<string>((out, key) => (typeof key === 'number' ? `${out}[${key}]` : out ? `${out}.${String(key)}` : String(key)), '') || '(root)';
}

function isDefined<T>(value: T | undefined): value is T {
  return value !== undefined;
}
