/**
 * How HubSpot's answers read as our errors. HubSpot's status codes carry the kind (the session's
 * default mapping: 401/403 auth, 429 rate_limited, 5xx unavailable, other 4xx rejected); this module
 * reads its words, in each of the shapes its APIs answer.
 */
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
