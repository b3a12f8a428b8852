/**
 * Groups concurrent calls into batches, so many callers share one statement and one commit: every call
 * arriving while `concurrency` batches are in flight joins the next batch, and one turn of the event loop
 * lets calls made together start together. Each caller gets its own item's answer, or the batch's error.
 */
export class Batcher<I, O> {
  private readonly concurrency: number;
  private readonly maxBatch: number;
  private readonly key: ((item: I) => unknown) | undefined;
  private readonly isolateFailures: boolean;
  private readonly gatherMs: number;
  private pending: Pending<I, O>[] = [];
  private inFlight = 0;
  private scheduled = false;
  /** The gathering wait of the next batch, cut short when the batch fills up. */
  private gathering: NodeJS.Timeout | undefined;
  private drained: (() => void)[] = [];

  /**
   * `run` answers a batch with one output per item, in order. With `key`, items of equal key never share
   * a batch (a statement must not touch one row twice): the later ones wait for the next batch. With
   * `isolateFailures`, a failed batch is run again one item at a time, so one bad item fails alone; only
   * for a `run` that leaves nothing behind when it throws (one transaction). With `gatherMs`, a batch
   * that is not full waits that long for more items before it starts (calls to a rate-limited server,
   * where each call is worth filling).
   */
  constructor(
    private readonly run: (items: I[]) => Promise<O[]>,
    options: { concurrency?: number; maxBatch?: number; key?: (item: I) => unknown; isolateFailures?: boolean; gatherMs?: number } = {},
  ) {
    this.concurrency = options.concurrency ?? 1;
    this.maxBatch = options.maxBatch ?? 500;
    this.key = options.key;
    this.isolateFailures = options.isolateFailures ?? false;
    this.gatherMs = options.gatherMs ?? 0;
  }

  load(item: I): Promise<O> {
    return new Promise((resolve, reject) => {
      this.pending.push({ item, resolve, reject });
      this.schedule();
    });
  }

  /** Resolves once every call made so far is answered. */
  drain(): Promise<void> {
    if (this.pending.length === 0 && this.inFlight === 0) return Promise.resolve();
    return new Promise((resolve) => this.drained.push(resolve));
  }

  private schedule(): void {
    if (this.gathering && this.pending.length >= this.maxBatch) {
      clearTimeout(this.gathering);
      this.gathering = undefined;
      this.scheduled = false;
    }
    if (this.scheduled || this.inFlight >= this.concurrency || this.pending.length === 0) return;
    this.scheduled = true;
    const start = () => {
      this.scheduled = false;
      this.gathering = undefined;
      void this.flush();
    };
    if (this.gatherMs > 0 && this.pending.length < this.maxBatch) this.gathering = setTimeout(start, this.gatherMs);
    else setImmediate(start);
  }

  private async flush(): Promise<void> {
    if (this.inFlight >= this.concurrency || this.pending.length === 0) return;
    const batch = this.take();
    this.inFlight += 1;
    // Items left over (maxBatch, equal keys) may start in a batch of their own beside this one.
    this.schedule();
    try {
      await this.answer(batch).catch(async (error: unknown) => {
        if (!this.isolateFailures || batch.length === 1) throw error;
        for (const p of batch) await this.answer([p]).catch((alone: unknown) => p.reject(alone));
      });
    } catch (error) {
      for (const p of batch) p.reject(error);
    } finally {
      this.inFlight -= 1;
      this.schedule();
      if (this.pending.length === 0 && this.inFlight === 0) for (const resolve of this.drained.splice(0)) resolve();
    }
  }

  private async answer(batch: Pending<I, O>[]): Promise<void> {
    const outputs = await this.run(batch.map((p) => p.item));
    if (outputs.length !== batch.length) throw new Error(`a batch of ${batch.length} was answered with ${outputs.length} results`);
    batch.forEach((p, i) => p.resolve(outputs[i] as O));
  }

  private take(): Pending<I, O>[] {
    if (!this.key) return this.pending.splice(0, this.maxBatch);
    const keys = new Set<unknown>();
    const batch: Pending<I, O>[] = [];
    const rest: Pending<I, O>[] = [];
    for (const p of this.pending) {
      const key = this.key(p.item);
      if (batch.length < this.maxBatch && !keys.has(key)) {
        keys.add(key);
        batch.push(p);
      } else rest.push(p);
    }
    this.pending = rest;
    return batch;
  }
}

interface Pending<I, O> {
  item: I;
  resolve: (output: O) => void;
  reject: (error: unknown) => void;
}
