import type { Request } from 'express';
import type { RateBucket } from './rate-limit.js';
import type { TypedDocumentNode } from '@graphql-typed-document-node/core';
import * as ops from '../generated/graphql/graphql.js';
import { z } from 'zod';
import { MAX_ENABLED_EVENTS, MAX_ENDPOINT_DESCRIPTION_LENGTH } from '../domain/webhook-endpoint.js';
import { jsonBody, optionalEnum, optionalId, pageParams, pathId, publicPathId, repeated, single, windowParams } from './params.js';

/** What a route's builders may read besides the request. */
export interface RouteEnv {
  baseUrl: string;
  docsUrl: string;
}

/** One REST route: the persisted GraphQL operation it runs, how variables are built, how the result is shaped. */
export interface Route {
  path: string;
  /** Its result and variable types are erased here; route() below checks each entry against them. */
  operation: TypedDocumentNode<unknown, Record<string, unknown>>;
  variables: (req: Request, env: RouteEnv) => Record<string, unknown>;
  shape: (data: unknown, env: RouteEnv) => unknown;
  /** The rate limits it is under; `general` unless said. */
  bucket?: RateBucket;
  /** GET unless said; any other method is a mutation and needs the write scope, checked before anything else. */
  method?: 'get' | 'post' | 'patch' | 'delete';
  /** The success status: 200 unless said (201 for a creation, 202 for work the worker does later). */
  status?: 200 | 201 | 202;
  /** An account capability it needs besides API access, checked before the write scope and anything else. */
  capability?: 'webhooks';
  /** Connection-scoped keys get a 403 (checked first of all). */
  accountKeyOnly?: boolean;
  /** Whether it reads a JSON body (parsed after the access checks, at most 64 KB). */
  body?: boolean;
}

/** How a route differs from a GET under the general limits that answers 200. */
type RouteOptions = Pick<Route, 'bucket' | 'method' | 'status' | 'capability' | 'accountKeyOnly' | 'body'>;

/** Types one entry against its operation, then erases it into the table. */
function route<T, V extends Record<string, unknown>>(
  path: string,
  operation: TypedDocumentNode<T, V>,
  variables: (req: Request, env: RouteEnv) => V,
  shape: (data: T, env: RouteEnv) => unknown,
  options: RouteOptions = {},
): Route {
  return {
    path,
    operation: operation as TypedDocumentNode<unknown, Record<string, unknown>>,
    variables,
    shape: shape as Route['shape'],
    bucket: options.bucket ?? 'general',
    method: options.method ?? 'get',
    status: options.status ?? 200,
    ...(options.capability ? { capability: options.capability } : {}),
    ...(options.accountKeyOnly ? { accountKeyOnly: true } : {}),
    ...(options.body ? { body: true } : {}),
  };
}

const none = () => ({});
const syncStatuses = ['success', 'warning', 'error'] as const;
const deliveryStatuses = ['success', 'error'] as const;
const destinationNotFound = (id: string) => `Destination ${id} not found`;
const sourceNotFound = (id: string) => `Source ${id} not found`;
const endpointId = (req: Request) => publicPathId(req.params.id as string, 'svcwh_', (id) => `Webhook endpoint ${id} not found`);
/** /webhooks*: account-scoped keys of accounts with the webhooks capability only. */
const WEBHOOKS = { capability: 'webhooks', accountKeyOnly: true } as const;
const endpointFields = {
  url: z.string(),
  description: z.string().max(MAX_ENDPOINT_DESCRIPTION_LENGTH).optional(),
  enabledEvents: z.array(z.string()).max(MAX_ENABLED_EVENTS).optional(),
  isActive: z.boolean().optional(),
};
const createEndpointBody = z.strictObject(endpointFields);
const updateEndpointBody = z
  .strictObject({ ...endpointFields, url: endpointFields.url.optional() })
  .refine((body) => Object.keys(body).length > 0, { error: 'give at least one of url, description, enabledEvents, isActive' });

/**
 * /api/v1/<path>, in match order (fixed paths before `:id` siblings). Every route needs an API key;
 * the discovery and health routes are installed elsewhere.
 */
