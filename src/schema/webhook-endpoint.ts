import { refusedAddress } from '../connectors/http/client.js';
import { sql } from '../db/sql.js';
import { testPing } from '../domain/platform-events.js';
import { randomToken, PREFIX, sealSecret } from '../domain/secrets.js';
import { DISABLED_REASON } from '../domain/webhook-delivery.js';
import { checkEnabledEvents, checkEndpointUrl, MAX_ENDPOINT_DESCRIPTION_LENGTH, MAX_ENDPOINTS_PER_ACCOUNT } from '../domain/webhook-endpoint.js';
import { newWebhookSecret, PREVIOUS_SECRET_OVERLAP_MS } from '../domain/webhook-signature.js';
import { closePendingSql } from '../jobs/webhook-delivery-store.js';
import { newDeliveriesSql, queueWebhookSendingSql } from '../jobs/webhook-outbox.js';
import { builder } from './builder.js';
import type { Context } from './context.js';
import { serviceError } from './errors.js';
import { requireWebhookManagement } from './key-access.js';
import { isSandboxUrl } from '../domain/sandbox.js';

/**
 * Webhook endpoints of the account (/api/v1/webhooks*): list, read, create, update, delete, rotate the
 * signing secret, send a test ping. The secret is shown by create and rotate only, stored sealed.
 */

builder.prismaObject('WebhookEndpoint', {
  description: 'A customer HTTPS endpoint that receives platform events, signed (never its signing secret).',
  fields: (t) => ({
    id: t.exposeString('publicId', { description: 'Endpoint id, prefix `svcwh_`.' }),
    url: t.exposeString('url', { description: 'HTTPS target.' }),
    description: t.exposeString('description', { description: 'Free text.' }),
    enabledEvents: t.exposeStringList('enabledEvents', { description: 'Event types delivered; empty means all.' }),
    isActive: t.exposeBoolean('isActive', { description: 'False once disabled (20 consecutive DEAD deliveries, a 410 answer, or the customer).' }),
    disabledReason: t.exposeString('disabledReason', { nullable: true, description: 'Why it is disabled; null while active.' }),
    disabledAt: t.expose('disabledAt', { type: 'DateTime', nullable: true, description: 'When it was disabled; null while active.' }),
    consecutiveDeadCount: t.exposeInt('consecutiveDeadCount', { description: 'DEAD deliveries in a row (20 disable the endpoint).' }),
    createdAt: t.expose('createdAt', { type: 'DateTime', description: 'When the endpoint was created.' }),
    updatedAt: t.expose('updatedAt', { type: 'DateTime', description: 'When the endpoint was last changed.' }),
  }),
});

const EndpointWithSecret = builder.objectRef<{ endpoint: { id: number }; secret: string }>('WebhookEndpointWithSecret').implement({
  description: 'An endpoint with its new signing secret: the only time the secret is shown.',
  fields: (t) => ({
    endpoint: t.prismaField({
      type: 'WebhookEndpoint',
      description: 'The endpoint.',
      resolve: (query, parent, _args, ctx) => ctx.prisma.webhookEndpoint.findUniqueOrThrow({ ...query, where: { id: parent.endpoint.id } }),
    }),
    secret: t.exposeString('secret', { description: 'Signing secret, prefix `svcwhsec_`: store it now, it is never shown again.' }),
  }),
});

const DeletedEndpoint = builder.objectRef<{ id: string; deleted: true }>('DeletedWebhookEndpoint').implement({
  description: 'A deleted endpoint.',
  fields: (t) => ({
    id: t.exposeString('id', { description: 'Endpoint id, prefix `svcwh_`.' }),
    deleted: t.exposeBoolean('deleted', { description: 'Always true.' }),
  }),
});

const TestPingRef = builder.objectRef<{ eventId: string }>('WebhookTestPing').implement({
  description: 'A queued test ping.',
  fields: (t) => ({ eventId: t.exposeString('eventId', { description: 'The `test.ping` event, prefix `svcevt_`.' }) }),
});

const EndpointInput = builder.inputType('WebhookEndpointInput', {
  description: 'Fields of an endpoint; on create, `url` is required.',
  fields: (t) => ({
    url: t.string({ required: false, description: 'https:// URL, at most 2,048 characters, no credentials, a public address.' }),
    description: t.string({ required: false, description: `Free text, at most ${MAX_ENDPOINT_DESCRIPTION_LENGTH} characters.` }),
    enabledEvents: t.stringList({ required: false, description: 'Event types to deliver; empty (the default) means all.' }),
    isActive: t.boolean({ required: false, description: 'false disables the endpoint; true re-enables it and resets its failure count.' }),
  }),
});

/** Support staff may look at endpoints, replay their deliveries and switch them on or off; nothing else. */
const STAFF_REFUSED = 'Support staff may read webhook endpoints, replay their deliveries and re-enable them, nothing else';
const STAFF_ACTIVITY_ONLY = 'Support staff may only change isActive (re-enable or disable an endpoint)';

