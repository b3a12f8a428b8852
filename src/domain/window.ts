/**
 * The observability window rules of the spec: `from` and `to` are ISO 8601 date-times, `from <= to`,
 * the span is at most 31 days; `limit` defaults to 100, at most 500. Pure: problems come back as
 * messages, the caller decides how to raise them.
 */

const MAX_SPAN_DAYS = 31;
const DEFAULT_LIMIT = 100;
const MAX_LIMIT = 500;

export interface Window {
  from: Date;
  to: Date;
}

export type Checked<T> = { ok: true; value: T } | { ok: false; problems: string[] };

/** Parses and checks a window; every problem is listed, not just the first. */
export function checkWindow(from: string | undefined, to: string | undefined): Checked<Window> {
  const problems: string[] = [];
  const start = parseInstant(from, 'from', problems, 'ceil');
  const end = parseInstant(to, 'to', problems, 'floor');
  if (start && end) {
    if (start.getTime() > end.getTime()) problems.push('from must not be after to');
    else if (end.getTime() - start.getTime() > MAX_SPAN_DAYS * 86_400_000) problems.push(`The from/to window must not span more than ${MAX_SPAN_DAYS} days`);
  }
  return problems.length > 0 || !start || !end ? { ok: false, problems } : { ok: true, value: { from: start, to: end } };
}

/** A page size: absent means the default; otherwise a whole number from 1 to 500. */
export function checkLimit(limit: string | number | undefined): Checked<number> {
  if (limit === undefined || limit === '') return { ok: true, value: DEFAULT_LIMIT };
  const n = typeof limit === 'number' ? limit : /^\d+$/.test(limit) ? Number(limit) : Number.NaN;
  if (!Number.isInteger(n) || n < 1 || n > MAX_LIMIT) return { ok: false, problems: [`limit must be a whole number from 1 to ${MAX_LIMIT}`] };
  return { ok: true, value: n };
}

// ISO 8601 date-time with a time zone, or a bare date (midnight UTC): what clients actually send.
const ISO_DATE_TIME = /^(\d{4})-(\d{2})-(\d{2})(?:T(\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,9}))?)?(Z|[+-]\d{2}:?\d{2}))?$/;

/**
 * Parses an instant; `Date` alone would roll 2025-02-30 over to March 2, so every field is range-checked.
 * Timestamps are stored to the millisecond: a `from` with finer digits rounds up, a `to` rounds down,
 * so the window never takes in a row outside what was asked.
 */
function parseInstant(value: string | undefined, name: string, problems: string[], rounding: 'ceil' | 'floor'): Date | undefined {
  if (value === undefined || value === '') {
    problems.push(`${name} is required (an ISO 8601 date-time)`);
    return undefined;
  }
  const m = ISO_DATE_TIME.exec(value);
  const [year, month, day, hour, minute, second] = (m ? [m[1], m[2], m[3], m[4], m[5], m[6]] : []).map((v) => Number(v ?? 0));
  const valid =
    m !== null &&
    year! >= 1970 &&
    month! >= 1 &&
    month! <= 12 &&
    day! >= 1 &&
    day! <= new Date(Date.UTC(year!, month, 0)).getUTCDate() &&
    hour! <= 23 &&
    minute! <= 59 &&
    second! <= 59;
  const date = valid ? new Date(value) : undefined;
  // No history predates 1970, and PostgreSQL refuses year 0: the floor keeps every bound storable.
  if (!date || Number.isNaN(date.getTime()) || date.getTime() < 0) {
    problems.push(`${name} must be an ISO 8601 date-time, such as 2026-11-01T00:00:00Z`);
    return undefined;
  }
  const finer = (m?.[7] ?? '').slice(3);
  return rounding === 'ceil' && /[1-9]/.test(finer) ? new Date(date.getTime() + 1) : date;
}
