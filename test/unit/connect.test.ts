/**
 * Connect links' pure parts (issue 30): the signed state (bound to its connection and CRM, 15 minutes,
 * forgery never told apart from expiry), the PKCE verifier and challenge (RFC 7636), the pages each
 * outcome shows, and the request log's masking of a connect URL's code and state.
 */
import { describe, expect, it } from 'vitest';
import { connectPage, type ConnectOutcome } from '../../src/connect/pages.js';
import { maskConnectQuery } from '../../src/connect/routes.js';
import { CONNECT_STATE_TTL_MS, pkceChallenge, pkceVerifier, signConnectState, verifyConnectState } from '../../src/domain/connect-state.js';

const KEY = Buffer.alloc(32, 3);
const NOW = Date.parse('2026-11-28T09:00:00Z');

describe('the connect state', () => {
  const { state, expiresAt } = signConnectState(KEY, 42, 'HUBSPOT', NOW);

  it('says which connection, until when, and carries a fresh nonce', () => {
    expect(state).toMatch(/^c1\.42\.\d+\.[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43}$/);
    expect(expiresAt.getTime()).toBe(NOW + CONNECT_STATE_TTL_MS);
    const verified = verifyConnectState(KEY, state, 'hubspot', NOW + CONNECT_STATE_TTL_MS - 1_000);
    expect(verified).toEqual({ ok: true, state: { connectionId: 42, nonce: state.split('.')[3], expiresAt } });
    expect(signConnectState(KEY, 42, 'HUBSPOT', NOW).state.split('.')[3]).not.toBe(state.split('.')[3]);
  });

  it('expires after 15 minutes', () => {
    expect(verifyConnectState(KEY, state, 'HUBSPOT', NOW + CONNECT_STATE_TTL_MS)).toEqual({ ok: false, reason: 'expired' });
  });

  it.each([
    ['another key', (s: string) => s, Buffer.alloc(32, 4), 'HUBSPOT'],
    ['another CRM', (s: string) => s, KEY, 'SALESFORCE'],
    ['another connection', (s: string) => s.replace('c1.42.', 'c1.43.'), KEY, 'HUBSPOT'],
    ['a later expiry', (s: string) => s.replace(/^c1\.42\.(\d+)\./, (_m, e: string) => `c1.42.${Number(e) + 3600}.`), KEY, 'HUBSPOT'],
    ['another nonce', (s: string) => s.replace(/\.[A-Za-z0-9_-]{22}\./, `.${'A'.repeat(22)}.`), KEY, 'HUBSPOT'],
    ['a truncated MAC', (s: string) => s.slice(0, -1), KEY, 'HUBSPOT'],
    ['another version', (s: string) => s.replace(/^c1/, 'c2'), KEY, 'HUBSPOT'],
    ['garbage', () => 'not a state', KEY, 'HUBSPOT'],
  ])('is forged with %s, expired or not', (_case, alter, key, kind) => {
    for (const at of [NOW, NOW + CONNECT_STATE_TTL_MS * 2]) expect(verifyConnectState(key, alter(state), kind, at)).toEqual({ ok: false, reason: 'forged' });
  });
});

describe('PKCE', () => {
  it('computes the S256 challenge of RFC 7636 appendix B', () => {
    expect(pkceChallenge('dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk')).toBe('E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM');
  });

  it("derives each link's verifier from its nonce and the key: 43 characters of RFC 7636's alphabet", () => {
    const verifier = pkceVerifier(KEY, 'nonce-one');
    expect(verifier).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(pkceVerifier(KEY, 'nonce-one')).toBe(verifier);
    expect(pkceVerifier(KEY, 'nonce-two')).not.toBe(verifier);
    expect(pkceVerifier(Buffer.alloc(32, 9), 'nonce-one')).not.toBe(verifier);
  });
});

describe('the connect pages', () => {
  const at = new Date('2026-11-28T09:15:00Z');
  it.each<[ConnectOutcome, number]>([
    [{ kind: 'connected', crm: 'HubSpot', account: 'HubSpot account 1', hasSources: true }, 200],
    [{ kind: 'denied', crm: 'HubSpot', expiresAt: at }, 403],
    [{ kind: 'crm_error', crm: 'HubSpot', error: 'invalid_scope', expiresAt: at }, 400],
    [{ kind: 'missing_code', crm: 'HubSpot' }, 400],
    [{ kind: 'forged' }, 400],
    [{ kind: 'expired' }, 410],
    [{ kind: 'used', crm: 'HubSpot' }, 409],
    [{ kind: 'gone' }, 404],
    [{ kind: 'unknown_crm', crm: 'pipedrive' }, 404],
    [{ kind: 'unavailable', crm: 'Salesforce' }, 503],
    [{ kind: 'exchange_failed', crm: 'HubSpot', reason: 'HubSpot refused the code exchange (HTTP 400, invalid_grant)', expiresAt: at }, 502],
  ])('%o answers %i and says so', (outcome, status) => {
    const page = connectPage(outcome);
    expect(page.status).toBe(status);
    expect(page.html).toContain(`data-connect-outcome="${outcome.kind}"`);
    expect(page.html).toContain('<h1 id="connect-title">');
    expect(page.html).not.toContain('<script');
  });

  it('escapes what it shows', () => {
    const page = connectPage({ kind: 'connected', crm: 'HubSpot', account: 'HubSpot account 1 (<img src=x onerror=alert(1)>)', hasSources: false });
    expect(page.html).not.toContain('<img');
    expect(page.html).toContain('&lt;img src=x onerror=alert(1)&gt;');
  });

  it('tells until when a declined consent can be retried', () => {
    expect(connectPage({ kind: 'denied', crm: 'HubSpot', expiresAt: at }).html).toContain('before 2026-11-28 09:15 UTC');
  });
});

describe('maskConnectQuery', () => {
  it.each([
    ['/connect/hubspot/callback?code=na1-secret&state=c1.1.2.n.m', '/connect/hubspot/callback?code=[redacted]&state=[redacted]'],
    ['/connect/salesforce/callback?state=c1.x&error=access_denied', '/connect/salesforce/callback?state=[redacted]&error=access_denied'],
    ['/connect/hubspot/start?state=c1.1', '/connect/hubspot/start?state=[redacted]'],
    ['/api/v1/syncs?state=x', '/api/v1/syncs?state=x'],
  ])('%s -> %s', (url, masked) => {
    expect(maskConnectQuery(url)).toBe(masked);
  });
});
