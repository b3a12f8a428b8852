/**
 * The job catalog at work on a real database and the real worker: a payload that fails its task's
 * schema fails its job once and for good, with one log line that names the task, the job and the
 * paths, never the values; `enqueue()` checks payloads and applies the task's defaults.
 */
import { Writable } from 'node:stream';
import { makeWorkerUtils, type WorkerUtils } from 'graphile-worker';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ZodError } from 'zod';
import { deliveriesSend } from '../../src/jobs/deliveries__send.js';
import { enqueue } from '../../src/jobs/enqueue.js';
import { syncsBulkRetry } from '../../src/jobs/syncs__bulk_retry.js';
import { syncsDrain } from '../../src/jobs/syncs__drain.js';
import { createLogger } from '../../src/logger.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';
import { eventually, startTestWorker } from '../support/worker.js';

let db: TestDatabase;
let pool: pg.Pool;
let utils: WorkerUtils;

beforeAll(async () => {
  db = await createTestDatabase();
  // A pool of our own, ended before the database is dropped (graphile-worker's release() does not wait for its own).
  pool = new pg.Pool({ connectionString: db.url, max: 2 });
  pool.on('error', () => {});
  utils = await makeWorkerUtils({ pgPool: pool });
});

afterAll(async () => {
  await utils?.release();
  await pool?.end();
  await db?.drop();
});

interface JobRow {
  id: string;
  attempts: number;
  max_attempts: number;
  last_error: string | null;
  key: string | null;
}

const jobs = (identifier: string) =>
  db.query<JobRow>(
    `SELECT j.id::text, j.attempts, j.max_attempts, j.last_error, j.key
       FROM graphile_worker._private_jobs j JOIN graphile_worker._private_tasks t ON t.id = j.task_id
      WHERE t.identifier = $1 ORDER BY j.id`,
    [identifier],
  );

/** A logger at info level whose lines (JSON, one per entry) the test reads. */
function capturedLog() {
  const lines: string[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      lines.push(...chunk.toString('utf8').split('\n').filter(Boolean));
      done();
    },
  });
  return { lines, logger: createLogger('info', sink) };
}

describe('a job whose payload fails its schema', () => {
  it('fails once, for good, with one log line naming task, job and paths but no value', async () => {
    // Setup: a job queued by SQL (as old releases and statements do) with a wrong payload and a secret in it.
    const secret = 'svcapi_doNotLogThisValue000000000001';
    await db.query(`SELECT graphile_worker.add_job('syncs__drain', $1::json)`, [JSON.stringify({ connectionId: 'seven', apiKey: secret })]);
    const { lines, logger } = capturedLog();

    // Action: the real worker takes it.
    const worker = await startTestWorker(db.url, {}, { logger });
    let failed: JobRow;
    try {
      failed = await eventually(async () => (await jobs('syncs__drain')).find((j) => j.last_error !== null), 10_000, 'the job to fail');
      // Long enough for a retry to have been fetched if there were one (the worker polls every 100 ms).
      await new Promise((resolve) => setTimeout(resolve, 500));
    } finally {
      await worker.stop();
    }

    // Assertions: one attempt, no retry left, the reason stored and logged once.
    const [row] = await jobs('syncs__drain');
    expect(row).toMatchObject({ id: failed.id, attempts: 1, max_attempts: 1 });
    expect(row!.last_error).toContain('connectionId: invalid_type');
    const errors = lines.map((line) => JSON.parse(line) as { level: number; msg: string; job?: { id: string; task: string } }).filter((l) => l.level >= 50);
    expect(errors).toHaveLength(1);
    expect(errors[0]!.msg).toMatch(
      new RegExp(`^Failed task ${failed.id} \\(syncs__drain, [0-9.]+ms, attempt 1 of 1\\) with error 'the payload does not match the syncs__drain schema`),
    );
    expect(errors[0]!.msg).not.toContain('\n');
    expect(errors[0]!.job).toMatchObject({ id: failed.id, task: 'syncs__drain' });
    expect(lines.join('\n')).not.toContain(secret);
    expect(lines.join('\n')).not.toContain('seven');
  });

  it("queues a task in its lane's job table, under its key and queue", async () => {
    const job = await enqueue(utils, deliveriesSend, { destinationId: 77 });
    const [row] = await db.query<{ identifier: string; queue: string }>(
      `SELECT t.identifier, q.queue_name AS queue FROM graphile_worker_loops._private_jobs j
         JOIN graphile_worker_loops._private_tasks t ON t.id = j.task_id JOIN graphile_worker_loops._private_job_queues q ON q.id = j.job_queue_id
        WHERE j.id = $1`,
      [job.id],
    );
    expect(row).toEqual({ identifier: 'deliveries__send', queue: 'deliveries:77' });
    expect(job.key).toBe('deliveries:77');
  });
});

