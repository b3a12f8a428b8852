import { describe, expect, it } from 'vitest';
import { RoundMemory } from '../../src/jobs/round-memory.js';

const settle = () => new Promise((resolve) => setImmediate(resolve));

describe('RoundMemory', () => {
  it('admits rounds while their bytes fit, and the next waiting one as soon as one releases', async () => {
    // Setup
    const memory = new RoundMemory(100);
    const admitted: string[] = [];
    const take = (name: string, bytes: number) => memory.acquire(bytes).then(() => admitted.push(name));

    // Action
    void take('a', 60);
    void take('b', 60);
    void take('c', 10);
    await settle();

    // Assertions: b waits for room, and c waits behind b (first come, first served).
    expect(admitted).toEqual(['a']);
    memory.release(60);
    await settle();
    expect(admitted).toEqual(['a', 'b', 'c']);
  });

  it('lets a round bigger than the limit run alone', async () => {
    const memory = new RoundMemory(100);
    await memory.acquire(500);
    let second = false;
    void memory.acquire(1).then(() => (second = true));
    await settle();
    expect(second).toBe(false);
    memory.release(500);
    await settle();
    expect(second).toBe(true);
  });
});
