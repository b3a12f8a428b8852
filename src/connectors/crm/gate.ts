import type { CrmBudgetStore } from '../../db/crm-budget-store.js';
import { pauseFromAnswer, refusalsOverdue, type CrmBudget, type LimitSignals, type RefusalRun } from '../../domain/crm-budget.js';
import { retryAfterMs, type HttpClient, type HttpResponse } from '../http/client.js';
import { CrmError } from './errors.js';

/** The longest a sync's request waits in its job for a slot; past it, the job hands the wait to the queue. */
const MAX_WAIT_IN_JOB_MS = 1_000;

/** A connection's budget gate: its store, its budget, and what its caller adds. */
export interface GateConfig {
  store: CrmBudgetStore;
  connectionId: number;
  budget: CrmBudget;
  /** How long a request may wait in its job for a slot (default a second: a sync's wait goes back to the queue). */
  maxWaitMs?: number;
  /** Called when the CRM has kept refusing for 15 minutes. */
  announceRefusals?: () => Promise<void>;
}

/**
 * The HTTP client of one connection's CRM calls, held to its budget (src/domain/crm-budget.ts) through
 * the shared store: each request takes a slot first (waiting up to a second in the job, else throwing a
 * `rate_limited` CrmError marked `throttled`, so the job is rescheduled for when a slot frees and its
 * worker slot goes to other connections), and each answer that says the account's limit is reached
 * pauses the connection for every process. A 429 is not retried here: its pause is the retry's schedule.
 * When the CRM has kept refusing for 15 minutes, `announceRefusals` is called (once per run of refusals
 * across processes is the callee's to ensure): the customer hears of it while the syncs keep waiting.
 */
export function gatedHttp(http: HttpClient, gate: GateConfig & { crmName: string; limits: LimitSignals }): HttpClient {
  const { store, connectionId, budget, crmName, limits } = gate;
  const watch = async (refusals: RefusalRun, nowMs: number) => {
    if (gate.announceRefusals && refusalsOverdue(refusals, nowMs)) await gate.announceRefusals();
  };
  return {
    async request(request) {
      const token = await slot();
      let response: HttpResponse | undefined;
      try {
        response = await http.request(request);
      } finally {
        if (budget.kind === 'concurrency') await store.release(connectionId, token);
      }
      const wait = retryAfterMs(response.headers['retry-after']);
      const pause = pauseFromAnswer(
        { status: response.status, headers: response.headers, text: response.status >= 400 ? response.text() : '' },
        wait,
        Date.now(),
        limits,
      );
      if (pause) {
        const paused = await store.pause(connectionId, pause);
        await watch(paused.refusals, paused.nowMs);
      }
      if (response.status === 429) {
        throw new CrmError('rate_limited', `${crmName} answered 429 Too Many Requests: the connection is paused`, {
          httpStatus: 429,
          retryAfterMs: pause ? pause.untilMs - Date.now() : (wait ?? 10_000),
        });
      }
      return response;
    },
    close() {
      // The underlying client is shared by every connection: its owner closes it.
    },
  };

  async function slot(): Promise<number> {
    const started = Date.now();
    for (;;) {
      const taken = await store.take(connectionId, budget);
      if (taken.granted) return taken.token;
      await watch(taken.refusals, taken.nowMs);
      if (Date.now() - started + taken.waitMs > (gate.maxWaitMs ?? MAX_WAIT_IN_JOB_MS)) {
        const why = taken.pausedUntilMs !== null && taken.pausedUntilMs > Date.now() ? 'paused by its rate limit' : 'at its request budget';
        throw new CrmError('rate_limited', `${crmName} connection ${connectionId} is ${why}: next request in ${Math.ceil(taken.waitMs / 1000)} s`, {
          retryAfterMs: taken.waitMs,
          throttled: true,
        });
      }
      await new Promise((resolve) => setTimeout(resolve, taken.waitMs));
    }
  }
}
