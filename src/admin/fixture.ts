import { z } from 'zod';

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

/** A positive integer from 1 to `max`: zero, a fraction or a huge typo would stall or flood the CRM. */
function boundedCount(max: number) {
  const error = `must be an integer from 1 to ${max}`;
  return z.number({ error }).int({ error }).min(1, { error }).max(max, { error });
}

/** A vendor's numeric id, written as a number or a string of digits; kept as the string. */
function numericId(error: string) {
  return z.preprocess((v) => (typeof v === 'number' && Number.isSafeInteger(v) ? String(v) : v), z.string({ error }).regex(/^[1-9][0-9]{0,18}$/, { error }));
}

/**
 * The keys of both CRMs; which of them a connection takes is checked against its `crm` once the
 * whole fixture has parsed ({@link checkCrmShape}), so that each mistake gets one plain message.
 */
const crmRateLimitSchema = z
  .object({
    // HubSpot's highest published burst limit (the API Limit Increase pack) is 250 requests per 10 s.
    requestsPer10s: boundedCount(250).optional(),
    // A production Salesforce org runs at most 25 long-running API requests at once and refuses the rest.
    maxConcurrency: boundedCount(25).optional(),
  })
  .strict();

const SALESFORCE_OPT_OUT_FIELD = 'HasOptedOutOfEmail';

const crmSourceSchema = z
  .object({
    listId: numericId('must be a HubSpot list id (digits)').optional(),
    object: z.enum(['Contact', 'Lead', 'Account'], { error: 'must be Contact, Lead or Account' }).optional(),
    // Named in SOQL later, where it cannot be a bind variable: only an API name can get through.
    field: z
      .string({ error: 'must be the API name of a checkbox field' })
      .regex(/^[A-Za-z][A-Za-z0-9_]{0,79}$/, { error: 'must be the API name of a checkbox field (letters, digits and _)' })
      .optional(),
  })
  .strict();

const sequencerSchema = z
  .object({
    // Custom messages only: a message must never quote the key.
    apiKey: z
      .string({ error: 'is required (a string)' })
      .min(1, { error: 'must not be empty' })
      .max(512, { error: 'must be at most 512 characters' })
      .regex(/^\S*$/, { error: 'must not contain spaces' }),
    clientId: numericId('must be a Smartlead client id (digits)').optional(),
  })
  .strict();

const blocklistSchema = z
  .object({
    ref,
    listName: z.string().min(1),
    platform,
    blockType: z.enum(['ADDRESS', 'DOMAIN']),
    status: z.enum(['CREATED', 'FETCHING', 'SYNCING', 'SYNCED', 'SYNCING_NEW_CONTACTS']).default('CREATED'),
    isEnabled: z.boolean().default(true),
    hasCrmSource: z.boolean().default(true),
    crmSource: crmSourceSchema.optional(),
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
    crmRateLimit: crmRateLimitSchema.optional(),
    sources: z.array(sourceSchema).default([]),
    destinations: z.array(destinationSchema).default([]),
    replyRelays: z.array(replyRelaySchema).default([]),
    blocklists: z.array(blocklistSchema).default([]),
  })
  .strict()
  // Salesforce's Contact and Lead have a standard opt-out checkbox; Account has none, so its field stays
  // required. Defaulted here, where the CRM is known, so that no other CRM's source gains a `field`.
  .transform((connection) =>
    connection.crm !== 'SALESFORCE'
      ? connection
      : {
          ...connection,
          blocklists: connection.blocklists.map((list) =>
            list.crmSource?.object === undefined || list.crmSource.object === 'Account' || list.crmSource.field !== undefined
              ? list
              : { ...list, crmSource: { ...list.crmSource, field: SALESFORCE_OPT_OUT_FIELD } },
          ),
        },
  );

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
  const problems = checkReferences(parsed.data);
  if (problems.length > 0) throw new FixtureError(problems);
  return parsed.data;
}

