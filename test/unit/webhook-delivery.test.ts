import { describe, expect, it } from 'vitest';
import type { AttemptResult } from '../../src/domain/forwarding.js';
import {
  classifyWebhookAttempt,
  DISABLED_REASON,
  endpointAfter,
  MAX_CONSECUTIVE_DEAD,
  tallyOutcomes,
  type EndpointTally,
} from '../../src/domain/webhook-delivery.js';

const answer = (status: number, body = '', retryAfterMs?: number): AttemptResult => ({ kind: 'answer', status, body: Buffer.from(body), retryAfterMs });
const timeout = { kind: 'failure', code: 'timeout', message: 'POST https://x.test timed out after 15000 ms' } satisfies AttemptResult;

// Seconds, as the real schedule is written: three retries, so four attempts in all.
const schedule = [5, 60, 300];
const MID = 0.5; // no jitter: 0.8 + 0.4 * 0.5 = 1

describe('classifyWebhookAttempt', () => {
  it.each([200, 204, 299])('counts %i as a success and keeps the head of the answer', (status) => {
    expect(classifyWebhookAttempt(answer(status, 'thanks'), 1, schedule, MID)).toEqual({
      status: 'SUCCEEDED',
      httpStatus: status,
      error: null,
      responseExcerpt: 'thanks',
      retryInMs: null,
      gone: false,
    });
  });

  it('ends the delivery at a 410 Gone and marks the endpoint gone, even on the first attempt', () => {
    expect(classifyWebhookAttempt(answer(410, 'bye'), 1, schedule, MID)).toEqual({
      status: 'DEAD',
      httpStatus: 410,
      error: 'HTTP 410 Gone: the endpoint was disabled',
      responseExcerpt: 'bye',
      retryInMs: null,
      gone: true,
    });
  });

  it.each([500, 404])('tries a %i again after the schedule step', (status) => {
    expect(classifyWebhookAttempt(answer(status, 'oops'), 1, schedule, MID)).toEqual({
      status: 'PENDING',
      httpStatus: status,
      error: `HTTP ${status} from the endpoint`,
      responseExcerpt: 'oops',
      retryInMs: 5_000,
      gone: false,
    });
  });

  it('tries a redirect again (it is not followed) and says to register the final URL', () => {
    const outcome = classifyWebhookAttempt(answer(301), 2, schedule, MID);
    expect(outcome).toMatchObject({ status: 'PENDING', httpStatus: 301, retryInMs: 60_000, gone: false, responseExcerpt: '' });
    expect(outcome.error).toBe('HTTP 301: redirects are not followed (register the final URL)');
  });

  it('tries a timeout again, keeping its message and no HTTP status or answer', () => {
    expect(classifyWebhookAttempt(timeout, 3, schedule, MID)).toEqual({
      status: 'PENDING',
      httpStatus: null,
      error: 'POST https://x.test timed out after 15000 ms',
      responseExcerpt: null,
      retryInMs: 300_000,
      gone: false,
    });
  });

  it('jitters the wait by at most 20 % either way around the step', () => {
    // random 0 is the shortest wait, random close to 1 the longest: endpoints failing together do not retry in step.
    expect(classifyWebhookAttempt(answer(500), 2, schedule, 0).retryInMs).toBe(48_000);
    const longest = classifyWebhookAttempt(answer(500), 2, schedule, 0.999).retryInMs!;
    expect(longest).toBeGreaterThan(1.19 * 60_000);
    expect(longest).toBeLessThanOrEqual(1.2 * 60_000);
  });

  it.each([429, 503])("waits for a %i's Retry-After when it is longer than the step", (status) => {
    expect(classifyWebhookAttempt(answer(status, '', 120_000), 1, schedule, MID)).toMatchObject({ status: 'PENDING', retryInMs: 120_000 });
  });

  it('ignores Retry-After on other statuses (only 429 and 503 honour it)', () => {
    expect(classifyWebhookAttempt(answer(500, '', 120_000), 1, schedule, MID).retryInMs).toBe(5_000);
  });

  it('gives up once the schedule is spent: the last attempt is DEAD with no retry', () => {
    expect(classifyWebhookAttempt(answer(500, 'still down'), schedule.length + 1, schedule, MID)).toEqual({
      status: 'DEAD',
      httpStatus: 500,
      error: 'HTTP 500 from the endpoint',
      responseExcerpt: 'still down',
      retryInMs: null,
      gone: false,
    });
    // A Retry-After does not extend the schedule either.
    expect(classifyWebhookAttempt(answer(429, '', 60_000), schedule.length + 1, schedule, MID)).toMatchObject({ status: 'DEAD', retryInMs: null });
    expect(classifyWebhookAttempt(timeout, schedule.length + 1, schedule, MID)).toMatchObject({ status: 'DEAD', retryInMs: null });
  });

  it('keeps at most 1 KB of the answer', () => {
    const big = 'z'.repeat(5_000);
    expect(classifyWebhookAttempt(answer(200, big), 1, schedule, MID).responseExcerpt).toBe('z'.repeat(1024));
    expect(classifyWebhookAttempt(answer(500, big), 1, schedule, MID).responseExcerpt).toBe('z'.repeat(1024));
  });
});

