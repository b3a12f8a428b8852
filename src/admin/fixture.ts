import { z } from 'zod';
import { CRM_KINDS } from '../connectors/crm/kinds.js';
import { crmDefinition } from '../connectors/crm/registry.js';
import type { SequencerCredentials } from '../connectors/sequencers/definition.js';
import { PUSH_SEQUENCERS, sequencerDefinition } from '../connectors/sequencers/registry.js';

/**
 * The fixture format of ../shared/fixtures/README.md: what tests, benchmarks, demos and the first
 * `npm start` load. Parsing fills in every default the README names; {@link parseFixture} then checks
 * the references between objects and the objects whose shape depends on a connection's CRM or a block
 * list's platform, so nothing is written from a fixture that is wrong anywhere.
 */

const ref = z.string().min(1).optional();
const dateTime = z.iso.datetime({ offset: true, error: 'must be an ISO 8601 date-time' }).transform((v) => new Date(v));
const optionalDate = dateTime.optional();
const platform = z.string().regex(/^[a-z][a-z0-9_-]*$/, { error: 'must be a lowercase platform name' });
const httpUrl = z.url({ protocol: /^https?$/, error: 'must be an http:// or https:// URL' });

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

const sourceSchema = z
  .object({
    ref,
    platform,
    ingressCode: z
      .string()
      .regex(/^[A-Za-z0-9_-]{8,128}$/, { error: 'must be 8 to 128 letters, digits, _ or -' })
      .optional(),
    legacyIds: z.tuple([z.string().regex(/^[A-Za-z0-9_-]+$/), z.string().regex(/^[A-Za-z0-9_-]+$/)]).optional(),
    config: z
      .object({
        createOrUpdateCompany: z.boolean().default(false),
        createOrUpdateTask: z.boolean().default(false),
        assignContactOwner: z.boolean().default(false),
        crmObjectType: z.string().min(1).nullable().default(null),
      })
      .strict()
      .default({ createOrUpdateCompany: false, createOrUpdateTask: false, assignContactOwner: false, crmObjectType: null }),
    destinations: z
      .array(
        z
          .object({
            destination: z.string().min(1),
            eventTypes: z.array(z.string().min(1)).default([]),
            isDelayed: z.boolean().default(false),
          })
          .strict(),
      )
      .default([]),
    replyRelay: z.string().min(1).optional(),
    createdAt: optionalDate,
    requests: z.array(historyRequest).default([]),
  })
  .strict();

const destinationSchema = z.object({ ref, url: httpUrl, description: z.string().default(''), createdAt: optionalDate }).strict();

const replyRelaySchema = z
  .object({
    ref,
    description: z.string().default(''),
    ccEmail: z.email({ error: 'must be an email address' }),
    delayMinutes: z.number().int().min(0).default(0),
    bodyTemplates: z.array(z.string()).default([]),
    categoryAllowlist: z
      .array(z.object({ id: z.string().min(1), name: z.string().min(1) }).strict())
      .max(50, { error: 'has at most 50 entries' })
      .default([]),
    createdAt: optionalDate,
  })
  .strict();

/** A CRM-specific object (`crmRateLimit`, `crmSource`): its keys depend on the connection's CRM, checked once the whole fixture has parsed ({@link parseCrmShapes}). */
const crmObject = z.record(z.string(), z.unknown(), { error: 'must be an object' });

/**
 * A block list's `sequencer`: first against the keys of every sequencer block lists are pushed to, each
 * checked with its sequencer's schema (src/connectors/sequencers/<platform>/definition.ts), so a key no
 * sequencer takes is refused here; then, once the fixture parsed, against its own platform's
 * ({@link checkSequencer}). Each push sequencer's credentials are SequencerCredentials, hence the cast.
 */
const sequencerSchema = z
  .object(Object.assign({}, ...PUSH_SEQUENCERS.map((s) => s.credentials.shape)))
  .strict()
  .transform((credentials) => credentials as SequencerCredentials);

