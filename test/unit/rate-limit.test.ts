import { describe, expect, it } from 'vitest';
import { fixedWindowDecision, slidingWindowDecision } from '../../src/domain/rate-limit.js';

const W = 60_000;
const T = 1_700_000_000_000;

describe('fixedWindowDecision', () => {
  it.each([
    [1, true, 119],
    [120, true, 0],
    [121, false, 0],
    [500, false, 0],
  ])('hit %i of 120: allowed %s, remaining %i', (hits, allowed, remaining) => {
    expect(fixedWindowDecision(hits, 120, T + 30_000, T)).toEqual({ allowed, limit: 120, remaining, resetSeconds: 30 });
  });

  it('rounds the wait up to whole seconds and never says 0', () => {
    expect(fixedWindowDecision(121, 120, T + 1_001, T).resetSeconds).toBe(2);
    expect(fixedWindowDecision(121, 120, T + 1, T).resetSeconds).toBe(1);
    expect(fixedWindowDecision(121, 120, T - 5, T).resetSeconds).toBe(1);
  });
});

describe('slidingWindowDecision', () => {
  const log = (...agesMs: number[]) => agesMs.map((age) => T - age);

  it('passes while the window holds at most the limit, counting this request', () => {
    expect(slidingWindowDecision(log(0), 3, W, T)).toEqual({ allowed: true, limit: 3, remaining: 2, resetSeconds: 60 });
    expect(slidingWindowDecision(log(20_000, 10_000, 0), 3, W, T)).toEqual({ allowed: true, limit: 3, remaining: 0, resetSeconds: 40 });
  });

  it('rejects the request past the limit and says when hit n - limit leaves the window', () => {
    // Four hits in the window with a limit of 3: a slot frees when the second oldest (30 s old) leaves.
    expect(slidingWindowDecision(log(50_000, 30_000, 10_000, 0), 3, W, T)).toEqual({ allowed: false, limit: 3, remaining: 0, resetSeconds: 30 });
  });

  it('while slots are free, the reset is when the oldest hit leaves', () => {
    expect(slidingWindowDecision(log(45_500, 0), 120, W, T).resetSeconds).toBe(15);
  });

  it('rounds up and never answers 0 seconds', () => {
    expect(slidingWindowDecision(log(59_999, 0), 2, W, T).resetSeconds).toBe(1);
  });
});
