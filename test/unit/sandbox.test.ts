/**
 * The sandbox's pure parts: which URLs are its own, the demo pointed at it, signatures checked, the page
 * escaped, and its systems table (each configured default is a path its router serves).
 */
import { readFileSync } from 'node:fs';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import express from 'express';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEMO_FIXTURE } from '../../src/admin/demo.js';
import { parseFixture } from '../../src/admin/fixture.js';
import { loadConfig } from '../../src/config.js';
import { isSandboxUrl } from '../../src/domain/sandbox.js';
import { pastedIngressPath } from '../../src/domain/source-url.js';
import { signatureHeader, verifySignature } from '../../src/domain/webhook-signature.js';
import { sandboxFixture, SANDBOX_CREDENTIALS } from '../../src/sandbox/demo.js';
import { renderSandboxPage } from '../../src/sandbox/page.js';
import { installSandbox } from '../../src/sandbox/router.js';
import type { Sandbox } from '../../src/sandbox/sandbox.js';
import { SANDBOX_SYSTEMS } from '../../src/sandbox/system-table.js';
import type { SandboxView } from '../../src/sandbox/view.js';

describe('isSandboxUrl', () => {
  it.each([
    ['http://localhost:3000/sandbox/webhooks/acme-ops', true],
    ['http://localhost:3000/sandbox/forwarding/x?y=1', true],
    ['http://localhost:3000/sandbox', false],
    ['http://localhost:3000/api/v1/me', false],
    ['http://localhost:3001/sandbox/webhooks/x', false],
    ['https://localhost:3000/sandbox/webhooks/x', false],
    ['http://localhost:3000.evil.test/sandbox/webhooks/x', false],
    ['not a url', false],
  ])('%s: %s', (url, expected) => {
    expect(isSandboxUrl(url, 'http://localhost:3000')).toBe(expected);
  });

  it('is never true without a sandbox', () => {
    expect(isSandboxUrl('http://localhost:3000/sandbox/webhooks/x', undefined)).toBe(false);
  });
});

describe('sandboxFixture', () => {
  const demo: unknown = JSON.parse(readFileSync(DEMO_FIXTURE, 'utf8'));
  const sandboxed = parseFixture(sandboxFixture(demo, 'http://localhost:3000/sandbox'));

  it('points every outside system of the demo at the sandbox, and stays a valid fixture', () => {
    const connections = sandboxed.accounts.flatMap((a) => a.connections);
    expect(connections.flatMap((c) => c.destinations.map((d) => d.url)).every((url) => url.startsWith('http://localhost:3000/sandbox/forwarding/'))).toBe(true);
    expect(sandboxed.accounts.flatMap((a) => a.webhookEndpoints.map((w) => w.url))).toEqual(['http://localhost:3000/sandbox/webhooks/acme-ops']);
    expect(
      connections
        .filter((c) => c.crm === 'HUBSPOT')
        .every((c) => (c.credentials as { accessToken: string }).accessToken === SANDBOX_CREDENTIALS.hubspot[0].accessToken),
    ).toBe(true);
    expect(connections.find((c) => c.crm === 'SALESFORCE')?.credentials).toMatchObject({ instanceUrl: 'http://localhost:3000/sandbox/salesforce-instance' });
    expect(connections.flatMap((c) => c.blocklists.map((b) => b.sequencer))).toEqual(expect.arrayContaining([{ apiKey: SANDBOX_CREDENTIALS.smartlead }]));
    expect(connections.flatMap((c) => c.replyRelays.map((r) => r.delayMinutes)).every((d) => d === 0)).toBe(true);
  });

  it('leaves the input untouched', () => {
    expect(JSON.stringify(demo)).not.toContain('/sandbox/');
  });
});

describe('verifySignature', () => {
  const body = '{"id":"svcevt_1"}';
  const now = 1_800_000_000;
  const header = signatureHeader(body, ['svcwhsec_new', 'svcwhsec_old'], now);

  it('accepts a signature by any of the secrets, within five minutes', () => {
    expect(verifySignature(header, body, ['svcwhsec_old'], now + 299)).toBe(true);
    expect(verifySignature(header, body, ['svcwhsec_new'], now - 10)).toBe(true);
  });

  it('refuses another body, another secret, an old timestamp and malformed headers', () => {
    expect(verifySignature(header, `${body} `, ['svcwhsec_new'], now)).toBe(false);
    expect(verifySignature(header, body, ['svcwhsec_other'], now)).toBe(false);
    expect(verifySignature(header, body, ['svcwhsec_new'], now + 301)).toBe(false);
    for (const bad of ['', 't=abc,v1=00', `t=${now}`, `v1=${'0'.repeat(64)}`, `t=${now},v1=zz`])
      expect(verifySignature(bad, body, ['svcwhsec_new'], now)).toBe(false);
  });
});

describe('pastedIngressPath', () => {
  it.each([
    ['https://ingress.example.com/webhooks/abc', '/webhooks/abc'],
    ['ingress.example.com/webhooks/a/b?x=1', '/webhooks/a/b'],
    ['  /webhooks/abc/  ', '/webhooks/abc/'],
    ['http://[::1]:3000/webhooks/abc', '/webhooks/abc'],
  ])('%s -> %s', (pasted, path) => {
    expect(pastedIngressPath(pasted)).toBe(path);
  });
});

