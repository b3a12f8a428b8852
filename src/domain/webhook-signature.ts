import { createHmac, randomBytes } from 'node:crypto';
import { PREFIX } from './secrets.js';

/**
 * Platform webhook signing (the spec's Delivery section): `Service-Signature: t=<unix seconds>,v1=<hex>`
 * where v1 is HMAC-SHA256 over `<t>.<raw body>` keyed with the whole secret string, prefix included, as
 * Stripe's `whsec_` scheme is, so Stripe's verifier accepts our header. Pure but for the random secret.
 */

/** How long a rotated-out secret keeps signing beside the new one. */
export const PREVIOUS_SECRET_OVERLAP_MS = 24 * 3600_000;

/** A new signing secret: `svcwhsec_` and 32 random bytes in hex. */
export function newWebhookSecret(): string {
  return PREFIX.webhookSecret + randomBytes(32).toString('hex');
}

/**
 * The `Service-Signature` header for `body` sent at `timestampSeconds`: one `v1=` per secret, the current
 * one first (during a rotation, the previous secret signs too, so verifiers not yet updated still pass).
 */
export function signatureHeader(body: string, secrets: readonly string[], timestampSeconds: number): string {
  const signed = `${timestampSeconds}.${body}`;
  return [`t=${timestampSeconds}`, ...secrets.map((secret) => `v1=${createHmac('sha256', secret).update(signed, 'utf8').digest('hex')}`)].join(',');
}
