import { responseExcerpt, type AttemptResult } from './forwarding.js';
import { retryDelayMs } from './retry-schedule.js';

/**
 * The rules of delivering a platform event to a webhook endpoint (src/jobs/webhook_deliveries__send.ts
 * does the I/O), after Svix: what an attempt's answer means, when the delivery is tried again, and when
 * its endpoint is disabled. Pure.
 */

/** DEAD deliveries in a row that disable an endpoint (the spec's limit). */
export const MAX_CONSECUTIVE_DEAD = 20;

/** Why an endpoint was disabled, as its `disabledReason` says. */
export const DISABLED_REASON = {
  dead: `${MAX_CONSECUTIVE_DEAD} consecutive deliveries failed every attempt`,
  gone: 'The endpoint answered 410 Gone',
  customer: 'Disabled through the API',
} as const;

/** What one attempt made of its delivery. */
export interface WebhookAttemptOutcome {
  /** PENDING: another attempt follows at `retryInMs`. */
  status: 'SUCCEEDED' | 'PENDING' | 'DEAD';
  httpStatus: number | null;
  error: string | null;
  /** The head of the endpoint's answer (at most 1 KB); null without an answer. */
  responseExcerpt: string | null;
  retryInMs: number | null;
  /** A 410 Gone: the endpoint is disabled at once (Standard Webhooks). */
  gone: boolean;
}

/**
 * Classifies attempt number `attempt` (1 = the first) of a delivery. A 2xx is a success. A 410 ends
 * the delivery and disables its endpoint. Anything else (other statuses, redirects, which are not
 * followed, timeouts, refused addresses, broken connections) is tried again after the schedule's next
 * wait, jittered (`random` in [0, 1)), and never sooner than a 429's or 503's `Retry-After`; once the
 * schedule is spent, the delivery is DEAD.
 */
export function classifyWebhookAttempt(result: AttemptResult, attempt: number, schedule: readonly number[], random: number): WebhookAttemptOutcome {
  const answer = result.kind === 'answer' ? result : null;
  const httpStatus = answer?.status ?? null;
  const excerpt = answer ? responseExcerpt(answer.body) : null;
  if (httpStatus !== null && httpStatus >= 200 && httpStatus < 300) {
    return { status: 'SUCCEEDED', httpStatus, error: null, responseExcerpt: excerpt, retryInMs: null, gone: false };
  }
  const error = failureMessage(result);
  if (httpStatus === 410) return { status: 'DEAD', httpStatus, error, responseExcerpt: excerpt, retryInMs: null, gone: true };
  const asked = answer && (answer.status === 429 || answer.status === 503) ? answer.retryAfterMs : undefined;
  const wait = retryDelayMs(attempt, schedule, asked, random);
  return { status: wait === null ? 'DEAD' : 'PENDING', httpStatus, error, responseExcerpt: excerpt, retryInMs: wait, gone: false };
}

function failureMessage(result: AttemptResult): string {
  if (result.kind === 'failure') return result.message;
  if (result.status >= 300 && result.status < 400) return `HTTP ${result.status}: redirects are not followed (register the final URL)`;
  if (result.status === 410) return 'HTTP 410 Gone: the endpoint was disabled';
  return `HTTP ${result.status} from the endpoint`;
}

/**
 * What a run of final outcomes (in the order they were recorded) does to an endpoint's count of DEAD
 * deliveries in a row: a success resets it (`reset`, then `deadAfter` counts the DEAD ones after the
 * last success), otherwise `deadAfter` adds to it; `gone` when one was a 410.
 */
export interface EndpointTally {
  reset: boolean;
  deadAfter: number;
  gone: boolean;
}

export function tallyOutcomes(outcomes: ReadonlyArray<Pick<WebhookAttemptOutcome, 'status' | 'gone'>>): EndpointTally {
  const tally: EndpointTally = { reset: false, deadAfter: 0, gone: false };
  for (const outcome of outcomes) {
    if (outcome.status === 'SUCCEEDED') {
      tally.reset = true;
      tally.deadAfter = 0;
    } else if (outcome.status === 'DEAD') {
      tally.deadAfter += 1;
      if (outcome.gone) tally.gone = true;
    }
  }
  return tally;
}

/**
 * An endpoint's state after a tally: its new count, and the reason it is disabled now (null when it
 * stays as it was). A disabled endpoint is not disabled again.
 */
export function endpointAfter(
  current: { consecutiveDead: number; isActive: boolean },
  tally: EndpointTally,
): { consecutiveDead: number; disable: string | null } {
  const consecutiveDead = (tally.reset ? 0 : current.consecutiveDead) + tally.deadAfter;
  if (!current.isActive) return { consecutiveDead, disable: null };
  if (tally.gone) return { consecutiveDead, disable: DISABLED_REASON.gone };
  return { consecutiveDead, disable: consecutiveDead >= MAX_CONSECUTIVE_DEAD ? DISABLED_REASON.dead : null };
}
