import { describe, expect, it } from 'vitest';
import { PREFIX, apiKeyPrefix, hashApiKey, openSecret, randomToken, safeEqual, sealSecret } from '../../src/domain/secrets.js';

const KEY = Buffer.from('000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f', 'hex');
const OTHER_KEY = Buffer.alloc(32, 0xaa);
const PLAINTEXT = '{"accessToken":"hubspot-access-9f8e7d","refreshToken":"hubspot-refresh-6c5b4a"}';

type Parts = { version: string; iv: Buffer; tag: Buffer; ciphertext: Buffer };

function split(sealed: string): Parts {
  const [version, iv, tag, ciphertext] = sealed.split('.');
  if (version === undefined || iv === undefined || tag === undefined || ciphertext === undefined) {
    throw new Error(`not four parts: ${sealed}`);
  }
  return {
    version,
    iv: Buffer.from(iv, 'base64url'),
    tag: Buffer.from(tag, 'base64url'),
    ciphertext: Buffer.from(ciphertext, 'base64url'),
  };
}

function join(parts: Parts): string {
  return [parts.version, parts.iv.toString('base64url'), parts.tag.toString('base64url'), parts.ciphertext.toString('base64url')].join('.');
}

function errorFrom(action: () => unknown): Error {
  try {
    action();
  } catch (error) {
    if (error instanceof Error) return error;
    throw error;
  }
  throw new Error('expected the action to throw');
}

function flipFirstBit(buffer: Buffer): Buffer {
  const copy = Buffer.from(buffer);
  copy[0] = (copy[0] ?? 0) ^ 0x01;
  return copy;
}

describe('sealSecret / openSecret', () => {
  it.each([
    ['a JSON credentials blob', PLAINTEXT],
    ['the empty string', ''],
    ['a webhook signing secret', 'svcwhsec_0123456789abcdefABCDEF'],
    ['non-ASCII text', 'pässwörd 🔑 пароль'],
    ['a long value', 'x'.repeat(100_000)],
    ['text containing the separator', 'a.b.c.d.e'],
  ])('round-trips %s', (_case, plaintext) => {
    expect(openSecret(KEY, sealSecret(KEY, plaintext))).toBe(plaintext);
  });

  it('writes v1.<iv>.<tag>.<ciphertext> in base64url with a 12-byte IV and a 16-byte tag', () => {
    const sealed = sealSecret(KEY, PLAINTEXT);
    const parts = split(sealed);

    expect(sealed).toMatch(/^v1\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/);
    expect(parts.version).toBe('v1');
    expect(parts.iv).toHaveLength(12);
    expect(parts.tag).toHaveLength(16);
    expect(parts.ciphertext).toHaveLength(Buffer.byteLength(PLAINTEXT, 'utf8'));
  });

  it('does not carry the plaintext in the sealed value', () => {
    const sealed = sealSecret(KEY, PLAINTEXT);

    expect(sealed).not.toContain('hubspot-refresh-6c5b4a');
    expect(sealed).not.toContain(Buffer.from(PLAINTEXT).toString('base64url').slice(0, 16));
  });

  it('uses a fresh IV for every seal, so the same plaintext seals differently each time', () => {
    const sealed = Array.from({ length: 20 }, () => sealSecret(KEY, PLAINTEXT));

    expect(new Set(sealed).size).toBe(sealed.length);
    expect(new Set(sealed.map((s) => split(s).iv.toString('hex'))).size).toBe(sealed.length);
    for (const s of sealed) expect(openSecret(KEY, s)).toBe(PLAINTEXT);
  });

  it.each<[string, (parts: Parts) => Parts]>([
    ['a flipped ciphertext bit', (p) => ({ ...p, ciphertext: flipFirstBit(p.ciphertext) })],
    ['a flipped tag bit', (p) => ({ ...p, tag: flipFirstBit(p.tag) })],
    ['a flipped IV bit', (p) => ({ ...p, iv: flipFirstBit(p.iv) })],
    ['a truncated ciphertext', (p) => ({ ...p, ciphertext: p.ciphertext.subarray(0, -1) })],
    ['an extended ciphertext', (p) => ({ ...p, ciphertext: Buffer.concat([p.ciphertext, Buffer.from([0])]) })],
    ['an empty ciphertext', (p) => ({ ...p, ciphertext: Buffer.alloc(0) })],
    ['the tag of another seal', (p) => ({ ...p, tag: split(sealSecret(KEY, PLAINTEXT)).tag })],
  ])('refuses a sealed value with %s, without echoing the plaintext', (_case, tamper) => {
    const tampered = join(tamper(split(sealSecret(KEY, PLAINTEXT))));

    const error = errorFrom(() => openSecret(KEY, tampered));

    expect(error.message).toBe('A sealed secret could not be opened: wrong ENCRYPTION_KEY or altered data');
    expect(`${error.message}${error.stack ?? ''}`).not.toContain('hubspot');
  });

  it('refuses to open with the wrong key, without echoing the plaintext', () => {
    const error = errorFrom(() => openSecret(OTHER_KEY, sealSecret(KEY, PLAINTEXT)));

    expect(error.message).toBe('A sealed secret could not be opened: wrong ENCRYPTION_KEY or altered data');
    expect(`${error.message}${error.stack ?? ''}`).not.toContain('hubspot');
  });

  it.each([
    ['an unknown version', (s: string) => s.replace(/^v1\./, 'v2.')],
    ['a missing ciphertext part', (s: string) => s.split('.').slice(0, 3).join('.')],
    ['a bare string', () => 'plaintext-not-sealed'],
    ['the empty string', () => ''],
  ])('refuses %s as not a sealed secret', (_case, mangle) => {
    expect(() => openSecret(KEY, mangle(sealSecret(KEY, PLAINTEXT)))).toThrowError('Not a sealed secret');
  });

  // GCM accepts a truncated tag unless its length is pinned; a 4-byte tag would be forgeable in ~2^32 tries.
  it.each([12, 8, 4])('refuses a sealed value whose tag was truncated to %i bytes', (length) => {
    const parts = split(sealSecret(KEY, PLAINTEXT));
    const truncated = join({ ...parts, tag: parts.tag.subarray(0, length) });

    expect(() => openSecret(KEY, truncated)).toThrow();
  });
});

