import { describe, expect, it } from 'vitest';
import { CRMS } from '../../src/connectors/crm/registry.js';
import {
  budgetFor,
  LEASE_EXPIRY_MS,
  pauseFromAnswer,
  REFUSAL_RUN_GAP_MS,
  REFUSALS_WARNING_AFTER_MS,
  refusalsOverdue,
  waitForSlot,
} from '../../src/domain/crm-budget.js';

const T = 1_700_000_000_000;
const window = { kind: 'window', requests: 3, windowMs: 10_000 } as const;
const state = (hits: number[] = [], leases: number[] = [], pausedUntilMs: number | null = null) => ({ hits, leases, pausedUntilMs });

describe('budgetFor', () => {
  const window = { kind: 'window', windowMs: 10_250, overrideKey: 'requestsPer10s' } as const;
  const concurrency = { kind: 'concurrency', overrideKey: 'maxConcurrency' } as const;

  it("takes the connection's own limit, else the one for every connection", () => {
    expect(budgetFor(window, { requestsPer10s: 190 }, 100)).toEqual({ kind: 'window', requests: 190, windowMs: 10_250 });
    expect(budgetFor(window, null, 100)).toEqual({ kind: 'window', requests: 100, windowMs: 10_250 });
    expect(budgetFor(window, { maxConcurrency: 3 }, 150)).toEqual({ kind: 'window', requests: 150, windowMs: 10_250 });
    expect(budgetFor(concurrency, { maxConcurrency: 3 }, 10)).toEqual({ kind: 'concurrency', max: 3 });
    expect(budgetFor(concurrency, { maxConcurrency: -1 }, 10)).toEqual({ kind: 'concurrency', max: 10 });
    // A budget of 0 for every connection: none for those that name none.
    expect(budgetFor(window, null, 0)).toBeNull();
    expect(budgetFor(concurrency, {}, 0)).toBeNull();
    expect(budgetFor(window, { requestsPer10s: 50 }, 0)).toMatchObject({ requests: 50 });
  });

  it("is each CRM's own, from its definition", () => {
    expect(budgetFor(CRMS.HUBSPOT.budget, null, CRMS.HUBSPOT.budget.default)).toEqual({ kind: 'window', requests: 100, windowMs: 10_250 });
    expect(budgetFor(CRMS.SALESFORCE.budget, null, CRMS.SALESFORCE.budget.default)).toEqual({ kind: 'concurrency', max: 10 });
  });
});

describe('waitForSlot', () => {
  it('lets a request go at once while the window has room', () => {
    expect(waitForSlot(state([T - 9_000, T - 1_000]), window, T)).toBe(0);
    // Hits older than the window no longer count.
    expect(waitForSlot(state([T - 12_000, T - 11_000, T - 10_000, T - 1]), window, T)).toBe(0);
  });

  it('says when the oldest request of a full window leaves it', () => {
    expect(waitForSlot(state([T - 9_000, T - 5_000, T - 1_000]), window, T)).toBe(1_000);
    expect(waitForSlot(state([T - 9_500, T - 9_000, T - 5_000, T - 1_000]), window, T)).toBe(1_000);
  });

  it('holds everything until a pause ends, whichever is later', () => {
    expect(waitForSlot(state([], [], T + 3_000), window, T)).toBe(3_000);
    expect(waitForSlot(state([T - 9_000, T - 5_000, T - 1_000], [], T + 500), window, T)).toBe(1_000);
    expect(waitForSlot(state([], [], T - 1), window, T)).toBe(0);
  });

  it('counts leases for a concurrency budget, forgetting those a dead process left behind', () => {
    const budget = { kind: 'concurrency', max: 2 } as const;
    expect(waitForSlot(state([], [T - 10]), budget, T)).toBe(0);
    expect(waitForSlot(state([], [T - 10, T - 5]), budget, T)).toBeGreaterThan(0);
    expect(waitForSlot(state([], [T - LEASE_EXPIRY_MS - 1, T - 5]), budget, T)).toBe(0);
  });
});

