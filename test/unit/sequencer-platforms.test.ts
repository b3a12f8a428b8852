import { describe, expect, it } from 'vitest';
import { DEFAULT_BLOCKLISTS, loadConfig } from '../../src/config.js';
import type { SequencerDefinition } from '../../src/connectors/sequencers/definition.js';
import { parseInbound } from '../../src/connectors/sequencers/index.js';
import { instantlyPush } from '../../src/connectors/sequencers/instantly/blocklist-push.js';
import { SEQUENCER_PLATFORMS, sequencerPlatformOf, type SequencerPlatform } from '../../src/connectors/sequencers/platforms.js';
import { PUSH_SEQUENCERS, SEQUENCERS, sequencerDefinition, sequencerName } from '../../src/connectors/sequencers/registry.js';
import { readSample, sampleFiles } from '../../src/connectors/sequencers/samples.js';
import { unreachable } from '../../src/domain/unreachable.js';

/**
 * The sequencer platforms are a closed union: the `@ts-expect-error` lines below are type-level tests
 * (`npm test` typechecks this file first), each failing the build the day a platform is added and the
 * compiler stops asking for it.
 */
describe('SequencerPlatform', () => {
  it('asks every map over the platforms for each of them', () => {
    // @ts-expect-error a registry without lemlist does not compile
    const partial: { readonly [P in SequencerPlatform]: string } = { smartlead: 'Smartlead', instantly: 'Instantly', heyreach: 'HeyReach' };
    expect(Object.keys(partial)).toEqual(['smartlead', 'instantly', 'heyreach']);
  });

  it('asks every switch over the platforms for each of them', () => {
    function nameOf(platform: SequencerPlatform): string {
      switch (platform) {
        case 'smartlead':
          return 'Smartlead';
        case 'instantly':
          return 'Instantly';
        case 'heyreach':
          return 'HeyReach';
        default:
          // @ts-expect-error lemlist reaches unreachable(), which takes only `never`
          return unreachable(platform);
      }
    }
    expect(nameOf('heyreach')).toBe('HeyReach');
    expect(() => nameOf('lemlist')).toThrow('unhandled case: lemlist');
  });

  it('names only the sequencers the registry holds', () => {
    // @ts-expect-error outreach is not a platform (its sources are stored, and refused for want of a parser)
    const other: SequencerPlatform = 'outreach';
    expect(sequencerPlatformOf(other)).toBeUndefined();
    expect(Object.keys(SEQUENCERS).sort()).toEqual([...SEQUENCER_PLATFORMS].sort());
  });

  it('takes a block-list push only with the account it pushes with', () => {
    // @ts-expect-error a definition with a blocklistPush and no credentials does not compile
    const noAccount: SequencerDefinition = {
      platform: 'lemlist',
      name: 'lemlist',
      parse: SEQUENCERS.lemlist.parse,
      inboxLink: [],
      blocklistPush: instantlyPush,
    };
    expect(noAccount.credentials).toBeUndefined();
  });
});

describe('the sequencer registry', () => {
  it.each(SEQUENCER_PLATFORMS)('holds %s under its own platform', (platform) => {
    expect(SEQUENCERS[platform].platform).toBe(platform);
    expect(sequencerDefinition(platform)).toBe(SEQUENCERS[platform]);
    expect(sequencerName(platform)).toBe(SEQUENCERS[platform].name);
  });

  it('has no definition for a platform it has no parser for, and names it as written', () => {
    for (const platform of ['outreach', 'Smartlead', 'constructor', '__proto__', 'toString']) expect(sequencerDefinition(platform)).toBeUndefined();
    expect(sequencerName('outreach')).toBe('outreach');
  });

  it.each(SEQUENCER_PLATFORMS)('has samples for %s, each parsed by its parser into an event of its platform', (platform) => {
    const files = sampleFiles(platform);
    expect(files.length).toBeGreaterThan(0);
    for (const file of files) {
      const result = parseInbound(platform, readSample(platform, file));
      expect(result, file).toMatchObject({ ok: true, event: { platform } });
      expect(SEQUENCERS[platform].parse(JSON.parse(readSample(platform, file))), file).toEqual(result);
    }
  });

  it.each(SEQUENCER_PLATFORMS)("reads %s's inbox link from the fields its definition names, and from no other", (platform) => {
    const { inboxLink, parse } = SEQUENCERS[platform];
    // A sample that links nothing of its own (EmailBison builds a reply's link: see below).
    const bodies = sampleFiles(platform).map((file) => JSON.parse(readSample(platform, file)) as Record<string, unknown>);
    const body = bodies.find((b) => inboxLink.length > 0 || !(parse(b) as { event: { inboxUrl: unknown } }).event.inboxUrl)!;
    const fields = [...inboxLink, 'ui_master_inbox_link', 'app_url', 'unibox_url', 'inbox_url'];
    const without = Object.fromEntries(Object.entries(body).filter(([key]) => !fields.includes(key)));
    for (const field of fields) {
      const url = `https://inbox.example/${field}`;
      const result = parse({ ...without, [field]: url });
      expect(result, field).toMatchObject({ ok: true, event: { inboxUrl: inboxLink.includes(field) ? url : null } });
    }
    // The first of the fields that holds a web URL.
    if (inboxLink.length > 1) {
      const [first, second] = inboxLink as [string, string];
      expect(parse({ ...without, [first]: 'javascript:alert(1)', [second]: 'https://inbox.example/second' })).toMatchObject({
        event: { inboxUrl: 'https://inbox.example/second' },
      });
    }
  });
});

