import { describe, expect, it } from 'vitest';
import { CRMS } from '../../src/connectors/crm/registry.js';
import {
  applyOutcomes,
  FAILING_AFTER,
  nextPipelineHealth,
  pipelineKey,
  REMEDIATION,
  type FailureReason,
  type PipelineHealthState,
  type PipelineRef,
} from '../../src/domain/pipeline-health.js';

const healthy: PipelineHealthState = { state: 'healthy', consecutiveErrors: 0 };

describe('nextPipelineHealth', () => {
  it.each<FailureReason>(['crm_authentication_failed', 'crm_not_connected', 'sync_disabled', 'crm_not_supported', 'crm_rate_limited'])(
    'fails at once on %s',
    (reason) => {
      expect(nextPipelineHealth(healthy, { written: false, reason })).toEqual({ next: { state: 'failing', consecutiveErrors: 1 }, event: 'sync.failed' });
    },
  );

  it.each<FailureReason>(['crm_rejected_writes', 'crm_unavailable', 'payloads_unreadable'])(
    `fails on the ${FAILING_AFTER}th %s in a row, not before`,
    (reason) => {
      let state = healthy;
      for (let i = 1; i < FAILING_AFTER; i += 1) {
        const change = nextPipelineHealth(state, { written: false, reason });
        expect(change).toEqual({ next: { state: 'healthy', consecutiveErrors: i }, event: null });
        state = change.next;
      }
      expect(nextPipelineHealth(state, { written: false, reason })).toEqual({
        next: { state: 'failing', consecutiveErrors: FAILING_AFTER },
        event: 'sync.failed',
      });
    },
  );

  it('announces a failure once, and a recovery on the first written sync', () => {
    const failing = { state: 'failing' as const, consecutiveErrors: 7 };
    expect(nextPipelineHealth(failing, { written: false, reason: 'crm_authentication_failed' })).toEqual({
      next: { state: 'failing', consecutiveErrors: 8 },
      event: null,
    });
    expect(nextPipelineHealth(failing, { written: true })).toEqual({ next: { state: 'healthy', consecutiveErrors: 0 }, event: 'sync.recovered' });
  });

  it('a written sync resets the count of errors', () => {
    expect(nextPipelineHealth({ state: 'healthy', consecutiveErrors: 4 }, { written: true })).toEqual({ next: healthy, event: null });
  });

  it('pairs every reason with a remediation', () => {
    for (const text of Object.values(REMEDIATION)) expect(text.length).toBeGreaterThan(20);
  });

  it('names every CRM the service writes into where a CRM is not one', () => {
    for (const { name } of Object.values(CRMS)) expect(REMEDIATION.crm_not_supported).toContain(` ${name}`);
  });
});

describe('applyOutcomes', () => {
  const a: PipelineRef = { accountId: 1, sourceId: 10, connectionId: 100, platform: 'smartlead', crm: 'HUBSPOT' };
  const b: PipelineRef = { accountId: 1, sourceId: 11, connectionId: 100, platform: 'lemlist', crm: 'HUBSPOT' };
  const rejected = { written: false, reason: 'crm_rejected_writes' } as const;

  it('applies a batch in order: a burst of errors counts each one and announces the failure once, naming the request that caused it', () => {
    const current = new Map([[pipelineKey(a), { state: 'healthy' as const, consecutiveErrors: 3 }]]);
    const { updates, transitions } = applyOutcomes(current, [
      { pipeline: a, result: rejected, requestId: 71 },
      { pipeline: a, result: rejected, requestId: 72 },
      { pipeline: a, result: rejected, requestId: 73 },
    ]);
    expect(updates).toEqual([
      { pipeline: a, next: { state: 'failing', consecutiveErrors: 6 }, lastReason: 'crm_rejected_writes', written: false, changed: true },
    ]);
    expect(transitions).toEqual([
      {
        pipeline: a,
        requestId: 72,
        type: 'sync.failed',
        summary: 'Syncs from smartlead source 10 to HUBSPOT connection 100 are failing (crm_rejected_writes)',
        data: {
          connectionId: 100,
          crm: 'HUBSPOT',
          sourceId: 10,
          sourcePlatform: 'smartlead',
          reason: 'crm_rejected_writes',
          remediation: REMEDIATION.crm_rejected_writes,
        },
      },
    ]);
  });

  it('keeps pipelines apart, starts a pipeline without a row healthy, and announces a recovery without a reason', () => {
    const current = new Map([[pipelineKey(a), { state: 'failing' as const, consecutiveErrors: 9 }]]);
    const { updates, transitions } = applyOutcomes(current, [
      { pipeline: b, result: { written: false, reason: 'sync_disabled' } },
      { pipeline: a, result: { written: true } },
      { pipeline: a, result: rejected },
    ]);
    expect(updates).toEqual([
      { pipeline: b, next: { state: 'failing', consecutiveErrors: 1 }, lastReason: 'sync_disabled', written: false, changed: true },
      { pipeline: a, next: { state: 'healthy', consecutiveErrors: 1 }, lastReason: 'crm_rejected_writes', written: true, changed: true },
    ]);
    expect(transitions.map((t) => [t.type, t.pipeline.sourceId])).toEqual([
      ['sync.failed', 11],
      ['sync.recovered', 10],
    ]);
    expect(transitions[1]!.data).toEqual({ connectionId: 100, crm: 'HUBSPOT', sourceId: 10, sourcePlatform: 'smartlead' });
  });
});
