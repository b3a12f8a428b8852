/**
 * How HubSpot's answers read as our errors. HubSpot's status codes carry the kind (the session's
 * default mapping: 401/403 auth, 429 rate_limited, 5xx unavailable, other 4xx rejected); this module
 * reads its words, in each of the shapes its APIs answer.
 */
import type { LimitAnswer, LimitSignals } from '../../../domain/crm-budget.js';
import { CrmError } from '../errors.js';
import { asRecord } from '../records.js';

/**
 * `{status, message, category, errors: [{message}]}`, a batch's `{errors: [{message}]}`, or the token
 * endpoint's RFC 6749 `{error, error_description}` (HubSpot keeps `status` and `message` beside them).
 */
export function describeErrors(body: unknown): string | undefined {
  const record = asRecord(body);
  if (typeof record.error === 'string') {
    return typeof record.error_description === 'string' ? `${record.error}: ${record.error_description}` : record.error;
  }
  const parts: string[] = [];
  if (typeof record.category === 'string') parts.push(record.category);
  if (typeof record.message === 'string') parts.push(record.message);
  if (parts.length === 0 && Array.isArray(record.errors)) {
    for (const e of record.errors.map(asRecord)) if (typeof e.message === 'string') parts.push(e.message);
  }
  return parts.length > 0 ? parts.join(': ') : undefined;
}

/** The `id` of a created object's answer; an answer without one is HubSpot failing, not refusing. */
export function requireId(body: unknown, step: string): string {
  const id = asRecord(body).id;
  if (typeof id !== 'string') throw new CrmError('unavailable', `HubSpot ${step} answered without an id`);
  return id;
}

/**
 * HubSpot's limit headers: a 429 pauses the window it names (10 s by default); `X-HubSpot-RateLimit-Remaining:
 * 0` on a success pauses a second (the budget's own window already holds requests until a slot frees, and a
 * whole window's pause after every full window would halve a burst's speed; this catches the portal being
 * shared with another app). The window used up is the budget working, not a refusal.
 */
export const hubspotLimits: LimitSignals = {
  refusalPauseMs: (answer) => Number(header(answer, 'x-hubspot-ratelimit-interval-milliseconds')) || 10_000,
  otherSignal: (answer) =>
    header(answer, 'x-hubspot-ratelimit-remaining') === '0' ? { pauseMs: 1_000, reason: "HubSpot's rate-limit window is used up", refused: false } : null,
};

function header(answer: LimitAnswer, name: string): string | undefined {
  const value = answer.headers[name];
  return Array.isArray(value) ? value[0] : value;
}
