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
  /** Hit times, oldest first, given as milliseconds before T. */
  const hits = (...msAgo: number[]) => msAgo.map((ago) => T - ago);

  it('passes while the window holds at most the limit, counting this request', () => {
    expect(slidingWindowDecision(hits(0), 3, W, T)).toEqual({ allowed: true, limit: 3, remaining: 2, resetSeconds: 60 });
    expect(slidingWindowDecision(hits(20_000, 10_000, 0), 3, W, T)).toEqual({ allowed: true, limit: 3, remaining: 0, resetSeconds: 40 });
  });

  it('rejects the request past the limit and says when enough of the oldest hits have left', () => {
    // Four hits with a limit of 3: a slot frees when the two oldest have left, i.e. the one 30 s old.
    expect(slidingWindowDecision(hits(50_000, 30_000, 10_000, 0), 3, W, T)).toEqual({ allowed: false, limit: 3, remaining: 0, resetSeconds: 30 });
  });

  it('while slots are free, the reset is when the oldest hit leaves', () => {
    expect(slidingWindowDecision(hits(45_000, 0), 120, W, T).resetSeconds).toBe(15);
  });

  it('counts a hit for exactly 60 s, so the reset never exceeds 60 whatever the millisecond', () => {
    for (const ms of [0, 1, 499, 999]) {
      expect(slidingWindowDecision([T + ms], 1, W, T + ms).resetSeconds).toBe(60);
      expect(slidingWindowDecision([T + ms, T + ms], 1, W, T + ms).resetSeconds).toBe(60);
    }
    expect(slidingWindowDecision(hits(59_001), 2, W, T).resetSeconds).toBe(1);
  });

  it('rounds up and never answers 0 seconds', () => {
    expect(slidingWindowDecision(hits(59_999), 2, W, T).resetSeconds).toBe(1);
    expect(slidingWindowDecision(hits(60_000), 2, W, T).resetSeconds).toBe(1);
  });
});
