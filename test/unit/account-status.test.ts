import { describe, expect, it } from 'vitest';
import { BACKFILL_WARNING_AFTER, deriveAccountStatus, type ConnectionSnapshot } from '../../src/domain/account-status.js';

const connection = (over: Partial<ConnectionSnapshot> = {}): ConnectionSnapshot => ({
  id: 1,
  crm: 'HUBSPOT',
  status: 'ready',
  organizationId: null,
  organizationDomain: null,
  syncEnabled: true,
  sourcePlatforms: ['emailbison'],
  forwardingUrls: ['https://hooks.acme.test'],
  forwardingEventTypes: [],
  boundReplyRelayCount: 0,
  blocklists: [{ isEnabled: true, lastError: null, lastFetchedAt: null, lastAttemptedAt: null }],
  backfills: [],
  ...over,
});
const capabilities = { canUserAccount: true, canBlockList: true };
const codes = (snapshot: ConnectionSnapshot) => deriveAccountStatus([snapshot], capabilities, 'https://docs.test').warnings.map((w) => w.code);

describe('the backfill warning', () => {
  it(`comes from the ${BACKFILL_WARNING_AFTER}rd failed round in a row of a source, and never blocks readiness`, () => {
    expect(codes(connection({ backfills: [{ failures: BACKFILL_WARNING_AFTER - 1, paused: false }] }))).toEqual([]);
    const status = deriveAccountStatus(
      [
        connection({
          backfills: [
            { failures: 0, paused: false },
            { failures: BACKFILL_WARNING_AFTER, paused: false },
          ],
        }),
      ],
      capabilities,
      'https://docs.test',
    );
    expect(status.warnings).toEqual([
      {
        code: 'backfill_failing',
        connectionId: 1,
        crm: 'HUBSPOT',
        message: expect.stringContaining('backfill keeps failing'),
        remediation: expect.stringContaining('API key'),
        docUrl: 'https://docs.test#backfill-failing',
      },
    ]);
    expect(status.ready).toBe(true);
  });

  it('is not given for a source staff paused', () => {
    expect(codes(connection({ backfills: [{ failures: 10, paused: true }] }))).toEqual([]);
  });
});
