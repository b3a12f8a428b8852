import { Batcher } from '../../db/batcher.js';

/** Calls of one key in flight at once. */
const CALLS_IN_FLIGHT = 4;
/** How many syncs a group with shared inputs takes at once, per input a call holds. */
const INPUTS_SHARED = 10;

/**
 * Calls that the syncs of one key (a CRM account and a kind of call) running at once in this process
 * share: a batcher per key, kept while some sync uses it, so the entry (and the token in its key) goes
 * with the last one. A batch call per hundred syncs is what makes a rate-limited account fast. A few calls
 * of one key may be in flight at once (a round of a thousand syncs makes ten of each), since a CRM's
 * answer takes a while; each still takes its slot of the connection's budget, and everything arriving
 * while they are in flight goes in the next.
 */
export class SharedCalls<I, O> {
  private readonly groups = new Map<string, { batcher: Batcher<I, O>; users: number }>();
  private readonly run: (items: I[]) => Promise<O[]>;
  private readonly maxBatch: number;

  /**
   * `run` answers a group with one output per item, in order; `maxBatch` is the CRM's limit of inputs per
   * call. With `inputOf`, items of one input (syncs of one email, one domain) share it: a call holds up to
   * `maxBatch` distinct inputs, however many syncs ask for them.
   */
  constructor(run: (items: I[]) => Promise<O[]>, maxBatch = 100, inputOf?: (item: I) => string) {
    this.run = inputOf ? (items) => byInputs(items, maxBatch, inputOf, run) : run;
    this.maxBatch = inputOf ? maxBatch * INPUTS_SHARED : maxBatch;
  }

  /** Joins the next call of `key`; a call not full waits `gatherMs` for more syncs before it goes. */
  async load(key: string, gatherMs: number, item: I): Promise<O> {
    let group = this.groups.get(key);
    if (!group) {
      group = { batcher: new Batcher(this.run, { concurrency: CALLS_IN_FLIGHT, maxBatch: this.maxBatch, gatherMs }), users: 0 };
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

/**
 * One piece of work per key at a time in this process: callers asking for a key already in flight share
 * its answer (a round's syncs of one new company, or one new person, create it once, whichever batch
 * call their turn falls in).
 */
export class SingleFlight<T> {
  private readonly flights = new Map<string, Promise<T>>();

  run(key: string, work: () => Promise<T>): Promise<T> {
    const flying = this.flights.get(key);
    if (flying) return flying;
    const flight = work().finally(() => this.flights.delete(key));
    this.flights.set(key, flight);
    return flight;
  }
}

/** Runs `run` on chunks of at most `maxInputs` distinct inputs (every item of an input in the same chunk), at once; the outputs in the items' order. */
async function byInputs<I, O>(items: I[], maxInputs: number, inputOf: (item: I) => string, run: (items: I[]) => Promise<O[]>): Promise<O[]> {
  const byInput = new Map<string, number[]>();
  items.forEach((item, i) => {
    const input = inputOf(item);
    byInput.set(input, [...(byInput.get(input) ?? []), i]);
  });
  const inputs = [...byInput.values()];
  const chunks: number[][] = [];
  for (let i = 0; i < inputs.length; i += maxInputs) chunks.push(inputs.slice(i, i + maxInputs).flat());
  const outputs = new Array<O>(items.length);
  await Promise.all(
    chunks.map(async (chunk) => {
      const answered = await run(chunk.map((i) => items[i]!));
      chunk.forEach((i, k) => (outputs[i] = answered[k]!));
    }),
  );
  return outputs;
}
