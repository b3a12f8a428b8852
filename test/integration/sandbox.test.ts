/**
 * The sandbox (issue 18), as a newcomer meets it: `npm start` on an empty DATA_DIR, then the printed reply
 * command. Within 10 s the contact and its activity are in the sandbox CRM, the event reached both
 * forwarding receivers and the relay email is in the inbox, each row naming the request behind it; a 500
 * forced from the page is retried; the page renders; the sandbox's state survives a restart (replayed from
 * PostgreSQL); and with SANDBOX=false every /sandbox path is a JSON 404 while the demo keeps its URLs.
 * The demo's Close and Attio sources (issue 32) write into the sandbox Close and Attio.
 */
import { execFile, execFileSync } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEMO_FIXTURE } from '../../src/admin/demo.js';
import { parseFixture } from '../../src/admin/fixture.js';
import { readSample } from '../../src/connectors/sequencers/samples.js';
import { startSandboxSystems } from '../../src/sandbox/systems.js';
import type { SandboxView } from '../../src/sandbox/view.js';
import { apiFetch } from '../support/openapi.js';
import { startSandboxService, type SandboxService } from '../support/sandbox-service.js';
import { freePort, reachableTempDir, startService, type ServiceProcess } from '../support/service-process.js';

const run = promisify(execFile);
const demo = parseFixture(JSON.parse(readFileSync(DEMO_FIXTURE, 'utf8')));
const demoKey = demo.accounts[0]!.apiKeys.find((k) => k.key !== undefined && !k.revoked)!.key!;

/** A headless browser, if this machine has one (none is installed by the suite). */
const browser = ['chromium', 'chromium-browser', 'google-chrome'].find((name) => {
  try {
    execFileSync('which', [name], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
});

async function until<T>(what: string, probe: () => Promise<T | undefined>, ms = 10_000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`not within ${ms} ms: ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

describe('npm start with the sandbox (the embedded default)', () => {
  let dataDir: string;
  let env: Record<string, string>;
  let service: ServiceProcess;
  let base: string;
  const state = async () => (await (await fetch(`${base}/sandbox/state`)).json()) as SandboxView;
  /** The reply command as printed, run as a user pastes it; the request id it was given. */
  const sendPrintedReply = async () => {
    const line = service
      .stdout()
      .split('\n')
      .find((l) => l.trim().startsWith('curl -s -X POST'));
    expect(line, 'npm start prints a command that sends a reply').toBeDefined();
    const { stdout } = await run('sh', ['-c', line!.trim()]);
    return String((JSON.parse(stdout) as { requestId: number }).requestId);
  };

  beforeAll(async () => {
    dataDir = await reachableTempDir('pss-sandbox-');
    const port = await freePort();
    base = `http://127.0.0.1:${port}`;
    // As `npm start` runs, but for free ports and a one-second forwarding retry (the forced 500's retry).
    env = {
      DATA_DIR: dataDir,
      PORT: String(port),
      HOST: '127.0.0.1',
      LOG_LEVEL: 'warn',
      SANDBOX_SMTP_PORT: String(await freePort()),
      FORWARDING_RETRY_SCHEDULE: '1',
    };
    service = startService('all', env);
    await service.waitFor('curl -s -X POST', 90_000);
  }, 120_000);
  afterAll(async () => {
    await service?.stop('SIGTERM');
    await rm(dataDir, { recursive: true, force: true });
  });

  it('prints the sandbox page and a reply command; the reply reaches the CRM, both receivers and the inbox within 10 s', async () => {
    expect(service.stdout()).toContain(`Sandbox:             http://localhost:${env.PORT}/sandbox`);
    const requestId = await sendPrintedReply();

    const seen = await until('contact, activity, two forwarded requests and the relay email', async () => {
      const view = await state();
      const ready =
        view.hubspot.contacts.some((c) => c.title === 'jane@prospect.test') &&
        view.hubspot.activities.length > 0 &&
        view.forwarding.filter((r) => r.requestId === requestId).length === 2 &&
        view.inbox.some((m) => m.requestId === requestId);
      return ready ? view : undefined;
    });
    expect(seen.hubspot.contacts.find((c) => c.title === 'jane@prospect.test')).toMatchObject({ requestId });
    expect(seen.hubspot.activities[0]).toMatchObject({ title: expect.stringContaining('Re: Quick question'), requestId });
    expect(seen.forwarding.filter((r) => r.requestId === requestId).map((r) => r.status)).toEqual([200, 200]);
    expect(seen.inbox[0]).toMatchObject({ title: 'Re: Quick question', requestId, html: expect.any(Boolean) });
    // Which rep it went to, who sent it, and that answering it answers the prospect.
    expect(seen.inbox[0]!.addresses).toEqual({ to: 'dana.rep@acme.test', from: '"Pipeline Sync" <pipeline-sync@localhost>', replyTo: 'jane@prospect.test' });
    expect(seen.inbox[0]!.detail).toContain('Sounds good, send times for Thursday');
  });

  it('retries what a system forced to fail refused', async () => {
    const forced = await fetch(`${base}/sandbox/faults`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ system: 'forwarding', kind: '500', count: 1 }),
    });
    expect(await forced.json()).toEqual({ system: 'forwarding', kind: '500', remaining: 1 });
    const requestId = await sendPrintedReply();
    const attempts = await until('a forced 500 and its retry', async () => {
      const rows = (await state()).forwarding.filter((r) => r.requestId === requestId);
      return rows.length === 3 ? rows : undefined;
    });
    // Newest first: the two successes (one of them the retry) after the forced 500.
    expect(attempts.map((r) => [r.status, r.forced])).toEqual(
      expect.arrayContaining([
        [500, true],
        [200, false],
        [200, false],
      ]),
    );
    expect(attempts[attempts.length - 1]).toMatchObject({ status: 500, forced: true });
  });

  it('renders the page: marked as a sandbox, rows linked to the explorer, no script', async () => {
    const res = await fetch(`${base}/sandbox`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/html/);
    const html = await res.text();
    expect(html).toContain('SANDBOX: these systems stand in for');
    expect(html).toContain('<meta http-equiv="refresh"');
    expect(html).toContain('jane@prospect.test');
    expect(html).toContain('<dt>To</dt><dd>dana.rep@acme.test</dd>');
    expect(html).toContain('<dt>Reply-To</dt><dd>jane@prospect.test</dd>');
    expect(html).toMatch(/href="\/graphql\?query=%7B%20request\(id%3A%20\d+\)/);
    expect(html).toContain('<form method="post" action="/sandbox/faults">');
    expect(html).not.toMatch(/<script|https?:\/\/cdn/i);
  });

  it.skipIf(!browser)('renders in a real headless browser', async () => {
    const shot = path.join(await mkdtemp(path.join(os.tmpdir(), 'pss-shot-')), 'sandbox.png');
    await run(browser!, ['--headless', '--no-sandbox', '--disable-gpu', `--screenshot=${shot}`, '--window-size=1280,900', `${base}/sandbox`], {
      timeout: 60_000,
    });
    expect(readFileSync(shot).subarray(1, 4).toString()).toBe('PNG');
  });

  it('keeps what its systems received across a restart (replayed from PostgreSQL)', async () => {
    const before = await state();
    expect(await service.stop('SIGTERM')).toBe(0);
    service = startService('all', env);
    await service.waitFor('curl -s -X POST', 90_000);
    const after = await state();
    expect(after.hubspot.contacts.map((c) => c.title)).toEqual(before.hubspot.contacts.map((c) => c.title));
    expect(after.hubspot.activities.length).toBe(before.hubspot.activities.length);
    expect(after.inbox.length).toBe(before.inbox.length);
  }, 120_000);
});