describe('renderSandboxPage', () => {
  const row = { at: '2026-11-27T09:00:00.000Z', title: '<script>alert(1)</script>', detail: '"><img src=x onerror=alert(1)>', requestId: '42' };
  const view: SandboxView = {
    sandbox: true,
    notice: 'SANDBOX: nothing here is real.',
    hubspot: { contacts: [row], activities: [] },
    salesforce: { contacts: [], activities: [] },
    close: { contacts: [], activities: [] },
    attio: { contacts: [], activities: [] },
    forwarding: [{ ...row, status: 500, forced: true }],
    webhooks: [{ ...row, requestId: null, eventId: 'svcevt_abc', status: 200, verified: true }],
    inbox: [
      {
        ...row,
        html: true,
        detail: '<p onclick="x()">Hi</p>',
        addresses: { to: '"Dana <b>Rep</b>" <dana.rep@acme.test>', from: 'Pipeline Sync <pipeline-sync@localhost>', replyTo: null },
      },
    ],
    blocklists: { smartlead: ['<b>bold.test</b>'], instantly: [] },
    faults: [{ system: 'hubspot', kind: '429', remaining: 2 }],
  };
  const html = renderSandboxPage(view);

  it('escapes every value and runs no script', () => {
    expect(html).not.toContain('<script>');
    expect(html).not.toContain('<img src=x');
    expect(html).not.toContain('<b>bold.test</b>');
    expect(html).toContain('&lt;script&gt;alert(1)&lt;/script&gt;');
    expect(html).toContain('<iframe sandbox');
  });

  it('says it is a sandbox, links rows to the explorer, and shows outcomes and forced failures', () => {
    expect(html).toContain('<div class="banner">SANDBOX: nothing here is real.</div>');
    expect(html).toContain(`href="/graphql?query=${encodeURIComponent('{ request(id: 42) {').slice(0, 20)}`);
    expect(html).toContain('event in the explorer');
    expect(html).toContain('500 (forced)');
    expect(html).toContain('signature verified');
    expect(html).toContain('hubspot: 429 for 2 more call(s)');
  });

  it("shows an email's To, From and Reply-To, escaped", () => {
    expect(html).toContain(
      '<dl class="addresses"><dt>To</dt><dd>&quot;Dana &lt;b&gt;Rep&lt;/b&gt;&quot; &lt;dana.rep@acme.test&gt;</dd>' +
        '<dt>From</dt><dd>Pipeline Sync &lt;pipeline-sync@localhost&gt;</dd><dt>Reply-To</dt><dd><span class="empty">none</span></dd></dl>',
    );
    expect(html).not.toContain('<b>Rep</b>');
  });
});

describe('the sandbox systems table', () => {
  // The router in front of a stand-in sandbox that answers with the name of the system a request reached.
  const standIn = {
    journal: { takeFault: () => Promise.resolve(null) },
    handle: (system: string) => Promise.resolve({ status: 200, headers: {}, body: Buffer.from(system) }),
  } as unknown as Sandbox;
  let server: Server;
  let base: string;
  const reached = async (url: string) => {
    const res = await fetch(`${url}/probe`, { method: 'POST', body: '{}' });
    return `${res.status} ${await res.text()}`;
  };
  /** A configuration's settings, those of a by-kind or by-platform map each on its own (`crmUrls.HUBSPOT`). */
  // Every leaf setting by its path (`crmUrls.HUBSPOT`, `backfill.urls.heyreach`, ...).
  const settingsOf = (config: object, prefix = ''): Array<readonly [string, unknown]> =>
    Object.entries(config).flatMap(([key, value]: [string, unknown]) =>
      value !== null && typeof value === 'object' && !Array.isArray(value) && !Buffer.isBuffer(value)
        ? settingsOf(value, `${prefix}${key}.`)
        : [[`${prefix}${key}`, value] as const],
    );

  beforeAll(async () => {
    const app = express();
    installSandbox(app, standIn);
    server = await new Promise<Server>((resolve) => {
      const listening = app.listen(0, '127.0.0.1', () => resolve(listening));
    });
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    await new Promise((resolve) => server.close(resolve));
  });

  it.each(SANDBOX_SYSTEMS.map((row) => [row.system, row] as const))('%s: the router serves its path', async (system, row) => {
    expect(await reached(`${base}${row.path}`)).toBe(`200 ${system}`);
  });

  it.each(SANDBOX_SYSTEMS.flatMap((row) => (row.variable ? [[row.variable, row] as const] : [])))(
    '%s: its sandbox default is the path the router serves the system at',
    async (variable, row) => {
      const defaults = loadConfig({ BASE_URL: base }, '/srv/pipeline');
      const named = loadConfig({ BASE_URL: base, [variable]: 'https://elsewhere.test' }, '/srv/pipeline');
      // The setting the variable governs: the one that changes when the variable is named (`crmUrls.HUBSPOT`, ...).
      const namedSettings = new Map(settingsOf(named));
      const governed = settingsOf(defaults)
        .filter(([key, value]) => JSON.stringify(value) !== JSON.stringify(namedSettings.get(key)))
        .map(([, value]) => value as string);
      expect(governed).toEqual([`${base}${row.path}`]);
      expect(await reached(governed[0]!)).toBe(`200 ${row.system}`);
    },
  );
});
