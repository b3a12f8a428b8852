import { isTransientFailure } from '../domain/job-failure.js';

/**
 * The sending loop the outbox jobs share (forwarding destinations, webhook endpoints): one loop per
 * target keeps up to `maxInFlight` items in flight (and, when sizes are given, their bytes under
 * `maxInFlightBytes`), claiming more as answers come and polling for new ones, until nothing is due
 * and nothing is in flight. On abort it claims no more and waits for what is in flight (each send ends
 * within its timeout); an item not recorded stays in the outbox and is sent again later.
 */
export interface Outbox<T extends { id: string }> {
  /** Up to `limit` due items, leaving out those in flight (`holding`). */
  claim(holding: readonly string[], limit: number): Promise<T[]>;
  /** Sends one item and records what became of it; rejects only for failures of our own (the database, a bug). */
  deliver(item: T): Promise<void>;
  /**
   * Notes that `deliver` failed for a reason no retry changes (src/domain/job-failure.ts): the item is
   * tried again later, and its third such failure is recorded as its outcome. One item's poison never
   * stops its target's loop; a transient failure (the database gone) still ends the loop, to run again.
   */
  setAside(item: T, error: unknown): Promise<void>;
  maxInFlight: number;
  sizeOf?: (item: T) => number;
  maxInFlightBytes?: number;
  /** The least time between two claims (default 10 ms): loops of many small targets share the pool, and claim less often. */
  claimEveryMs?: number;
  /**
   * How long a loop with nothing due and nothing in flight keeps looking before it ends (default 0): a
   * target fed a trickle of items keeps its loop, instead of ending it and waiting for a new job each time.
   */
  lingerMs?: number;
}

/** How often a loop with items in flight looks for newly due ones. */
const POLL_MS = 50;
/** The least time between two claims of one loop, unless the outbox names its own. */
const CLAIM_EVERY_MS = 10;

/** Drains the outbox; throws (after the items in flight settle) the first failure of `deliver`. */
export async function drainOutbox<T extends { id: string }>(outbox: Outbox<T>, signal: AbortSignal): Promise<void> {
  const inFlight = new Map<string, Promise<void>>();
  let inFlightBytes = 0;
  const maxBytes = outbox.maxInFlightBytes ?? Number.POSITIVE_INFINITY;
  let failure: Error | undefined;
  let wake: () => void = () => {};
  const changed = () => new Promise<void>((resolve) => (wake = resolve));

  // A claim reads past the items in flight: claim in batches (when a tenth of the room is free, or
  // nothing is in flight) and at most every CLAIM_EVERY_MS, not once per answer.
  const batch = Math.max(1, Math.ceil(outbox.maxInFlight / 10));
  const claimEveryMs = outbox.claimEveryMs ?? CLAIM_EVERY_MS;
  const lingerMs = outbox.lingerMs ?? 0;
  let lastClaim = 0;
  let idleSince: number | undefined;
  for (;;) {
    if (signal.aborted || failure !== undefined) break;
    const room = outbox.maxInFlight - inFlight.size;
    const wait = lastClaim + claimEveryMs - Date.now();
    if (inFlight.size > 0 && room < batch) {
      await Promise.race([changed(), delay(POLL_MS)]);
      continue;
    }
    if (inFlight.size > 0 && wait > 0) {
      await delay(wait);
      continue;
    }
    let claimed: T[] = [];
    if (room > 0 && inFlightBytes < maxBytes) {
      lastClaim = Date.now();
      try {
        claimed = await outbox.claim([...inFlight.keys()], room);
      } catch (error) {
        // Nothing more is claimed; what is in flight is still recorded before the job fails.
        failure ??= error instanceof Error ? error : new Error(String(error));
        break;
      }
      for (const item of claimed) {
        const bytes = outbox.sizeOf?.(item) ?? 0;
        inFlightBytes += bytes;
        const done = outbox
          .deliver(item)
          .catch((error: unknown) => {
            if (isTransientFailure(error)) throw error;
            return outbox.setAside(item, error);
          })
          .catch((error: unknown) => {
            failure ??= error instanceof Error ? error : new Error(String(error));
          })
          .finally(() => {
            inFlight.delete(item.id);
            inFlightBytes -= bytes;
            wake();
          });
        inFlight.set(item.id, done);
      }
    }
    if (inFlight.size === 0 && claimed.length === 0) {
      idleSince ??= Date.now();
      if (Date.now() - idleSince >= lingerMs) break;
      await delay(Math.max(claimEveryMs, POLL_MS));
      continue;
    }
    idleSince = undefined;
    // A full claim may leave more due now; otherwise wait for an answer, or poll for new items.
    if (claimed.length === room && claimed.length > 0) continue;
    await Promise.race([changed(), delay(POLL_MS)]);
  }
  await Promise.all(inFlight.values());
  // The job fails (graphile-worker runs it again later): the items not recorded are still in the outbox.
  if (failure !== undefined) throw failure;
}

function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
