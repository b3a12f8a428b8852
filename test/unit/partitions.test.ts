import { describe, expect, it } from 'vitest';
import {
  conversionRanges,
  coveredUntil,
  coverageWarning,
  expiredPartitions,
  missingRanges,
  partitionName,
  spanEnd,
  spanStart,
  WARN_AHEAD_DAYS,
} from '../../src/domain/partitions.js';

const at = (iso: string) => new Date(iso);
const range = (from: string, to: string) => ({ from: at(from), to: at(to) });
const DAY = 86_400_000;

describe('spans', () => {
  it('are calendar months and UTC days, whatever the time of day or the month length', () => {
    expect(spanStart('month', at('2026-02-28T23:59:59.999Z'))).toEqual(at('2026-02-01T00:00:00Z'));
    expect(spanEnd('month', at('2026-12-31T12:00:00Z'))).toEqual(at('2027-01-01T00:00:00Z'));
    expect(spanStart('day', at('2026-11-28T05:20:00+02:00'))).toEqual(at('2026-11-28T00:00:00Z'));
    expect(spanEnd('day', at('2024-02-28T10:00:00Z'))).toEqual(at('2024-02-29T00:00:00Z'));
  });

  it('name a partition by its table and the UTC date its range starts', () => {
    expect(partitionName('webhook_deliveries', at('2026-12-01T00:00:00Z'))).toBe('webhook_deliveries_p20261201');
  });
});

describe('missingRanges', () => {
  it('gives every whole span from the one holding `from` up to `until`', () => {
    expect(missingRanges('month', [], at('2026-11-28T05:00:00Z'), at('2026-12-12T05:00:00Z'))).toEqual([
      range('2026-11-01T00:00:00Z', '2026-12-01T00:00:00Z'),
      range('2026-12-01T00:00:00Z', '2027-01-01T00:00:00Z'),
    ]);
  });

  it('leaves out what exists, and cuts a span where a conversion left an odd range', () => {
    const existing = [range('2026-11-01T00:00:00Z', '2026-11-28T00:00:00Z'), range('2026-11-28T00:00:00Z', '2026-11-29T00:00:00Z')];
    expect(missingRanges('day', existing, at('2026-11-28T05:00:00Z'), at('2026-11-30T01:00:00Z'))).toEqual([
      range('2026-11-29T00:00:00Z', '2026-11-30T00:00:00Z'),
      range('2026-11-30T00:00:00Z', '2026-12-01T00:00:00Z'),
    ]);
    expect(missingRanges('month', existing, at('2026-11-05T00:00:00Z'), at('2026-11-30T00:00:00Z'))).toEqual([
      range('2026-11-29T00:00:00Z', '2026-12-01T00:00:00Z'),
    ]);
  });
});

describe('conversionRanges', () => {
  it('covers the oldest row a month at a time, the last month cut where the current span starts', () => {
    expect(conversionRanges('day', at('2026-09-17T10:00:00Z'), at('2026-11-28T05:00:00Z'))).toEqual([
      range('2026-09-01T00:00:00Z', '2026-10-01T00:00:00Z'),
      range('2026-10-01T00:00:00Z', '2026-11-01T00:00:00Z'),
      range('2026-11-01T00:00:00Z', '2026-11-28T00:00:00Z'),
    ]);
    expect(conversionRanges('month', at('2026-11-02T00:00:00Z'), at('2026-11-28T05:00:00Z'))).toEqual([]);
  });
});

describe('expiredPartitions', () => {
  it('are those every row of which is older than the retention, and no other', () => {
    const now = at('2026-11-28T00:00:00Z');
    const partitions = [
      { name: 'a', ...range('2026-07-01T00:00:00Z', '2026-08-01T00:00:00Z') },
      { name: 'b', ...range('2026-08-01T00:00:00Z', '2026-08-30T00:00:00Z') },
      { name: 'c', ...range('2026-08-30T00:00:00Z', '2026-09-01T00:00:00Z') },
    ];
    // 90 days before now is 2026-08-30T00:00Z: a partition ending exactly there goes; one ending after stays.
    expect(expiredPartitions(partitions, now, 90).map((p) => p.name)).toEqual(['a', 'b']);
  });
});

describe('coverage', () => {
  const now = at('2026-11-28T05:00:00Z');

  it('runs from the partition holding now through every adjoining one, a gap ending it', () => {
    const partitions = [
      range('2026-12-01T00:00:00Z', '2027-01-01T00:00:00Z'),
      range('2026-11-01T00:00:00Z', '2026-12-01T00:00:00Z'),
      range('2027-02-01T00:00:00Z', '2027-03-01T00:00:00Z'),
    ];
    expect(coveredUntil(partitions, now)).toEqual(at('2027-01-01T00:00:00Z'));
    expect(coveredUntil([range('2026-12-01T00:00:00Z', '2027-01-01T00:00:00Z')], now)).toBeUndefined();
  });

  it(`warns when partitions end fewer than ${WARN_AHEAD_DAYS} days ahead, or none holds now`, () => {
    const until = (ms: number) => [{ from: at('2026-11-01T00:00:00Z'), to: new Date(now.getTime() + ms) }];
    expect(coverageWarning('syncs', until(WARN_AHEAD_DAYS * DAY), now)).toBeUndefined();
    expect(coverageWarning('syncs', until(WARN_AHEAD_DAYS * DAY - 1), now)).toMatch(/^syncs: partitions end at .*fewer than 7 days ahead/);
    expect(coverageWarning('syncs', [], now)).toMatch(/^syncs: no partition holds rows written now/);
  });
});
