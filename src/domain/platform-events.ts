/**
 * The platform events the service emits (the spec's Events section) and the body a webhook endpoint
 * receives for one. Pure.
 */

/** Every platform event type, in the order the reference lists them. */
export const PLATFORM_EVENT_TYPES = ['sync.failed', 'sync.recovered', 'test.ping'] as const;

/** A stored platform event, as far as its webhook body needs it. */
export interface PlatformEventBody {
  /** Public id, prefix `svcevt_`. */
  id: string;
  type: string;
  created: Date;
  summary: string;
  data: unknown;
}

/**
 * The JSON body of a delivery: the spec's platform event, byte for byte the same on every attempt and
 * replay (the signature covers these exact bytes).
 */
export function webhookBody(event: PlatformEventBody): string {
  return JSON.stringify({ id: event.id, type: event.type, created: event.created.toISOString(), summary: event.summary, data: event.data });
}

/** The summary and data of the `test.ping` that POST /api/v1/webhooks/:id/test sends to `endpointId`. */
export function testPing(endpointId: string): { summary: string; data: { endpointId: string; message: string } } {
  return {
    summary: `Test event for webhook endpoint ${endpointId}`,
    data: { endpointId, message: 'This is a test event: your endpoint is reachable and can verify our signature.' },
  };
}