describe('pauseFromAnswer', () => {
  const answer = (status: number, headers: Record<string, string> = {}, text = '') => ({ status, headers, text });
  const hubspot = CRMS.HUBSPOT.limits;
  const salesforce = CRMS.SALESFORCE.limits;

  it("pauses a 429 until its Retry-After, else the CRM's window", () => {
    expect(pauseFromAnswer(answer(429), 3_000, T, hubspot)).toMatchObject({ untilMs: T + 3_000, refused: true });
    expect(pauseFromAnswer(answer(429, { 'x-hubspot-ratelimit-interval-milliseconds': '1000' }), undefined, T, hubspot)).toMatchObject({ untilMs: T + 1_000 });
    expect(pauseFromAnswer(answer(429), undefined, T, hubspot)).toMatchObject({ untilMs: T + 10_000 });
    expect(pauseFromAnswer(answer(429), undefined, T, salesforce)).toMatchObject({ untilMs: T + 10_000, refused: true });
  });

  it("pauses a moment when HubSpot says the window is used up, and a minute on Salesforce's REQUEST_LIMIT_EXCEEDED", () => {
    // The window used up is the budget working, not a refusal: it never counts toward the 15-minute warning.
    expect(pauseFromAnswer(answer(201, { 'x-hubspot-ratelimit-remaining': '0' }), undefined, T, hubspot)).toMatchObject({ untilMs: T + 1_000, refused: false });
    const spent = answer(403, {}, '[{"errorCode":"REQUEST_LIMIT_EXCEEDED","message":"TotalRequests Limit exceeded."}]');
    expect(pauseFromAnswer(spent, undefined, T, salesforce)).toMatchObject({ untilMs: T + 60_000, refused: true });
    // Each CRM reads only its own signals.
    expect(pauseFromAnswer(spent, undefined, T, hubspot)).toBeNull();
    expect(pauseFromAnswer(answer(201, { 'x-hubspot-ratelimit-remaining': '0' }), undefined, T, salesforce)).toBeNull();
  });

  it('leaves other answers alone', () => {
    expect(pauseFromAnswer(answer(200, { 'x-hubspot-ratelimit-remaining': '5' }), undefined, T, hubspot)).toBeNull();
    expect(pauseFromAnswer(answer(500), 2_000, T, hubspot)).toBeNull();
    expect(pauseFromAnswer(answer(500), 2_000, T, salesforce)).toBeNull();
  });
});

describe('refusalsOverdue', () => {
  const run = (sinceAgo: number, untilAgo: number, warnedFor: number | null = null) => ({
    sinceMs: T - sinceAgo,
    untilMs: T - untilAgo,
    warnedForMs: warnedFor,
  });

  it('is due once a run of refusals still going has lasted 15 minutes', () => {
    expect(refusalsOverdue(run(REFUSALS_WARNING_AFTER_MS, -1_000), T)).toBe(true);
    expect(refusalsOverdue(run(REFUSALS_WARNING_AFTER_MS - 1, -1_000), T)).toBe(false);
    // The last pause ended, but less than the gap ago: the run goes on.
    expect(refusalsOverdue(run(REFUSALS_WARNING_AFTER_MS, REFUSAL_RUN_GAP_MS - 1), T)).toBe(true);
  });

  it('is not due for a run that ended, one already announced, or a connection never refused', () => {
    expect(refusalsOverdue(run(REFUSALS_WARNING_AFTER_MS * 2, REFUSAL_RUN_GAP_MS), T)).toBe(false);
    expect(refusalsOverdue(run(REFUSALS_WARNING_AFTER_MS, -1_000, T - REFUSALS_WARNING_AFTER_MS), T)).toBe(false);
    expect(refusalsOverdue({ sinceMs: null, untilMs: null, warnedForMs: null }, T)).toBe(false);
  });
});
