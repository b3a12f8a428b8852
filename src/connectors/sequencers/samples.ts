import { readdirSync, readFileSync } from 'node:fs';
import type { SequencerPlatform } from './platforms.js';

/**
 * A sequencer's samples: real-shaped webhook bodies, one JSON file per event, in `<platform>/samples/`
 * beside its parser (byte-identical copies of ../shared/fixtures/sequencer-payloads/<platform>/; Prettier
 * leaves them as they are). Tests, benchmarks and the registry's own test read them through here.
 */
export function sampleFolder(platform: SequencerPlatform): URL {
  return new URL(`./${platform}/samples/`, import.meta.url);
}

/** The file names of a platform's samples (`EMAIL_SENT.json`, ...), sorted. */
export function sampleFiles(platform: SequencerPlatform): string[] {
  return readdirSync(sampleFolder(platform))
    .filter((file) => file.endsWith('.json'))
    .sort();
}

/** One sample's raw text, as the sequencer would post it. */
export function readSample(platform: SequencerPlatform, file: string): string {
  return readFileSync(new URL(file, sampleFolder(platform)), 'utf8');
}
