import type pg from 'pg';
import { z } from 'zod';
import { crmConnector, CrmError, type CrmConnector } from '../connectors/crm/index.js';
import { CrmBudgetStore } from '../db/crm-budget-store.js';
import { sql, type Sql } from '../db/sql.js';
import { blockValue } from '../domain/blocklist.js';
import { openSecret } from '../domain/secrets.js';
import { BlocklistStore, recordListFailure, type BlocklistRow } from './blocklist-store.js';
import { blocklistQueue, blocklistsPush } from './blocklists__push.js';
import { connectionCrmConfig } from './crm-config.js';
import { enqueue } from './enqueue.js';
import { CredentialRenewals } from './credential-renewals.js';
import { defineTask, type JobEnvironment } from './task.js';

/** How long a fetch waits in its job for a slot of the connection's CRM budget (a sync waits a second). */
const MAX_WAIT_FOR_BUDGET_MS = 60_000;

/** A fetch the CRM asked to wait (429, 5xx, no answer) comes back this many times before the next round takes over. */
const MAX_RESCHEDULES = 5;

const payload = z.object({
  blocklistId: z.number().int().positive().max(2_147_483_647),
  /** `full`: the first fetch or a resync (replaces the local entries); `incremental`: a periodic round (adds new ones). */
  kind: z.enum(['full', 'incremental']),
  reschedules: z.number().int().nonnegative().max(1_000).optional(),
});

/**
 * `blocklists__fetch {blocklistId, kind}`: reads a block list from its connection's CRM (its credentials,
 * token refresh and CRM budget, as syncs use them), normalises and deduplicates the values (ADDRESS:
 * email addresses; DOMAIN: registrable domains), stores them as local entries and queues the push, in
 * one transaction. Queued by the schedule (src/jobs/blocklists__schedule.ts) and by a resync. One
 * queue per list with its push, so a list's fetch and push never run at once.
 */
export const blocklistsFetch = defineTask({
  identifier: 'blocklists__fetch',
  payload,
  // Errors are recorded on the list, not thrown: graphile-worker's attempts are for crashes. One fetch per
  // list, in the list's queue; blocklistFetchKeySql() and blocklistQueueSql() below spell the same rules in SQL.
  defaults: { maxAttempts: 5, jobKey: (p) => blocklistFetchKey(p.blocklistId), queueName: (p) => blocklistQueue(p.blocklistId) },
  healthCheck: 'destinations_blocklists',
  lane: 'loops',
  handler(env) {
    const store = new BlocklistStore(env.pool);
    const budgets = new CrmBudgetStore(env.pool);
    const credentials = new CredentialRenewals(env.pool, env.encryptionKey);
    return async (job, helpers) => {
      const list = await store.startRound(job.blocklistId, job.kind);
      if (!list) return;
      try {
        const values = await fetchValues(env, { budgets, credentials }, list);
        await store.storeFetched(list.id, job.kind, values, (client) => queuePush(client, list.id));
      } catch (error) {
        if (!(error instanceof CrmError)) throw error;
        await store.failRound(list.id, error.message);
        const reschedules = job.reschedules ?? 0;
        if (error.retryable && reschedules < MAX_RESCHEDULES) {
          const waitMs = Math.max(1_000, error.retryAfterMs ?? 60_000 * 2 ** reschedules);
          await enqueue(helpers, blocklistsFetch, { ...job, reschedules: reschedules + 1 }, { runAt: new Date(Date.now() + waitMs) });
        }
      }
    };
  },
  recordUnrecoverable: recordListFailure,
});

/** The job key of a list's fetch: a resync is refused while one is queued or running. */
export function blocklistFetchKey(blocklistId: number): string {
  return `blocklist-fetch:${blocklistId}`;
}

/**
 * A list's fetch key (`blocklist-fetch:<blocklistId>`, {@link blocklistFetchKey}'s rule) as SQL over an
 * expression of its id: for the statements that queue rounds (src/jobs/blocklist-rounds.ts).
 */
export function blocklistFetchKeySql(blocklistId: Sql): Sql {
  return sql`'blocklist-fetch:' || ${blocklistId}`;
}

/**
 * A list's named queue, shared by its fetch and its push (`blocklist:<blocklistId>`, the rule of
 * blocklists__push.ts' `blocklistQueue`), as SQL over an expression of its id: for the statements that
 * queue rounds (src/jobs/blocklist-rounds.ts).
 */
export function blocklistQueueSql(blocklistId: Sql): Sql {
  return sql`'blocklist:' || ${blocklistId}`;
}

/** Every value of the CRM list, normalised, deduplicated, in the order first seen. */
async function fetchValues(env: JobEnvironment, stores: { budgets: CrmBudgetStore; credentials: CredentialRenewals }, list: BlocklistRow): Promise<string[]> {
  const connector = openConnector(env, stores.budgets, list);
  const values = new Set<string>();
  for await (const page of connector.readList({
    source: list.crmSource,
    blockType: list.blockType,
    renewCredentials: (used, exchange) => stores.credentials.renew(list.connectionId, used, exchange),
  })) {
    for (const raw of page) {
      const value = blockValue(list.blockType, raw);
      if (value !== null) values.add(value);
    }
  }
  return [...values];
}

function openConnector(env: JobEnvironment, budgets: CrmBudgetStore, list: BlocklistRow): CrmConnector {
  if (!list.credentialsEncrypted) throw new CrmError('auth', 'The connection holds no CRM credentials: reconnect the CRM');
  let credentials: unknown;
  try {
    credentials = JSON.parse(openSecret(env.encryptionKey, list.credentialsEncrypted));
  } catch {
    throw new CrmError('auth', 'The stored CRM credentials cannot be read: reconnect the CRM');
  }
  const connector = crmConnector(list.crm, credentials, connectionCrmConfig(env, budgets, list, { maxWaitMs: MAX_WAIT_FOR_BUDGET_MS }));
  if (!connector) throw new CrmError('rejected', `Reading block lists from ${list.crm} is not supported`);
  return connector;
}

async function queuePush(client: pg.PoolClient, blocklistId: number): Promise<void> {
  await enqueue({ withPgClient: (work) => work(client) }, blocklistsPush, { blocklistId });
}