const endpointIdArg = builder.args((t) => ({ id: t.string({ required: true, description: 'Endpoint id, prefix `svcwh_`.' }) }));

builder.queryFields((t) => ({
  webhookEndpoints: t.prismaField({
    type: ['WebhookEndpoint'],
    description: "The account's webhook endpoints, oldest first (account-scoped key, webhooks capability).",
    resolve: (query, _root, _args, ctx) => {
      const viewer = requireWebhookManagement(ctx, 'read');
      return ctx.prisma.webhookEndpoint.findMany({ ...query, where: { accountId: viewer.accountId, deletedAt: null }, orderBy: { id: 'asc' } });
    },
  }),
  webhookEndpoint: t.prismaField({
    type: 'WebhookEndpoint',
    description: 'One webhook endpoint of the account.',
    args: endpointIdArg,
    resolve: async (query, _root, args, ctx) => {
      const endpoint = await findEndpoint(ctx, args.id, 'read');
      return ctx.prisma.webhookEndpoint.findUniqueOrThrow({ ...query, where: { id: endpoint.id } });
    },
  }),
}));

builder.mutationFields((t) => ({
  createWebhookEndpoint: t.field({
    type: EndpointWithSecret,
    description: `Registers an endpoint (at most ${MAX_ENDPOINTS_PER_ACCOUNT} per account) and returns its signing secret, shown this once.`,
    args: { input: t.arg({ type: EndpointInput, required: true, description: 'The endpoint; `url` required.' }) },
    resolve: async (_root, { input }, ctx) => {
      const viewer = requireWebhookManagement(ctx, 'write');
      if (input.url == null) throw serviceError('BAD_REQUEST', ['url is required']);
      const fields = await checkedFields(ctx, input);
      const count = await ctx.prisma.webhookEndpoint.count({ where: { accountId: viewer.accountId, deletedAt: null } });
      if (count >= MAX_ENDPOINTS_PER_ACCOUNT) throw serviceError('BAD_REQUEST', `An account may have at most ${MAX_ENDPOINTS_PER_ACCOUNT} webhook endpoints`);
      const secret = newWebhookSecret();
      const endpoint = await ctx.prisma.webhookEndpoint.create({
        data: {
          publicId: randomToken(PREFIX.webhookEndpoint, 24),
          accountId: viewer.accountId,
          url: fields.url ?? input.url,
          description: fields.description ?? '',
          enabledEvents: fields.enabledEvents ?? [],
          isActive: input.isActive ?? true,
          ...(input.isActive === false ? { disabledAt: new Date(), disabledReason: DISABLED_REASON.customer } : {}),
          secretEncrypted: sealSecret(ctx.encryptionKey, secret),
        },
        select: { id: true },
      });
      return { endpoint, secret };
    },
  }),
  updateWebhookEndpoint: t.prismaField({
    type: 'WebhookEndpoint',
    description:
      'Changes an endpoint. `isActive: true` re-enables a disabled endpoint and resets its failure count; `isActive: false` disables it, ' +
      'and its pending deliveries end as DEAD.',
    args: { ...endpointIdArg, input: t.arg({ type: EndpointInput, required: true, description: 'The fields to change.' }) },
    resolve: async (query, _root, args, ctx) => {
      const { isActive, ...others } = args.input;
      if (ctx.viewer.kind === 'staff' && Object.values(others).some((v) => v != null)) throw serviceError('FORBIDDEN', STAFF_ACTIVITY_ONLY);
      const endpoint = await findEndpoint(ctx, args.id, 'write', isActive != null);
      const fields = await checkedFields(ctx, args.input);
      const activity =
        args.input.isActive === true
          ? { isActive: true, consecutiveDeadCount: 0, disabledAt: null, disabledReason: null }
          : args.input.isActive === false && endpoint.isActive
            ? { isActive: false, disabledAt: new Date(), disabledReason: DISABLED_REASON.customer }
            : {};
      return ctx.prisma.$transaction(async (tx) => {
        const updated = await tx.webhookEndpoint.update({ ...query, where: { id: endpoint.id }, data: { ...fields, ...activity } });
        if (activity.isActive === false) await tx.$executeRaw(closePendingSql(sql`${[endpoint.id]}::int[]`, 'disabled'));
        return updated;
      });
    },
  }),
  deleteWebhookEndpoint: t.field({
    type: DeletedEndpoint,
    description: 'Deletes an endpoint: it receives nothing more, its pending deliveries end as DEAD, and its id answers 404 from now on.',
    args: endpointIdArg,
    resolve: async (_root, args, ctx) => {
      const endpoint = await findEndpoint(ctx, args.id, 'write');
      await ctx.prisma.$transaction(async (tx) => {
        await tx.webhookEndpoint.update({ where: { id: endpoint.id }, data: { deletedAt: new Date(), isActive: false } });
        await tx.$executeRaw(closePendingSql(sql`${[endpoint.id]}::int[]`, 'deleted'));
      });
      return { id: endpoint.publicId, deleted: true as const };
    },
  }),
  rotateWebhookSecret: t.field({
    type: EndpointWithSecret,
    description:
      'Replaces the signing secret and returns the new one, shown this once. For 24 hours the old secret signs beside it ' +
      '(two `v1=` values in Service-Signature), so verifiers can be updated without losing an event.',
    args: endpointIdArg,
    resolve: async (_root, args, ctx) => {
      const endpoint = await findEndpoint(ctx, args.id, 'write');
      const secret = newWebhookSecret();
      await ctx.prisma.webhookEndpoint.update({
        where: { id: endpoint.id },
        data: {
          secretEncrypted: sealSecret(ctx.encryptionKey, secret),
          previousSecretEncrypted: endpoint.secretEncrypted,
          previousSecretExpiresAt: new Date(Date.now() + PREVIOUS_SECRET_OVERLAP_MS),
        },
      });
      return { endpoint, secret };
    },
  }),
  testWebhookEndpoint: t.field({
    type: TestPingRef,
    description: 'Emits a `test.ping` event and queues its delivery to this endpoint only (whatever its enabled events or state).',
    args: endpointIdArg,
    resolve: async (_root, args, ctx) => {
      const endpoint = await findEndpoint(ctx, args.id, 'write');
      const eventId = randomToken(PREFIX.event, 24);
      const ping = testPing(endpoint.publicId);
      // One statement: the event, its delivery and the endpoint's sending loop.
      await ctx.prisma.$queryRaw`
        WITH event AS (
          INSERT INTO platform_events (public_id, account_id, type, summary, data)
          VALUES (${eventId}, ${endpoint.accountId}, 'test.ping', ${ping.summary}, ${JSON.stringify(ping.data)}::jsonb)
          RETURNING id
        ),
        delivery AS (${newDeliveriesSql(sql`(SELECT ${endpoint.id}::int AS endpoint_id, id AS event_id, NULL::bigint AS replay_of_delivery_id FROM event) t`)}),
        sending AS (SELECT (${queueWebhookSendingSql(sql`delivery`)}) AS n)
        SELECT (SELECT n FROM sending) AS queued`;
      return { eventId };
    },
  }),
}));

