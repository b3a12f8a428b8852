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
 * A sliding window over the times of the newest hits (epoch ms, oldest first, this request included,
 * only hits less than `windowMs` old, at most `limit + 1` of them: enough to decide and to say when a
 * slot frees). A hit counts for exactly `windowMs` after it was made. The request passes when the window
 * holds at most `limit` hits; a rejected request stays counted (the spec: rejected requests still count).
 *
 * The next slot frees when the window holds fewer than `limit` hits again: when the `limit`-th newest
 * hit leaves; while slots are still free, when the oldest hit leaves (one more slot frees). Either is at
 * most `windowMs` away, so the header never exceeds the window.
 */
export function slidingWindowDecision(hitsMs: readonly number[], limit: number, windowMs: number, nowMs: number): RateLimitDecision {
  const n = hitsMs.length;
  const leaving = n < limit ? hitsMs[0] : hitsMs[n - limit];
  return {
    allowed: n <= limit,
    limit,
    remaining: Math.max(0, limit - n),
    resetSeconds: wholeSeconds((leaving ?? nowMs) + windowMs - nowMs),
  };
}

/** Retry-After and X-RateLimit-Reset are whole seconds, rounded up, and never 0 (0 would invite a spin). */
function wholeSeconds(ms: number): number {
  return Math.max(1, Math.ceil(ms / 1000));
}