describe('EmailBison inbox links', () => {
  const reply = JSON.parse(readSample('emailbison', 'LEAD_REPLIED.json')) as { event: Record<string, unknown>; data: Record<string, unknown> };
  const linkOf = (instanceUrl: unknown, uuid: unknown) => {
    const body = { ...reply, event: { ...reply.event, instance_url: instanceUrl }, data: { ...reply.data, reply: { ...(reply.data.reply as object), uuid } } };
    return (SEQUENCERS.emailbison.parse(body) as { event: { inboxUrl: string | null } }).event.inboxUrl;
  };

  it("are the reply's page on the instance the webhook names", () => {
    expect(linkOf('https://send.agency.test/', '9b7e1c52-0f4a-4d0e-9a51-2f1d7e3c8a10')).toBe(
      'https://send.agency.test/inbox/replies/9b7e1c52-0f4a-4d0e-9a51-2f1d7e3c8a10',
    );
  });

  it('are absent without a web instance URL or a uuid-shaped reply id', () => {
    expect(linkOf('javascript:alert(1)', '9b7e1c52-0f4a-4d0e-9a51-2f1d7e3c8a10')).toBeNull();
    expect(linkOf(undefined, '9b7e1c52-0f4a-4d0e-9a51-2f1d7e3c8a10')).toBeNull();
    expect(linkOf('https://send.agency.test', '../../admin')).toBeNull();
    expect(linkOf('https://send.agency.test', undefined)).toBeNull();
  });
});

describe('block-list pushes', () => {
  it('go to the sequencers whose definition has one: Smartlead, Instantly and EmailBison', () => {
    expect(PUSH_SEQUENCERS.map((s) => s.platform)).toEqual(['smartlead', 'instantly', 'emailbison']);
    expect(SEQUENCER_PLATFORMS.filter((p) => SEQUENCERS[p].blocklistPush !== undefined)).toEqual(['smartlead', 'instantly', 'emailbison']);
  });

  const serviceWide = PUSH_SEQUENCERS.flatMap((s) => (s.blocklistPush.endpoint ? [[s.platform, s.blocklistPush.endpoint] as const] : []));

  it.each(serviceWide)('%s reads its base URL from the variable its push names, with its default', (platform, { env, default: fallback }) => {
    expect(fallback).toMatch(/^https:\/\//);
    expect(DEFAULT_BLOCKLISTS.pushUrls[platform]).toBe(fallback);
    // Off the sandbox (SANDBOX points every sequencer at its own stand-in).
    expect(loadConfig({ SANDBOX: 'false' }, '/srv').blocklistPushUrls[platform]).toBe(fallback);
    expect(loadConfig({ SANDBOX: 'false', [env]: 'https://push.example.test/' }, '/srv').blocklistPushUrls[platform]).toBe('https://push.example.test');
  });

  it('EmailBison has no service-wide URL: each account names its instance, kept without a trailing slash', () => {
    expect(SEQUENCERS.emailbison.blocklistPush!.endpoint).toBeUndefined();
    expect(DEFAULT_BLOCKLISTS.pushUrls.emailbison).toBeUndefined();
    const credentials = SEQUENCERS.emailbison.credentials!;
    expect(credentials.parse({ apiKey: '9|abc', baseUrl: 'https://send.agency.test/' })).toEqual({ apiKey: '9|abc', baseUrl: 'https://send.agency.test' });
    for (const baseUrl of ['send.agency.test', 'ftp://send.agency.test', 'https://user:pw@send.agency.test', 'https://send.agency.test/?x=1', undefined])
      expect(credentials.safeParse({ apiKey: '9|abc', baseUrl }).success, String(baseUrl)).toBe(false);
  });

  it('EmailBison takes one value a call, at the blacklist of its kind, and counts "already taken" as held', () => {
    const push = SEQUENCERS.emailbison.blocklistPush!;
    const account = { baseUrl: 'https://send.agency.test', apiKey: '9|abc', clientId: null };
    expect(push.batch).toBe(1);
    expect(push.request(account, ['jane@acme.test'])).toMatchObject({
      url: 'https://send.agency.test/api/blacklisted-emails',
      headers: { authorization: 'Bearer 9|abc' },
      json: { email: 'jane@acme.test' },
    });
    expect(push.request(account, ['acme.test'])).toMatchObject({ url: 'https://send.agency.test/api/blacklisted-domains', json: { domain: 'acme.test' } });
    expect(push.alreadyHeld?.(422, '{"message":"The email has already been taken."}')).toBe(true);
    expect(push.alreadyHeld?.(422, '{"message":"The email field must be a valid email address."}')).toBe(false);
    expect(push.alreadyHeld?.(400, 'already been taken')).toBe(false);
  });

  it.each(PUSH_SEQUENCERS.map((s) => [s.platform, s] as const))('%s calls its base URL with at most 1,000 values', (_platform, sequencer) => {
    const { batch, request } = sequencer.blocklistPush;
    expect(batch).toBeGreaterThan(0);
    expect(batch).toBeLessThanOrEqual(1_000);
    const call = request({ baseUrl: 'https://api.sequencer.test', apiKey: 'key_1', clientId: null }, ['acme.test']);
    expect(String(call.url).startsWith('https://api.sequencer.test/')).toBe(true);
    expect(call.method).toBe('POST');
  });

  it.each(PUSH_SEQUENCERS.map((s) => [s.platform, s] as const))('%s takes an API key as credentials, strict on input', (platform, sequencer) => {
    const own = platform === 'emailbison' ? { baseUrl: 'https://send.agency.test' } : {};
    expect(sequencer.credentials.strict().safeParse({ apiKey: 'key_1', ...own }).success).toBe(true);
    expect(sequencer.credentials.strict().safeParse({ apiKey: 'key_1', ...own, unknownKey: 1 }).success).toBe(false);
    expect(sequencer.credentials.safeParse({}).success).toBe(false);
  });
});
