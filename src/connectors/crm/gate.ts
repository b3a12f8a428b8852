import type { CrmBudgetStore } from '../../db/crm-budget-store.js';
import { pauseFromAnswer, type CrmBudget } from '../../domain/crm-budget.js';
import { retryAfterMs, type HttpClient, type HttpResponse } from '../http/client.js';
import { CrmError } from './errors.js';

/** The longest a request waits in its job for a slot; past it, the job hands the wait to the queue. */
const MAX_WAIT_IN_JOB_MS = 1_000;

/**
 * The HTTP client of one connection's CRM calls, held to its budget (src/domain/crm-budget.ts) through
 * the shared store: each request takes a slot first (waiting up to a second in the job, else throwing a
 * `rate_limited` CrmError marked `throttled`, so the job is rescheduled for when a slot frees and its
 * worker slot goes to other connections), and each answer that says the account's limit is reached
 * pauses the connection for every process. A 429 is not retried here: its pause is the retry's schedule.
 */
export function gatedHttp(http: HttpClient, gate: { store: CrmBudgetStore; connectionId: number; budget: CrmBudget; crmName: string }): HttpClient {
  const { store, connectionId, budget, crmName } = gate;
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
      );
      if (pause) await store.pause(connectionId, pause);
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
      if (Date.now() - started + taken.waitMs > MAX_WAIT_IN_JOB_MS) {
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
