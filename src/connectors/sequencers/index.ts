/**
 * The sequencer payload parsers by platform (each sequencer's definition names its parser: ./registry.ts).
 * A body that cannot be parsed is an `ok: false` result whose reason the sync records as its error:
 * nothing here throws, and nothing is dropped.
 */
import { excerpt } from '../../domain/excerpt.js';
import { storableJson } from '../../domain/storable-text.js';
import { describeNonObject, isRecord, type ParseResult, type SequencerParser } from './event.js';
import { sequencerDefinition } from './registry.js';
import { BODY_GONE } from '../../domain/retention.js';

export type { ParseResult, SequencerParser } from './event.js';

/** The parser of a platform (`smartlead`, `instantly`, `heyreach`, `lemlist`), or undefined. */
export function parserFor(platform: string): SequencerParser | undefined {
  return sequencerDefinition(platform)?.parse;
}

/** Parses a raw request body posted by `platform` (null: a body past its retention, which gives no event). Never throws. */
export function parseInbound(platform: string, rawBody: string | null): ParseResult {
  const parse = parserFor(platform);
  if (!parse) return { ok: false, reason: `no parser for platform "${excerpt(String(platform), 40)}"` };
  if (rawBody === null) return { ok: false, reason: BODY_GONE };
  if (typeof rawBody !== 'string' || rawBody.trim() === '') return { ok: false, reason: `${platform}: body is empty` };
  let body: unknown;
  try {
    // The body is outside text: everything the parsers make of it is storable (src/domain/storable-text.ts).
    body = storableJson(JSON.parse(rawBody));
  } catch (error) {
    // The engine's message may quote the body: keep only its first words.
    return { ok: false, reason: `${platform}: body is not valid JSON (${excerpt(error instanceof Error ? error.message : String(error), 60)})` };
  }
  if (!isRecord(body)) return { ok: false, reason: `${platform}: body must be a JSON object, got ${describeNonObject(body)}` };
  return parse(body);
}
