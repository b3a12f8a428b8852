import { describe, expect, it } from 'vitest';
import { registrableDomain } from '../../src/domain/registrable-domain.js';

describe('registrableDomain', () => {
  it.each([
    // URLs: scheme, www and other subdomains, port, path, query, fragment, user info
    ['https://www.sub.acme.co.uk/about', 'acme.co.uk'],
    ['https://www.Acme.com/about?x=1#team', 'acme.com'],
    ['http://acme.com:8080/', 'acme.com'],
    ['HTTPS://APP.ACME.COM', 'acme.com'],
    ['//acme.com/x', 'acme.com'],
    ['ftp://files.acme.com', 'acme.com'],
    ['https://user:secret@acme.com/x', 'acme.com'],
    // The host is what follows the user info, not what a path mentions.
    ['https://evil.test@acme.com', 'acme.com'],
    ['acme.com/path@evil.test', 'acme.com'],
    // Email addresses
    ['jane@mail.acme.com', 'acme.com'],
    ['Jane.Doe@ACME.com', 'acme.com'],
    ['mailto:jane@acme.co.jp', 'acme.co.jp'],
    // Bare hosts
    ['acme.com', 'acme.com'],
    ['  www.acme.com.  ', 'acme.com'],
    ['acme.test:8080', 'acme.test'],
    ['www.com', 'www.com'],
    // Multi-label public suffixes, private suffixes (a hosting platform's customers stay apart)
    ['shop.acme.com.au', 'acme.com.au'],
    ['https://acme.github.io/docs', 'acme.github.io'],
    ['acme.myshopify.com', 'acme.myshopify.com'],
    // Unlisted top-level labels count as suffixes (reserved test names work like real ones)
    ['crm.acme.test', 'acme.test'],
    // International names, in their ASCII (punycode) form
    ['https://www.bücher.de/', 'xn--bcher-kva.de'],
    ['xn--bcher-kva.de', 'xn--bcher-kva.de'],
  ])('%s → %s', (input, expected) => {
    expect(registrableDomain(input)).toBe(expected);
  });

  it.each([
    // IP addresses, in any spelling
    '127.0.0.1',
    'http://192.168.1.1:80/admin',
    'http://[::1]/',
    '1.2.3',
    // Single labels and bare public suffixes
    'localhost',
    'http://localhost:3000',
    'acme',
    'com',
    'co.uk',
    'github.io',
    // Not a host name
    '',
    '   ',
    'not a domain',
    'acme..com',
    '-acme.com',
    'acme.123',
    'Jane <jane@acme.com>',
  ])('%s → null', (input) => {
    expect(registrableDomain(input)).toBeNull();
  });

  it('takes absent values', () => {
    expect(registrableDomain(null)).toBeNull();
    expect(registrableDomain(undefined)).toBeNull();
  });

  it('gives one key for every spelling of one owner', () => {
    const spellings = ['acme.com', 'https://www.acme.com/', 'HTTP://ACME.COM:443', 'jane@eu.mail.acme.com', 'acme.com.'];
    expect(new Set(spellings.map(registrableDomain))).toEqual(new Set(['acme.com']));
  });
});
