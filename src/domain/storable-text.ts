/**
 * What PostgreSQL can store of a value from outside (issue 20): `text` and `jsonb` hold neither U+0000
 * nor a lone UTF-16 surrogate (jsonb refuses `\ud800` alone; text gets it as an encoding error). Every
 * place an outside value is decoded (the ingress parser, the outbound HTTP client's answers, the SMTP
 * server's answers) passes it through here once, so nothing past those points can carry one. Each such
 * character becomes U+FFFD, the Unicode replacement character: the value keeps its length and shows
 * where something was replaced. Pure.
 */

// eslint-disable-next-line no-control-regex -- U+0000 is exactly what this rule is about
const UNSTORABLE = /\u0000|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g;

/** `text` with U+0000 and lone surrogates replaced by U+FFFD (the same string when it has none). */
export function storableText(text: string): string {
  return text.replace(UNSTORABLE, '\ufffd');
}

/** A parsed JSON value with every string and object key made storable. */
export function storableJson(value: unknown): unknown {
  if (typeof value === 'string') return storableText(value);
  if (Array.isArray(value)) return value.map(storableJson);
  if (value !== null && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value as Record<string, unknown>).map(([key, item]) => [storableText(key), storableJson(item)]));
  }
  return value;
}
