import { describe, expect, it } from 'vitest';
import { maxOf, minOf } from '../../bench/support.js';

describe('minOf / maxOf (bench/support.ts)', () => {
  it('answer as Math.min / Math.max do', () => {
    expect(minOf([3, -1, 7])).toBe(-1);
    expect(maxOf([3, -1, 7])).toBe(7);
    expect(minOf([5])).toBe(5);
    expect(maxOf(new Set([2, 9, 4]))).toBe(9);
  });

  it('keep Math.min() / Math.max() on no values: Infinity and -Infinity', () => {
    expect(minOf([])).toBe(Number.POSITIVE_INFINITY);
    expect(maxOf([])).toBe(Number.NEGATIVE_INFINITY);
    expect(Math.max(0, maxOf([]))).toBe(0);
  });

  it('are NaN when a value is NaN, wherever it is', () => {
    expect(minOf([1, Number.NaN, 0])).toBeNaN();
    expect(maxOf([Number.NaN, 1])).toBeNaN();
    expect(maxOf([1, Number.NaN])).toBeNaN();
  });

  it('take 200,000 values, where spreading them into Math.min / Math.max overflows the stack', () => {
    const values = Array.from({ length: 200_000 }, (_, i) => ((i * 7919) % 200_000) - 100_000);
    expect(minOf(values)).toBe(-100_000);
    expect(maxOf(values)).toBe(99_999);
    expect(minOf(values.values())).toBe(-100_000);
  });
});
