import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
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

/**
 * Whether a `Service-Signature` header signs `body` with one of `secrets`, at most `toleranceSeconds`
 * from `nowSeconds` (Stripe's default: 5 minutes), compared in constant time: what a receiver checks
 * (the sandbox's webhook receiver does).
 */
export function verifySignature(header: string, body: string, secrets: readonly string[], nowSeconds: number, toleranceSeconds = 300): boolean {
  const parts = header.split(',').map((part) => part.trim().split('='));
  const timestamp = Number(parts.find(([name]) => name === 't')?.[1]);
  if (!Number.isInteger(timestamp) || Math.abs(nowSeconds - timestamp) > toleranceSeconds) return false;
  const given = parts
    .filter(([name, value]) => name === 'v1' && value !== undefined && /^[0-9a-f]{64}$/.test(value))
    .map(([, value]) => Buffer.from(value!, 'hex'));
  const expected = secrets.map((secret) => createHmac('sha256', secret).update(`${timestamp}.${body}`, 'utf8').digest());
  return given.some((signature) => expected.some((digest) => timingSafeEqual(signature, digest)));
}
