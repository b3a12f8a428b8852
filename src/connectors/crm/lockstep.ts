/**
 * Keeps the runs of one round in step (the syncs a connection's drain writes together): a run that reaches
 * a step waits there until every run still going has reached it, so the calls of a step leave together
 * and share one batch call instead of splitting as some runs skip a call another makes (a company found
 * while others are created). Every run passes the same steps in the same order; a run that ends (written,
 * failed or waiting for the CRM) leaves, and the others stop waiting for it.
 */
export class Lockstep {
  private active: number;
  private waiting: Array<() => void> = [];

  constructor(runs: number) {
    this.active = runs;
  }

  /** Resolves once every run still going has reached this step. */
  step(): Promise<void> {
    return new Promise((resolve) => {
      this.waiting.push(resolve);
      this.releaseIfAllThere();
    });
  }

  /** A run ended: it takes no more steps. */
  leave(): void {
    this.active -= 1;
    this.releaseIfAllThere();
  }

  private releaseIfAllThere(): void {
    if (this.waiting.length === 0 || this.waiting.length < this.active) return;
    for (const release of this.waiting.splice(0)) release();
  }
}

/**
 * A run's position among its round's steps: `reach(n)` waits at every step up to `n` the run has not
 * passed yet, so a run that skipped a step's call (or whose side step failed before it) still takes that
 * step with the others. Without a round (`step` absent) it never waits.
 */
export function stepsOf(run: { step?: (() => Promise<void>) | undefined }): (n: number) => Promise<void> {
  let position = 0;
  return async (n) => {
    if (!run.step) return;
    while (position < n) {
      position += 1;
      await run.step();
    }
  };
}
