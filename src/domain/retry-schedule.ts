/**
 * When a failed attempt to reach someone else's server is tried again: forwarding, reply relays. Pure.
 */

/** A `Retry-After` longer than this is held to it: a server cannot park our work for days. */
export const MAX_RETRY_AFTER_MS = 6 * 3600_000;

/**
 * How long to wait before trying again after attempt number `failedAttempt` (1 = the first) failed, or
 * null when the schedule is spent. The wait is the schedule's step, jittered by +-20 % (`random` in [0, 1)),
 * and never shorter than the other side's `Retry-After` (held to {@link MAX_RETRY_AFTER_MS}).
 */
export function retryDelayMs(failedAttempt: number, schedule: readonly number[], retryAfterMs: number | undefined, random: number): number | null {
  if (failedAttempt < 1 || failedAttempt > schedule.length) return null;
  const step = schedule[failedAttempt - 1]! * 1000;
  const jittered = step * (0.8 + 0.4 * random);
  const asked = retryAfterMs === undefined ? 0 : Math.min(retryAfterMs, MAX_RETRY_AFTER_MS);
  return Math.round(Math.max(jittered, asked));
}
