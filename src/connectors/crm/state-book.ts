import type { CrmRun, CrmState } from './types.js';

/** The run's state, saved after each step so that a retry skips what was written. */
export class StateBook<S extends CrmState> {
  readonly state: S;

  constructor(private readonly run: CrmRun) {
    this.state = structuredClone(run.state) as S;
  }

  /** Merges `patch` (undefined values delete keys) and persists the whole state. */
  async save(patch: { [K in keyof S]?: S[K] | undefined }, options: { last?: boolean } = {}): Promise<void> {
    this.note(patch);
    await this.run.saveState(structuredClone(this.state), options);
  }

  /**
   * Merges `patch` without persisting it: for what a step that is safe to repeat found (an upsert), which
   * the next save carries. Lost with a crash, it costs a repeated upsert, never a duplicate.
   */
  note(patch: { [K in keyof S]?: S[K] | undefined }): void {
    for (const [key, value] of Object.entries(patch)) {
      if (value === undefined) delete (this.state as Record<string, unknown>)[key];
      else (this.state as Record<string, unknown>)[key] = value;
    }
  }
}
