/**
 * The shared sending loop with an outbox in memory: an item whose delivery fails for a reason no retry
 * changes is set aside and the loop goes on with the others; a transient failure (the database gone)
 * ends the loop, after what is in flight settles, to run again.
 */
import { describe, expect, it } from 'vitest';
import { drainOutbox, type Outbox } from '../../src/jobs/outbox-loop.js';

interface Item {
  id: string;
}

/** An outbox of `count` items, each claimed once; `fail` decides what delivering one throws. */
function memoryOutbox(count: number, fail: (id: string) => Error | undefined): Outbox<Item> & { delivered: string[]; asideIds: string[] } {
  const due = Array.from({ length: count }, (_, i) => ({ id: String(i + 1) }));
  const delivered: string[] = [];
  const asideIds: string[] = [];
  return {
    delivered,
    asideIds,
    maxInFlight: 4,
    claimEveryMs: 0,
    claim: (_holding, limit) => Promise.resolve(due.splice(0, limit)),
    deliver: (item) => {
      const error = fail(item.id);
      if (error !== undefined) return Promise.reject(error);
      delivered.push(item.id);
      return Promise.resolve();
    },
    setAside: (item) => {
      asideIds.push(item.id);
      return Promise.resolve();
    },
  };
}

describe('drainOutbox', () => {
  it('sets aside an item that fails on our side and delivers every other one', async () => {
    const dataError = Object.assign(new Error('invalid byte sequence for encoding "UTF8": 0x00'), { code: '22021' });
    const outbox = memoryOutbox(12, (id) => (id === '3' || id === '9' ? dataError : undefined));
    await drainOutbox(outbox, new AbortController().signal);
    expect(outbox.asideIds).toEqual(['3', '9']);
    expect(outbox.delivered.sort((a, b) => Number(a) - Number(b))).toEqual(['1', '2', '4', '5', '6', '7', '8', '10', '11', '12']);
  });

  it('ends the loop on a transient failure, setting nothing aside and settling what is in flight', async () => {
    const gone = Object.assign(new Error('terminating connection due to administrator command'), { code: '57P01' });
    const outbox = memoryOutbox(12, (id) => (id === '2' ? gone : undefined));
    await expect(drainOutbox(outbox, new AbortController().signal)).rejects.toBe(gone);
    expect(outbox.asideIds).toEqual([]);
    // The first claim's other three were in flight with the failing one, and are recorded; nothing more is claimed.
    expect(outbox.delivered.sort()).toEqual(['1', '3', '4']);
  });

  it('ends the loop when setting an item aside fails too', async () => {
    const outbox = memoryOutbox(3, (id) => (id === '1' ? new TypeError('a bug') : undefined));
    const stuck = new Error('could not count the failure');
    outbox.setAside = () => Promise.reject(stuck);
    await expect(drainOutbox(outbox, new AbortController().signal)).rejects.toBe(stuck);
  });
});
