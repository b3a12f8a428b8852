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
  const S = T / 1000;
  const log = (...entries: [secondsAgo: number, count: number][]) => entries.map(([ago, count]) => ({ second: S - ago, count }));

  it('passes while the window holds at most the limit, counting this request', () => {
    // A hit counts until its whole second is more than 60 s old: 61 s for a hit at the start of a second.
    expect(slidingWindowDecision(log([0, 1]), 3, W, T)).toEqual({ allowed: true, limit: 3, remaining: 2, resetSeconds: 61 });
    expect(slidingWindowDecision(log([20, 1], [10, 1], [0, 1]), 3, W, T)).toEqual({ allowed: true, limit: 3, remaining: 0, resetSeconds: 41 });
  });

  it('rejects the request past the limit and says when enough of the oldest hits have left', () => {
    // Four hits with a limit of 3: a slot frees when the two oldest have left, i.e. the one 30 s old.
    expect(slidingWindowDecision(log([50, 1], [30, 1], [10, 1], [0, 1]), 3, W, T)).toEqual({ allowed: false, limit: 3, remaining: 0, resetSeconds: 31 });
    // 130 hits with a limit of 120: the 100 of 40 s ago must leave.
    expect(slidingWindowDecision(log([40, 100], [20, 30]), 120, W, T)).toMatchObject({ allowed: false, resetSeconds: 21 });
  });

  it('while slots are free, the reset is when the oldest second leaves', () => {
    expect(slidingWindowDecision(log([45, 1], [0, 1]), 120, W, T).resetSeconds).toBe(16);
  });

  it('rounds up and never answers 0 seconds', () => {
    expect(slidingWindowDecision(log([60, 1]), 2, W, T + 999).resetSeconds).toBe(1);
    expect(slidingWindowDecision(log([60, 1]), 2, W, T + 1_000).resetSeconds).toBe(1);
  });
});
