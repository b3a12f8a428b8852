import { describe, expect, it } from 'vitest';
import { cursorScope, decodeCursor, encodeCursor } from '../../src/domain/cursor.js';

const KEY = Buffer.alloc(32, 1);
const POSITION = { createdAt: new Date('2026-11-01T10:00:00.123Z'), id: 123456789012n };
const SCOPE = cursorScope({ table: 'syncs', account: 1, status: 'error', from: new Date('2026-11-01T00:00:00Z') });

describe('cursors', () => {
  it('round-trip a position within the query that made them', () => {
    expect(decodeCursor(KEY, encodeCursor(KEY, POSITION, SCOPE), SCOPE)).toEqual(POSITION);
  });

  it('refuse another query, another key, edits and garbage', () => {
    const cursor = encodeCursor(KEY, POSITION, SCOPE);
    const [v, payload, sig] = cursor.split('.') as [string, string, string];
    const forged = Buffer.from(JSON.stringify([POSITION.createdAt.getTime(), '1'])).toString('base64url');
    for (const [bad, scope, key] of [
      [cursor, cursorScope({ table: 'syncs', account: 2, status: 'error', from: new Date('2026-11-01T00:00:00Z') }), KEY],
      [cursor, SCOPE, Buffer.alloc(32, 2)],
      [`${v}.${forged}.${sig}`, SCOPE, KEY],
      [`${v}.${payload}.${sig.slice(1)}x`, SCOPE, KEY],
      [`v2.${payload}.${sig}`, SCOPE, KEY],
      ['garbage', SCOPE, KEY],
      [`${cursor}.extra`, SCOPE, KEY],
    ] as const) {
      expect(decodeCursor(key, bad, scope)).toBeUndefined();
    }
  });

  it('scopes are stable whatever the key order, and distinguish absent from present values', () => {
    expect(cursorScope({ a: 1, b: 'x' })).toBe(cursorScope({ b: 'x', a: 1 }));
    expect(cursorScope({ a: 1, b: undefined })).not.toBe(cursorScope({ a: 1, b: 'undefined' }));
  });
});
