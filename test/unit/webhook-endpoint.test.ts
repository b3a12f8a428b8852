import { describe, expect, it } from 'vitest';
import { refusedAddress } from '../../src/connectors/http/client.js';
import { PLATFORM_EVENT_TYPES, testPing, webhookBody } from '../../src/domain/platform-events.js';
import { checkEnabledEvents, checkEndpointUrl, MAX_ENDPOINT_URL_LENGTH } from '../../src/domain/webhook-endpoint.js';

const refused = (message: string) => ({ ok: false, message });

describe('checkEndpointUrl', () => {
  it('accepts an https URL', () => {
    const checked = checkEndpointUrl('https://hooks.example.com/in?x=1');
    expect(checked.ok).toBe(true);
    expect(checked.ok && checked.value.href).toBe('https://hooks.example.com/in?x=1');
  });

  it('refuses http, unless http is allowed (the sandbox only), and never other schemes', () => {
    expect(checkEndpointUrl('http://hooks.example.com/')).toEqual(refused('url must use https://'));
    expect(checkEndpointUrl('http://hooks.example.com/', true).ok).toBe(true);
    expect(checkEndpointUrl('ftp://hooks.example.com/', true)).toEqual(refused('url must use https://'));
  });

  it(`refuses a URL longer than ${MAX_ENDPOINT_URL_LENGTH} characters`, () => {
    const prefix = 'https://x.test/';
    expect(checkEndpointUrl(prefix + 'a'.repeat(2049 - prefix.length))).toEqual(refused('url must be at most 2048 characters'));
    expect(checkEndpointUrl(prefix + 'a'.repeat(2048 - prefix.length)).ok).toBe(true);
  });

  it('refuses credentials in the URL (they would be stored and shown as plain text)', () => {
    expect(checkEndpointUrl('https://user:pass@x.test/')).toEqual(refused('url must not contain credentials'));
    expect(checkEndpointUrl('https://user@x.test/')).toEqual(refused('url must not contain credentials'));
  });

  it('refuses what is not an absolute URL', () => {
    expect(checkEndpointUrl('not a url')).toEqual(refused('url must be an absolute https:// URL'));
    expect(checkEndpointUrl('/relative/path')).toEqual(refused('url must be an absolute https:// URL'));
  });
});

describe('checkEnabledEvents', () => {
  it('keeps each known type once, in the order given', () => {
    expect(checkEnabledEvents(['test.ping', 'sync.failed', 'test.ping'])).toEqual({ ok: true, value: ['test.ping', 'sync.failed'] });
  });

  it('accepts an empty list (every type)', () => {
    expect(checkEnabledEvents([])).toEqual({ ok: true, value: [] });
  });

  it('lists the unknown types with the known ones', () => {
    expect(checkEnabledEvents(['sync.failed', 'sync.exploded'])).toEqual(
      refused('enabledEvents has unknown event types (sync.exploded); known types: sync.failed, sync.recovered, test.ping'),
    );
  });

  it('strips control characters from the unknown types it echoes', () => {
    const checked = checkEnabledEvents(['bad\u0000\n\u001b[31mtype\u007f']);
    expect(checked).toEqual(refused('enabledEvents has unknown event types (bad[31mtype); known types: sync.failed, sync.recovered, test.ping'));
  });

  it('cuts a long unknown type short in the message', () => {
    const checked = checkEnabledEvents(['x'.repeat(500)]);
    expect(checked.ok).toBe(false);
    expect(!checked.ok && checked.message).toContain(`(${'x'.repeat(64)}...)`);
    expect(!checked.ok && checked.message).not.toContain('x'.repeat(65));
  });
});

describe('webhookBody', () => {
  it('is the event as JSON, keys in the order id, type, created, summary, data', () => {
    const event = { id: 'svcevt_abc', type: 'sync.failed', created: new Date('2026-03-04T05:06:07.089Z'), summary: 'Sync failed', data: { b: 1, a: [true] } };
    expect(webhookBody(event)).toBe(
      '{"id":"svcevt_abc","type":"sync.failed","created":"2026-03-04T05:06:07.089Z","summary":"Sync failed","data":{"b":1,"a":[true]}}',
    );
  });

  it('is the same bytes every time (the signature covers them)', () => {
    const event = { id: 'svcevt_abc', type: 'test.ping', created: new Date(0), summary: 's', data: null };
    expect(webhookBody(event)).toBe(webhookBody({ ...event, created: new Date(0) }));
    expect(Object.keys(JSON.parse(webhookBody(event)) as object)).toEqual(['id', 'type', 'created', 'summary', 'data']);
  });
});

describe('testPing', () => {
  it('names the endpoint in the summary and the data, and the ping is a known event type', () => {
    const ping = testPing('svcwh_123');
    expect(ping.summary).toBe('Test event for webhook endpoint svcwh_123');
    expect(ping.data.endpointId).toBe('svcwh_123');
    expect(ping.data.message).toMatch(/reachable/);
    expect(PLATFORM_EVENT_TYPES).toContain('test.ping');
  });
});

describe('refusedAddress', () => {
  const closed = { allowPrivate: false };

  it.each(['https://127.0.0.1/', 'https://10.1.2.3/', 'https://169.254.169.254/', 'https://[::1]/', 'https://[::ffff:127.0.0.1]/', 'https://localhost/'])(
    'refuses %s as private',
    async (url) => {
      expect(await refusedAddress(new URL(url), closed)).toBe('private');
    },
  );

  it('refuses 0.0.0.0 even when private addresses are allowed (it routes to this host)', async () => {
    expect(await refusedAddress(new URL('https://0.0.0.0/'), { allowPrivate: true })).toBe('private');
    expect(await refusedAddress(new URL('https://[::]/'), { allowPrivate: true })).toBe('private');
  });

  it('accepts a public address (a literal: no DNS needed)', async () => {
    expect(await refusedAddress(new URL('https://93.184.216.34/'), closed)).toBeNull();
  });

  it('accepts a private address when private addresses are allowed', async () => {
    expect(await refusedAddress(new URL('https://127.0.0.1/'), { allowPrivate: true })).toBeNull();
  });

  it('says unresolvable for a name with no address', async () => {
    // .invalid never resolves (RFC 6761).
    expect(await refusedAddress(new URL('https://no-such-host.invalid/'), closed)).toBe('unresolvable');
  });
});
