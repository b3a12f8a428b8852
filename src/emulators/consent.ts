import { createHash } from 'node:crypto';
import type http from 'node:http';
import { escapeHtml } from '../domain/html.js';

/**
 * The consent step the CRM emulators share (issue 30): an authorize page with an Allow and a Deny button
 * (a form posted back to the same URL, so it works wherever the page is mounted, the sandbox's
 * `/sandbox/<system>/...` included), and the redirect to the app's `redirect_uri` that follows, with
 * `code` and `state`, or RFC 6749's `error=access_denied`. Codes and the tokens issued for them are
 * derived from what was asked (never random), so the sandbox's journal replays them identically after a
 * restart or in another API process.
 */

/** Browser-test handles of the consent page: `#consent-allow` and `#consent-deny` (also `data-testid`). */
const CONSENT_BUTTONS = { allow: 'consent-allow', deny: 'consent-deny' } as const;

/** A page answering an authorize request: consent, or why there is none (no redirect to an unverified redirect_uri). */
function consentPage(options: { vendor: string; account: string; clientId: string; redirectUri: string; scopes: readonly string[] }): string {
  const scopes = options.scopes.map((s) => `<li><code>${escapeHtml(s)}</code></li>`).join('');
  return page(
    `${options.vendor}: authorize an app`,
    `<p>An app (client id <code>${escapeHtml(options.clientId)}</code>) asks to access <strong>${escapeHtml(options.account)}</strong> with these scopes:</p>
<ul>${scopes}</ul>
<p>You will be sent back to <code>${escapeHtml(options.redirectUri)}</code>.</p>
<form method="post">
  <button type="submit" name="decision" value="allow" id="${CONSENT_BUTTONS.allow}" data-testid="${CONSENT_BUTTONS.allow}">Allow</button>
  <button type="submit" name="decision" value="deny" id="${CONSENT_BUTTONS.deny}" data-testid="${CONSENT_BUTTONS.deny}">Deny</button>
</form>`,
  );
}

/** One decision taken on a consent page, as an emulator records it. */
export interface Consent {
  decision: 'allow' | 'deny';
  state: string | null;
  redirectUri: string;
}

/** What an authorize URL answers: a page, or a redirect to the app. */
export interface AuthorizeAnswer {
  status: number;
  html: string;
  location?: string;
}

/**
 * The consent step of an authorize request whose client, redirect_uri and scopes the emulator accepted:
 * a GET shows the consent page; a posted `decision` is recorded in `consents`, and `deny` redirects with
 * `error=access_denied` (the vendor's `deniedDescription`) and the `state`. `allowed` leaves the code to
 * the emulator, which redirects with it through {@link redirectWith}.
 */
export function consentStep(
  request: { method: string; body: string; contentType: string | undefined },
  consent: { vendor: string; account: string; clientId: string; redirectUri: string; scopes: readonly string[]; state: string | null },
  vendorWords: { deniedDescription: string; invalidDecision: string },
  consents: Consent[],
): AuthorizeAnswer | 'allowed' {
  const { vendor, redirectUri, state } = consent;
  if (request.method === 'GET') return { status: 200, html: consentPage(consent) };
  const decision = /^application\/x-www-form-urlencoded/.test(request.contentType ?? '') ? new URLSearchParams(request.body).get('decision') : null;
  if (decision !== 'allow' && decision !== 'deny') return { status: 400, html: authorizeErrorPage(vendor, 'invalid_request', vendorWords.invalidDecision) };
  consents.push({ decision, state, redirectUri });
  if (decision === 'allow') return 'allowed';
  const withState: Record<string, string> = state === null ? {} : { state };
  return {
    status: 302,
    html: '',
    location: redirectWith(redirectUri, { error: 'access_denied', error_description: vendorWords.deniedDescription, ...withState }),
  };
}

/** The page of an authorize request that cannot go on (unknown client, bad redirect_uri or scope). */
export function authorizeErrorPage(vendor: string, error: string, description: string): string {
  return page(`${vendor}: authorization failed`, `<p><strong>${escapeHtml(error)}</strong>: ${escapeHtml(description)}</p>`);
}

/** `redirectUri` with `params` added to its query (what it had kept). */
export function redirectWith(redirectUri: string, params: Record<string, string>): string {
  const url = new URL(redirectUri);
  for (const [name, value] of Object.entries(params)) url.searchParams.set(name, value);
  return url.href;
}

/** A value derived from its parts: the same parts, the same value (codes and tokens, see above). */
export function derived(...parts: Array<string | number>): string {
  return createHash('sha256').update(parts.join('\n')).digest('hex').slice(0, 32);
}

/** Whether `value` is an absolute http(s) URL without a fragment, as a redirect_uri must be. */
export function isRedirectUri(value: string | null): value is string {
  if (value === null || !URL.canParse(value)) return false;
  const url = new URL(value);
  return (url.protocol === 'https:' || url.protocol === 'http:') && url.hash === '';
}

/** Answers an HTML page. */
export function sendHtml(res: http.ServerResponse, status: number, html: string, headers: Record<string, string> = {}): void {
  if (res.destroyed) return;
  res.writeHead(status, { 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-store', ...headers });
  res.end(html);
}

function page(title: string, body: string): string {
  return `<!doctype html>
<html lang="en">
<head><meta charset="utf-8"><title>${escapeHtml(title)}</title></head>
<body>
<h1>${escapeHtml(title)}</h1>
${body}
</body>
</html>
`;
}
