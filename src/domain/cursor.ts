import { createHmac, timingSafeEqual } from 'node:crypto';

/**
 * Opaque keyset cursors: the position `(createdAt, id)` of the last row served, bound to the query it
 * came from (account, list, filters, window) and signed, so a cursor can neither be forged nor replayed
 * against another account's rows or another query's filters.
 */
export interface Position {
  /** Microseconds are not needed: timestamps are stored with millisecond precision. */
  createdAt: Date;
  id: bigint;
}

/** `v1.<payload>.<signature>`, base64url; payload = created-at ms and id; the signature binds them to the query's scope. */
export function encodeCursor(key: Buffer, position: Position, scope: string): string {
  const payload = Buffer.from(JSON.stringify([position.createdAt.getTime(), position.id.toString()])).toString('base64url');
  return `v1.${payload}.${sign(key, payload, scope)}`;
}

/** The position a cursor names, or undefined when it is malformed, tampered with or from another query. */
export function decodeCursor(key: Buffer, cursor: string, scope: string): Position | undefined {
  const [version, payload, signature] = cursor.split('.');
  if (version !== 'v1' || !payload || !signature || cursor.split('.').length !== 3) return undefined;
  const expected = Buffer.from(sign(key, payload, scope));
  const given = Buffer.from(signature);
  if (expected.length !== given.length || !timingSafeEqual(expected, given)) return undefined;
  try {
    const [ms, id] = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as [unknown, unknown];
    if (typeof ms !== 'number' || !Number.isSafeInteger(ms) || typeof id !== 'string' || !/^\d{1,19}$/.test(id)) return undefined;
    return { createdAt: new Date(ms), id: BigInt(id) };
  } catch {
    return undefined;
  }
}

/** A stable description of a query (which list, whose rows, which filters and window), for cursor binding. */
export function cursorScope(parts: Record<string, string | number | bigint | boolean | null | undefined | Date>): string {
  return Object.keys(parts)
    .sort()
    .map((k) => {
      const v = parts[k];
      return `${k}=${v instanceof Date ? v.toISOString() : v === undefined || v === null ? '' : String(v)}`;
    })
    .join('&');
}

function sign(key: Buffer, payload: string, scope: string): string {
  return createHmac('sha256', key).update(`${scope}\n${payload}`).digest('base64url').slice(0, 22);
}
