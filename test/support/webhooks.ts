import Stripe from 'stripe';
import { expect } from 'vitest';
import { WEBHOOK_HEADERS } from '../../src/jobs/webhook_deliveries__send.js';
import type { DestinationEmulator } from '../../src/emulators/destination.js';
import { apiFetch, type ApiResponse } from './openapi.js';
import type { TestDatabase } from './database.js';

/** Calls an /api/v1 route with a key and an optional JSON body; the answer is checked against the OpenAPI document. */
export function api(baseUrl: string, method: string, path: string, key: string, body?: unknown): Promise<ApiResponse> {
  return apiFetch(`${baseUrl}/api/v1${path}`, {
    method,
    headers: { authorization: `Bearer ${key}`, ...(body !== undefined ? { 'content-type': 'application/json' } : {}) },
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  });
}

/** A delivery row as the tests read it. */
export interface WebhookDeliveryRow {
  id: string;
  public_id: string;
  status: 'PENDING' | 'SUCCEEDED' | 'DEAD';
  attempts: number;
  last_http_status: number | null;
  last_error: string | null;
  event_type: string;
  event_public_id: string;
  replay_of_delivery_id: string | null;
}

/** The deliveries of an endpoint (by its public id), oldest first. */
export function deliveriesOf(db: TestDatabase, endpointPublicId: string): Promise<WebhookDeliveryRow[]> {
  return db.query<WebhookDeliveryRow>(
    `SELECT d.id::text, d.public_id, d.status::text AS status, d.attempts, d.last_http_status, d.last_error, ev.type AS event_type,
            ev.public_id AS event_public_id, d.replay_of_delivery_id::text
       FROM webhook_deliveries d JOIN webhook_endpoints e ON e.id = d.endpoint_id JOIN platform_events ev ON ev.id = d.event_id
      WHERE e.public_id = $1 ORDER BY d.id`,
    [endpointPublicId],
  );
}

// constructEvent only verifies: no request ever leaves with this key.
const stripe = new Stripe('sk_test_verification_only');

/**
 * Verifies a received delivery the way a customer would, with an independent implementation (Stripe's
 * verifier accepts this scheme), and returns the event it carries. `receivedAt` (epoch milliseconds) lets a
 * test make the timestamp stale.
 */
export function verifyDelivery(request: DestinationEmulator['received'][number], secret: string, receivedAt?: number): { id: string; type: string } {
  const header = request.headers[WEBHOOK_HEADERS.signature];
  expect(typeof header).toBe('string');
  const event = stripe.webhooks.constructEvent(request.body, header as string, secret, 300, undefined, receivedAt);
  return event;
}
