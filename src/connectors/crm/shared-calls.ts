import { Batcher } from '../../db/batcher.js';

/**
 * Calls that the syncs of one key (a CRM account and a kind of call) running at once in this process
 * share: a batcher per key, kept while some sync uses it, so the entry (and the token in its key) goes
 * with the last one. One call per key is in flight at a time, so that everything arriving while it waits
 * for its budget slot and its answer goes in the next: a batch call per hundred syncs is what makes a
 * rate-limited account fast.
 */
export class SharedCalls<I, O> {
  private readonly groups = new Map<string, { batcher: Batcher<I, O>; users: number }>();

  /** `run` answers a group with one output per item, in order; `maxBatch` is the CRM's limit of inputs per call. */
  constructor(
    private readonly run: (items: I[]) => Promise<O[]>,
    private readonly maxBatch = 100,
  ) {}

  /** Joins the next call of `key`; a call not full waits `gatherMs` for more syncs before it goes. */
  async load(key: string, gatherMs: number, item: I): Promise<O> {
    let group = this.groups.get(key);
    if (!group) {
      group = { batcher: new Batcher(this.run, { concurrency: 1, maxBatch: this.maxBatch, gatherMs }), users: 0 };
      this.groups.set(key, group);
    }
    group.users += 1;
    try {
      return await group.batcher.load(item);
    } finally {
      group.users -= 1;
      if (group.users === 0 && this.groups.get(key) === group) this.groups.delete(key);
    }
  }

  /** Keys with syncs calling now (tests: nothing stays behind). */
  get size(): number {
    return this.groups.size;
  }
}
