import { describe, expect, it } from 'vitest';
import { bindingForwards, classifyAttempt, responseExcerpt } from '../../src/domain/forwarding.js';
import { MAX_RETRY_AFTER_MS, retryDelayMs } from '../../src/domain/retry-schedule.js';

const answer = (status: number, body = '', retryAfterMs?: number) => ({ kind: 'answer' as const, status, body: Buffer.from(body), retryAfterMs });

describe('bindingForwards', () => {
  it('forwards every type, and an unreadable payload, through an empty list', () => {
    expect(bindingForwards([], { ok: true, eventType: 'EMAIL_OPEN' })).toBe(true);
    expect(bindingForwards([], { ok: false })).toBe(true);
  });

  it('forwards the listed types of readable events only', () => {
    expect(bindingForwards(['EMAIL_REPLY'], { ok: true, eventType: 'EMAIL_REPLY' })).toBe(true);
    expect(bindingForwards(['EMAIL_REPLY'], { ok: true, eventType: 'EMAIL_SENT' })).toBe(false);
    expect(bindingForwards(['EMAIL_REPLY'], { ok: false })).toBe(false);
  });
});

describe('classifyAttempt', () => {
  it.each([200, 201, 204, 299])('counts %i as a success', (status) => {
    expect(classifyAttempt(answer(status, 'ignored'))).toEqual({ status: 'success', httpStatus: status, error: null, retryable: false });
  });

  it.each([408, 429, 500, 502, 503, 599])('retries %i, with the answer kept in the error', (status) => {
    expect(classifyAttempt(answer(status, 'busy'))).toEqual({
      status: 'error',
      httpStatus: status,
      error: { message: `HTTP ${status} from the destination`, body: 'busy' },
      retryable: true,
    });
  });

  it.each([400, 401, 403, 404, 410, 422])('does not retry %i', (status) => {
    expect(classifyAttempt(answer(status))).toEqual({
      status: 'error',
      httpStatus: status,
      error: { message: `HTTP ${status} from the destination` },
      retryable: false,
    });
  });

  it('does not follow or retry a redirect', () => {
    expect(classifyAttempt(answer(301))).toMatchObject({
      status: 'error',
      httpStatus: 301,
      retryable: false,
      error: { message: expect.stringContaining('redirects are not followed') },
    });
  });

  it("keeps the destination's Retry-After for answers worth retrying only", () => {
    expect(classifyAttempt(answer(429, '', 30_000)).retryAfterMs).toBe(30_000);
    expect(classifyAttempt(answer(404, '', 30_000)).retryAfterMs).toBeUndefined();
  });

  it('retries an answer that never came, but not a refused address or URL', () => {
    for (const code of ['timeout', 'network', 'too_large', 'aborted'] as const) {
      expect(classifyAttempt({ kind: 'failure', code, message: 'm' })).toEqual({ status: 'error', httpStatus: null, error: { message: 'm' }, retryable: true });
    }
    for (const code of ['blocked', 'invalid_url'] as const) expect(classifyAttempt({ kind: 'failure', code, message: 'm' }).retryable).toBe(false);
  });
});

describe('retryDelayMs', () => {
  const schedule = [5, 60, 300];

  it('follows the schedule, jittered by at most 20 % either way', () => {
    expect(retryDelayMs(1, schedule, undefined, 0)).toBe(4_000);
    expect(retryDelayMs(1, schedule, undefined, 0.5)).toBe(5_000);
    expect(retryDelayMs(2, schedule, undefined, 0.999999)).toBe(72_000);
    expect(retryDelayMs(3, schedule, undefined, 0.5)).toBe(300_000);
  });

  it('ends when the schedule is spent', () => {
    expect(retryDelayMs(4, schedule, undefined, 0.5)).toBeNull();
    expect(retryDelayMs(1, [], undefined, 0.5)).toBeNull();
  });

  it("never retries before the destination's Retry-After, held to six hours", () => {
    expect(retryDelayMs(1, schedule, 120_000, 0.5)).toBe(120_000);
    expect(retryDelayMs(1, schedule, 1_000, 0.5)).toBe(5_000);
    expect(retryDelayMs(1, schedule, 10 * 86_400_000, 0.5)).toBe(MAX_RETRY_AFTER_MS);
  });
});

describe('responseExcerpt', () => {
  it('keeps at most 1 KB, cut on a character boundary, storable (a NUL becomes U+FFFD)', () => {
    expect(responseExcerpt(Buffer.from('a\u0000b'))).toBe('a\ufffdb');
    const long = Buffer.from(`${'x'.repeat(1023)}é and more`);
    expect(responseExcerpt(long)).toBe('x'.repeat(1023));
    expect(Buffer.byteLength(responseExcerpt(Buffer.from('y'.repeat(5000))))).toBe(1024);
  });
});