export const ROUTES: Route[] = [
  route('/me', ops.MeDocument, none, (d, env) => ({ ...d.me, links: meLinks(env) })),
  route(
    '/account/status',
    ops.AccountStatusDocument,
    (_req, env) => ({ docsUrl: env.docsUrl }),
    (d) => d.accountStatus,
  ),
  route(
    '/account/metrics',
    ops.AccountMetricsDocument,
    (req) => ({ ...windowParams(req.query), connectionId: optionalId(req.query, 'connectionId') }),
    (d) => d.accountMetrics,
  ),
  route('/connections', ops.ConnectionsDocument, none, (d) => ({ connections: d.connections })),
  route('/sources', ops.SourcesDocument, none, (d) => ({
    sources: d.sources.map((s) => ({
      id: s.id,
      url: s.url,
      platform: s.platform,
      connectionId: s.connectionId,
      crm: s.crm,
      config: s.config,
      destinations: s.forwarding,
      replyRelay: s.replyRelaySummary,
      createdAt: s.createdAt,
    })),
  })),
  route(
    '/contacts/outreach',
    ops.ContactOutreachDocument,
    (req) => ({ email: single(req.query, 'email') ?? null, profileUrls: repeated(req.query, 'profileUrl') }),
    (d) => d.contactOutreach,
    { bucket: 'outreach' },
  ),
  route('/destinations', ops.DestinationsDocument, none, (d) => ({ destinations: d.destinations })),
  route('/destinations/reply-relays', ops.ReplyRelaysDocument, none, (d) => ({ replyRelays: d.replyRelays })),
  route(
    '/destinations/:id',
    ops.DestinationDocument,
    (req) => ({ id: pathId(req.params.id as string, destinationNotFound) }),
    (d) => d.destination,
  ),
  route(
    '/destinations/:id/deliveries',
    ops.DeliveriesDocument,
    (req) => ({
      ...windowParams(req.query),
      ...pageParams(req.query),
      status: optionalEnum(req.query, 'status', deliveryStatuses),
      destinationId: pathId(req.params.id as string, destinationNotFound),
    }),
    (d) => d.deliveries,
  ),
  route(
    '/destinations/:id/deliveries/metrics',
    ops.DeliveryMetricsDocument,
    (req) => ({ ...windowParams(req.query), destinationId: pathId(req.params.id as string, destinationNotFound) }),
    (d) => d.deliveryMetrics,
  ),
  route(
    '/destinations/:id/deliveries/:deliveryId/replay',
    ops.ReplayDeliveryDocument,
    (req) => ({
      destinationId: pathId(req.params.id as string, destinationNotFound),
      deliveryId: String(pathId(req.params.deliveryId as string, (id) => `Delivery ${id} not found`, 15)),
    }),
    (d) => d.replayDelivery,
    { method: 'post', status: 202 },
  ),
  route(
    '/deliveries',
    ops.DeliveriesDocument,
    (req) => ({
      ...windowParams(req.query),
      ...pageParams(req.query),
      status: optionalEnum(req.query, 'status', deliveryStatuses),
      destinationId: optionalId(req.query, 'destinationId', destinationNotFound),
      sourceId: optionalId(req.query, 'sourceId', sourceNotFound),
      connectionId: optionalId(req.query, 'connectionId'),
    }),
    (d) => d.deliveries,
  ),
  route(
    '/blocklists',
    ops.BlocklistsDocument,
    (req) => ({ connectionId: optionalId(req.query, 'connectionId') }),
    (d) => ({ blocklists: d.blocklists }),
  ),
  route(
    '/blocklists/:id/pause',
    ops.PauseBlocklistDocument,
    (req) => ({ id: pathId(req.params.id as string, (id) => `Blocklist ${id} not found`) }),
    (d) => d.pauseBlocklist,
    { method: 'post' },
  ),
  route(
    '/blocklists/:id/resync',
    ops.ResyncBlocklistDocument,
    (req) => ({ id: pathId(req.params.id as string, (id) => `Blocklist ${id} not found`) }),
    (d) => d.resyncBlocklist,
    { method: 'post' },
  ),
  route(
    '/requests',
    ops.RequestsDocument,
    (req) => ({ ...windowParams(req.query), ...pageParams(req.query), sourceId: optionalId(req.query, 'sourceId', sourceNotFound) }),
    (d) => d.requests,
  ),
  route(
    '/requests/metrics',
    ops.RequestMetricsDocument,
    (req) => ({ ...windowParams(req.query), sourceId: optionalId(req.query, 'sourceId', sourceNotFound) }),
    (d) => d.requestMetrics,
  ),
  route(
    '/sources/:sourceId/requests',
    ops.RequestsDocument,
    (req) => ({ ...windowParams(req.query), ...pageParams(req.query), sourceId: pathId(req.params.sourceId as string, sourceNotFound) }),
    (d) => d.requests,
  ),
  route(
    '/syncs',
    ops.SyncsDocument,
    (req) => ({
      ...windowParams(req.query),
      ...pageParams(req.query),
      status: optionalEnum(req.query, 'status', syncStatuses),
      sourceId: optionalId(req.query, 'sourceId', sourceNotFound),
      connectionId: optionalId(req.query, 'connectionId'),
    }),
    (d) => d.syncs,
  ),
  route(
    '/syncs/metrics',
    ops.SyncMetricsDocument,
    (req) => ({ ...windowParams(req.query), sourceId: optionalId(req.query, 'sourceId', sourceNotFound), connectionId: optionalId(req.query, 'connectionId') }),
    (d) => d.syncMetrics,
  ),
  route(
    '/syncs/:id/retry',
    ops.RetrySyncDocument,
    (req) => ({ id: String(pathId(req.params.id as string, (id) => `Sync ${id} not found`, 15)) }),
    (d) => d.retrySync,
    { method: 'post' },
  ),
  route(
    '/syncs/:id',
    ops.SyncDocument,
    (req) => ({ id: String(pathId(req.params.id as string, (id) => `Sync ${id} not found`, 15)) }),
    (d) => d.sync,
  ),
  route(
    '/sources/:sourceId/syncs',
    ops.SyncsDocument,
    (req) => ({
      ...windowParams(req.query),
      ...pageParams(req.query),
      status: optionalEnum(req.query, 'status', syncStatuses),
      sourceId: pathId(req.params.sourceId as string, sourceNotFound),
      connectionId: optionalId(req.query, 'connectionId'),
    }),
    (d) => d.syncs,
  ),
  route(
    '/events',
    ops.EventsDocument,
    (req) => ({ ...windowParams(req.query), ...pageParams(req.query), type: single(req.query, 'type') }),
    (d) => d.events,
    { capability: 'webhooks' },
  ),
  route('/webhooks', ops.WebhookEndpointsDocument, none, (d) => ({ webhooks: d.webhookEndpoints }), WEBHOOKS),
  route(
    '/webhooks',
    ops.CreateWebhookEndpointDocument,
    (req) => ({ input: jsonBody(req, createEndpointBody) }),
    (d) => ({ ...d.createWebhookEndpoint.endpoint, secret: d.createWebhookEndpoint.secret }),
    { ...WEBHOOKS, method: 'post', status: 201, body: true },
  ),
  route(
    '/webhooks/:id',
    ops.WebhookEndpointDocument,
    (req) => ({ id: endpointId(req) }),
    (d) => d.webhookEndpoint,
    WEBHOOKS,
  ),
  route(
    '/webhooks/:id',
    ops.UpdateWebhookEndpointDocument,
    (req) => ({ id: endpointId(req), input: jsonBody(req, updateEndpointBody) }),
    (d) => d.updateWebhookEndpoint,
    { ...WEBHOOKS, method: 'patch', body: true },
  ),
  route(
    '/webhooks/:id',
    ops.DeleteWebhookEndpointDocument,
    (req) => ({ id: endpointId(req) }),
    (d) => d.deleteWebhookEndpoint,
    {
      ...WEBHOOKS,
      method: 'delete',
    },
  ),
  route(
    '/webhooks/:id/rotate-secret',
    ops.RotateWebhookSecretDocument,
    (req) => ({ id: endpointId(req) }),
    (d) => ({ ...d.rotateWebhookSecret.endpoint, secret: d.rotateWebhookSecret.secret }),
    { ...WEBHOOKS, method: 'post' },
  ),
  route(
    '/webhooks/:id/test',
    ops.TestWebhookEndpointDocument,
    (req) => ({ id: endpointId(req) }),
    (d) => d.testWebhookEndpoint,
    {
      ...WEBHOOKS,
      method: 'post',
      status: 202,
    },
  ),
  route(
    '/webhooks/:id/deliveries',
    ops.WebhookDeliveriesDocument,
    (req) => ({
      endpointId: endpointId(req),
      ...windowParams(req.query),
      ...pageParams(req.query),
      status: optionalEnum(req.query, 'status', ['PENDING', 'SUCCEEDED', 'DEAD'] as const),
    }),
    (d) => d.webhookDeliveries,
    WEBHOOKS,
  ),
  route(
    '/webhooks/:id/deliveries/:deliveryId/replay',
    ops.ReplayWebhookDeliveryDocument,
    (req) => ({
      endpointId: endpointId(req),
      deliveryId: publicPathId(req.params.deliveryId as string, 'svcwhd_', (id) => `Webhook delivery ${id} not found`),
    }),
    (d) => d.replayWebhookDelivery,
    { ...WEBHOOKS, method: 'post', status: 202 },
  ),
  route(
    '/events/:id',
    ops.EventDocument,
    (req) => ({ id: publicPathId(req.params.id as string, 'svcevt_', (id) => `Event ${id} not found`) }),
    (d) => d.event,
    { capability: 'webhooks' },
  ),
];

/** The reference form of /me `links`: all eleven keys. */
function meLinks({ baseUrl, docsUrl }: RouteEnv) {
  const api = `${baseUrl}/api/v1`;
  const link = (href: string, description: string) => ({ href, description });
  return {
    accountStatus: link(`${api}/account/status`, 'Readiness of the connections, with blockers and warnings'),
    accountMetrics: link(`${api}/account/metrics`, 'Request, sync and delivery counts for a date range'),
    connections: link(`${api}/connections`, 'CRM connections'),
    destinations: link(`${api}/destinations`, 'Forwarding destinations'),
    requests: link(`${api}/requests`, 'Inbound requests received at sources'),
    destinationsReplyRelays: link(`${api}/destinations/reply-relays`, 'Reply relays'),
    sources: link(`${api}/sources`, 'Sources and their paste URLs'),
    contactsOutreach: link(`${api}/contacts/outreach`, 'Prior outreach to a contact'),
    syncs: link(`${api}/syncs`, 'CRM write attempts'),
    documentation: link(docsUrl, 'Human documentation'),
    openapi: link(`${api}/openapi.json`, 'Machine-readable contract (OpenAPI 3.1)'),
  };
}
