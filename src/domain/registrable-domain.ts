/**
 * The one domain normaliser: whatever names a site or a mailbox (a URL, an email address, a bare host),
 * reduced to the domain its owner registered, by the Public Suffix List (the `tldts` package).
 */
import { domainToASCII } from 'node:url';
import { parse } from 'tldts';

/**
 * The registrable domain (the public suffix plus one label, "eTLD+1") that a URL, an email address or a
 * bare host belongs to:
 *
 * - `https://www.sub.acme.co.uk/about` → `acme.co.uk`, `jane@mail.acme.com` → `acme.com`,
 *   `Acme.com.:8080` → `acme.com`, `bücher.de` → `xn--bcher-kva.de`.
 * - The result is lowercased ASCII (international names in punycode); scheme, user info, subdomains
 *   (`www.` included), port, path, query, fragment and a trailing dot are dropped.
 * - Private suffixes of the list count as suffixes: `acme.github.io` and `shop.myshopify.com` stay apart
 *   (each is its own owner's site), and `github.io` alone is a bare suffix.
 * - A top-level label the list does not know counts as a suffix (`acme.test` → `acme.test`), so
 *   reserved test and internal names work like real ones; it must still look like a TLD (letters, or
 *   punycode), which rules out `acme.123`.
 *
 * Two inputs that name the same owner give the same string, so the result can be compared and stored as
 * a key (company records, block lists).
 *
 * @param value A URL (`https://…`, `//…`, `mailto:…`), an email address, or a host with or without a port.
 * @returns The registrable domain, or null for an IP address, `localhost` or another single label, a bare
 *   public suffix (`co.uk`, `github.io`), and anything that is not a valid host name.
 */
export function registrableDomain(value: string | null | undefined): string | null {
  if (value === null || value === undefined) return null;
  const found = parse(value.trim(), EXTRACT);
  if (found.isIp || !found.hostname) return null;
  // WHATWG host parsing: punycode for international names, '' for what no URL could hold.
  const ascii = domainToASCII(found.hostname);
  if (ascii === '') return null;
  const host = parse(ascii, HOSTNAME);
  if (host.isIp || !host.domain) return null;
  return TLD.test(host.domain.slice(host.domain.lastIndexOf('.') + 1)) ? host.domain : null;
}

// The first pass only finds the host name; the second reads the suffix of its ASCII form.
const EXTRACT = { extractHostname: true, detectIp: true, validateHostname: true } as const;
const HOSTNAME = { extractHostname: false, detectIp: true, validateHostname: true, allowPrivateDomains: true } as const;

// tldts takes any unlisted last label for a TLD (`1.2.3` would be the domain `2.3`): require a real TLD's shape.
const TLD = /^(?:[a-z]{2,63}|xn--[a-z0-9-]{1,59})$/;
