import type { z } from 'zod';
import type { EndpointVariable } from '../../config.js';
import type { BudgetRule, LimitSignals } from '../../domain/crm-budget.js';
import type { CrmConfig } from './index.js';
import type { CrmKind } from './kinds.js';
import type { CrmOAuth } from './oauth.js';
import type { ConnectorDeps } from './session.js';
import type { CrmConnector } from './types.js';

/**
 * What the service knows of one CRM, in one place: its folder's `definition.ts` exports it, and the
 * registry (./registry.ts) holds one per {@link CrmKind}. Everything else that depends on the kind (the
 * fixture format, the admin CLI, the job layer, budgets) reads it from there.
 */
export interface CrmDefinition {
  kind: CrmKind;
  /** Its name in messages: `HubSpot`. */
  name: string;
  /**
   * The decrypted connection credentials: the one schema the fixture, the admin CLI and the connector
   * check. An object schema that drops unknown keys: input (fixture, CLI) checks it `.strict()`.
   */
  credentials: z.ZodObject;
  /** A connection's own `crmRateLimit`: its schema, and its keys as messages name them. */
  rateLimit: { schema: z.ZodType<Record<string, unknown>>; keys: readonly string[] };
  /** A block list's `crmSource`: its schema, and its keys as messages name them (`?`: optional). */
  crmSource: CrmSourceRules;
  /**
   * Its API's base URL (a login host, for a CRM whose calls go to each connection's own instance): the
   * environment variable that sets it and its default (src/config.ts reads it into CrmConfig.urls; the
   * variable has a row in src/sandbox/system-table.ts, its sandbox default).
   */
  endpoint: EndpointVariable;
  /**
   * How the CRM limits a connection's requests, and its budget for every connection that names none:
   * `default`, or the environment variable `env`, 0 up to `max` (src/config.ts reads it into CrmConfig.budgets).
   */
  budget: BudgetRule & { env: string; default: number; max: number };
  /** How its answers say the account's limit is reached (a 429, and its own signals): they pause the connection. */
  limits: LimitSignals;
  /**
   * How a customer connects it from a connect link (src/connect/): the service's app (its environment
   * variables), the consent page, the scopes, and the code exchange that yields {@link credentials}.
   */
  oauth: CrmOAuth;
  /** The connector for credentials {@link credentials} accepted; its API's base URL is `config.urls[kind]`. */
  connect(credentials: Record<string, unknown>, config: CrmConfig, deps: ConnectorDeps): CrmConnector;
}

/** What a block list's `crmSource` takes for a CRM: the fixture format checks it, and the CRM's list reader reads it. */
interface CrmSourceRules {
  /** Its values (strict: its keys are {@link keys}). */
  schema: z.ZodType<Record<string, unknown>>;
  keys: readonly string[];
  /** Fills in what a source may leave out (Salesforce's opt-out checkbox of Contact and Lead). */
  complete?(source: Record<string, unknown>): Record<string, unknown>;
  /** Rules across the source's keys and the list's block type, as messages (keys relative to the source). */
  problems?(source: Record<string, unknown>, blockType: 'ADDRESS' | 'DOMAIN'): Array<{ key: string; message: string }>;
}
