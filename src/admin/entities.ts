import { z } from 'zod';
import { CRM_KINDS } from '../connectors/crm/kinds.js';
import { crmDefinition } from '../connectors/crm/registry.js';
import type { SequencerCredentials } from '../connectors/sequencers/definition.js';
import { SEQUENCER_PLATFORMS } from '../connectors/sequencers/platforms.js';
import { HISTORY_SEQUENCERS, PUSH_SEQUENCERS, SEQUENCERS, sequencerDefinition } from '../connectors/sequencers/registry.js';
import { randomToken, sealSecret } from '../domain/secrets.js';
import { Prisma } from '../generated/prisma/client.js';

/**
 * What an account's objects may hold: one zod schema per entity (its own fields, with the defaults of
 * ../shared/fixtures/README.md), the checks of the fields whose shape depends on the connection's CRM or
 * the block list's platform, and how the secret or generated ones are stored. The fixture format
 * (./fixture.ts, written by ./seed.ts) extends each with its refs and history; the explorer's staff
 * mutations (src/schema/*-admin.ts) parse their input with the same, so a value one of them refuses the
 * other refuses too, with the same message, and both store it alike.
 */

const platform = z.string().regex(/^[a-z][a-z0-9_-]*$/, { error: 'must be a lowercase platform name' });
const httpUrl = z.url({ protocol: /^https?$/, error: 'must be an http:// or https:// URL' });

/** What the sync writes for a source (all off, no object type, unless set). */
export const sourceConfigSchema = z
  .object({
    createOrUpdateCompany: z.boolean().default(false),
    createOrUpdateTask: z.boolean().default(false),
    assignContactOwner: z.boolean().default(false),
    crmObjectType: z.string().min(1).nullable().default(null),
  })
  .strict();

/** A source: its platform, its ingress (a code, or a legacy pair of ids: imports only), and its sync options. */
export const sourceSchema = z
  .object({
    platform,
    ingressCode: z
      .string()
      .regex(/^[A-Za-z0-9_-]{8,128}$/, { error: 'must be 8 to 128 letters, digits, _ or -' })
      .optional(),
    legacyIds: z.tuple([z.string().regex(/^[A-Za-z0-9_-]+$/), z.string().regex(/^[A-Za-z0-9_-]+$/)]).optional(),
    config: sourceConfigSchema.default({ createOrUpdateCompany: false, createOrUpdateTask: false, assignContactOwner: false, crmObjectType: null }),
  })
  .strict();

/** A forwarding destination bound to a source: the event types it forwards (empty: all), and whether it waits for the sync. */
export const bindingSchema = z
  .object({
    eventTypes: z.array(z.string().min(1)).default([]),
    isDelayed: z.boolean().default(false),
  })
  .strict();

/** A forwarding destination. */
export const destinationSchema = z.object({ url: httpUrl, description: z.string().default('') }).strict();

/** A reply relay: whom it copies, after how long, with which templates, for which lead categories. */
export const replyRelaySchema = z
  .object({
    description: z.string().default(''),
    ccEmail: z.email({ error: 'must be an email address' }),
    delayMinutes: z.number().int().min(0).default(0),
    bodyTemplates: z.array(z.string()).default([]),
    categoryAllowlist: z
      .array(z.object({ id: z.string().min(1), name: z.string().min(1) }).strict())
      .max(50, { error: 'has at most 50 entries' })
      .default([]),
  })
  .strict();

/** A CRM-specific object (`crmRateLimit`, `crmSource`): its keys depend on the connection's CRM, checked by {@link parseCrmRateLimit} and {@link parseCrmSource}. */
export const crmObject = z.record(z.string(), z.unknown(), { error: 'must be an object' });

/**
 * A block list's `sequencer`: first against the keys of every sequencer block lists are pushed to, each
 * checked with its sequencer's schema (src/connectors/sequencers/<platform>/definition.ts), so a key no
 * sequencer takes is refused here; then against its own platform's ({@link checkSequencer}). Each push
 * sequencer's credentials are SequencerCredentials, hence the cast.
 */
export const sequencerSchema = z
  .object(credentialShape())
  .strict()
  .transform((credentials) => credentials as SequencerCredentials);

/** Every sequencer's credential keys, those not every one takes optional here (its own platform's check asks for them). */
function credentialShape(): z.ZodRawShape {
  const shapes = SEQUENCER_PLATFORMS.flatMap((platform) => SEQUENCERS[platform].credentials?.shape ?? []) as z.ZodRawShape[];
  const merged = Object.assign({}, ...shapes) as z.ZodRawShape;
  return Object.fromEntries(
    Object.entries(merged).map(([key, schema]) => [key, shapes.every((shape) => Object.hasOwn(shape, key)) ? schema : (schema as z.ZodType).optional()]),
  );
}

