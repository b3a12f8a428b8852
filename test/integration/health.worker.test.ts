/**
 * /health/ready with WORKER_MONITORING=true: `destinations_activities` and `destinations_forwarding`
 * follow the worker (a live connection is its heartbeat) and their jobs' queues (a ready job waiting
 * over 5 minutes is an outage of its check).
 */
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { deliveriesSend } from '../../src/jobs/deliveries__send.js';
import { relayExecutionsSend } from '../../src/jobs/relay_executions__send.js';
import { sql } from '../../src/db/sql.js';
import { queueDrainsSql } from '../../src/jobs/sync-outbox.js';
import { syncsDrain } from '../../src/jobs/syncs__drain.js';
import { WORKER_APPLICATION_NAME } from '../../src/worker.js';
import { apiFetch } from '../support/openapi.js';
import { useTestServer } from '../support/server.js';
import { eventually, startTestWorker } from '../support/worker.js';

const ctx = useTestServer({ WORKER_MONITORING: 'true' });

const ready = () => apiFetch<{ status: string; checks: Record<string, string> }>(`${ctx.server.baseUrl}/health/ready`);

describe('worker monitoring', () => {
  it('reports an outage of CRM activity while no worker runs, without failing readiness', async () => {
    const res = await ready();
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      status: 'partial_outage',
      checks: { sources: 'operational', destinations_activities: 'outage', destinations_forwarding: 'outage' },
    });
  });

  it('is operational while a worker runs, and not after it stopped', async () => {
    const worker = await startTestWorker(ctx.db.url);
    try {
      expect((await ready()).body).toMatchObject({ status: 'operational', checks: { sources: 'operational', destinations_activities: 'operational' } });
    } finally {
      await worker.stop();
    }
    // The server drops the worker's sessions a moment after the pool closes them.
    await eventually(async () => ((await ready()).body.checks.destinations_activities === 'outage' ? true : undefined), 5_000, 'the outage');
  });

  it("reports an outage when a connection's sync drain has waited over 5 minutes to start, even with a worker connected", async () => {
    // A connected worker that does not keep up: its connection, and a job it has not taken for 10 minutes.
    const stuck = new pg.Client({ connectionString: ctx.db.url, application_name: WORKER_APPLICATION_NAME });
    await stuck.connect();
    try {
      expect((await ready()).body.checks.destinations_activities).toBe('operational');
      await ctx.db.query(
        `SELECT graphile_worker.add_job($1, '{"connectionId": 1}'::json, queue_name => 'syncs:1', run_at => now() - interval '10 minutes', job_key => 'syncs:1')`,
        [syncsDrain.identifier],
      );
      expect((await ready()).body.checks.destinations_activities).toBe('outage');
      // New events queue the same drain as the ingress does: it keeps its run time, so the lag stays.
      const queued = queueDrainsSql(sql`(SELECT 1 AS connection_id) AS arrived`);
      await ctx.db.query(`SELECT (${queued.text}) AS n`, queued.values);
      expect((await ready()).body.checks.destinations_activities).toBe('outage');
      await ctx.db.query(`SELECT graphile_worker.remove_job('syncs:1')`);
      expect((await ready()).body.checks.destinations_activities).toBe('operational');
    } finally {
      await stuck.end();
    }
  });

  it("reports forwarding's lag apart from the syncs', and not a job waiting behind its destination's running loop", async () => {
    const stuck = new pg.Client({ connectionString: ctx.db.url, application_name: WORKER_APPLICATION_NAME });
    await stuck.connect();
    try {
      // A sending-loop job not taken for 10 minutes: forwarding is behind, syncs are not.
      await ctx.db.query(
        `SELECT graphile_worker_loops.add_job($1, '{"destinationId": 1}'::json, queue_name => 'deliveries:1', run_at => now() - interval '10 minutes', job_key => 'forward-lag')`,
        [deliveriesSend.identifier],
      );
      expect((await ready()).body.checks).toMatchObject({ destinations_activities: 'operational', destinations_forwarding: 'outage' });

      // The same job behind its destination's loop, which is running (its queue locked): that loop's work, not lag.
      await ctx.db.query(
        `UPDATE graphile_worker_loops._private_job_queues SET locked_at = now(), locked_by = 'a-running-loop' WHERE queue_name = 'deliveries:1'`,
      );
      expect((await ready()).body.checks).toMatchObject({ destinations_activities: 'operational', destinations_forwarding: 'operational' });
    } finally {
      await ctx.db.query(`SELECT graphile_worker_loops.remove_job('forward-lag')`);
      await stuck.end();
    }
  });
  it("reports reply relays' lag apart, and not a relay waiting for its delay", async () => {
    const stuck = new pg.Client({ connectionString: ctx.db.url, application_name: WORKER_APPLICATION_NAME });
    await stuck.connect();
    try {
      // A relay due 10 minutes ago and not taken: relays are behind, syncs and forwarding are not.
      await ctx.db.query(`SELECT graphile_worker.add_job($1, '{"executionId": 1}'::json, run_at => now() - interval '10 minutes', job_key => 'relay-lag')`, [
        relayExecutionsSend.identifier,
      ]);
      expect((await ready()).body.checks).toMatchObject({
        destinations_activities: 'operational',
        destinations_forwarding: 'operational',
        destinations_reply_relays: 'outage',
      });

      // The same relay due in an hour (its delayMinutes): waiting on purpose, not lag.
      await ctx.db.query(`SELECT graphile_worker.add_job($1, '{"executionId": 1}'::json, run_at => now() + interval '1 hour', job_key => 'relay-lag')`, [
        relayExecutionsSend.identifier,
      ]);
      expect((await ready()).body.checks).toMatchObject({ destinations_reply_relays: 'operational' });
    } finally {
      await ctx.db.query(`SELECT graphile_worker.remove_job('relay-lag')`);
      await stuck.end();
    }
  });
});