describe('a job that fails on our side (issue 20)', () => {
  it('records its outcome at the third run for a failure no retry changes, and leaves a transient one to the queue', async () => {
    // Setup: two bulk re-syncs with nothing to queue; the database refuses to mark either done (and only that), one for
    // good (a raised exception), one as a serialization conflict (SQLSTATE 40001, worth another run).
    const bulks = await db.query<{ id: string }>(
      `INSERT INTO bulk_retries (staff, filter, matched) VALUES ('ops', '{}', 0), ('ops', '{}', 0) RETURNING id::text`,
    );
    const [poisoned, conflicted] = bulks.map((b) => Number(b.id));
    await db.query(`CREATE FUNCTION refuse_bulk() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF NEW.queued_all_at IS NULL THEN RETURN NEW; END IF;
        IF NEW.id = ${poisoned} THEN RAISE EXCEPTION 'refused by the test'; END IF;
        IF NEW.id = ${conflicted} THEN RAISE EXCEPTION 'conflict made by the test' USING ERRCODE = '40001'; END IF;
        RETURN NEW;
      END $$`);
    await db.query('CREATE TRIGGER refuse_bulk BEFORE UPDATE ON bulk_retries FOR EACH ROW EXECUTE FUNCTION refuse_bulk()');
    for (const bulkRetryId of [poisoned!, conflicted!]) await enqueue(utils, syncsBulkRetry, { bulkRetryId });

    // Action: the real worker runs both (graphile-worker's backoff: e^1 then e^2 seconds between runs).
    const { lines, logger } = capturedLog();
    const worker = await startTestWorker(db.url, {}, { logger });
    try {
      const recorded = await eventually(
        async () => (await db.query<{ error: string | null }>('SELECT error FROM bulk_retries WHERE id = $1', [poisoned]))[0]?.error ?? undefined,
        20_000,
        'the bulk to record its failure',
      );
      const conflictJob = await eventually(
        async () => (await jobs('syncs__bulk_retry')).find((j) => j.key === `bulk-retry:${conflicted}` && j.attempts >= 3),
        20_000,
        'the transient failure to run three times',
      );

      // Assertions: the poisoned bulk says why and its job is gone; the conflicted one is still the queue's to retry.
      expect(recorded).toBe('Stopped on our side and not retried automatically: refused by the test');
      expect((await jobs('syncs__bulk_retry')).map((j) => j.key)).toEqual([`bulk-retry:${conflicted}`]);
      expect(conflictJob.last_error).toContain('conflict made by the test');
      const [conflictedBulk] = await db.query<{ error: string | null }>('SELECT error FROM bulk_retries WHERE id = $1', [conflicted]);
      expect(conflictedBulk!.error).toBeNull();
      // Recorded at the third run, not before: the one line saying so names the job's attempts.
      const recordedLines = lines
        .map((line) => JSON.parse(line) as { msg: string; task?: string; attempts?: number })
        .filter((l) => l.msg.startsWith('job failed on our side'));
      expect(recordedLines.map((l) => [l.task, l.attempts])).toEqual([['syncs__bulk_retry', 3]]);
    } finally {
      await worker.stop();
      await db.query('DROP TRIGGER refuse_bulk ON bulk_retries');
    }
  }, 45_000);
});

describe('enqueue', () => {
  it("refuses a payload its task's schema refuses, before anything is queued", async () => {
    // @ts-expect-error -- connectionId must be a number: the type check is the first guard, the schema the second.
    await expect(enqueue(utils, syncsDrain, { connectionId: '12' })).rejects.toBeInstanceOf(ZodError);
    await expect(enqueue(utils, syncsDrain, { connectionId: -1 })).rejects.toBeInstanceOf(ZodError);
    await expect(enqueue(utils, deliveriesSend, { destinationId: 0 })).rejects.toBeInstanceOf(ZodError);
    expect(await jobs('syncs__drain')).toHaveLength(1); // the job of the test above only
  });

  it("queues with the task's defaults, which the caller's options override", async () => {
    const runAt = new Date(Date.now() + 3_600_000);
    const job = await enqueue(utils, syncsDrain, { connectionId: 424242 }, { runAt });
    expect(job).toEqual({ id: expect.any(String), key: 'syncs:424242', maxAttempts: 25, runAt });
    const [row] = await db.query<{ identifier: string; payload: unknown }>(
      'SELECT t.identifier, j.payload FROM graphile_worker._private_jobs j JOIN graphile_worker._private_tasks t ON t.id = j.task_id WHERE j.id = $1',
      [job.id],
    );
    expect(row).toEqual({ identifier: 'syncs__drain', payload: { connectionId: 424242 } });
    const named = await enqueue(utils, syncsDrain, { connectionId: 424243 }, { jobKey: 'chosen-key', maxAttempts: 3 });
    expect(named).toMatchObject({ key: 'chosen-key', maxAttempts: 3 });
  });
});
