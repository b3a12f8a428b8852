/**
 * How Close's answers read as our errors and limits: a 400's `{errors, field-errors}` (nested for nested
 * objects), other errors' `{error}`, the token endpoint's RFC 6749 `{error, error_description}`; and the
 * `RateLimit: limit=, remaining=, reset=` header every answer carries (`reset` in decimal seconds).
 */
import type { LimitAnswer, LimitSignals } from '../../../domain/crm-budget.js';
import { asRecord } from '../records.js';

/** Close's own words in an error body. */
export function describeErrors(body: unknown): string | undefined {
  const record = asRecord(body);
  if (typeof record.error === 'string') return typeof record.error_description === 'string' ? `${record.error}: ${record.error_description}` : record.error;
  const parts = [...messages(record)];
  return parts.length ? parts.join('; ') : undefined;
}

/** `errors` and `field-errors` flattened: `contacts.0.emails: Enter a valid email address.` */
function* messages(record: Record<string, unknown>, prefix = ''): Generator<string> {
  for (const e of Array.isArray(record.errors) ? record.errors : []) if (typeof e === 'string') yield prefix ? `${prefix}: ${e}` : e;
  const fields = asRecord(record['field-errors'] ?? (Array.isArray(record.errors) ? undefined : record.errors));
  for (const [field, value] of Object.entries(fields)) {
    const name = prefix ? `${prefix}.${field}` : field;
    if (typeof value === 'string') yield `${name}: ${value}`;
    else yield* messages(asRecord(value), name);
  }
}

/** The `RateLimit` header's `reset`, in milliseconds (decimal seconds in the header). */
function rateLimitResetMs(answer: Pick<LimitAnswer, 'headers'>): number | undefined {
  const fields = rateLimit(answer);
  const reset = Number(fields.reset);
  return fields.reset !== undefined && Number.isFinite(reset) && reset >= 0 ? Math.ceil(reset * 1000) : undefined;
}

/**
 * A 429 pauses until its `retry-after` (the budget reads it), else the header's reset, else a second
 * (Close's windows are seconds); `remaining=0` on a success pauses until the reset: the key shares its
 * organisation's limit with other apps, which our own budget cannot see.
 */
export const closeLimits: LimitSignals = {
  refusalPauseMs: (answer) => rateLimitResetMs(answer) ?? 1_000,
  otherSignal: (answer) =>
    answer.status < 300 && rateLimit(answer).remaining === '0'
      ? { pauseMs: rateLimitResetMs(answer) ?? 1_000, reason: "Close's rate limit for this key is used up (RateLimit remaining=0)", refused: false }
      : null,
};

function rateLimit(answer: Pick<LimitAnswer, 'headers'>): Record<string, string> {
  const raw = answer.headers.ratelimit;
  const value = Array.isArray(raw) ? raw[0] : raw;
  if (!value) return {};
  return Object.fromEntries(
    value
      .split(',')
      .map((part) => part.trim().split('='))
      .filter((kv): kv is [string, string] => kv.length === 2)
      .map(([k, v]) => [k.trim().toLowerCase(), v.trim()]),
  );
}
