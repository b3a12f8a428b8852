/**
 * How Salesforce's answers read as our errors: its `[{errorCode, message}]` arrays and the token
 * endpoint's RFC 6749 `{error, error_description}`, and the one status that does not carry its kind
 * (403 `REQUEST_LIMIT_EXCEEDED`: the org's rolling 24-hour allowance is spent, later rather than never).
 */
import type { LimitSignals } from '../../../domain/crm-budget.js';
import type { CrmErrorKind } from '../errors.js';
import { asRecord } from '../records.js';

/** Salesforce's own words in an error body. */
export function describeErrors(body: unknown): string | undefined {
  if (Array.isArray(body)) {
    const parts = body.map(asRecord).map((e) => [e.errorCode, e.message].filter((x) => typeof x === 'string').join(': '));
    return parts.filter((p) => p !== '').join('; ') || undefined;
  }
  const record = asRecord(body);
  if (typeof record.error === 'string') return [record.error, record.error_description].filter((x) => typeof x === 'string').join(': ');
  return undefined;
}

/** The kind of a refusal whose status alone would mislead, or undefined where the status tells it. */
export function kindOverride(status: number, body: unknown): CrmErrorKind | undefined {
  return status === 403 && errorCodes(body).includes('REQUEST_LIMIT_EXCEEDED') ? 'rate_limited' : undefined;
}

/**
 * Salesforce limits concurrency (the budget's own rule) and a rolling 24-hour allowance: a 429 is rare
 * (pause 10 s), a spent allowance answers `REQUEST_LIMIT_EXCEEDED`, paused a minute at a time.
 */
export const salesforceLimits: LimitSignals = {
  refusalPauseMs: () => 10_000,
  otherSignal: (answer) =>
    answer.text.includes('REQUEST_LIMIT_EXCEEDED') ? { pauseMs: 60_000, reason: 'Salesforce answered REQUEST_LIMIT_EXCEEDED', refused: true } : null,
};

function errorCodes(body: unknown): string[] {
  return Array.isArray(body) ? body.map(asRecord).map((e) => (typeof e.errorCode === 'string' ? e.errorCode : '')) : [];
}
