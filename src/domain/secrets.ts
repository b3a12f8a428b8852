import { createCipheriv, createDecipheriv, createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';

/**
 * Secrets at rest and API key material. Pure functions over node:crypto: no I/O, no state.
 */

/** Prefixes the spec gives each kind of secret or public id. */
export const PREFIX = {
  apiKey: 'svcapi_',
  webhookSecret: 'svcwhsec_',
  webhookEndpoint: 'svcwh_',
  event: 'svcevt_',
  webhookDelivery: 'svcwhd_',
} as const;

/** A random token: prefix + 32 base62 characters (about 190 bits). */
export function randomToken(prefix: string, length = 32): string {
  const alphabet = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
  let out = '';
  // Rejection sampling keeps every character uniformly likely.
  while (out.length < length) {
    for (const byte of randomBytes(length * 2)) {
      if (byte < 248 && out.length < length) out += alphabet[byte % 62];
    }
  }
  return prefix + out;
}

/** The stored form of an API key: SHA-256, hex. The key itself is never stored. */
export function hashApiKey(key: string): string {
  return createHash('sha256').update(key, 'utf8').digest('hex');
}

/** What staff see of a key: its prefix and first four random characters. */
export function apiKeyPrefix(key: string): string {
  return key.slice(0, PREFIX.apiKey.length + 4);
}

/** Constant-time comparison of two strings, whatever their lengths (both are hashed to 32 bytes first). */
export function safeEqual(a: string, b: string): boolean {
  const left = createHash('sha256').update(a).digest();
  const right = createHash('sha256').update(b).digest();
  return timingSafeEqual(left, right);
}

/**
 * Seals a secret with AES-256-GCM under the 32-byte `key`: `v1.<iv>.<tag>.<ciphertext>`, base64url.
 * A fresh IV per call; the tag makes any tampering fail at {@link openSecret}.
 */
export function sealSecret(key: Buffer, plaintext: string): string {
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', key, iv);
  const ciphertext = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
  return ['v1', iv, cipher.getAuthTag(), ciphertext].map((part) => (typeof part === 'string' ? part : part.toString('base64url'))).join('.');
}

/** Opens what {@link sealSecret} sealed. @throws when the key is wrong or the value was altered. */
export function openSecret(key: Buffer, sealed: string): string {
  const [version, iv, tag, ciphertext] = sealed.split('.');
  if (version !== 'v1' || iv === undefined || tag === undefined || ciphertext === undefined) {
    throw new Error('Not a sealed secret');
  }
  // A fixed tag length: GCM would otherwise accept a truncated tag, and a 4-byte tag is forgeable.
  const decipher = createDecipheriv('aes-256-gcm', key, Buffer.from(iv, 'base64url'), { authTagLength: 16 });
  decipher.setAuthTag(Buffer.from(tag, 'base64url'));
  try {
    return Buffer.concat([decipher.update(Buffer.from(ciphertext, 'base64url')), decipher.final()]).toString('utf8');
  } catch {
    // Never include the value: the message may reach a log.
    throw new Error('A sealed secret could not be opened: wrong ENCRYPTION_KEY or altered data');
  }
}

/** A key for one purpose (`cursor`, ...) derived from the master key, so no purpose reuses another's key. */
export function deriveKey(master: Buffer, purpose: string): Buffer {
  return createHmac('sha256', master).update(`pipeline-sync/${purpose}/v1`).digest();
}
