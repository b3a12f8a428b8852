/**
 * Which company a contact belongs to, as a domain: the rule the CRM connectors use to find or create the
 * contact's company record.
 */
import freeEmailDomains from 'free-email-domains';
import { registrableDomain } from './registrable-domain.js';

/**
 * The contact's company domain: its explicit company domain (a website or domain field), else the
 * domain of its email address unless that is a free or disposable mail provider's, whose domain says
 * nothing about where the person works. Both are registrable domains ({@link registrableDomain}), so
 * `https://www.acme.com/about` and `jane@mail.acme.com` both give `acme.com`.
 *
 * @returns The domain, or null when the contact names no company domain and its email is a free mail
 *   address (or absent).
 */
export function companyDomainOf(contact: { companyDomain: string | null; email: string | null }): string | null {
  const explicit = registrableDomain(contact.companyDomain);
  if (explicit !== null) return explicit;
  const email = contact.email ?? '';
  const at = email.lastIndexOf('@');
  if (at < 0) return null;
  const host = email
    .slice(at + 1)
    .trim()
    .toLowerCase()
    .replace(/\.$/, '');
  const domain = registrableDomain(host);
  // The list names some providers by a subdomain of theirs (`biz.ezweb.ne.jp`), some by the domain.
  return domain !== null && !FREE_MAIL.has(host) && !FREE_MAIL.has(domain) ? domain : null;
}

/** Free and disposable mail providers (the maintained `free-email-domains` list, ~14,000 domains). */
const FREE_MAIL: ReadonlySet<string> = new Set(freeEmailDomains);
