import { describe, expect, it } from 'vitest';
import { Batcher } from '../../src/db/batcher.js';

/** A run that records each batch it gets and answers item * 10, after `hold` resolves. */
function recorder(options: { failWhen?: (items: number[]) => boolean } = {}) {
  const batches: number[][] = [];
  let release: () => void = () => {};
  let hold = Promise.resolve();
  return {
    batches,
    block() {
      hold = new Promise((resolve) => (release = resolve));
    },
    release: () => release(),
    run: async (items: number[]) => {
      batches.push(items);
      await hold;
      if (options.failWhen?.(items)) throw new Error(`batch ${items.join(',')} failed`);
      return items.map((i) => i * 10);
    },
  };
}

describe('Batcher', () => {
  it('answers calls made together from one batch, each with its own result', async () => {
    const r = recorder();
    const batcher = new Batcher(r.run);
    await expect(Promise.all([1, 2, 3].map((i) => batcher.load(i)))).resolves.toEqual([10, 20, 30]);
    expect(r.batches).toEqual([[1, 2, 3]]);
  });

  it('gathers calls arriving while a batch is in flight into the next one', async () => {
    const r = recorder();
    const batcher = new Batcher(r.run);
    r.block();
    const first = batcher.load(1);
    await new Promise((resolve) => setImmediate(resolve));
    const later = [2, 3, 4].map((i) => batcher.load(i));
    await new Promise((resolve) => setTimeout(resolve, 5));
    expect(r.batches).toEqual([[1]]);
    r.release();
    await expect(Promise.all([first, ...later])).resolves.toEqual([10, 20, 30, 40]);
    expect(r.batches).toEqual([[1], [2, 3, 4]]);
  });

  it('caps batches at maxBatch', async () => {
    const r = recorder();
    const batcher = new Batcher(r.run, { maxBatch: 2 });
    await Promise.all([1, 2, 3, 4, 5].map((i) => batcher.load(i)));
    expect(r.batches).toEqual([[1, 2], [3, 4], [5]]);
  });

  it('never puts two items of one key in a batch', async () => {
    const r = recorder();
    const batcher = new Batcher(r.run, { key: (i) => i % 2 });
    await expect(Promise.all([1, 3, 2, 5, 4].map((i) => batcher.load(i)))).resolves.toEqual([10, 30, 20, 50, 40]);
    expect(r.batches).toEqual([[1, 2], [3, 4], [5]]);
  });

  it('rejects every caller of a failed batch', async () => {
    const r = recorder({ failWhen: (items) => items.includes(2) });
    const batcher = new Batcher(r.run);
    const results = await Promise.allSettled([1, 2, 3].map((i) => batcher.load(i)));
    expect(results.map((s) => s.status)).toEqual(['rejected', 'rejected', 'rejected']);
  });

  it('with isolateFailures, reruns a failed batch item by item so only the bad item fails', async () => {
    const r = recorder({ failWhen: (items) => items.includes(2) });
    const batcher = new Batcher(r.run, { isolateFailures: true });
    const results = await Promise.allSettled([1, 2, 3].map((i) => batcher.load(i)));
    expect(results).toEqual([
      { status: 'fulfilled', value: 10 },
      { status: 'rejected', reason: new Error('batch 2 failed') },
      { status: 'fulfilled', value: 30 },
    ]);
    expect(r.batches).toEqual([[1, 2, 3], [1], [2], [3]]);
  });

  it('refuses a run that answers the wrong number of results', async () => {
    const batcher = new Batcher((items: number[]) => Promise.resolve(items.slice(1)));
    await expect(batcher.load(1)).rejects.toThrow('a batch of 1 was answered with 0 results');
  });

  it('runs up to `concurrency` batches at once; drain waits for all of them', async () => {
    let running = 0;
    let most = 0;
    const batcher = new Batcher(
      async (items: number[]) => {
        running += 1;
        most = Math.max(most, running);
        await new Promise((resolve) => setTimeout(resolve, 10));
        running -= 1;
        return items;
      },
      { concurrency: 2, maxBatch: 1 },
    );
    const all = [1, 2, 3, 4].map((i) => batcher.load(i));
    await batcher.drain();
    expect(running).toBe(0);
    expect(most).toBe(2);
    await expect(Promise.all(all)).resolves.toEqual([1, 2, 3, 4]);
    await batcher.drain();
  });

  it('with gatherMs, lets a batch that is not full wait for more items, and starts a full one at once', async () => {
    const batches: number[][] = [];
    const batcher = new Batcher(
      (items: number[]) => {
        batches.push(items);
        return Promise.resolve(items);
      },
      { gatherMs: 40, maxBatch: 3 },
    );
    const first = batcher.load(1);
    await new Promise((resolve) => setTimeout(resolve, 10));
    const second = batcher.load(2);
    await expect(Promise.all([first, second])).resolves.toEqual([1, 2]);
    expect(batches).toEqual([[1, 2]]);

    const started = Date.now();
    await Promise.all([3, 4, 5].map((i) => batcher.load(i)));
    expect(batches[1]).toEqual([3, 4, 5]);
    expect(Date.now() - started).toBeLessThan(30);
  });
});
