import { describe, expect, it } from 'vitest';
import { storableJson, storableText } from '../../src/domain/storable-text.js';

describe('storableText', () => {
  it.each([
    ['plain', 'plain'],
    ['a\u0000b', 'a\ufffdb'],
    ['\u0000\u0000', '\ufffd\ufffd'],
    ['high \ud800 alone', 'high \ufffd alone'],
    ['low \udc00 alone', 'low \ufffd alone'],
    ['a pair \ud83d\ude00 stays', 'a pair \ud83d\ude00 stays'],
    ['reversed \ude00\ud83d', 'reversed \ufffd\ufffd'],
    ['ends high \ud83d', 'ends high \ufffd'],
  ])('%j -> %j', (input, output) => {
    expect(storableText(input)).toBe(output);
  });
});

describe('storableJson', () => {
  it('cleans every string and key, at any depth, and keeps the rest', () => {
    expect(storableJson({ 'k\u0000': ['v\u0000', 1, null, true, { deep: '\ud800' }] })).toEqual({ 'k\ufffd': ['v\ufffd', 1, null, true, { deep: '\ufffd' }] });
  });
});
