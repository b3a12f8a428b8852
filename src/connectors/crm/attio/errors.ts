/**
 * How Attio's answers read as our errors: every error body is `{status_code, type, code, message}`; a 429
 * (`rate_limit_exceeded`, never processed) carries `Retry-After` as an HTTP date, which the HTTP client reads.
 */
import type { LimitSignals } from '../../../domain/crm-budget.js';
import { asRecord } from '../records.js';

/** Attio's own words in an error body: `code: message`. */
export function describeErrors(body: unknown): string | undefined {
  const record = asRecord(body);
  const parts = [record.code, record.message].filter((p): p is string => typeof p === 'string' && p !== '');
  if (parts.length) return parts.join(': ');
  return typeof record.error === 'string' ? record.error : undefined;
}

/** Attio counts per second: a 429 without a date pauses a second. */
export const attioLimits: LimitSignals = { refusalPauseMs: () => 1_000 };
