import type pg from 'pg';
import type { CrmBudgetStore } from '../db/crm-budget-store.js';
import { query, sql } from '../db/sql.js';
import { withTransaction } from '../db/transaction.js';
import type { PipelineRef } from '../domain/pipeline-health.js';
import { recordPipelineOutcomes } from './pipeline-health-store.js';

/** Sources that received events this recently have syncs waiting on a refusing CRM: their pipelines are announced. */
const RECENT_SOURCE_INTERVAL = sql`interval '1 hour'`;

/**
 * Tells the customer that a connection's CRM has kept refusing for 15 minutes (src/domain/crm-budget.ts,
 * refusalsOverdue): in one transaction, the first process to claim the run of refusals moves the
 * connection's busy pipelines (the one asking, and every source of the connection that received an
 * event in the last hour) to failing with `crm_rate_limited`, which stores their `sync.failed` events and
 * queues their webhook deliveries. The syncs keep waiting for the CRM; each pipeline's next written sync
 * announces `sync.recovered`. Other processes, and later refusals of the same run, find it claimed.
 */
export async function announceRefusals(pool: pg.Pool, budgets: CrmBudgetStore, asking: PipelineRef): Promise<void> {
  await withTransaction(pool, async (client) => {
    if (!(await budgets.claimRefusalsWarning(client, asking.connectionId))) return;
    const { rows: recent } = await query<PipelineRef>(
      client,
      sql`SELECT c.account_id AS "accountId", s.id AS "sourceId", c.id AS "connectionId", s.platform, c.crm
            FROM sources s JOIN connections c ON c.id = s.connection_id
           WHERE s.connection_id = ${asking.connectionId} AND s.id <> ${asking.sourceId}
             AND s.last_event_received_at > now() - ${RECENT_SOURCE_INTERVAL}`,
    );
    const refused = { written: false, reason: 'crm_rate_limited' } as const;
    await recordPipelineOutcomes(
      client,
      [asking, ...recent].map((pipeline) => ({ pipeline, result: refused })),
    );
  });
}
