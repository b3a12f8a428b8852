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
    const body = JSON.parse(readSample(platform, sampleFiles(platform)[0]!)) as Record<string, unknown>;
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

describe('block-list pushes', () => {
  it('go to the sequencers whose definition has one: Smartlead and Instantly', () => {
    expect(PUSH_SEQUENCERS.map((s) => s.platform)).toEqual(['smartlead', 'instantly']);
    expect(SEQUENCER_PLATFORMS.filter((p) => SEQUENCERS[p].blocklistPush !== undefined)).toEqual(['smartlead', 'instantly']);
  });

  it.each(PUSH_SEQUENCERS.map((s) => [s.platform, s] as const))(
    '%s reads its base URL from the variable its push names, with its default',
    (platform, sequencer) => {
      const { env, default: fallback } = sequencer.blocklistPush.endpoint;
      expect(fallback).toMatch(/^https:\/\//);
      expect(DEFAULT_BLOCKLISTS.pushUrls[platform]).toBe(fallback);
      // Off the sandbox (SANDBOX points every sequencer at its own stand-in).
      expect(loadConfig({ SANDBOX: 'false' }, '/srv').blocklistPushUrls[platform]).toBe(fallback);
      expect(loadConfig({ SANDBOX: 'false', [env]: 'https://push.example.test/' }, '/srv').blocklistPushUrls[platform]).toBe('https://push.example.test');
    },
  );

  it.each(PUSH_SEQUENCERS.map((s) => [s.platform, s] as const))('%s calls its base URL with at most 1,000 values', (_platform, sequencer) => {
    const { batch, request } = sequencer.blocklistPush;
    expect(batch).toBeGreaterThan(0);
    expect(batch).toBeLessThanOrEqual(1_000);
    const call = request({ baseUrl: 'https://api.sequencer.test', apiKey: 'key_1', clientId: null }, ['acme.test']);
    expect(String(call.url).startsWith('https://api.sequencer.test/')).toBe(true);
    expect(call.method).toBe('POST');
  });

  it.each(PUSH_SEQUENCERS.map((s) => [s.platform, s] as const))('%s takes an API key as credentials, strict on input', (_platform, sequencer) => {
    expect(sequencer.credentials.strict().safeParse({ apiKey: 'key_1' }).success).toBe(true);
    expect(sequencer.credentials.strict().safeParse({ apiKey: 'key_1', unknownKey: 1 }).success).toBe(false);
    expect(sequencer.credentials.safeParse({}).success).toBe(false);
  });
});