/** Refs are unique within the fixture; bindings, relays and key connections point inside their owner; CRM- and platform-specific objects fit their owner. */
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
      problems.push(...checkCredentials(connection.crm, connection.credentials, `${at}.credentials`));
      if (connection.crmRateLimit) problems.push(...checkCrmShape(connection.crm, 'rateLimit', connection.crmRateLimit, `${at}.crmRateLimit`));
      if (connection.ref) connectionRefs.add(connection.ref);
      const destinationRefs = new Set(connection.destinations.map((d) => d.ref).filter(isDefined));
      const relayRefs = new Set(connection.replyRelays.map((r) => r.ref).filter(isDefined));
      connection.destinations.forEach((d, i) => claim(d.ref, `${at}.destinations[${i}]`));
      connection.replyRelays.forEach((r, i) => claim(r.ref, `${at}.replyRelays[${i}]`));
      connection.blocklists.forEach((b, i) => {
        claim(b.ref, `${at}.blocklists[${i}]`);
        problems.push(...checkBlocklist(connection.crm, b, `${at}.blocklists[${i}]`));
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

/** The credential shapes the connectors need: HubSpot `{accessToken, refreshToken?, clientId?, clientSecret?, expiresAt?}`, Salesforce `{instanceUrl, accessToken, refreshToken?, clientId?, clientSecret?}`. */
function checkCredentials(crm: string, credentials: Record<string, unknown> | undefined, at: string): string[] {
  const shape = CREDENTIALS[crm];
  if (!shape || credentials === undefined) return [];
  const parsed = shape.safeParse(credentials);
  return parsed.success ? [] : parsed.error.issues.map((issue) => `${formatPath([at, ...issue.path])}: ${issue.message}`);
}

const secret = z.string({ error: 'is required (a string)' }).min(1, { error: 'must not be empty' });
// What the connectors read (src/connectors/crm): the OAuth app's id and secret are needed to refresh.
const oauthApp = { refreshToken: secret.optional(), clientId: secret.optional(), clientSecret: secret.optional() };
const CREDENTIALS: Record<string, z.ZodType> = {
  HUBSPOT: z
    .object({ accessToken: secret, ...oauthApp, expiresAt: z.iso.datetime({ offset: true, error: 'must be an ISO 8601 date-time' }).optional() })
    .strict(),
  SALESFORCE: z.object({ instanceUrl: z.url({ protocol: /^https?$/, error: 'must be the org instance URL' }), accessToken: secret, ...oauthApp }).strict(),
};

/** The keys an object takes (`?` marks an optional one), as the README writes them: `{object, field?}`. */
type Shape = readonly string[];

/** What each CRM takes in its connection's `crmRateLimit` and its block lists' `crmSource`; other CRMs take neither. */
const CRM_SHAPES: ReadonlyMap<string, { rateLimit: Shape; crmSource: Shape }> = new Map([
  ['HUBSPOT', { rateLimit: ['requestsPer10s'], crmSource: ['listId'] }],
  // `field` is optional only for Contact and Lead (connectionSchema fills it in); see checkCrmSource.
  ['SALESFORCE', { rateLimit: ['maxConcurrency'], crmSource: ['object', 'field?'] }],
]);

/** The sequencers block lists can be pushed to, and what each takes in `sequencer` (a Map: platform names are free text). */
const SEQUENCER_SHAPES: ReadonlyMap<string, Shape> = new Map([
  ['smartlead', ['apiKey', 'clientId?']],
  ['instantly', ['apiKey']],
]);

const SUPPORTED_CRMS = [...CRM_SHAPES.keys()].join(' and ');

/** Checks a CRM-specific object against the shape of the connection's CRM. */
function checkCrmShape(crm: string, kind: 'rateLimit' | 'crmSource', value: object, at: string): string[] {
  const shapes = CRM_SHAPES.get(crm);
  if (!shapes) return [`${at}: is only supported on ${SUPPORTED_CRMS} connections`];
  return checkShape(value, shapes[kind], `a ${crm} connection`, at);
}

/** One message when keys of another shape are present (it names the right shape), else one per missing key. */
function checkShape(value: object, shape: Shape, owner: string, at: string): string[] {
  const allowed = shape.map((key) => key.replace(/\?$/, ''));
  const present = Object.entries(value)
    .filter(([, v]) => v !== undefined)
    .map(([key]) => key);
  const foreign = present.filter((key) => !allowed.includes(key));
  if (foreign.length > 0) return [`${at}: ${owner} takes ${formatShape(shape)}, not ${formatShape(foreign)}`];
  return shape.filter((key) => !key.endsWith('?') && !present.includes(key)).map((key) => `${at}.${key}: is required`);
}

/** A block list's `crmSource` against its connection's CRM and its own blockType; its `sequencer` against its platform. */
function checkBlocklist(crm: string, blocklist: FixtureBlocklist, at: string): string[] {
  const problems = checkCrmSource(crm, blocklist, at);
  if (blocklist.sequencer) {
    const shape = SEQUENCER_SHAPES.get(blocklist.platform);
    problems.push(
      ...(shape
        ? checkShape(blocklist.sequencer, shape, `the ${blocklist.platform} sequencer`, `${at}.sequencer`)
        : [`${at}.sequencer: block lists are pushed only to ${[...SEQUENCER_SHAPES.keys()].join(' and ')}, not ${blocklist.platform}`]),
    );
  }
  return problems;
}

/** `crmSource` exactly when `hasCrmSource`, shaped for the CRM; Salesforce Accounts need a field and hold no Email. */
function checkCrmSource(crm: string, { hasCrmSource, crmSource, blockType }: FixtureBlocklist, at: string): string[] {
  if (!hasCrmSource) return crmSource ? [`${at}.crmSource: is only allowed when hasCrmSource is true`] : [];
  if (!crmSource) {
    const shapes = CRM_SHAPES.get(crm);
    return shapes
      ? [`${at}.crmSource: is required when hasCrmSource is true (a ${crm} connection takes ${formatShape(shapes.crmSource)})`]
      : [`${at}.hasCrmSource: CRM sources are only supported on ${SUPPORTED_CRMS} connections (set hasCrmSource to false)`];
  }
  const problems = checkCrmShape(crm, 'crmSource', crmSource, `${at}.crmSource`);
  if (problems.length > 0 || crmSource.object !== 'Account') return problems;
  if (crmSource.field === undefined) problems.push(`${at}.crmSource.field: is required for Account (it has no standard opt-out checkbox)`);
  if (blockType === 'ADDRESS') problems.push(`${at}.crmSource.object: an ADDRESS list reads Email, which Account does not have (use Contact or Lead)`);
  return problems;
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