/** A block list: the CRM list it reads (`crmSource`) and the sequencer account it is pushed to (`sequencer`, a secret). */
export const blocklistSchema = z
  .object({
    listName: z.string().min(1),
    platform,
    blockType: z.enum(['ADDRESS', 'DOMAIN']),
    hasCrmSource: z.boolean().default(true),
    crmSource: crmObject.optional(),
    sequencer: sequencerSchema.optional(),
  })
  .strict();

/** A JSON column's value: Prisma wants DbNull (SQL NULL) rather than undefined or null for an absent one. */
export function jsonColumn(value: unknown): Prisma.InputJsonValue | typeof Prisma.DbNull {
  return value === undefined || value === null ? Prisma.DbNull : value;
}

/** A new source's ingress code: the secret slug of its paste URL. */
export function newIngressCode(): string {
  return randomToken('', 24);
}

/** Which of a source's ingress ids (its code, its legacy pair) another source already has: each names it and is refused. */
export async function ingressInUse(
  tx: Prisma.TransactionClient,
  source: { ingressCode?: string | undefined; legacyIds?: [string, string] | undefined },
): Promise<Problem[]> {
  const problems: Problem[] = [];
  if (source.ingressCode && (await tx.source.findUnique({ where: { ingressCode: source.ingressCode }, select: { id: true } }))) {
    problems.push({ path: ['ingressCode'], message: 'already in use' });
  }
  if (source.legacyIds) {
    const [legacyId1, legacyId2] = source.legacyIds;
    if (await tx.source.findFirst({ where: { legacyId1, legacyId2 }, select: { id: true } })) problems.push({ path: ['legacyIds'], message: 'already in use' });
  }
  return problems;
}

/**
 * The block list columns of its `sequencer`: the client id is public (the API shows it); only the key is
 * secret, sealed like CRM credentials with the service's ENCRYPTION_KEY and never returned.
 */
export function sequencerColumns(key: Buffer, sequencer: SequencerCredentials | undefined) {
  return {
    clientId: sequencer?.clientId ?? null,
    // The client id is the list's own column; the seal keeps the rest.
    sequencerCredentialsEncrypted: sealedSequencer(key, sequencer && { apiKey: sequencer.apiKey, baseUrl: sequencer.baseUrl }),
  };
}

/** A sequencer account sealed like CRM credentials (ENCRYPTION_KEY), or null without one. */
export function sealedSequencer(key: Buffer, sequencer: SequencerCredentials | undefined): string | null {
  return sequencer ? sealSecret(key, JSON.stringify({ apiKey: sequencer.apiKey, baseUrl: sequencer.baseUrl, clientId: sequencer.clientId })) : null;
}

/** A problem found in an entity: the path below it (`['crmSource', 'listId']`) and what is wrong, never the value. */
export interface Problem {
  path: PropertyKey[];
  message: string;
}

/** A value checked: parsed (undefined when it had problems), with its problems. */
interface Checked<T> {
  value: T | undefined;
  problems: Problem[];
}

const SUPPORTED_CRMS = new Intl.ListFormat('en', { type: 'conjunction' }).format(CRM_KINDS);

/**
 * A connection's `crmRateLimit` against its CRM's definition (src/connectors/crm/<crm>/definition.ts),
 * the schema the budget reads. Problems are under `crmRateLimit`.
 */
export function parseCrmRateLimit(crm: string, value: Record<string, unknown>): Checked<Record<string, unknown>> {
  const definition = crmDefinition(crm);
  if (!definition) return { value: undefined, problems: [{ path: ['crmRateLimit'], message: `is only supported on ${SUPPORTED_CRMS} connections` }] };
  return parseShaped(value, definition.rateLimit, `a ${definition.kind} connection`, ['crmRateLimit']);
}

/**
 * A block list's `crmSource` against its connection's CRM (required when `hasCrmSource`, refused
 * otherwise), returned complete (Salesforce's default opt-out checkbox filled in); undefined without one.
 * Problems are under `crmSource` (or `hasCrmSource`).
 */
