import type { Request } from 'express';
import type { z } from 'zod';
import { excerpt } from '../domain/excerpt.js';
import { checkLimit } from '../domain/window.js';
import { storableText } from '../domain/storable-text.js';

/** A client error the REST layer raises before any operation runs. */
export class RestError extends Error {
  constructor(
    readonly status: 400 | 404,
    message: string,
    /** Several validation problems: the spec's 400 may carry an array of messages. */
    readonly messages?: string[],
  ) {
    super(message);
  }
}

type Query = Request['query'];

/** A query parameter given at most once, as a string. */
export function single(query: Query, name: string): string | undefined {
  const value = query[name];
  if (value === undefined) return undefined;
  if (typeof value !== 'string') throw new RestError(400, `${name} must be given once`);
  // Query values are outside text: storable before any lookup or message sees them (src/domain/storable-text.ts).
  return storableText(value);
}

/** A query parameter that may be repeated: every value given, in order. */
export function repeated(query: Query, name: string): string[] {
  const value = query[name];
  if (value === undefined) return [];
  const values = Array.isArray(value) ? value : [value];
  if (!values.every((v): v is string => typeof v === 'string')) throw new RestError(400, `${name} must be a string`);
  return values.map(storableText);
}

/**
 * An optional positive whole-number query parameter. A number beyond any id we issue names nothing:
 * with `notFound` it is that resource's 404, without it an id that matches no row (0).
 */
export function optionalId(query: Query, name: string, notFound?: (raw: string) => string): number | undefined {
  const value = single(query, name);
  if (value === undefined || value === '') return undefined;
  if (!/^\d{1,30}$/.test(value) || !/[1-9]/.test(value)) throw new RestError(400, `${name} must be a positive whole number`);
  if (Number(value) <= MAX_INT) return Number(value);
  if (notFound) throw new RestError(404, notFound(value));
  return 0;
}

const MAX_INT = 2_147_483_647;

/** A path id; anything that is not a positive whole number cannot name a resource, so it is a 404. */
export function pathId(value: string | undefined, notFound: (raw: string) => string, digits = 9): number {
  const raw = value ?? '';
  // Echo what was asked for, but never control characters or an unbounded string.
  if (!new RegExp(`^\\d{1,${digits}}$`).test(raw) || Number(raw) < 1) throw new RestError(404, notFound(excerpt(raw, 64)));
  return Number(raw);
}

/** An optional enumerated query parameter. */
export function optionalEnum<T extends string>(query: Query, name: string, values: readonly T[]): T | undefined {
  const value = single(query, name);
  if (value === undefined || value === '') return undefined;
  if (!values.includes(value as T)) throw new RestError(400, `${name} must be one of ${values.join(', ')}`);
  return value as T;
}

/** `from`/`to` as given (the window rules are checked where the query runs), `cursor` and `limit`. */
export function windowParams(query: Query): { from: string; to: string } {
  return { from: single(query, 'from') ?? '', to: single(query, 'to') ?? '' };
}

export function pageParams(query: Query): { cursor: string | undefined; limit: number } {
  const checked = checkLimit(single(query, 'limit'));
  if (!checked.ok) throw new RestError(400, checked.problems[0] as string);
  return { cursor: single(query, 'cursor') || undefined, limit: checked.value };
}

/** A path id with a public prefix (`svcwh_`, `svcwhd_`); anything else cannot name a resource, so it is a 404. */
export function publicPathId(value: string | undefined, prefix: string, notFound: (raw: string) => string): string {
  const raw = value ?? '';
  if (!raw.startsWith(prefix) || !/^[A-Za-z0-9_]{1,80}$/.test(raw)) throw new RestError(404, notFound(excerpt(raw, 64)));
  return raw;
}

/**
 * The JSON body, checked against `schema`: every problem in one 400, named by field (`url is required`,
 * `isActive must be a boolean`, `unknown field x`), never the values sent.
 */
export function jsonBody<S extends z.ZodType>(req: Request, schema: S): z.output<S> {
  const hasBody = Number(req.headers['content-length'] ?? 0) > 0 || req.headers['transfer-encoding'] !== undefined;
  if (hasBody && !req.is('application/json')) throw new RestError(400, 'Request body must be JSON (Content-Type: application/json)');
  const parsed = schema.safeParse(req.body ?? {});
  if (parsed.success) return parsed.data;
  const problems = parsed.error.issues.map((issue) => describeIssue(issue, req.body));
  throw new RestError(400, problems.join('; '), problems);
}

function describeIssue(issue: z.core.$ZodIssue, body: unknown): string {
  const field = issue.path.map(String).join('.') || 'body';
  switch (issue.code) {
    case 'invalid_type':
      if (issue.path.length > 0 && !isPresent(body, issue.path)) return `${field} is required`;
      return `${field} must be ${issue.expected === 'array' ? 'an array' : issue.expected === 'object' ? 'a JSON object' : `a ${issue.expected}`}`;
    case 'unrecognized_keys':
      return `unknown field${issue.keys.length > 1 ? 's' : ''} ${issue.keys.map((k) => excerpt(k, 64)).join(', ')}`;
    case 'too_big':
      return `${field} must have at most ${issue.maximum} ${issue.origin === 'string' ? 'characters' : 'items'}`;
    default:
      return `${field}: ${issue.message}`;
  }
}

function isPresent(value: unknown, path: readonly PropertyKey[]): boolean {
  let current = value;
  for (const key of path) {
    if (typeof current !== 'object' || current === null || !(key in current)) return false;
    current = (current as Record<PropertyKey, unknown>)[key];
  }
  return current !== undefined;
}
