/**
 * Time partitions of the history tables (issue 31): which ranges a table's partitions must cover, which
 * partitions are past retention, and how far ahead inserts are safe. Pure: the catalog is read and
 * written in src/db/history/.
 *
 * A partition holds the rows whose partition key (created_at, UTC) falls in [from, to). Ranges follow
 * the table's span (a calendar month or a UTC day); ranges written by a conversion of older rows may be
 * other slices of a month, and every rule here works on any non-overlapping ranges.
 */

export type PartitionSpan = 'month' | 'day';

export interface PartitionRange {
  from: Date;
  to: Date;
}

export interface Partition extends PartitionRange {
  name: string;
}

const DAY_MS = 86_400_000;

/** How far ahead of now every history table has its partitions created. */
export const CREATE_AHEAD_DAYS = 14;
/** Coverage shorter than this ahead of now is a readiness warning: the creating job has failed for a week. */
export const WARN_AHEAD_DAYS = 7;

/** The start of the span holding `t`. */
export function spanStart(span: PartitionSpan, t: Date): Date {
  return span === 'month' ? new Date(Date.UTC(t.getUTCFullYear(), t.getUTCMonth(), 1)) : new Date(Math.floor(t.getTime() / DAY_MS) * DAY_MS);
}

/** The start of the span after the one holding `t`. */
export function spanEnd(span: PartitionSpan, t: Date): Date {
  const start = spanStart(span, t);
  return span === 'month' ? new Date(Date.UTC(start.getUTCFullYear(), start.getUTCMonth() + 1, 1)) : new Date(start.getTime() + DAY_MS);
}

/** A partition's table name: its parent's, `_p` and the UTC date its range starts (`syncs_p20261101`). */
export function partitionName(table: string, from: Date): string {
  return `${table}_p${from.toISOString().slice(0, 10).replaceAll('-', '')}`;
}

/**
 * The ranges still to create so that `existing` covers every span from the one holding `from` up to
 * `until`: whole spans, cut where an existing partition (a conversion's odd range) already covers part.
 */
export function missingRanges(span: PartitionSpan, existing: readonly PartitionRange[], from: Date, until: Date): PartitionRange[] {
  const missing: PartitionRange[] = [];
  for (let start = spanStart(span, from); start < until; start = spanEnd(span, start)) {
    missing.push(...subtract({ from: start, to: spanEnd(span, start) }, existing));
  }
  return missing;
}

/**
 * The ranges a conversion of existing rows creates for them: a month at a time from the month of the
 * oldest row, the last one cut at the start of the current span (from there the table's own spans go).
 */
export function conversionRanges(span: PartitionSpan, oldest: Date, now: Date): PartitionRange[] {
  const current = spanStart(span, now);
  const ranges: PartitionRange[] = [];
  for (let start = spanStart('month', oldest); start < current; start = spanEnd('month', start)) {
    const end = spanEnd('month', start);
    ranges.push({ from: start, to: end < current ? end : current });
  }
  return ranges;
}

/** Partitions every row of which is older than `retentionDays`: the whole partition may go. */
export function expiredPartitions<P extends PartitionRange>(partitions: readonly P[], now: Date, retentionDays: number): P[] {
  const horizon = now.getTime() - retentionDays * DAY_MS;
  return partitions.filter((p) => p.to.getTime() <= horizon);
}

/** Where the partitions stop covering without a gap from now: inserts at or past it would fail. */
export function coveredUntil(partitions: readonly PartitionRange[], now: Date): Date | undefined {
  const sorted = [...partitions].sort((a, b) => a.from.getTime() - b.from.getTime());
  let end: Date | undefined;
  for (const p of sorted) {
    if (end === undefined) {
      if (p.from <= now && p.to > now) end = p.to;
    } else if (p.from.getTime() === end.getTime()) {
      end = p.to;
    }
  }
  return end;
}

/** A readiness warning's text when a table's partitions end less than {@link WARN_AHEAD_DAYS} ahead; undefined when they reach far enough. */
export function coverageWarning(table: string, partitions: readonly PartitionRange[], now: Date): string | undefined {
  const until = coveredUntil(partitions, now);
  if (until && until.getTime() >= now.getTime() + WARN_AHEAD_DAYS * DAY_MS) return undefined;
  if (!until) return `${table}: no partition holds rows written now; inserts into it fail until the history job creates one`;
  return `${table}: partitions end at ${until.toISOString()}, fewer than ${WARN_AHEAD_DAYS} days ahead; the history job has not created the next ones, and inserts fail from then on`;
}

/** The parts of `range` no existing range covers. */
function subtract(range: PartitionRange, existing: readonly PartitionRange[]): PartitionRange[] {
  let parts = [range];
  for (const e of existing) {
    parts = parts.flatMap((p) => {
      if (e.to <= p.from || e.from >= p.to) return [p];
      const left = e.from > p.from ? [{ from: p.from, to: e.from }] : [];
      const right = e.to < p.to ? [{ from: e.to, to: p.to }] : [];
      return [...left, ...right];
    });
  }
  return parts;
}
