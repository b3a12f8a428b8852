/**
 * Takes a slot of the rolling window `hits` holds (request times in ms, oldest first; expired ones are
 * dropped) when fewer than `max` fall in the last `windowMs`: undefined when taken, else the whole
 * seconds until one frees (at least 1). A refused request takes none, so a client that waits its
 * Retry-After is served. The vendor emulators' per-key limits.
 */
export function takeSlot(hits: number[], max: number, windowMs: number, now: number): number | undefined {
  while (hits.length > 0 && hits[0]! <= now - windowMs) hits.shift();
  if (hits.length < max) {
    hits.push(now);
    return undefined;
  }
  const freeing = hits[Math.max(0, hits.length - max)] ?? now;
  return Math.max(1, Math.ceil((freeing + windowMs - now) / 1000));
}
