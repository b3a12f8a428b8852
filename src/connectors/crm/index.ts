import { createHttpClient, type HttpClient, type RetryPolicy } from '../http/client.js';
import { gatedHttp, type GateConfig } from './gate.js';
import { CrmError } from './errors.js';
import type { CrmKind } from './kinds.js';
import { crmDefinition } from './registry.js';
import type { CrmConnector } from './types.js';

export { CrmError } from './errors.js';
export { CRM_KINDS, crmKindOf } from './kinds.js';
export type { CrmConnector, CrmEvent, CrmOutcome, CrmRun, CrmState, SourceOptions } from './types.js';

/** What the connectors take from the service configuration (src/config.ts), plus test knobs. */
export interface CrmConfig {
  /** Each CRM's API base URL (the variable its definition's `endpoint` names), by kind. */
  urls: Readonly<Record<CrmKind, string>>;
  outboundAllowPrivate: boolean;
  /** SANDBOX: the service's own origin, reachable on loopback (the sandbox CRMs). */
  sandboxOrigin?: string;
  /** The outbound client; by default one shared per process and `outboundAllowPrivate` value. */
  http?: HttpClient;
  /** Attempts per request and backoff for 429/5xx inside one write. */
  retry?: Partial<RetryPolicy>;
  /** Waiting between retries one write may spend before handing the wait to the job layer. */
  retryBudgetMs?: number;
  /** Per-request deadline. */
  timeoutMs?: number;
  salesforceApiVersion?: string;
  now?: () => number;
  /** Each CRM's budget for the connections that name none of their own (its definition's environment variable); 0: none; absent: its default. */
  budgets?: Readonly<Record<CrmKind, number>>;
  /** The connection's shared request budget: every call takes a slot of it (src/connectors/crm/gate.ts). */
  gate?: GateConfig;
  /**
   * The connection written for, and the CRM account (portal, org) it is connected to: what its runs learn
   * of the CRM is remembered under both, so a reconnection to another account starts afresh.
   */
  connection?: { id: number; organizationId: string | null };
}

const DEFAULT_RETRY: RetryPolicy = { attempts: 4, baseDelayMs: 500, maxDelayMs: 8_000 };
const DEFAULT_RETRY_BUDGET_MS = 25_000;
const DEFAULT_TIMEOUT_MS = 20_000;
/**
 * How long a budgeted connection's shared call waits for more syncs before it goes: the runs of a round
 * reach each step together (src/connectors/crm/lockstep.ts), and this gathers those a statement or two
 * later (their saves went in another batch).
 */
const SHARE_GATHER_MS = 10;

const sharedClients = new Map<string, HttpClient>();

/**
 * The connector for a connection's CRM, or `undefined` for a CRM kind without one.
 * `credentials` are the decrypted connection credentials; they stay inside the connector.
 * @throws CrmError('auth') when the credentials do not have the CRM's shape (no value is echoed).
 */
export function crmConnector(crm: string, credentials: unknown, config: CrmConfig): CrmConnector | undefined {
  const definition = crmDefinition(crm);
  if (!definition) return undefined;
  const shared = `${config.outboundAllowPrivate}:${config.sandboxOrigin ?? ''}`;
  let http = config.http ?? sharedClients.get(shared);
  if (!http) {
    http = createHttpClient({ allowPrivate: config.outboundAllowPrivate, userAgent: 'pipeline-sync-service', trustedOrigin: config.sandboxOrigin });
    sharedClients.set(shared, http);
  }
  if (config.gate) http = gatedHttp(http, { ...config.gate, crmName: definition.name, limits: definition.limits });
  const deps = {
    http,
    retry: { ...DEFAULT_RETRY, ...config.retry },
    retryBudgetMs: config.retryBudgetMs ?? DEFAULT_RETRY_BUDGET_MS,
    timeoutMs: config.timeoutMs ?? DEFAULT_TIMEOUT_MS,
    now: config.now ?? Date.now,
    // A budgeted connection's calls are its scarce resource: shared calls wait a moment to fill up.
    shareGatherMs: config.gate ? SHARE_GATHER_MS : 0,
    ...(config.connection ? { memoryKey: `connection:${config.connection.id}:${config.connection.organizationId ?? ''}` } : {}),
  };
  const parsed = definition.credentials.safeParse(credentials);
  if (!parsed.success) throw badCredentials(definition.name, parsed.error.issues);
  return definition.connect(parsed.data, config, deps);
}

/** Names the bad fields only: issue messages could quote a value. */
function badCredentials(crm: string, issues: ReadonlyArray<{ path: ReadonlyArray<PropertyKey> }>): CrmError {
  const fields = [...new Set(issues.map((i) => i.path.map(String).join('.') || '(root)'))].join(', ');
  return new CrmError('auth', `${crm} credentials are incomplete or malformed (${fields}): reconnect the CRM`);
}
