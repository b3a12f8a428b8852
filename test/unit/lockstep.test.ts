import { describe, expect, it } from 'vitest';
import { Lockstep, stepsOf } from '../../src/connectors/crm/lockstep.js';

/** Lets every pending promise callback run. */
const settle = () => new Promise((resolve) => setImmediate(resolve));

describe('Lockstep', () => {
  it('holds each run at a step until every run still going has reached it', async () => {
    // Setup
    const lockstep = new Lockstep(3);
    const passed: string[] = [];
    const step = (name: string) => lockstep.step().then(() => passed.push(name));

    // Action: two of three arrive.
    void step('a');
    void step('b');
    await settle();

    // Assertions: held until the third comes.
    expect(passed).toEqual([]);
    void step('c');
    await settle();
    expect(passed.sort()).toEqual(['a', 'b', 'c']);
  });

  it('stops waiting for a run that ends', async () => {
    const lockstep = new Lockstep(2);
    let through = false;
    void lockstep.step().then(() => (through = true));
    await settle();
    expect(through).toBe(false);

    lockstep.leave();
    await settle();

    expect(through).toBe(true);
  });

  it('never holds a run alone', async () => {
    const lockstep = new Lockstep(1);
    await lockstep.step();
    await lockstep.step();
  });
});

describe('stepsOf', () => {
  it("takes every step up to the one asked for, so a run that skipped a step's call still takes it with the others", async () => {
    // Setup: two runs; the first reaches step 3 directly, the second one step at a time.
    const lockstep = new Lockstep(2);
    const first = stepsOf({ step: () => lockstep.step() });
    const second = stepsOf({ step: () => lockstep.step() });
    const log: string[] = [];

    // Action
    const a = first(3).then(() => log.push('first at 3'));
    const b = (async () => {
      await second(1);
      log.push('second at 1');
      await second(2);
      log.push('second at 2');
      await second(3);
      log.push('second at 3');
    })();
    await Promise.all([a, b]);

    // Assertions: the first waited at steps 1 and 2 for the second.
    expect(log.indexOf('first at 3')).toBeGreaterThan(log.indexOf('second at 2'));
  });

  it('passes every step at once without a round', async () => {
    await stepsOf({})(7);
  });
});
