/**
 * A CRM as a block list source (issue 32), as one suite a CRM's test file runs with its emulator: the real
 * worker reads 5,000 addresses and a few domains from the CRM emulator and pushes them to Smartlead and
 * Instantly (emulators, real HTTP), normalised and deduplicated, the addresses' source read page by page.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { seedFixture, type SeedResult } from '../../src/admin/seed.js';
import type { CrmKind } from '../../src/connectors/crm/kinds.js';
import { startSequencerEmulator, type SequencerEmulator } from '../../src/emulators/sequencer.js';
import { TEST_ENCRYPTION_KEY } from './database.js';
import { apiGet } from './rest.js';
import { useTestServer } from './server.js';
import { eventually, startTestWorker } from './worker.js';

/** Addresses the CRM holds for the ADDRESS list: `gone-<i>@unsub<i % 50>.test`, written in mixed case. */
export const BLOCKED_ADDRESSES = 5_000;

export interface CrmBlocklistSpec<E extends { url: string; close(): Promise<void> }> {
  crm: CrmKind;
  name: string;
  /** The emulator, holding {@link BLOCKED_ADDRESSES} addresses and the domains `customer.test` and `partner.test` (one written as a URL). */
  start(): Promise<E>;
  credentials: unknown;
  /** The `crmSource`s of the ADDRESS list (pushed to Smartlead) and the DOMAIN list (to Instantly). */
  sources(emulator: E): { addresses: unknown; domains: unknown };
  /** The calls the addresses took, as the emulator logged them: a page at a time. */
  addressPages(emulator: E): number;
  expectedAddressPages: number;
}

export function crmBlocklistSuite<E extends { url: string; close(): Promise<void> }>(spec: CrmBlocklistSpec<E>): void {
  const ctx = useTestServer();
  const tag = spec.crm.toLowerCase();
  const reader = `svcapi_${tag}BlocklistReader`.padEnd(36, '0');
  const keys = { smartlead: `${tag}-blocklist-smartlead`, instantly: `${tag}-blocklist-instantly` };
  let emulator: E;
  let sequencer: SequencerEmulator;
  let worker: { stop(): Promise<void> };
  let seeded: SeedResult;

  beforeAll(async () => {
    emulator = await spec.start();
    const sources = spec.sources(emulator);
    sequencer = await startSequencerEmulator({ smartleadKeys: [keys.smartlead], instantlyKeys: [keys.instantly] });
    const list = (ref: string, platform: 'smartlead' | 'instantly', blockType: 'ADDRESS' | 'DOMAIN', crmSource: unknown) => ({
      ref,
      listName: `${spec.name} ${ref}`,
      platform,
      blockType,
      crmSource,
      sequencer: { apiKey: keys[platform] },
    });
    const fixture = {
      accounts: [
        {
          ref: `${tag}-blocking`,
          capabilities: { canUseApi: true, canUserAccount: true, canBlockList: true, canUseWebhooks: true },
          connections: [
            {
              ref: tag,
              crm: spec.crm,
              credentials: spec.credentials,
              blocklists: [list('addresses', 'smartlead', 'ADDRESS', sources.addresses), list('domains', 'instantly', 'DOMAIN', sources.domains)],
            },
          ],
          apiKeys: [{ name: 'reader', key: reader }],
        },
      ],
    };
    seeded = await seedFixture(ctx.db.prisma, fixture, TEST_ENCRYPTION_KEY);
    worker = await startTestWorker(
      ctx.db.url,
      { urls: { [spec.crm]: emulator.url } },
      { blocklists: { pushUrls: { smartlead: sequencer.url, instantly: sequencer.url } } },
    );
  }, 60_000);

  afterAll(async () => {
    await worker?.stop();
    await Promise.all([emulator?.close(), sequencer?.close()]);
  });

  describe(`a ${spec.name} block list`, () => {
    it(`pushes ${BLOCKED_ADDRESSES.toLocaleString('en')} addresses to Smartlead and a list's domains to Instantly`, async () => {
      await ctx.db.query(`SELECT graphile_worker_loops.add_job('blocklists__schedule', '{}'::json)`);
      const ids = [seeded.blocklists.addresses!, seeded.blocklists.domains!];

      const synced = await eventually(
        async () => {
          const res = await apiGet(ctx.server.baseUrl, '/blocklists', reader);
          const now = (res.body.blocklists as Array<{ id: number; status: string; pendingCount: number }>).filter((l) => ids.includes(l.id));
          return now.length === 2 && now.every((l) => l.status === 'SYNCED' && l.pendingCount === 0) ? now : undefined;
        },
        90_000,
        `both ${spec.name} block lists SYNCED`,
      );

      expect(synced).toHaveLength(2);
      const pushed = sequencer.smartlead(keys.smartlead).values;
      expect(pushed.size).toBe(BLOCKED_ADDRESSES);
      expect(pushed.has('gone-4999@unsub49.test')).toBe(true);
      expect([...sequencer.instantly(keys.instantly).values].sort()).toEqual(['customer.test', 'partner.test']);
      expect(spec.addressPages(emulator)).toBe(spec.expectedAddressPages);
    }, 120_000);
  });
}
