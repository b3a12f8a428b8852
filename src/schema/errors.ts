import { GraphQLError } from 'graphql';
import type { ApiKeyViewer, Context } from './context.js';

/**
 * The one registry of error codes. Each GraphQL error the schema raises carries `extensions.code` and
 * `extensions.http.status`; the REST facade turns them into the spec's `{statusCode, message, error}`.
 */
const ERROR_STATUS = {
  BAD_REQUEST: 400,
  UNAUTHENTICATED: 401,
  FORBIDDEN: 403,
  NOT_FOUND: 404,
  CONFLICT: 409,
  TIMEOUT: 504,
} as const;

export type ErrorCode = keyof typeof ERROR_STATUS;

/** A GraphQL error with the HTTP status the REST facade answers with. `message` may be several lines of validation. */
export function serviceError(code: ErrorCode, message: string | string[]): GraphQLError {
  const text = Array.isArray(message) ? message.join('; ') : message;
  return new GraphQLError(text, {
    extensions: { code, http: { status: ERROR_STATUS[code] }, ...(Array.isArray(message) ? { messages: message } : {}) },
  });
}

/** The API key caller, or a 401 for anyone else (staff use the explorer's own fields). */
export function requireApiKey(ctx: Context): ApiKeyViewer {
  if (ctx.viewer.kind !== 'apiKey') throw serviceError('UNAUTHENTICATED', 'Invalid API key');
  return ctx.viewer;
}

/** Support staff only. */
export function requireStaff(ctx: Context): void {
  if (ctx.viewer.kind !== 'staff') throw serviceError('FORBIDDEN', 'Support staff only');
}
