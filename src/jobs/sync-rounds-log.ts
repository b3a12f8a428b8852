import type { Logger } from '../logger.js';

/** What became of one sync in a drain's round. */
export type RoundResult = 'written' | 'error' | 'rescheduled';

interface Tally {
  rounds: number;
  syncs: number;
  written: number;
  error: number;
  rescheduled: number;
}

/** How often a connection's drains say what they did. */
const EVERY_MS = 60_000;

/**
 * The drains' log: a debug line per round, and one info line per connection and minute saying what its
 * drains in this process wrote (graphile-worker's line per completed job is at debug: at an ingress's
 * rate it would be the whole log).
 */
export class SyncRounds {
  private readonly tallies = new Map<number, Tally>();

  constructor(private readonly logger: Logger) {
    setInterval(() => this.flush(), EVERY_MS).unref();
  }

  /** A round of `connectionId` begins: count each sync's result, then end it. */
  start(connectionId: number): { count(result: RoundResult): void; end(): void } {
    const started = Date.now();
    const round: Tally = { rounds: 1, syncs: 0, written: 0, error: 0, rescheduled: 0 };
    return {
      count(result) {
        round.syncs += 1;
        round[result] += 1;
      },
      end: () => {
        this.logger.debug({ connectionId, ...round, ms: Date.now() - started }, 'sync round');
        const tally = this.tallies.get(connectionId) ?? { rounds: 0, syncs: 0, written: 0, error: 0, rescheduled: 0 };
        for (const key of Object.keys(round) as (keyof Tally)[]) tally[key] += round[key];
        this.tallies.set(connectionId, tally);
      },
    };
  }

  private flush(): void {
    for (const [connectionId, tally] of this.tallies) this.logger.info({ connectionId, ...tally }, 'syncs of a connection in the last minute');
    this.tallies.clear();
  }
}
