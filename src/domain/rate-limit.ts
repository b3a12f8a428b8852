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

/**
 * A sliding window over a log of hit times (epoch ms, oldest first, this request last, only hits
 * within the window, at most limit + 1 kept). With n hits in the window the request passes when
 * n <= limit; a rejected request stays in the log (the spec: rejected requests still count).
 *
 * The next slot frees when the window holds fewer than `limit` hits again, i.e. when hit n - limit
 * leaves it; while slots are still free, it is when the oldest hit leaves (one more slot frees).
 */
export function slidingWindowDecision(hits: readonly number[], limit: number, windowMs: number, nowMs: number): RateLimitDecision {
  const n = hits.length;
  const freesNext = hits[Math.max(0, n - limit)] ?? nowMs;
  return {
    allowed: n <= limit,
    limit,
    remaining: Math.max(0, limit - n),
    resetSeconds: wholeSeconds(freesNext + windowMs - nowMs),
  };
}

/** Retry-After and X-RateLimit-Reset are whole seconds, rounded up, and never 0 (0 would invite a spin). */
function wholeSeconds(ms: number): number {
  return Math.max(1, Math.ceil(ms / 1000));
}
