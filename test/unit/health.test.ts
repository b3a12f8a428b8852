import { describe, expect, it } from 'vitest';
import { HEALTH_SCHEMA_VERSION, healthHttpStatus, rollUpHealth, type CheckStatus, type HealthStatus } from '../../src/domain/health.js';

describe('rollUpHealth', () => {
  it.each<[string, Record<string, CheckStatus>, HealthStatus]>([
    ['no checks at all', {}, 'operational'],
    ['a single operational check', { database: 'operational' }, 'operational'],
    ['every check operational', { database: 'operational', queue: 'operational', sources: 'operational' }, 'operational'],
    ['one of two checks in outage', { database: 'operational', queue: 'outage' }, 'partial_outage'],
    ['one of three checks in outage', { database: 'outage', queue: 'operational', sources: 'operational' }, 'partial_outage'],
    ['two of three checks in outage', { database: 'outage', queue: 'outage', sources: 'operational' }, 'partial_outage'],
    ['the only check in outage', { sources: 'outage' }, 'major_outage'],
    ['every check in outage', { database: 'outage', queue: 'outage', sources: 'outage' }, 'major_outage'],
  ])('rolls up %s as %s', (_case, checks, expected) => {
    expect(rollUpHealth(checks).status).toBe(expected);
  });

  it('reports schema_version 3 and the checks it was given', () => {
    const checks: Record<string, CheckStatus> = { database: 'operational', queue: 'outage' };

    expect(rollUpHealth(checks)).toEqual({
      schema_version: 3,
      status: 'partial_outage',
      checks: { database: 'operational', queue: 'outage' },
    });
    expect(HEALTH_SCHEMA_VERSION).toBe(3);
  });
});

describe('healthHttpStatus', () => {
  it.each<[HealthStatus, 200 | 503]>([
    ['operational', 200],
    ['partial_outage', 200],
    ['major_outage', 503],
  ])('answers %s with HTTP %i', (status, expected) => {
    expect(healthHttpStatus({ schema_version: HEALTH_SCHEMA_VERSION, status, checks: {} })).toBe(expected);
  });

  it.each<[Record<string, CheckStatus>, 200 | 503]>([
    [{ database: 'operational', sources: 'operational' }, 200],
    [{ database: 'outage', sources: 'operational' }, 200],
    [{ database: 'outage', sources: 'outage' }, 503],
  ])('answers the rollup of %j with HTTP %i', (checks, expected) => {
    expect(healthHttpStatus(rollUpHealth(checks))).toBe(expected);
  });
});
