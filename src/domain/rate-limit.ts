/**
 * Rate-limit decisions (spec: Limits). Pure: the store hands over what it recorded, these rules say
 * whether the request passes and what the headers carry.
 */

export interface RateLimitDecision {
  allowed: boolean;
  limit: number;
  /** Requests left in the window after this one (0 when rejected). */
  remaining: number;
  /** Whole seconds until the next slot frees (at least 1): `X-RateLimit-Reset` and `Retry-After`. */
  resetSeconds: number;
}

/**
 * A fixed window: `hits` is this request's position in the window (rejected requests included) and
 * the window ends at `windowEndMs`, when every slot frees at once.
 */
export function fixedWindowDecision(hits: number, limit: number, windowEndMs: number, nowMs: number): RateLimitDecision {
  return {
    allowed: hits <= limit,
    limit,
    remaining: Math.max(0, limit - hits),
    resetSeconds: wholeSeconds(windowEndMs - nowMs),
  };
}

/** Hits counted in one second of the clock (epoch seconds). */
export interface SecondCount {
  second: number;
  count: number;
}

/**
 * A sliding window over per-second hit counts (oldest first, this request included, only seconds still
 * in the window). A hit in second s counts until second s + 60 has passed entirely, so the window never
 * forgets a hit early. The request passes when the window holds at most `limit` hits; a rejected
 * request stays counted (the spec: rejected requests still count).
 *
 * The next slot frees when the window holds fewer than `limit` hits again (the oldest seconds leave
 * first); while slots are still free, it is when the oldest second leaves (one more slot frees).
 */
export function slidingWindowDecision(log: readonly SecondCount[], limit: number, windowMs: number, nowMs: number): RateLimitDecision {
  const n = log.reduce((total, s) => total + s.count, 0);
  let mustLeave = Math.max(1, n - limit + 1);
  let freesAt = nowMs;
  for (const { second, count } of log) {
    freesAt = (second + 1) * 1000 + windowMs;
    mustLeave -= count;
    if (mustLeave <= 0) break;
  }
  return {
    allowed: n <= limit,
    limit,
    remaining: Math.max(0, limit - n),
    resetSeconds: wholeSeconds(freesAt - nowMs),
  };
}

/** Retry-After and X-RateLimit-Reset are whole seconds, rounded up, and never 0 (0 would invite a spin). */
function wholeSeconds(ms: number): number {
  return Math.max(1, Math.ceil(ms / 1000));
}
