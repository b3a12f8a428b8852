import { z } from 'zod';

/**
 * The zod fields the CRMs' definitions share. Messages say what is wrong, never the value: a credential
 * may be what was mistyped.
 */

/** A credential string: present and not empty. */
export const secret = z.string({ error: 'is required (a string)' }).min(1, { error: 'must not be empty' });

/** An OAuth app's refresh token, id and secret: all three are needed to refresh. */
export const oauthApp = { refreshToken: secret.optional(), clientId: secret.optional(), clientSecret: secret.optional() };

/** A positive integer from 1 to `max`: zero, a fraction or a huge typo would stall or flood the CRM. */
export function boundedCount(max: number) {
  const error = `must be an integer from 1 to ${max}`;
  return z.number({ error }).int({ error }).min(1, { error }).max(max, { error });
}

/** A vendor's numeric id, written as a number or a string of digits; kept as the string. */
export function numericId(error: string) {
  return z.preprocess((v) => (typeof v === 'number' && Number.isSafeInteger(v) ? String(v) : v), z.string({ error }).regex(/^[1-9][0-9]{0,18}$/, { error }));
}
