/**
 * A worker process killed (SIGKILL) while a reply relay's email is pending: due later, waiting for its
 * retry, or in the middle of its SMTP conversation. Once another worker has taken over, exactly one
 * email has reached the rep, with the execution's Message-ID, and the execution is sent.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DestinationEmulator } from '../../src/emulators/destination.js';
import type { HubspotEmulator } from '../../src/emulators/hubspot.js';
import { startSmtpEmulator, type SmtpEmulator } from '../../src/emulators/smtp.js';
import { TEST_ENCRYPTION_KEY } from '../support/database.js';
import { ingest, smartleadEvent, startForwardingRig } from '../support/forwarding.js';
import {
  createRelay,
  executionsOf,
  executionWhen,
  mailTo,
  pullForward,
  RELAY_FROM,
  relayMessageId,
  SMTP_STALLS,
  startSilentSmtp,
  waitForMailTo,
  type ExecutionRow,
  type TestRelay,
} from '../support/relays.js';
import { useTestServer } from '../support/server.js';
import { killPoint } from '../support/kill-point.js';
import { startService, type ServiceProcess } from '../support/service-process.js';
import { eventually, startTestWorker } from '../support/worker.js';

const ctx = useTestServer();
const HUBSPOT_TOKEN = 'relay-crash-token';
const RETRY_SCHEDULE = [0.3, 0.3, 0.3];

let hubspot: HubspotEmulator;
let receiver: DestinationEmulator;
let smtp: SmtpEmulator;
let connectionId: number;

beforeAll(async () => {
  ({ connectionId, hubspot, receiver } = await startForwardingRig(ctx.db, HUBSPOT_TOKEN));
  smtp = await startSmtpEmulator();
});

afterAll(async () => {
  await smtp?.close();
  await hubspot?.close();
  await receiver?.close();
});

/** The worker as production runs it (src/main.ts worker), sending through `smtpUrl`. */
async function startVictim(smtpUrl: string, retrySchedule: string): Promise<ServiceProcess> {
  const victim = startService('worker', {
    DATABASE_URL: ctx.db.url,
    ENCRYPTION_KEY: TEST_ENCRYPTION_KEY.toString('hex'),
    HUBSPOT_BASE_URL: hubspot.url,
    OUTBOUND_ALLOW_PRIVATE: 'true',
    SMTP_URL: smtpUrl,
    SMTP_FROM: RELAY_FROM,
    REPLY_RELAY_RETRY_SCHEDULE: retrySchedule,
    LOG_LEVEL: 'info',
  });
  await victim.waitFor('"msg":"started"');
  return victim;
}

async function kill(victim: ServiceProcess): Promise<void> {
  victim.child.kill('SIGKILL');
  await victim.exited;
}

/**
 * Another worker takes over (freeing what the dead one held locked after a second) until the execution
 * of `requestId` is final; returns it.
 */
async function rescue(requestId: number): Promise<ExecutionRow> {
  const rescuer = await startTestWorker(
    ctx.db.url,
    { urls: { HUBSPOT: hubspot.url } },
    { staleAfterMs: 1_000, relays: { smtpUrl: smtp.url, from: RELAY_FROM, retrySchedule: RETRY_SCHEDULE } },
  );
  try {
    const row = await executionWhen(
      ctx.db,
      requestId,
      (e) => e.status !== 'scheduled' && !(e.status === 'failed' && e.next_attempt_at !== null),
      'final',
      30_000,
    );
    // Anything that would repeat the email has had its time.
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    return row;
  } finally {
    await rescuer.stop();
  }
}

/** Exactly one email reached the rep, with the execution's Message-ID, and the execution says sent. */
async function expectSentOnce(r: TestRelay, requestId: number, row: ExecutionRow): Promise<void> {
  expect(row.status).toBe('sent');
  expect(row.message_id).toBe(relayMessageId(r.relayId, requestId));
  const mail = mailTo(smtp, r.ccEmail);
  expect(mail.map((m) => m.messageId)).toEqual([row.message_id]);
  const [final] = await executionsOf(ctx.db, [requestId]);
  expect(final).toMatchObject({ status: 'sent', next_attempt_at: null, sending_since: null });
}

function reply(email: string): string {
  return smartleadEvent('EMAIL_REPLY', email, { reply_message: { message_id: `<${email}>`, text: 'Sounds good' } });
}

