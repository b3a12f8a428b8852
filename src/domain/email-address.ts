/** A pragmatic address check: one @, a local part without spaces, a dotted domain of DNS labels (lowercase input). */
export const EMAIL_ADDRESS = /^[^\s@]{1,64}@(?=.{1,253}$)([a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z]{2,63}$/;

/** A lowercased, trimmed email address (also from `Name <address>` and `mailto:` forms), or null. */
export function normalizeEmail(value: string | undefined): string | null {
  if (value === undefined) return null;
  let email = value.trim();
  const angled = /<([^<>\s]+)>$/.exec(email);
  if (angled?.[1]) email = angled[1];
  email = email.replace(/^mailto:/i, '').toLowerCase();
  return EMAIL_ADDRESS.test(email) ? email : null;
}
