import { describe, expect, it } from 'vitest';
import { companyDomainOf } from '../../src/domain/company-domain.js';

// Factory: a contact as the CRM connectors see it.
const contact = (over: { companyDomain?: string | null; email?: string | null } = {}) => ({ companyDomain: null, email: null, ...over });

describe('companyDomainOf', () => {
  it('prefers the explicit company domain, as a registrable domain', () => {
    expect(companyDomainOf(contact({ companyDomain: 'https://www.Acme.co.uk/about', email: 'jane@other.test' }))).toBe('acme.co.uk');
    expect(companyDomainOf(contact({ companyDomain: 'acme.test' }))).toBe('acme.test');
  });

  it("falls back to the email's domain when the explicit one is absent or no domain", () => {
    expect(companyDomainOf(contact({ email: 'jane@acme.test' }))).toBe('acme.test');
    expect(companyDomainOf(contact({ email: 'jane@mail.acme.com' }))).toBe('acme.com');
    expect(companyDomainOf(contact({ companyDomain: '   ', email: 'Jane@ACME.com' }))).toBe('acme.com');
    expect(companyDomainOf(contact({ companyDomain: 'localhost', email: 'jane@acme.com' }))).toBe('acme.com');
  });

  it.each([
    'jane@gmail.com',
    'jane@googlemail.com',
    'jane@yahoo.co.uk',
    'jane@outlook.com',
    'jane@hotmail.fr',
    'jane@icloud.com',
    'jane@proton.me',
    'jane@gmx.de',
    'jane@web.de',
    'jane@mail.ru',
    'jane@qq.com',
    'jane@163.com',
    // A provider's subdomain, a trailing dot, upper case
    'jane@eu.gmail.com',
    'jane@gmail.com.',
    'Jane@GMAIL.COM',
    // Listed by a subdomain of the provider
    'jane@biz.ezweb.ne.jp',
  ])('a free mail address names no company: %s → null', (email) => {
    expect(companyDomainOf(contact({ email }))).toBeNull();
  });

  it('is null without a usable domain anywhere', () => {
    expect(companyDomainOf(contact())).toBeNull();
    expect(companyDomainOf(contact({ email: 'not an email' }))).toBeNull();
    expect(companyDomainOf(contact({ email: 'jane@localhost' }))).toBeNull();
    expect(companyDomainOf(contact({ email: 'jane@127.0.0.1' }))).toBeNull();
  });

  it('keeps an explicit company domain even when it is a mail provider', () => {
    // The lead's company field is the sequencer's word; only an email's domain is a guess.
    expect(companyDomainOf(contact({ companyDomain: 'gmail.com', email: 'jane@gmail.com' }))).toBe('gmail.com');
  });
});