describe('randomToken', () => {
  it.each([
    ['svcapi_', undefined, 32],
    ['svcwhsec_', undefined, 32],
    ['svcwh_', 24, 24],
    ['', 100, 100],
    ['x_', 1, 1],
    ['x_', 0, 0],
  ])('starts with %j and adds %s (default 32) random characters', (prefix, length, expectedLength) => {
    const token = randomToken(prefix, length);

    expect(token.startsWith(prefix)).toBe(true);
    expect(token).toHaveLength(prefix.length + expectedLength);
    expect(token.slice(prefix.length)).toMatch(/^[0-9A-Za-z]*$/);
  });

  it('gives API keys the shape the fixture format accepts', () => {
    expect(randomToken(PREFIX.apiKey)).toMatch(/^svcapi_[A-Za-z0-9]{32}$/);
    expect(randomToken(PREFIX.webhookSecret)).toMatch(/^svcwhsec_[A-Za-z0-9]{32}$/);
  });

  it('never repeats a token', () => {
    const tokens = Array.from({ length: 1000 }, () => randomToken(PREFIX.event));

    expect(new Set(tokens).size).toBe(tokens.length);
  });

  it('uses all 62 letters and digits and nothing else', () => {
    // 200 × 32 = 6,400 draws: each character is expected ~100 times, so a missing one means a biased alphabet.
    const characters = new Set(Array.from({ length: 200 }, () => randomToken('')).join(''));

    expect([...characters].sort().join('')).toBe('0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz');
  });
});

describe('hashApiKey', () => {
  it.each([
    ['abc', 'ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad'],
    ['', 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855'],
    ['é', '4a99557e4033c3539de2eb65472017cad5f9557f7a0625a09f1c3f6e2ba69c4c'],
    ['svcapi_0123456789abcdefABCDEF', '2ff92b54fe94095a8660b37be4416c7e27b79442731f3600d96aae2ade914717'],
  ])('hashes %j to its SHA-256 in lowercase hex', (key, expected) => {
    expect(hashApiKey(key)).toBe(expected);
  });

  it('is deterministic and distinguishes keys that differ in one character', () => {
    const key = randomToken(PREFIX.apiKey);
    const sibling = `${key.slice(0, -1)}${key.endsWith('a') ? 'b' : 'a'}`;

    expect(hashApiKey(key)).toBe(hashApiKey(key));
    expect(hashApiKey(key)).toMatch(/^[0-9a-f]{64}$/);
    expect(hashApiKey(sibling)).not.toBe(hashApiKey(key));
  });
});

describe('apiKeyPrefix', () => {
  it.each([
    ['svcapi_AbCdEfGhIjKlMnOpQrStUvWxYz012345', 'svcapi_AbCd'],
    ['svcapi_0123456789abcdef', 'svcapi_0123'],
    ['svcapi_ab', 'svcapi_ab'],
  ])('shows %s as %s', (key, expected) => {
    expect(apiKeyPrefix(key)).toBe(expected);
  });

  it('keeps the prefix and four random characters of a generated key', () => {
    const key = randomToken(PREFIX.apiKey);

    expect(apiKeyPrefix(key)).toBe(key.slice(0, 11));
    expect(apiKeyPrefix(key)).toMatch(/^svcapi_[0-9A-Za-z]{4}$/);
  });
});

describe('safeEqual', () => {
  it.each([
    ['identical strings', 'staff-token-0123456789', 'staff-token-0123456789', true],
    ['two empty strings', '', '', true],
    ['identical non-ASCII strings', 'jeton-été-🔑', 'jeton-été-🔑', true],
    ['strings differing in the last character', 'staff-token-0123456789', 'staff-token-0123456788', false],
    ['strings differing only in case', 'Staff-Token', 'staff-token', false],
    ['a prefix of the other', 'staff-token', 'staff-token-0123456789', false],
    ['a string and the empty string', 'staff-token', '', false],
    ['strings of very different lengths', 'a', 'a'.repeat(10_000), false],
  ])('compares %s as %s', (_case, a, b, expected) => {
    expect(safeEqual(a, b)).toBe(expected);
    expect(safeEqual(b, a)).toBe(expected);
  });
});
