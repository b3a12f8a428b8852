/** A source's paste URL: `/webhooks/<code>`, or `/webhooks/<id1>/<id2>` for legacy sources. */
export function sourceUrl(ingressUrl: string, source: { ingressCode: string; legacyId1: string | null; legacyId2: string | null }): string {
  const path =
    source.legacyId1 !== null && source.legacyId2 !== null
      ? `${encodeURIComponent(source.legacyId1)}/${encodeURIComponent(source.legacyId2)}`
      : encodeURIComponent(source.ingressCode);
  return `${ingressUrl}/webhooks/${path}`;
}

/** `/webhooks/<code>[/<code2>]...` with the codes replaced, for log lines (ingress codes are secrets). */
export function maskIngressCode(url: string): string {
  // Express routes match case-insensitively and tolerate repeated slashes, so the mask must too.
  return url.replace(/^\/+webhooks\/[^?#]*/i, '/webhooks/[redacted]');
}

/** The path of a pasted URL: absolute, host-relative or bare (`host/webhooks/...`), whitespace trimmed. */
export function pastedIngressPath(pasted: string): string {
  const text = pasted.trim();
  if (text.startsWith('/')) return text;
  try {
    return new URL(/^[a-z][a-z0-9+.-]*:\/\//i.test(text) ? text : `https://${text}`).pathname;
  } catch {
    return text;
  }
}