const blocklistSchema = z
  .object({
    ref,
    listName: z.string().min(1),
    platform,
    blockType: z.enum(['ADDRESS', 'DOMAIN']),
    status: z.enum(['CREATED', 'FETCHING', 'SYNCING', 'SYNCED', 'SYNCING_NEW_CONTACTS']).default('CREATED'),
    isEnabled: z.boolean().default(true),
    hasCrmSource: z.boolean().default(true),
    crmSource: crmObject.optional(),
    sequencer: sequencerSchema.optional(),
    entries: z.array(z.string().min(1)).default([]),
    createdAt: optionalDate,
  })
  .strict();

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
    sources: z.array(sourceSchema).default([]),
    destinations: z.array(destinationSchema).default([]),
    replyRelays: z.array(replyRelaySchema).default([]),
    blocklists: z.array(blocklistSchema).default([]),
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
export type FixtureSource = z.infer<typeof sourceSchema>;
type FixtureBlocklist = z.infer<typeof blocklistSchema>;

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
        problems.push(...checkSequencer(b, `${at}.blocklists[${i}]`));
      });
      connection.sources.forEach((source, s) => {
        const sourceAt = `${at}.sources[${s}]`;
        claim(source.ref, sourceAt);
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
  const report = (path: PropertyKey[], message: string) => problems.push(`${formatPath([connectionAt, ...path])}: ${message}`);
  const definition = crmDefinition(connection.crm);
  if (!definition) {
    if (connection.crmRateLimit) report(['crmRateLimit'], `is only supported on ${SUPPORTED_CRMS} connections`);
    connection.blocklists.forEach((list, i) => {
      if (!list.hasCrmSource) return;
      if (list.crmSource) report(['blocklists', i, 'crmSource'], `is only supported on ${SUPPORTED_CRMS} connections`);
      else report(['blocklists', i, 'hasCrmSource'], `CRM sources are only supported on ${SUPPORTED_CRMS} connections (set hasCrmSource to false)`);
    });
    return { connection, problems };
  }
  const owner = `a ${definition.kind} connection`;
  const credentials = connection.credentials && parseWith(definition.credentials.strict(), connection.credentials, ['credentials'], report);
  const crmRateLimit = connection.crmRateLimit && parseShaped(connection.crmRateLimit, definition.rateLimit, owner, ['crmRateLimit'], report);
  const blocklists = connection.blocklists.map((list, i) => {
    const at = ['blocklists', i, 'crmSource'];
    if (!list.hasCrmSource) {
      if (list.crmSource) report(at, 'is only allowed when hasCrmSource is true');
      return list;
    }
    if (!list.crmSource) {
      report(at, `is required when hasCrmSource is true (${owner} takes ${formatShape(definition.crmSource.keys)})`);
      return list;
    }
    const rules = definition.crmSource;
    const source = parseShaped(list.crmSource, rules, owner, at, report);
    if (source === undefined) return list;
    const problems = rules.problems?.(source, list.blockType) ?? [];
    problems.forEach(({ key, message }) => report([...at, key], message));
    return { ...list, crmSource: rules.complete?.(source) ?? source };
  });
  return { connection: { ...connection, blocklists, ...(credentials && { credentials }), ...(crmRateLimit && { crmRateLimit }) }, problems };
}

type Report = (path: PropertyKey[], message: string) => void;

/** A CRM object with its keys checked first ({@link checkShape}: one plain message names the right keys), then its values. */
function parseShaped(
  value: Record<string, unknown>,
  rules: { schema: z.ZodType<Record<string, unknown>>; keys: Shape },
  owner: string,
  at: PropertyKey[],
  report: Report,
) {
  const problems = checkShape(value, rules.keys, owner);
  problems.forEach(({ key, message }) => report(key === undefined ? at : [...at, key], message));
  return problems.length > 0 ? undefined : parseWith(rules.schema, value, at, report);
}

/** The value parsed, or undefined with each issue reported at its path. */
function parseWith(schema: z.ZodType<Record<string, unknown>>, value: unknown, at: PropertyKey[], report: Report) {
  const parsed = schema.safeParse(value);
  if (parsed.success) return parsed.data;
  parsed.error.issues.forEach((issue) => report([...at, ...issue.path], issue.message));
  return undefined;
}

const SUPPORTED_CRMS = new Intl.ListFormat('en', { type: 'conjunction' }).format(CRM_KINDS);

/** The keys an object takes (`?` marks an optional one), as the README writes them: `{object, field?}`. */
type Shape = readonly string[];

/** One message when keys of another shape are present (it names the right shape), else one per missing key. */
function checkShape(value: object, shape: Shape, owner: string): Array<{ key?: string; message: string }> {
  const allowed = shape.map((key) => key.replace(/\?$/, ''));
  const present = Object.entries(value)
    .filter(([, v]) => v !== undefined)
    .map(([key]) => key);
  const foreign = present.filter((key) => !allowed.includes(key));
  if (foreign.length > 0) return [{ message: `${owner} takes ${formatShape(shape)}, not ${formatShape(foreign)}` }];
  return shape.filter((key) => !key.endsWith('?') && !present.includes(key)).map((key) => ({ key, message: 'is required' }));
}

/** A block list's `sequencer` against its platform's credentials (keys, then values). */
function checkSequencer({ sequencer, platform }: FixtureBlocklist, at: string): string[] {
  if (!sequencer) return [];
  const definition = sequencerDefinition(platform);
  if (!definition?.blocklistPush) return [`${at}.sequencer: block lists are pushed only to ${PUSH_PLATFORMS}, not ${platform}`];
  const { credentials } = definition;
  const problems = checkShape(sequencer, shapeOf(credentials), `the ${platform} sequencer`);
  if (problems.length === 0)
    credentials
      .safeParse(sequencer)
      .error?.issues.forEach(({ path, message }) => problems.push({ key: path.length > 0 ? formatPath(path) : undefined, message }));
  return problems.map(({ key, message }) => `${at}.sequencer${key === undefined ? '' : `.${key}`}: ${message}`);
}

const PUSH_PLATFORMS = new Intl.ListFormat('en', { type: 'conjunction' }).format(PUSH_SEQUENCERS.map((s) => s.platform));

/** An object schema's keys as a {@link Shape}: `?` on those it may leave out. */
function shapeOf(schema: z.ZodObject): Shape {
  return Object.entries(schema.shape).map(([key, value]) => (z.safeParse(value, undefined).success ? `${key}?` : key));
}

/** `['object', 'field?']` → `{object, field?}`. */
function formatShape(keys: readonly string[]): string {
  return `{${keys.join(', ')}}`;
}

/** `['accounts', 0, 'connections', 1, 'crm']` → `accounts[0].connections[1].crm`. */
export function formatPath(path: readonly PropertyKey[]): string {
  return path.reduce<string>((out, key) => (typeof key === 'number' ? `${out}[${key}]` : out ? `${out}.${String(key)}` : String(key)), '') || '(root)';
}

function isDefined<T>(value: T | undefined): value is T {
  return value !== undefined;
}
