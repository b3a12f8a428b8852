import { createHmac } from 'node:crypto';
import Stripe from 'stripe';
import { describe, expect, it } from 'vitest';
import { newWebhookSecret, signatureHeader } from '../../src/domain/webhook-signature.js';

const secret = 'svcwhsec_' + 'a1'.repeat(32);
const previous = 'svcwhsec_' + 'b2'.repeat(32);
const body = JSON.stringify({ id: 'svcevt_1', type: 'test.ping', created: '2026-01-01T00:00:00.000Z', summary: 'Test é', data: { n: 1 } });

// Computed here independently of the module: HMAC-SHA256 over `<t>.<body>`, keyed with the whole secret string.
const hmac = (key: string, t: number, payload: string) => createHmac('sha256', key).update(`${t}.${payload}`, 'utf8').digest('hex');

const now = () => Math.floor(Date.now() / 1000);
// Stripe's own verifier: an implementation of the scheme we did not write.
const stripe = new Stripe('sk_test_dummy');

describe('signatureHeader', () => {
  it('is t=<unix seconds>,v1=<hex>', () => {
    expect(signatureHeader(body, [secret], 1_700_000_000)).toMatch(/^t=1700000000,v1=[0-9a-f]{64}$/);
  });

  it('signs `<t>.<body>` with HMAC-SHA256 keyed by the whole secret, prefix included', () => {
    const t = 1_700_000_000;
    expect(signatureHeader(body, [secret], t)).toBe(`t=${t},v1=${hmac(secret, t, body)}`);
    // Keyed with the prefix: the part after `svcwhsec_` alone gives another signature.
    expect(signatureHeader(body, [secret], t)).not.toContain(hmac(secret.slice('svcwhsec_'.length), t, body));
  });

  it('signs once per secret, the current secret first', () => {
    const t = 1_700_000_123;
    expect(signatureHeader(body, [secret, previous], t)).toBe(`t=${t},v1=${hmac(secret, t, body)},v1=${hmac(previous, t, body)}`);
  });

  it('changes when the body or the time changes', () => {
    const t = 1_700_000_000;
    expect(signatureHeader(body, [secret], t)).not.toBe(signatureHeader(body + ' ', [secret], t));
    expect(signatureHeader(body, [secret], t).split(',v1=')[1]).not.toBe(signatureHeader(body, [secret], t + 1).split(',v1=')[1]);
  });
});

describe('newWebhookSecret', () => {
  it('is svcwhsec_ and 32 random bytes in hex, new on every call', () => {
    const a = newWebhookSecret();
    const b = newWebhookSecret();
    expect(a).toMatch(/^svcwhsec_[0-9a-f]{64}$/);
    expect(b).toMatch(/^svcwhsec_[0-9a-f]{64}$/);
    expect(a).not.toBe(b);
  });
});

describe("Stripe's verifier", () => {
  it('accepts a fresh header and gives back the event', () => {
    const header = signatureHeader(body, [secret], now());
    expect(stripe.webhooks.constructEvent(body, header, secret, 300)).toEqual(JSON.parse(body));
  });

  it('accepts a header signed by both secrets during a rotation, with either secret', () => {
    const header = signatureHeader(body, [secret, previous], now());
    expect(stripe.webhooks.constructEvent(body, header, secret, 300)).toEqual(JSON.parse(body));
    expect(stripe.webhooks.constructEvent(body, header, previous, 300)).toEqual(JSON.parse(body));
  });

  it('refuses a header signed with another secret', () => {
    const header = signatureHeader(body, [secret], now());
    expect(() => stripe.webhooks.constructEvent(body, header, previous, 300)).toThrow(/signature/i);
  });

  it('refuses a body changed after signing', () => {
    const header = signatureHeader(body, [secret], now());
    expect(() => stripe.webhooks.constructEvent(body.replace('"n":1', '"n":2'), header, secret, 300)).toThrow(/signature/i);
  });

  it('refuses a header older than its tolerance', () => {
    const header = signatureHeader(body, [secret], now() - 600);
    expect(() => stripe.webhooks.constructEvent(body, header, secret, 300)).toThrow(/tolerance/i);
  });
});
