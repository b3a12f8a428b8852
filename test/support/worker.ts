import pg from 'pg';
import type { BlocklistConfig, ForwardingConfig, RelayConfig, WebhookConfig } from '../../src/config.js';
import type { CrmConfig } from '../../src/connectors/crm/index.js';
import { createLogger, type Logger } from '../../src/logger.js';
import { startWorker, WORKER_APPLICATION_NAME, WORKER_SETTINGS, workerPoolSize } from '../../src/worker.js';
import { TEST_ENCRYPTION_KEY } from './database.js';

/** The real worker (graphile-worker and our tasks, production settings) on a test database, polling fast. */
export async function startTestWorker(
  databaseUrl: string,
  crm: Partial<CrmConfig> = {},
  settings: {
    staleAfterMs?: number;
    logger?: Logger;
    forwarding?: Partial<ForwardingConfig> & { attemptTimeoutMs?: number };
    relays?: Partial<RelayConfig>;
    webhooks?: Partial<WebhookConfig> & { attemptTimeoutMs?: number };
    blocklists?: Partial<BlocklistConfig>;
    outboundAllowPrivate?: boolean;
  } = {},
): Promise<{ stop(): Promise<void> }> {
  const { logger = createLogger('silent', process.stderr), forwarding, relays, webhooks, blocklists, outboundAllowPrivate = true, ...overrides } = settings;
  const workerSettings = { ...WORKER_SETTINGS, pollInterval: 100, ...overrides };
  const pool = new pg.Pool({ connectionString: databaseUrl, max: workerPoolSize(workerSettings), application_name: WORKER_APPLICATION_NAME });
  // Connections the test ends under the worker must not crash the run.
  pool.on('error', () => {});
  pool.on('connect', (client) => client.on('error', () => {}));
  const crmConfig: CrmConfig = { hubspotBaseUrl: 'http://127.0.0.1:9', salesforceLoginUrl: 'http://127.0.0.1:9', outboundAllowPrivate: true, ...crm };
  const deps = {
    crm: crmConfig,
    outboundAllowPrivate,
    encryptionKey: TEST_ENCRYPTION_KEY,
    ...(forwarding ? { forwarding } : {}),
    ...(relays ? { relays } : {}),
    ...(webhooks ? { webhooks } : {}),
    ...(blocklists ? { blocklists } : {}),
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
