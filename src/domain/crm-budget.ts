/**
 * A connection's CRM request budget (issue 15): how many requests the CRM account takes, when the next
 * one may go, and what in an answer means "stop for a while". Shared by every worker process through
 * PostgreSQL (src/db/crm-budget-store.ts); these rules are pure.
 */

/** Requests per rolling window (HubSpot), or requests in flight at once (Salesforce). */
export type CrmBudget = { kind: 'window'; requests: number; windowMs: number } | { kind: 'concurrency'; max: number };

/**
 * How a CRM limits a connection's requests (each CRM's definition names its own,
 * src/connectors/crm/<kind>/definition.ts): the kind of budget, and the key of a connection's
 * `crmRateLimit` that sets its own.
 */
export type BudgetRule = { kind: 'window'; windowMs: number; overrideKey: string } | { kind: 'concurrency'; overrideKey: string };

/** A lease older than this is a process that died holding it: it no longer counts. */
export const LEASE_EXPIRY_MS = 120_000;

/**
 * The budget of a connection: its own `crmRateLimit` (the rule's key, as the fixture format says) over the
 * environment's value for every connection of the CRM (`fallback`); null when neither names one (an
 * environment value of 0: a CRM without limits, a benchmark of our own speed).
 */
export function budgetFor(rule: BudgetRule, override: unknown, fallback: number): CrmBudget | null {
  const own = override !== null && typeof override === 'object' ? (override as Record<string, unknown>)[rule.overrideKey] : undefined;
  const size = positive(own) ?? fallback;
  if (size <= 0) return null;
  return rule.kind === 'window' ? { kind: 'window', requests: size, windowMs: rule.windowMs } : { kind: 'concurrency', max: size };
}

/** What the store keeps per connection: recent request times (window), leases held (concurrency), a pause. */
export interface BudgetState {
  /** Epoch ms of the requests still in the window, oldest first (window budgets). */
  hits: readonly number[];
  /** Epoch ms each lease was taken, oldest first (concurrency budgets). */
  leases: readonly number[];
  pausedUntilMs: number | null;
}

/**
 * How long until one more request may go (0: now). A pause holds everything until it ends; a window
 * budget frees a slot when its oldest request leaves the window; a concurrency budget has no time to
 * promise, so a short wait is named (a lease ends with its request).
 */
export function waitForSlot(state: BudgetState, budget: CrmBudget, nowMs: number): number {
  const paused = state.pausedUntilMs !== null && state.pausedUntilMs > nowMs ? state.pausedUntilMs - nowMs : 0;
  if (budget.kind === 'window') {
    const live = state.hits.filter((at) => at > nowMs - budget.windowMs);
    const full = live.length >= budget.requests ? live[live.length - budget.requests]! + budget.windowMs - nowMs : 0;
    return Math.max(paused, full);
  }
  const held = state.leases.filter((at) => at > nowMs - LEASE_EXPIRY_MS).length;
  return Math.max(paused, held >= budget.max ? CONCURRENCY_RETRY_MS : 0);
}

/** How soon a full concurrency budget is asked again. */
const CONCURRENCY_RETRY_MS = 250;

/** Why and until when a CRM answer pauses its connection. */
export interface Pause {
  untilMs: number;
  reason: string;
  /** The CRM refused the request (429, REQUEST_LIMIT_EXCEEDED), not just announced its window used up. */
  refused: boolean;
}

/** Refusals less than this apart (from one's pause ending to the next) are one run of refusals. */
export const REFUSAL_RUN_GAP_MS = 60_000;

/** A run of refusals this long is announced: the connection's pipelines fail with `crm_rate_limited`. */
export const REFUSALS_WARNING_AFTER_MS = 15 * 60_000;

/** A connection's current run of refusals (epoch ms), as the store keeps it. */
export interface RefusalRun {
  /** When the run began; null: never refused. */
  sinceMs: number | null;
  /** When the pause of its last refusal ends. */
  untilMs: number | null;
  /** The run (its `sinceMs`) already announced, if one was. */
  warnedForMs: number | null;
}

/**
 * Whether the run of refusals is still going (its last pause ended less than {@link REFUSAL_RUN_GAP_MS}
 * ago, or has not ended), has lasted {@link REFUSALS_WARNING_AFTER_MS}, and was not announced yet. A busy
 * connection waiting for its own budget is not refused: only the CRM's 429s and limit errors count.
 */
export function refusalsOverdue(run: RefusalRun, nowMs: number): boolean {
  if (run.sinceMs === null || run.untilMs === null) return false;
  return run.untilMs + REFUSAL_RUN_GAP_MS > nowMs && nowMs - run.sinceMs >= REFUSALS_WARNING_AFTER_MS && run.warnedForMs !== run.sinceMs;
}

/** A CRM's answer as its budget reads it: status, headers, and the body of a refusal. */
export interface LimitAnswer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  text: string;
}

/**
 * How a CRM says its limit is reached, besides a 429 (each CRM's folder holds its own: its `errors.ts`,
 * named by its definition's `limits`).
 */
export interface LimitSignals {
  /** How long a 429 without `Retry-After` pauses: the CRM's window. */
  refusalPauseMs(answer: LimitAnswer): number;
  /** A limit said otherwise (an error code, a header on a success), or null. */
  otherSignal?(answer: LimitAnswer): { pauseMs: number; reason: string; refused: boolean } | null;
}

/**
 * Whether an answer says the account's limit is reached: a 429 (until its `Retry-After`, else the CRM's
 * window), or the CRM's own signal ({@link LimitSignals.otherSignal}).
 */
export function pauseFromAnswer(answer: LimitAnswer, retryAfterMs: number | undefined, nowMs: number, signals: LimitSignals): Pause | null {
  if (answer.status === 429)
    return { untilMs: nowMs + (retryAfterMs ?? signals.refusalPauseMs(answer)), reason: 'the CRM answered 429 Too Many Requests', refused: true };
  const signal = signals.otherSignal?.(answer) ?? null;
  return signal === null ? null : { untilMs: nowMs + signal.pauseMs, reason: signal.reason, refused: signal.refused };
}

function positive(value: unknown): number | undefined {
  return typeof value === 'number' && Number.isInteger(value) && value > 0 ? value : undefined;
}
