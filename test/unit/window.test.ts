import { describe, expect, it } from 'vitest';
import { checkLimit, checkWindow } from '../../src/domain/window.js';

describe('checkWindow', () => {
  it('accepts exactly 31 days, a bare date and an offset', () => {
    expect(checkWindow('2026-01-01T00:00:00Z', '2026-02-01T00:00:00Z')).toMatchObject({ ok: true });
    expect(checkWindow('2026-01-01', '2026-01-02T00:00:00+02:00')).toMatchObject({ ok: true });
  });

  it.each([
    ['2025-02-29T00:00:00Z', 'from must be an ISO 8601 date-time, such as 2026-11-01T00:00:00Z'],
    ['2024-02-30T00:00:00Z', 'from must be an ISO 8601 date-time, such as 2026-11-01T00:00:00Z'],
    ['yesterday', 'from must be an ISO 8601 date-time, such as 2026-11-01T00:00:00Z'],
    ['0000-01-01T00:00:00Z', 'from must be an ISO 8601 date-time, such as 2026-11-01T00:00:00Z'],
    ['1969-12-31T23:59:59Z', 'from must be an ISO 8601 date-time, such as 2026-11-01T00:00:00Z'],
    ['1970-01-01T00:30:00+01:00', 'from must be an ISO 8601 date-time, such as 2026-11-01T00:00:00Z'],
    [undefined, 'from is required (an ISO 8601 date-time)'],
  ])('rejects from=%s', (from, message) => {
    expect(checkWindow(from, '2025-03-05T00:00:00Z')).toEqual({ ok: false, problems: [message] });
  });

  it('accepts February 29th in a leap year', () => {
    expect(checkWindow('2024-02-29T00:00:00Z', '2024-03-01T00:00:00Z')).toMatchObject({ ok: true });
  });

  it('rounds a finer-than-millisecond from up and to down, never widening the window', () => {
    const checked = checkWindow('2026-01-01T00:00:00.1231Z', '2026-01-02T00:00:00.9999Z');
    expect(checked).toEqual({ ok: true, value: { from: new Date('2026-01-01T00:00:00.124Z'), to: new Date('2026-01-02T00:00:00.999Z') } });
  });

  it('reports order and span problems', () => {
    expect(checkWindow('2026-01-02T00:00:00Z', '2026-01-01T00:00:00Z')).toEqual({ ok: false, problems: ['from must not be after to'] });
    expect(checkWindow('2026-01-01T00:00:00Z', '2026-02-01T00:00:00.001Z')).toEqual({
      ok: false,
      problems: ['The from/to window must not span more than 31 days'],
    });
  });
});

describe('checkLimit', () => {
  it.each([
    [undefined, 100],
    ['1', 1],
    ['500', 500],
    [250, 250],
  ])('accepts %s', (limit, value) => {
    expect(checkLimit(limit)).toEqual({ ok: true, value });
  });
  it.each(['0', '501', 'abc', '-1', '1.5'])('rejects %s', (limit) => {
    expect(checkLimit(limit)).toMatchObject({ ok: false });
  });
});