describe('two API processes with the sandbox on one machine', () => {
  it('share one inbox: the second finds the SMTP port taken and serves the rest', async () => {
    const smtpPort = await freePort();
    const options = { sandboxUrl: 'http://localhost:1/sandbox', smtpPort, onMail: () => undefined };
    const first = await startSandboxSystems(options);
    const second = await startSandboxSystems(options);
    try {
      expect(first.smtp?.port).toBe(smtpPort);
      expect(second.smtp).toBeNull();
      expect(second.hubspot.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    } finally {
      await Promise.all([first.close(), second.close()]);
    }
  });
});

describe('npm start with SANDBOX=false', () => {
  it('answers every /sandbox path with a JSON 404, and the demo keeps the URLs its fixture names', async () => {
    const dataDir = await reachableTempDir('pss-nosandbox-');
    const port = await freePort();
    const service = startService('all', { DATA_DIR: dataDir, PORT: String(port), HOST: '127.0.0.1', LOG_LEVEL: 'warn', SANDBOX: 'false' });
    try {
      await service.waitFor('curl -s', 90_000);
      expect(service.stdout()).not.toContain('Sandbox:');
      for (const [method, url] of [
        ['GET', '/sandbox'],
        ['GET', '/sandbox/state'],
        ['POST', '/sandbox/faults'],
        ['POST', '/sandbox/hubspot/crm/objects/2026-03/contacts'],
      ]) {
        const res = await fetch(`http://127.0.0.1:${port}${url}`, { method });
        expect({ url, status: res.status, type: res.headers.get('content-type') }).toEqual({
          url,
          status: 404,
          type: expect.stringMatching(/^application\/json/),
        });
        expect(await res.json()).toMatchObject({ statusCode: 404, error: 'Not Found' });
      }
      const destinations = await apiFetch(`http://127.0.0.1:${port}/api/v1/destinations`, { headers: { authorization: `Bearer ${demoKey}` } });
      const fixtureUrls = demo.accounts[0]!.connections.flatMap((c) => c.destinations.map((d) => d.url));
      expect((destinations.body as { destinations: Array<{ url: string }> }).destinations.map((d) => d.url).sort()).toEqual([...fixtureUrls].sort());
    } finally {
      await service.stop('SIGTERM');
      await rm(dataDir, { recursive: true, force: true });
    }
  }, 120_000);
});

describe("the demo's Close and Attio sources, with the sandbox (in process)", () => {
  let service: SandboxService;

  beforeAll(async () => {
    service = await startSandboxService({ seedDemo: true });
  }, 60_000);
  afterAll(() => service?.close());

  it('write an event posted to each into the sandbox Close and Attio: the contact and its activity, on the page and in its state', async () => {
    // Setup: each source's paste URL as the API lists it (the demo's Close source is a Smartlead one, its
    // Attio source a HeyReach one), and a sample of that sequencer.
    const sources = await apiFetch<{ sources: Array<{ url: string; crm: string; platform: string }> }>(`${service.base}/api/v1/sources`, {
      headers: { authorization: `Bearer ${demoKey}` },
    });
    expect(sources.status).toBe(200);
    const urlOf = (crm: string, platform: string) => {
      const found = sources.body.sources.filter((s) => s.crm === crm && s.platform === platform);
      expect(found, `the demo's ${crm} ${platform} source`).toHaveLength(1);
      return found[0]!.url;
    };
    const post = async (url: string, body: string) => {
      const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
      expect(res.status).toBe(200);
      return String(((await res.json()) as { requestId: number }).requestId);
    };

    // Action: a Smartlead reply (jane@acme.test) to the Close source, a HeyReach reply (john@testco.test) to the Attio one.
    const toClose = await post(urlOf('CLOSE', 'smartlead'), readSample('smartlead', 'EMAIL_REPLY.json'));
    const toAttio = await post(urlOf('ATTIO', 'heyreach'), readSample('heyreach', 'every_message_reply_received.json'));
    // And a LinkedIn message to a person with no email: linked to its request by the profile URL.
    const socialOnly = await post(urlOf('ATTIO', 'heyreach'), readSample('heyreach', 'message_sent_no_email.json'));

    // Assertions: the sandbox's state shows each contact and its activity (and follow-up task), linked to the request.
    const view = await until('the contact and activity in the sandbox Close and Attio', async () => {
      const seen = (await (await fetch(`${service.base}/sandbox/state`)).json()) as SandboxView;
      const done = (rows: SandboxView['close']['activities'], requestId: string) => rows.filter((r) => r.requestId === requestId).length >= 2;
      return done(seen.close.activities, toClose) && done(seen.attio.activities, toAttio) && done(seen.attio.activities, socialOnly) ? seen : undefined;
    });
    expect(view.close.contacts).toEqual([expect.objectContaining({ title: 'jane@acme.test', requestId: toClose })]);
    expect(view.close.activities.map((a) => [a.title, a.requestId])).toEqual(
      expect.arrayContaining([
        ['Re: Quick question', toClose],
        [expect.stringMatching(/^Task: /), toClose],
      ]),
    );
    expect(view.attio.contacts).toHaveLength(2);
    expect(view.attio.contacts).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ title: 'john@testco.test', detail: 'John Doe', requestId: toAttio }),
        expect.objectContaining({ title: expect.stringContaining('linkedin.com/in/'), requestId: socialOnly }),
      ]),
    );
    expect(view.attio.activities.filter((a) => a.requestId === toAttio && !a.title.startsWith('Task: '))).toHaveLength(1);
    expect(view.attio.activities.filter((a) => a.requestId === toAttio && a.title.startsWith('Task: '))).toHaveLength(1);
    // The sandbox CRMs hold them (one each), and the page shows them.
    const { closeCrm, attio } = service.sandbox.systems;
    expect(closeCrm.contactsByEmail('jane@acme.test')).toHaveLength(1);
    expect(closeCrm.mailSent).toEqual([]);
    expect(attio.peopleByEmail('john@testco.test')).toHaveLength(1);
    const page = await (await fetch(`${service.base}/sandbox`)).text();
    const section = (title: string) => /<section>(.*?)<\/section>/gs.exec(page.slice(page.indexOf(`<section><h2>${title}</h2>`)))?.[1] ?? '';
    expect(section('Close')).toContain('jane@acme.test');
    expect(section('Close')).toContain('Re: Quick question');
    expect(section('Attio')).toContain('john@testco.test');
    expect(section('HubSpot')).not.toContain('jane@acme.test');
  });
});
