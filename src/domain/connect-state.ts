import { createHash, createHmac, randomBytes } from 'node:crypto';
import { safeEqual } from './secrets.js';

/**
 * The `state` of a connect link (issue 30): which connection a customer's CRM consent is for, signed by
 * the service, valid 15 minutes. `c1.<connectionId>.<expiry, epoch seconds>.<nonce>.<mac>`, where the
 * MAC is HMAC-SHA256 over the same fields and the CRM kind (so a HubSpot state is refused at Salesforce's
 * callback); the nonce makes each link unique and is what a used state is remembered by (connect_states).
 * The PKCE verifier of a link is derived from its nonce under the same key, so nothing is stored before
 * the customer comes back. Pure: no I/O, no state.
 */

/** How long a connect link (its state) is accepted. */
export const CONNECT_STATE_TTL_MS = 15 * 60_000;

const VERSION = 'c1';

/** What a valid state says. */
export interface ConnectState {
  connectionId: number;
  nonce: string;
  expiresAt: Date;
}

/** Why a state is refused: not one of ours (or altered), or past its 15 minutes. */
export type StateRefusal = 'forged' | 'expired';

/** A new state for `connectionId`'s CRM of kind `kind` (lowercase or not: compared lowercase), expiring in 15 minutes. */
export function signConnectState(key: Buffer, connectionId: number, kind: string, now = Date.now()): { state: string; expiresAt: Date } {
  const expires = Math.floor((now + CONNECT_STATE_TTL_MS) / 1000);
  const nonce = randomBytes(16).toString('base64url');
  const fields = `${VERSION}.${connectionId}.${expires}.${nonce}`;
  return { state: `${fields}.${mac(key, fields, kind)}`, expiresAt: new Date(expires * 1000) };
}

/** The state's content, if it is ours, for this kind, and not expired (a forged state never learns whether it expired). */
export function verifyConnectState(
  key: Buffer,
  text: string,
  kind: string,
  now = Date.now(),
): { ok: true; state: ConnectState } | { ok: false; reason: StateRefusal } {
  const match = /^c1\.([1-9][0-9]{0,9})\.([0-9]{1,12})\.([A-Za-z0-9_-]{22})\.([A-Za-z0-9_-]{43})$/.exec(text);
  if (!match) return { ok: false, reason: 'forged' };
  const [, id, expires, nonce, signature] = match as unknown as [string, string, string, string, string];
  if (!safeEqual(signature, mac(key, `${VERSION}.${id}.${expires}.${nonce}`, kind))) return { ok: false, reason: 'forged' };
  const expiresAt = new Date(Number(expires) * 1000);
  if (expiresAt.getTime() <= now) return { ok: false, reason: 'expired' };
  return { ok: true, state: { connectionId: Number(id), nonce, expiresAt } };
}

/** The PKCE `code_verifier` of the link whose state carries `nonce`: 43 characters of RFC 7636's alphabet, known only to the service. */
export function pkceVerifier(key: Buffer, nonce: string): string {
  return createHmac('sha256', key).update(`pkce-verifier.${nonce}`).digest('base64url');
}

/** RFC 7636's S256 `code_challenge` of a verifier. */
export function pkceChallenge(verifier: string): string {
  return createHash('sha256').update(verifier, 'ascii').digest('base64url');
}

function mac(key: Buffer, fields: string, kind: string): string {
  return createHmac('sha256', key).update(`${fields}.${kind.toLowerCase()}`).digest('base64url');
}
