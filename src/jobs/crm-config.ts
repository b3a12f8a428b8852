import type { CrmConfig } from '../connectors/crm/index.js';
import { crmDefinition } from '../connectors/crm/registry.js';
import type { GateConfig } from '../connectors/crm/gate.js';
import type { CrmBudgetStore } from '../db/crm-budget-store.js';
import { budgetFor } from '../domain/crm-budget.js';
import type { JobEnvironment } from './task.js';

/**
 * The connectors' configuration for one connection's calls: the service's, held to the connection's CRM
 * budget (its `crmRateLimit` over the environment's defaults) when it has one. `gate` says how the caller
 * waits for a slot and whom it tells of a long run of refusals.
 */
export function connectionCrmConfig(
  env: JobEnvironment,
  budgets: CrmBudgetStore,
  connection: { connectionId: number; organizationId: string | null; crm: string; crmRateLimit: unknown },
  gate: Pick<GateConfig, 'maxWaitMs' | 'announceRefusals'> = {},
): CrmConfig {
  const config = { ...env.crm, connection: { id: connection.connectionId, organizationId: connection.organizationId } };
  const definition = crmDefinition(connection.crm);
  if (!definition) return config;
  const budget = budgetFor(definition.budget, connection.crmRateLimit, env.crm.budgets?.[definition.kind] ?? definition.budget.default);
  return budget ? { ...config, gate: { store: budgets, connectionId: connection.connectionId, budget, ...gate } } : config;
}
