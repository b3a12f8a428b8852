/**
 * Property: every sequencer parser takes any JSON value (and any mangling of a real sample) to a canonical
 * event or a reasoned "unreadable", never a throw, and no canonical event carries U+0000 or a lone
 * surrogate, which PostgreSQL cannot store (issue 20). fast-check prints the seed of any failure.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { parseInbound } from '../../src/connectors/sequencers/index.js';
import { SEQUENCER_PLATFORMS, type SequencerPlatform } from '../../src/connectors/sequencers/platforms.js';
import { readSample, sampleFiles } from '../../src/connectors/sequencers/samples.js';

const PLATFORMS = SEQUENCER_PLATFORMS;
/** Cases per property, and the time each may take at most (whichever comes first). */
const RUNS = { numRuns: 400, interruptAfterTimeLimit: 4_000 };

/** Strings of any UTF-16 code units: NULs, lone surrogates, control characters included. */
const anyString = fc.string({ unit: 'binary', maxLength: 40 });
const anyJson = fc.letrec<{ value: unknown }>((tie) => ({
  value: fc.oneof(
    { depthSize: 'small' },
    fc.constant(null),
    fc.boolean(),
    fc.double(),
    fc.integer(),
    anyString,
    fc.array(tie('value'), { maxLength: 5 }),
    fc.dictionary(anyString, tie('value'), { maxKeys: 6 }),
  ),
})).value;

const UNSTORABLE = /\u0000|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/; // eslint-disable-line no-control-regex -- what the property is about

function samples(platform: SequencerPlatform): Array<Record<string, unknown>> {
  return sampleFiles(platform).map((f) => JSON.parse(readSample(platform, f)) as Record<string, unknown>);
}

/** Every string (and key) in a value, at any depth. */
function strings(value: unknown): string[] {
  if (typeof value === 'string') return [value];
  if (Array.isArray(value)) return value.flatMap(strings);
  if (value !== null && typeof value === 'object') return Object.entries(value).flatMap(([k, v]) => [k, ...strings(v)]);
  return [];
}

function checkResult(platform: string, body: string): void {
  const result = parseInbound(platform, body);
  if (result.ok) expect(strings(result.event).filter((s) => UNSTORABLE.test(s))).toEqual([]);
  else expect(result.reason).toMatch(/\S/);
}

describe.each(PLATFORMS)('the %s parser', (platform) => {
  it('takes any JSON value to an event or a reason, never a throw', () => {
    fc.assert(
      fc.property(anyJson, (value) => checkResult(platform, JSON.stringify(value) ?? 'null')),
      RUNS,
    );
  });

  it("takes any mangling of a real sample's fields to an event or a reason, with nothing unstorable in the event", () => {
    const bodies = samples(platform);
    fc.assert(
      fc.property(
        fc.constantFrom(...bodies),
        fc.dictionary(fc.constantFrom(...new Set(bodies.flatMap(Object.keys))), anyJson, { maxKeys: 4 }),
        (sample, overrides) => checkResult(platform, JSON.stringify({ ...sample, ...overrides })),
      ),
      RUNS,
    );
  });

  it('takes any bytes as a body to a reason when they are not a JSON object', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'binary', maxLength: 200 }), (text) => checkResult(platform, text)),
      RUNS,
    );
  });
});
