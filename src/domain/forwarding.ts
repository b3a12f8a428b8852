import { storableText } from './storable-text.js';
/**
 * The rules of forwarding an event to a customer's URL (src/jobs/deliveries__send.ts does the I/O):
 * which bindings get an event and what an attempt's answer means (when it is tried again:
 * retry-schedule.ts). Pure.
 */

/** The most of a destination's answer a delivery keeps (its `error.body`). */
const MAX_ERROR_BODY_BYTES = 1024;

/** How one attempt ended: the destination's answer, or why none came. */
export type AttemptResult =
  | { kind: 'answer'; status: number; retryAfterMs: number | undefined; body: Uint8Array }
  | { kind: 'failure'; code: 'blocked' | 'invalid_url' | 'timeout' | 'network' | 'too_large' | 'aborted'; message: string };

/** What an attempt's delivery row says, and whether another attempt may do better. */
export interface AttemptOutcome {
  status: 'success' | 'error';
  /** Null when no HTTP answer came (DNS, refused connection, timeout, refused address). */
  httpStatus: number | null;
  error: { message: string; body?: string } | null;
  /** 408, 429, 5xx and answers that never came: the destination may take it later. */
  retryable: boolean;
  /** The destination's `Retry-After`, when it sent one. */
  retryAfterMs?: number;
}

/**
 * Whether a binding forwards an event: an empty list forwards every type, and so also a payload that
 * could not be read (the customer may read it); a list forwards the readable events of its types.
 */
export function bindingForwards(eventTypes: readonly string[], event: { ok: true; eventType: string } | { ok: false }): boolean {
  if (eventTypes.length === 0) return true;
  return event.ok && eventTypes.includes(event.eventType);
}

/**
 * Classifies an attempt. A 2xx is a success; a 3xx is an error (redirects are not followed); 408, 429
 * and 5xx are errors worth another attempt, other 4xx final ones. No answer: a refused address or a
 * malformed URL is final, a timeout or a broken connection is worth another attempt.
 */
export function classifyAttempt(result: AttemptResult): AttemptOutcome {
  if (result.kind === 'failure') {
    const retryable = result.code !== 'blocked' && result.code !== 'invalid_url';
    return { status: 'error', httpStatus: null, error: { message: result.message }, retryable };
  }
  const { status } = result;
  if (status >= 200 && status < 300) return { status: 'success', httpStatus: status, error: null, retryable: false };
  const body = responseExcerpt(result.body);
  const message =
    status >= 300 && status < 400 ? `HTTP ${status}: redirects are not followed (forward to the final URL)` : `HTTP ${status} from the destination`;
  const retryable = status === 408 || status === 429 || status >= 500;
  return {
    status: 'error',
    httpStatus: status,
    error: body === '' ? { message } : { message, body },
    retryable,
    ...(retryable && result.retryAfterMs !== undefined ? { retryAfterMs: result.retryAfterMs } : {}),
  };
}

/**
 * At most {@link MAX_ERROR_BODY_BYTES} of an answer's body as text: cut on a character boundary, and
 * storable (src/domain/storable-text.ts).
 */
export function responseExcerpt(body: Uint8Array): string {
  const head = body.subarray(0, MAX_ERROR_BODY_BYTES);
  // Streaming leaves a character cut in two at the end undecoded, rather than a replacement character.
  const text = new TextDecoder('utf-8', { fatal: false }).decode(head, { stream: body.byteLength > MAX_ERROR_BODY_BYTES });
  return storableText(text);
}