export function parseCrmSource(
  crm: string,
  list: { hasCrmSource: boolean; crmSource?: Record<string, unknown> | undefined; blockType: 'ADDRESS' | 'DOMAIN' },
): Checked<Record<string, unknown>> {
  const at = ['crmSource'];
  const problem = (path: PropertyKey[], message: string) => ({ value: undefined, problems: [{ path, message }] });
  const definition = crmDefinition(crm);
  if (!definition) {
    // A CRM the service does not write into never reads a list's source: one kept without hasCrmSource is inert.
    if (!list.hasCrmSource) return { value: list.crmSource, problems: [] };
    return list.crmSource
      ? problem(at, `is only supported on ${SUPPORTED_CRMS} connections`)
      : problem(['hasCrmSource'], `CRM sources are only supported on ${SUPPORTED_CRMS} connections (set hasCrmSource to false)`);
  }
  if (!list.hasCrmSource) return list.crmSource ? problem(at, 'is only allowed when hasCrmSource is true') : { value: undefined, problems: [] };
  const owner = `a ${definition.kind} connection`;
  if (!list.crmSource) return problem(at, `is required when hasCrmSource is true (${owner} takes ${formatShape(definition.crmSource.keys)})`);
  const rules = definition.crmSource;
  const parsed = parseShaped(list.crmSource, rules, owner, at);
  if (parsed.value === undefined) return parsed;
  const problems = (rules.problems?.(parsed.value, list.blockType) ?? []).map(({ key, message }) => ({ path: [...at, key], message }));
  return { value: rules.complete?.(parsed.value) ?? parsed.value, problems };
}

/**
 * A block list's `sequencer` (`push`: the account it is pushed to) or a source's (`history`: the account
 * the backfill reads) against its platform's credentials (keys, then values). Problems are under `sequencer`.
 */
export function checkSequencer(
  { sequencer, platform }: { sequencer?: SequencerCredentials | undefined; platform: string },
  use: 'push' | 'history' = 'push',
): Problem[] {
  if (!sequencer) return [];
  const at = ['sequencer'];
  const definition = sequencerDefinition(platform);
  if (use === 'push' && !definition?.blocklistPush) return [{ path: at, message: `block lists are pushed only to ${PUSH_PLATFORMS}, not ${platform}` }];
  if (use === 'history' && !definition?.history) return [{ path: at, message: `the backfill reads only ${HISTORY_PLATFORMS}, not ${platform}` }];
  const { credentials } = definition!;
  if (!credentials) return [{ path: at, message: `${platform} takes no sequencer account` }];
  const problems = checkShape(sequencer, shapeOf(credentials), `the ${platform} sequencer`);
  if (problems.length === 0) credentials.safeParse(sequencer).error?.issues.forEach(({ path, message }) => problems.push({ path, message }));
  return problems.map(({ path, message }) => ({ path: [...at, ...path], message }));
}

const PUSH_PLATFORMS = new Intl.ListFormat('en', { type: 'conjunction' }).format(PUSH_SEQUENCERS.map((s) => s.platform));
const HISTORY_PLATFORMS = new Intl.ListFormat('en', { type: 'conjunction' }).format(HISTORY_SEQUENCERS.map((s) => s.platform));

/** The problems of a zod parse, as {@link Problem}s. */
function problemsOf(error: z.ZodError): Problem[] {
  return error.issues.map((issue) => ({ path: issue.path, message: issue.message }));
}

/** A CRM object with its keys checked first ({@link checkShape}: one plain message names the right keys), then its values. */
function parseShaped(
  value: Record<string, unknown>,
  rules: { schema: z.ZodType<Record<string, unknown>>; keys: Shape },
  owner: string,
  at: PropertyKey[],
): Checked<Record<string, unknown>> {
  const problems = checkShape(value, rules.keys, owner).map(({ path, message }) => ({ path: [...at, ...path], message }));
  if (problems.length > 0) return { value: undefined, problems };
  const parsed = rules.schema.safeParse(value);
  return parsed.success
    ? { value: parsed.data, problems: [] }
    : { value: undefined, problems: problemsOf(parsed.error).map(({ path, message }) => ({ path: [...at, ...path], message })) };
}

/** The keys an object takes (`?` marks an optional one), as the README writes them: `{object, field?}`. */
type Shape = readonly string[];

/** One message when keys of another shape are present (it names the right shape), else one per missing key. */
function checkShape(value: object, shape: Shape, owner: string): Problem[] {
  const allowed = shape.map((key) => key.replace(/\?$/, ''));
  const present = Object.entries(value)
    .filter(([, v]) => v !== undefined)
    .map(([key]) => key);
  const foreign = present.filter((key) => !allowed.includes(key));
  if (foreign.length > 0) return [{ path: [], message: `${owner} takes ${formatShape(shape)}, not ${formatShape(foreign)}` }];
  return shape.filter((key) => !key.endsWith('?') && !present.includes(key)).map((key) => ({ path: [key], message: 'is required' }));
}

/** An object schema's keys as a {@link Shape}: `?` on those it may leave out. */
function shapeOf(schema: z.ZodObject): Shape {
  return Object.entries(schema.shape).map(([key, value]) => (z.safeParse(value, undefined).success ? `${key}?` : key));
}

/** `['object', 'field?']` → `{object, field?}`. */
function formatShape(keys: readonly string[]): string {
  return `{${keys.join(', ')}}`;
}
