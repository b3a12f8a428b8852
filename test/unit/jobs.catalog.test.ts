import { describe, expect, it } from 'vitest';
import { CATALOG, tasksByHealthCheck } from '../../src/jobs/catalog.js';
import { addJobsSql } from '../../src/jobs/enqueue.js';
import { syncsDrain } from '../../src/jobs/syncs__drain.js';
import { syncsRun } from '../../src/jobs/syncs__run.js';
import { blocklistsFetch } from '../../src/jobs/blocklists__fetch.js';
import { blocklistsPush } from '../../src/jobs/blocklists__push.js';
import { BLOCKLIST_CRON, blocklistsSchedule } from '../../src/jobs/blocklists__schedule.js';
import { deliveriesSend } from '../../src/jobs/deliveries__send.js';
import { relayExecutionsSend } from '../../src/jobs/relay_executions__send.js';
import { replyRelaysSchedule } from '../../src/jobs/reply_relays__schedule.js';
import { syncsBulkRetry } from '../../src/jobs/syncs__bulk_retry.js';
import { HISTORY_CRON, historyMaintain } from '../../src/jobs/history__maintain.js';
import { webhookDeliveriesSend } from '../../src/jobs/webhook_deliveries__send.js';
import { backfillsRun } from '../../src/jobs/backfills__run.js';
import { BACKFILL_CRON, backfillsSchedule } from '../../src/jobs/backfills__schedule.js';
import { sql } from '../../src/db/sql.js';

describe('the job catalog', () => {
  it('names every task once, as <table>__<action>', () => {
    const identifiers = CATALOG.map((entry) => entry.identifier);
    expect(new Set(identifiers).size).toBe(identifiers.length);
    for (const identifier of identifiers) expect(identifier).toMatch(/^[a-z][a-z_]*[a-z]__[a-z][a-z_]*[a-z]$/);
  });

  it('gives /health/ready the tasks of each worker check', () => {
    expect(tasksByHealthCheck()).toEqual(
      new Map([
        ['destinations_activities', [{ identifier: 'syncs__drain', lane: 'jobs' }]],
        ['destinations_forwarding', [{ identifier: 'deliveries__send', lane: 'loops' }]],
        [
          'destinations_reply_relays',
          [
            { identifier: 'reply_relays__schedule', lane: 'jobs' },
            { identifier: 'relay_executions__send', lane: 'jobs' },
          ],
        ],
        [
          'destinations_blocklists',
          [
            { identifier: 'blocklists__fetch', lane: 'loops' },
            { identifier: 'blocklists__push', lane: 'loops' },
          ],
        ],
      ]),
    );
  });
});

describe('failures no retry changes (issue 20)', () => {
  it('are recorded as an outcome by every task but those bounded another way (outbox loops and sync drains per item, the minute and hour schedules)', () => {
    const tasks = [
      syncsDrain,
      deliveriesSend,
      replyRelaysSchedule,
      relayExecutionsSend,
      webhookDeliveriesSend,
      blocklistsSchedule,
      blocklistsFetch,
      blocklistsPush,
      syncsBulkRetry,
      historyMaintain,
      backfillsSchedule,
      backfillsRun,
      syncsRun,
    ];
    expect(tasks.map((t) => t.identifier).sort()).toEqual(CATALOG.map((e) => e.identifier).sort());
    expect(tasks.filter((t) => t.recordUnrecoverable === null).map((t) => t.identifier)).toEqual([
      'syncs__drain',
      'deliveries__send',
      'webhook_deliveries__send',
      'blocklists__schedule',
      'history__maintain',
      'backfills__schedule',
      'syncs__run',
    ]);
  });
});

describe('the backfill schedule', () => {
  it('is a crontab item running backfills__schedule every minute, never backfilled by graphile-worker', () => {
    expect(BACKFILL_CRON).toEqual([
      { task: 'backfills__schedule', match: '* * * * *', identifier: 'backfills-schedule', options: { backfillPeriod: 0, maxAttempts: 1 } },
    ]);
  });
});

describe('the history schedule', () => {
  it('is a crontab item running history__maintain every hour, never backfilled', () => {
    expect(HISTORY_CRON).toEqual([
      { task: 'history__maintain', match: '17 * * * *', identifier: 'history-maintain', options: { backfillPeriod: 0, maxAttempts: 1 } },
    ]);
  });
});

describe('the block list schedule', () => {
  it('is a crontab item running blocklists__schedule every minute, never backfilled', () => {
    expect(BLOCKLIST_CRON).toEqual([
      { task: 'blocklists__schedule', match: '* * * * *', identifier: 'blocklists-schedule', options: { backfillPeriod: 0, maxAttempts: 1 } },
    ]);
  });
});

describe('syncs__drain payload', () => {
  it.each([[{ connectionId: 1 }], [{ connectionId: 2_147_483_647 }]])('accepts %j', (payload) => {
    expect(syncsDrain.payload.safeParse(payload).success).toBe(true);
  });

  it.each([[{}], [{ connectionId: 0 }], [{ connectionId: 1.5 }], [{ connectionId: '7' }], [{ connectionId: 2_147_483_648 }], [null], [[1]]])(
    'refuses %j',
    (payload) => {
      expect(syncsDrain.payload.safeParse(payload).success).toBe(false);
    },
  );
});

describe('addJobsSql', () => {
  it('spells the task, its payload fields and defaults as bound values, never inline', () => {
    const statement = addJobsSql(syncsDrain, { from: sql`matched m`, payload: { connectionId: sql`m.connection_id` } });
    expect(statement.text).not.toContain('syncs__drain');
    expect(statement.text).toContain('json_build_object($2::text, m.connection_id)');
    expect(statement.text).toContain('FROM matched m');
    expect(statement.values).toEqual(['syncs__drain', 'connectionId', 25, false]);
  });
});
