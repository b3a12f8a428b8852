import fc from 'fast-check';

/**
 * Where a crash test kills its worker: a whole number in [min, max] (records written, pages read,
 * calls made...), drawn at random for each run, so that runs over time kill the worker at every point
 * of its job rather than one. The draw comes from `CRASH_SEED` when set (to repeat a run), else from a
 * fresh seed; every run prints its point and seed. Each run of a crash test file is one draw:
 * `for i in 1 2 3 4 5; do npx vitest run test/integration/sync.crash.test.ts; done` kills at five points.
 */
export function killPoint(label: string, min: number, max: number): number {
  const seed = process.env.CRASH_SEED === undefined ? Math.floor(Math.random() * 2 ** 31) : Number(process.env.CRASH_SEED);
  const [point] = fc.sample(fc.noBias(fc.integer({ min, max })), { seed, numRuns: 1 });
  // Printed with every run: the figures of a hunt, and the seed that repeats a failure.
  console.info(`[crash test] kill at ${label} = ${point} (of ${min}..${max}); repeat with CRASH_SEED=${seed}`);
  return point!;
}

/**
 * A {@link killPoint} over `calls` calls of an emulator and the `phases` of each (its `interceptNth`
 * phases): which call, counted from 1, and in which phase the worker is killed.
 */
export function killCallAndPhase<P extends string>(label: string, calls: number, phases: readonly P[]): { call: number; phase: P } {
  const point = killPoint(label, 1, calls * phases.length);
  return { call: Math.ceil(point / phases.length), phase: phases[point % phases.length]! };
}