describe('tallyOutcomes', () => {
  const ok = { status: 'SUCCEEDED' as const, gone: false };
  const dead = { status: 'DEAD' as const, gone: false };
  const pending = { status: 'PENDING' as const, gone: false };
  const gone = { status: 'DEAD' as const, gone: true };

  it('adds DEAD outcomes to the count when nothing succeeded', () => {
    expect(tallyOutcomes([dead, dead])).toEqual({ reset: false, deadAfter: 2, gone: false });
  });

  it('resets on a success and counts only the DEAD ones after the last success', () => {
    expect(tallyOutcomes([dead, dead, ok, dead])).toEqual({ reset: true, deadAfter: 1, gone: false });
    expect(tallyOutcomes([dead, ok])).toEqual({ reset: true, deadAfter: 0, gone: false });
  });

  it('ignores PENDING outcomes: the delivery is not over yet', () => {
    expect(tallyOutcomes([pending, pending, dead])).toEqual({ reset: false, deadAfter: 1, gone: false });
    expect(tallyOutcomes([pending])).toEqual({ reset: false, deadAfter: 0, gone: false });
  });

  it('says gone when one outcome was a 410', () => {
    expect(tallyOutcomes([dead, gone])).toEqual({ reset: false, deadAfter: 2, gone: true });
  });
});

describe('endpointAfter', () => {
  const nothing: EndpointTally = { reset: false, deadAfter: 0, gone: false };
  const deads = (n: number): EndpointTally => ({ reset: false, deadAfter: n, gone: false });

  it(`keeps the endpoint at ${MAX_CONSECUTIVE_DEAD - 1} DEAD deliveries in a row`, () => {
    expect(endpointAfter({ consecutiveDead: MAX_CONSECUTIVE_DEAD - 2, isActive: true }, deads(1))).toEqual({ consecutiveDead: 19, disable: null });
  });

  it(`disables the endpoint at ${MAX_CONSECUTIVE_DEAD} DEAD deliveries in a row`, () => {
    expect(MAX_CONSECUTIVE_DEAD).toBe(20);
    expect(endpointAfter({ consecutiveDead: 19, isActive: true }, deads(1))).toEqual({ consecutiveDead: 20, disable: DISABLED_REASON.dead });
    expect(DISABLED_REASON.dead).toBe('20 consecutive deliveries failed every attempt');
  });

  it('starts the count again after a success', () => {
    expect(endpointAfter({ consecutiveDead: 19, isActive: true }, { reset: true, deadAfter: 3, gone: false })).toEqual({ consecutiveDead: 3, disable: null });
    expect(endpointAfter({ consecutiveDead: 19, isActive: true }, tallyOutcomes([{ status: 'SUCCEEDED', gone: false }]))).toEqual({
      consecutiveDead: 0,
      disable: null,
    });
  });

  it('leaves the count as it was when nothing ended', () => {
    expect(endpointAfter({ consecutiveDead: 7, isActive: true }, nothing)).toEqual({ consecutiveDead: 7, disable: null });
  });

  it('disables the endpoint at once on a 410 Gone', () => {
    expect(endpointAfter({ consecutiveDead: 0, isActive: true }, { reset: false, deadAfter: 1, gone: true })).toEqual({
      consecutiveDead: 1,
      disable: DISABLED_REASON.gone,
    });
  });

  it('never disables an inactive endpoint again, though it keeps counting', () => {
    expect(endpointAfter({ consecutiveDead: 25, isActive: false }, deads(1))).toEqual({ consecutiveDead: 26, disable: null });
    expect(endpointAfter({ consecutiveDead: 0, isActive: false }, { reset: false, deadAfter: 1, gone: true })).toEqual({ consecutiveDead: 1, disable: null });
  });
});