describe('a worker killed while a relay email is pending', () => {
  it('sends a delayed email once when its worker died between scheduling and sending', async () => {
    // Setup: the email due in a minute, scheduled by the victim.
    const r = await createRelay(ctx.db.prisma, { connectionId, name: 'CrashDelayed', delayMinutes: 1 });
    const victim = await startVictim(smtp.url, '0.3,0.3,0.3');
    let requestId: number;
    try {
      requestId = await ingest(ctx.server.baseUrl, r.code, reply('crash.delayed@prospect.test'));
      const scheduled = await executionWhen(ctx.db, requestId, () => true, 'written', 30_000);
      expect(scheduled).toMatchObject({ status: 'scheduled', attempts: 0 });

      // Action: the victim dies; then the minute passes.
    } finally {
      await kill(victim);
    }
    const [row] = await executionsOf(ctx.db, [requestId]);
    expect(mailTo(smtp, r.ccEmail)).toEqual([]);
    await pullForward(ctx.db, row!.id);
    const final = await rescue(requestId);

    // Assertions
    await expectSentOnce(r, requestId, final);
    expect(final.attempts).toBe(1);
  }, 90_000);

  it('sends once when its worker died waiting for the retry of a failed attempt', async () => {
    // Setup: the SMTP server down, the victim retrying after about 2 s.
    const r = await createRelay(ctx.db.prisma, { connectionId, name: 'CrashRetry' });
    const victim = await startVictim(smtp.url, '2,2');
    let requestId: number;
    let failed: ExecutionRow;
    await smtp.down();
    try {
      requestId = await ingest(ctx.server.baseUrl, r.code, reply('crash.retry@prospect.test'));
      failed = await executionWhen(ctx.db, requestId, (e) => e.status === 'failed', 'failed', 30_000);
    } finally {
      // Action: the victim dies while its retry waits; the server comes back.
      await kill(victim);
      await smtp.up();
    }
    expect(failed.next_attempt_at).toBeInstanceOf(Date);
    expect(failed.attempts).toBe(1);
    const final = await rescue(requestId);

    // Assertions
    await expectSentOnce(r, requestId, final);
    expect(final.attempt_log.map((e) => e.outcome)).toEqual(['failed', 'sent']);
  }, 90_000);

  it('sends once, with the same Message-ID, when its worker died in the middle of the SMTP conversation', async () => {
    // Setup: a server that falls silent at a random point of the conversation, so the victim's attempt hangs there.
    const stall = SMTP_STALLS[killPoint('the SMTP conversation (greeting, ehlo, mail, rcpt, message)', 0, SMTP_STALLS.length - 1)]!;
    const silent = await startSilentSmtp(stall);
    const r = await createRelay(ctx.db.prisma, { connectionId, name: 'CrashMidSend' });
    let requestId: number;
    try {
      const victim = await startVictim(silent.url, '0.3,0.3,0.3');
      try {
        requestId = await ingest(ctx.server.baseUrl, r.code, reply('crash.midsend@prospect.test'));
        const sending = await executionWhen(ctx.db, requestId, (e) => e.sending_since !== null, 'in flight', 30_000);
        expect(sending).toMatchObject({ status: 'scheduled', attempts: 1 });
        // The attempt is marked before it connects: under load, its connection may arrive a moment later.
        await eventually(() => Promise.resolve(silent.stalled ? true : undefined), 10_000, `the attempt to reach the SMTP server's silence at ${stall}`);

        // Action: the victim dies mid-attempt; another worker takes over its locked job.
      } finally {
        await kill(victim);
      }
    } finally {
      await silent.close();
    }
    const final = await rescue(requestId);

    // Assertions: the dead attempt logged as interrupted, then the email, once.
    await expectSentOnce(r, requestId, final);
    expect(final.attempts).toBe(2);
    expect(final.attempt_log.map((e) => e.outcome)).toEqual(['interrupted', 'sent']);
    expect(await waitForMailTo(smtp, r.ccEmail)).toHaveLength(1);
    // The message the silent server read whole carried the delivered one's Message-ID: a receiving server sees one email twice.
    if (stall === 'message') expect(silent.swallowed).toContain(`Message-ID: ${final.message_id}`);
  }, 90_000);
});
