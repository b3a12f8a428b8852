/** Where an ingress POST is addressed: a source's ingress code, or a legacy source's two ids. */
export type IngressTarget = { code: string } | { legacy: [string, string] };

// Ingress codes and legacy ids are URL-safe tokens; anything else names no source.
const SEGMENT = /^[A-Za-z0-9_-]{1,128}$/;

/** `/webhooks/<code>` or `/webhooks/<id1>/<id2>` (a trailing slash and a query string are ignored). */
export function ingressTarget(url: string): IngressTarget | null {
  const pathname = url.split('?', 1)[0] ?? '';
  if (!pathname.startsWith('/webhooks/')) return null;
  const parts = pathname.slice('/webhooks/'.length).replace(/\/$/, '').split('/');
  if (!parts.every((p) => SEGMENT.test(p))) return null;
  if (parts.length === 1) return { code: parts[0]! };
  if (parts.length === 2) return { legacy: [parts[0]!, parts[1]!] };
  return null;
}
