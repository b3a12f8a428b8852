import pg from 'pg';
import type { BackfillConfig, BlocklistConfig, ForwardingConfig, RelayConfig, WebhookConfig } from '../../src/config.js';
import type { CrmConfig } from '../../src/connectors/crm/index.js';
import { CRM_KINDS, type CrmKind } from '../../src/connectors/crm/kinds.js';
import { createLogger, type Logger } from '../../src/logger.js';
import { startWorker, WORKER_APPLICATION_NAME, WORKER_SETTINGS, workerPoolSize } from '../../src/worker.js';
import { TEST_ENCRYPTION_KEY } from './database.js';

/** A port nothing listens on: a CRM a test does not call. */
const UNREACHABLE = 'http://127.0.0.1:9';

/** Each CRM's base URL for a CrmConfig: those given, and for every other kind one nothing answers at. */
export function crmUrls(urls: Partial<Record<CrmKind, string>> = {}): Record<CrmKind, string> {
  return Object.fromEntries(CRM_KINDS.map((kind) => [kind, urls[kind] ?? UNREACHABLE])) as Record<CrmKind, string>;
}

/**
 * The real worker (graphile-worker and our tasks, production settings) on a test database, polling fast.
 * `crm.urls` names the CRMs the test calls (`{ HUBSPOT: hubspot.url }`); the others are unreachable.
 */
export async function startTestWorker(
  databaseUrl: string,
  crm: Partial<Omit<CrmConfig, 'urls'>> & { urls?: Partial<Record<CrmKind, string>> } = {},
  settings: {
    staleAfterMs?: number;
    logger?: Logger;
    forwarding?: Partial<ForwardingConfig> & { attemptTimeoutMs?: number };
    relays?: Partial<RelayConfig>;
    webhooks?: Partial<WebhookConfig> & { attemptTimeoutMs?: number };
    blocklists?: Partial<BlocklistConfig>;
    backfill?: Partial<BackfillConfig>;
    outboundAllowPrivate?: boolean;
  } = {},
): Promise<{ stop(): Promise<void> }> {
  const {
    logger = createLogger('silent', process.stderr),
    forwarding,
    relays,
    webhooks,
    blocklists,
    backfill,
    outboundAllowPrivate = true,
    ...overrides
  } = settings;
  const workerSettings = { ...WORKER_SETTINGS, pollInterval: 100, ...overrides };
  const pool = new pg.Pool({ connectionString: databaseUrl, max: workerPoolSize(workerSettings), application_name: WORKER_APPLICATION_NAME });
  // Connections the test ends under the worker must not crash the run.
  pool.on('error', () => {});
  pool.on('connect', (client) => client.on('error', () => {}));
  const crmConfig: CrmConfig = { outboundAllowPrivate: true, ...crm, urls: crmUrls(crm.urls) };
  const deps = {
    crm: crmConfig,
    outboundAllowPrivate,
    encryptionKey: TEST_ENCRYPTION_KEY,
    ...(forwarding ? { forwarding } : {}),
    ...(relays ? { relays } : {}),
    ...(webhooks ? { webhooks } : {}),
    ...(blocklists ? { blocklists } : {}),
    ...(backfill ? { backfill } : {}),
  };
  const runner = await startWorker(pool, logger, deps, workerSettings);
  return {
    async stop() {
      await runner.stop();
      await pool.end();
    },
  };
}

/** Polls `probe` until it returns a value other than undefined (or throws after `ms`). */
export async function eventually<T>(probe: () => Promise<T | undefined>, ms = 15_000, what = 'condition'): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}