/**
 * The account's endpoint named by a public id (deleted ones name nothing), after the access rules; a 404
 * naming it otherwise. Support staff find any account's endpoint to read it, and to change it only where
 * `staffMay` says so (replaying a delivery, re-enabling): never to read or replace its signing secret.
 */
export async function findEndpoint(ctx: Context, publicId: string, access: 'read' | 'write', staffMay: boolean = access === 'read') {
  let account: { accountId?: number } = {};
  if (ctx.viewer.kind === 'staff') {
    if (!staffMay) throw serviceError('FORBIDDEN', STAFF_REFUSED);
  } else account = { accountId: requireWebhookManagement(ctx, access).accountId };
  const endpoint = await ctx.prisma.webhookEndpoint.findFirst({ where: { publicId, ...account, deletedAt: null } });
  if (!endpoint) throw serviceError('NOT_FOUND', `Webhook endpoint ${publicId} not found`);
  return endpoint;
}

/** The fields of an input that may be stored as given, each checked; every problem in one 400. */
async function checkedFields(
  ctx: Context,
  input: { url?: string | null; description?: string | null; enabledEvents?: string[] | null },
): Promise<{ url?: string; description?: string; enabledEvents?: string[] }> {
  const problems: string[] = [];
  const fields: { url?: string; description?: string; enabledEvents?: string[] } = {};
  if (input.url != null) {
    const sandbox = isSandboxUrl(input.url, ctx.sandboxOrigin);
    const url = checkEndpointUrl(input.url, sandbox);
    if (!url.ok) problems.push(url.message);
    else {
      const refused = sandbox ? null : await refusedAddress(url.value, { allowPrivate: ctx.outboundAllowPrivate });
      if (refused === 'private') problems.push('url must not be or resolve to a private, loopback or link-local address');
      else if (refused === 'unresolvable') problems.push('url host does not resolve to an address');
      else fields.url = url.value.href;
    }
  }
  if (input.description != null) {
    if (input.description.length > MAX_ENDPOINT_DESCRIPTION_LENGTH) problems.push(`description must be at most ${MAX_ENDPOINT_DESCRIPTION_LENGTH} characters`);
    else fields.description = input.description;
  }
  if (input.enabledEvents != null) {
    const events = checkEnabledEvents(input.enabledEvents);
    if (!events.ok) problems.push(events.message);
    else fields.enabledEvents = events.value;
  }
  if (problems.length > 0) throw serviceError('BAD_REQUEST', problems);
  return fields;
}
