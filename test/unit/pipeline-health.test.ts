import { describe, expect, it } from 'vitest';
import { FAILING_AFTER, nextPipelineHealth, REMEDIATION, type FailureReason, type PipelineHealthState } from '../../src/domain/pipeline-health.js';

const healthy: PipelineHealthState = { state: 'healthy', consecutiveErrors: 0 };

describe('nextPipelineHealth', () => {
  it.each<FailureReason>(['crm_authentication_failed', 'crm_not_connected', 'sync_disabled', 'crm_not_supported'])('fails at once on %s', (reason) => {
    expect(nextPipelineHealth(healthy, { written: false, reason })).toEqual({ next: { state: 'failing', consecutiveErrors: 1 }, event: 'sync.failed' });
  });

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
});
