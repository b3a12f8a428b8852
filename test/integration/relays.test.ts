/**
 * Reply relays, end to end: replies POSTed at the ingress become relay executions (relay_executions)
 * and emails to the relay's rep, through the real worker, its real mail client and a real SMTP server
 * (src/emulators/smtp.ts). Each test has a relay and a source of its own, with a rep address of its
 * own, so no test reads another's mail.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RelayConfig } from '../../src/config.js';
import type { DestinationEmulator } from '../../src/emulators/destination.js';
import type { HubspotEmulator } from '../../src/emulators/hubspot.js';
import { startSmtpEmulator, type SmtpEmulator } from '../../src/emulators/smtp.js';
import { ingest as ingestAt, smartleadEvent, startForwardingRig } from '../support/forwarding.js';
import {
  createRelay,
  executionsOf,
  executionWhen,
  headerValue,
  mailTo,
  pullForward,
  RELAY_FROM,
  relayMessageId,
  schedulingDone,
  sendJobOf,
  smartleadCategorySample,
  smartleadReplySample,
  waitForMailTo,
  type ExecutionRow,
  type TestRelay,
} from '../support/relays.js';
import { useTestServer } from '../support/server.js';
import { eventually, startTestWorker } from '../support/worker.js';

const ctx = useTestServer();
const HUBSPOT_TOKEN = 'relay-hubspot-token';
/** Three retries about 0.3 s apart (jittered +-20 %): four attempts in about a second. */
const RETRY_SCHEDULE = [0.3, 0.3, 0.3];
/** Longer than the whole retry schedule, jitter included (3 x 0.36 s), and the attempts themselves. */
const PAST_THE_SCHEDULE_MS = 1_500;

let hubspot: HubspotEmulator;
let receiver: DestinationEmulator;
let smtp: SmtpEmulator;
let worker: { stop(): Promise<void> };
let connectionId: number;

function startRelayWorker(relays: Partial<RelayConfig>) {
  return startTestWorker(ctx.db.url, { urls: { HUBSPOT: hubspot.url } }, { relays: { from: RELAY_FROM, retrySchedule: RETRY_SCHEDULE, ...relays } });
}

beforeAll(async () => {
  ({ connectionId, hubspot, receiver } = await startForwardingRig(ctx.db, HUBSPOT_TOKEN));
  smtp = await startSmtpEmulator();
  worker = await startRelayWorker({ smtpUrl: smtp.url });
});

afterAll(async () => {
  await worker?.stop();
  await smtp?.close();
  await hubspot?.close();
  await receiver?.close();
});

/** Runs `body` with a worker of other relay settings in place of the file's, then puts the file's back. */
async function withWorker<T>(relays: Partial<RelayConfig>, body: () => Promise<T>): Promise<T> {
  await worker.stop();
  const other = await startRelayWorker(relays);
  try {
    return await body();
  } finally {
    await other.stop();
    worker = await startRelayWorker({ smtpUrl: smtp.url });
  }
}

/** A relay of its own on the acme-hubspot connection, with a smartlead source of its own. */
function relay(name: string, options: Omit<Parameters<typeof createRelay>[1], 'connectionId' | 'name'> = {}): Promise<TestRelay> {
  return createRelay(ctx.db.prisma, { connectionId, name, ...options });
}

function ingest(code: string, body: string): Promise<number> {
  return ingestAt(ctx.server.baseUrl, code, body);
}

/** A Smartlead reply about `email` with its own reply message id. */
function reply(email: string, text = 'Sounds good', extra: Record<string, unknown> = {}): string {
  return smartleadEvent('EMAIL_REPLY', email, { reply_message: { message_id: `<${email}-${Math.random()}>`, text }, ...extra });
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const isFinal = (row: ExecutionRow) => row.status === 'sent' || row.status === 'skipped' || (row.status === 'failed' && row.next_attempt_at === null);

describe('which events a relay copies', () => {
  it("schedules the prospect's replies (email, message, InMail) and nothing for sends, opens, category updates, unknown types or auto-replies", async () => {
    // Setup: one relay, bound to a Smartlead, an Instantly and a HeyReach source.
    const r = await relay('Kinds');
    const instantly = await ctx.db.prisma.source.create({
      data: { connectionId, platform: 'instantly', ingressCode: 'relayKindsInstantly', replyRelayId: r.relayId },
    });
    const heyreach = await ctx.db.prisma.source.create({
      data: { connectionId, platform: 'heyreach', ingressCode: 'relayKindsHeyreach', replyRelayId: r.relayId },
    });
    const lead = 'kinds@prospect.test';
    const heyreachReply = (isInmail: boolean, conversation: string) =>
      JSON.stringify({
        event_type: 'every_message_reply_received',
        is_inmail: isInmail,
        conversation_id: conversation,
        campaign: { id: 123, name: 'Social' },
        lead: { id: 'L1', profile_url: 'https://www.linkedin.com/in/kinds-prospect', full_name: 'Kim Kinds', email_address: lead },
        recent_messages: [{ creation_time: '2026-01-28T16:28:01Z', message: `Happy to chat (${conversation})`, is_reply: true }],
        timestamp: '2026-01-28T16:28:01Z',
      });

    // Action
    const ignored = [
      await ingest(r.code, smartleadEvent('EMAIL_SENT', lead)),
      await ingest(r.code, smartleadEvent('EMAIL_OPEN', lead)),
      await ingest(r.code, smartleadEvent('LEAD_CATEGORY_UPDATED', lead, { lead_category: { new_id: 1, new_name: 'Interested' } })),
      // Smartlead has no auto-reply event: a type its parser does not know is UNKNOWN, never a reply.
      await ingest(r.code, smartleadEvent('EMAIL_AUTO_REPLY', lead, { reply_message: { message_id: '<ooo@prospect.test>', text: 'Out of office' } })),
      // Instantly's out-of-office answer is EMAIL_AUTO_REPLY: inbound, but not the prospect replying.
      await ingest(
        instantly.ingressCode,
        JSON.stringify({ event_type: 'auto_reply_received', lead_email: lead, reply_subject: 'Out of office', reply_text: 'I am away until Monday.' }),
      ),
    ];
    const replies = [
      await ingest(r.code, reply(lead, 'Yes please')),
      // An older Smartlead name of the same canonical type.
      await ingest(r.code, smartleadEvent('EMAIL_REPLIED', lead, { reply_message: { message_id: '<kinds-older@prospect.test>', text: 'Older name' } })),
      await ingest(
        instantly.ingressCode,
        JSON.stringify({ event_type: 'reply_received', lead_email: lead, reply_subject: 'Re: Hello', reply_text: 'Tell me more', email_id: 'i-1' }),
      ),
      await ingest(heyreach.ingressCode, heyreachReply(false, 'conv-message')),
      await ingest(heyreach.ingressCode, heyreachReply(true, 'conv-inmail')),
    ];
    await schedulingDone(ctx.db, [...ignored, ...replies]);

    // Assertions: an execution (and an email) per reply, nothing for the rest.
    expect(await executionsOf(ctx.db, ignored)).toEqual([]);
    const rows = await executionsOf(ctx.db, replies);
    expect(rows.map((row) => Number(row.request_id)).sort((a, b) => a - b)).toEqual(replies);
    for (const row of rows) {
      expect(row.relay_id).toBe(r.relayId);
      expect(row.message_id).toBe(relayMessageId(r.relayId, Number(row.request_id)));
    }
    const mail = await waitForMailTo(smtp, r.ccEmail, replies.length);
    expect(mail.map((m) => headerValue(m, 'x-pipeline-sync-request-id')).sort()).toEqual(replies.map(String).sort());
    await eventually(async () => ((await executionsOf(ctx.db, replies)).every((row) => row.status === 'sent') ? true : undefined), 10_000, 'every reply sent');
    await sleep(300);
    expect(mailTo(smtp, r.ccEmail)).toHaveLength(replies.length);
  });
});

describe('the delay', () => {
  it('is due delayMinutes after the request arrived, sends nothing before, and sends once due', async () => {
    // Setup
    const r = await relay('Delay', { delayMinutes: 1 });

    // Action
    const requestId = await ingest(r.code, reply('delay@prospect.test', 'Later is fine'));
    const row = await executionWhen(ctx.db, requestId, () => true, 'written');

    // Assertions: due a minute after the request, with its send job at that time, and nothing sent.
    const [request] = await ctx.db.query<{ created_at: Date }>('SELECT created_at FROM requests WHERE id = $1', [requestId]);
    expect(row.run_at.getTime() - request!.created_at.getTime()).toBe(60_000);
    expect(row).toMatchObject({ status: 'scheduled', attempts: 0, sent_at: null, message_id: relayMessageId(r.relayId, requestId) });
    const job = await sendJobOf(ctx.db, row.id);
    expect(job?.run_at.getTime()).toBe(row.run_at.getTime());
    await sleep(1_000);
    expect(mailTo(smtp, r.ccEmail)).toEqual([]);
    expect((await executionsOf(ctx.db, [requestId]))[0]).toMatchObject({ status: 'scheduled', attempts: 0, attempt_log: [] });

    // Action: the minute passes.
    await pullForward(ctx.db, row.id);

    // Assertions
    const [mail] = await waitForMailTo(smtp, r.ccEmail);
    expect(mail!.messageId).toBe(row.message_id);
    const sent = await executionWhen(ctx.db, requestId, (e) => e.status === 'sent', 'sent');
    expect(sent.attempts).toBe(1);
    expect(await sendJobOf(ctx.db, row.id)).toBeUndefined();
  });
});

describe('the category allowlist, read when the email is due', () => {
  const allowlist = [{ id: '7', name: 'Interested' }];

  /**
   * A reply (with `replyCategory`, if any) to a relay due in a minute; then the lead's category update,
   * posted at `updateCode` (the relay's source unless said) and synced; then the minute passes.
   * Returns the relay and the execution's final row.
   */
  async function categoryChange(
    name: string,
    replyCategory: { id: number; name: string } | null,
    update: { id: number; name: string },
    updateCode?: string,
  ): Promise<{ r: TestRelay; row: ExecutionRow }> {
    const r = await relay(name, { delayMinutes: 1, categoryAllowlist: allowlist });
    const lead = `${name.toLowerCase()}@prospect.test`;
    const extra = replyCategory ? { lead_category: { new_id: replyCategory.id, new_name: replyCategory.name } } : {};
    const requestId = await ingest(r.code, smartleadReplySample(lead, `<${name}@prospect.test>`, extra));
    const scheduled = await executionWhen(ctx.db, requestId, () => true, 'written');
    expect(scheduled.status).toBe('scheduled');

    const updateId = await ingest(updateCode ?? r.code, smartleadCategorySample(lead, update));
    const signal = await eventually(
      async () =>
        (
          await ctx.db.query<{ contact: string; category_id: string | null; category_name: string }>(
            'SELECT contact, category_id, category_name FROM lead_category_signals WHERE request_id = $1',
            [updateId],
          )
        )[0],
      15_000,
      'the category update synced',
    );
    expect(signal).toEqual({ contact: lead, category_id: String(update.id), category_name: update.name });
    expect((await executionsOf(ctx.db, [requestId]))[0]!.status).toBe('scheduled');

    await pullForward(ctx.db, scheduled.id);
    return { r, row: await executionWhen(ctx.db, requestId, isFinal, 'final') };
  }

  it('skips a reply whose lead became Not Interested after it was scheduled', async () => {
    const { r, row } = await categoryChange('FlipOut', { id: 7, name: 'Interested' }, { id: 8, name: 'Not Interested' });

    expect(row).toMatchObject({ status: 'skipped', reason: 'lead category Not Interested is not in the allowlist', attempts: 0, sent_at: null });
    await sleep(300);
    expect(mailTo(smtp, r.ccEmail)).toEqual([]);
  });

  it('sends a reply whose lead became interested after it was scheduled (by name, ignoring case)', async () => {
    const { r, row } = await categoryChange('FlipIn', { id: 8, name: 'Not Interested' }, { id: 42, name: 'interested' });

    expect(row).toMatchObject({ status: 'sent', reason: null, attempts: 1 });
    expect(await waitForMailTo(smtp, r.ccEmail)).toHaveLength(1);
  });

  it("sends when the lead's category id is allowed, whatever its name, posted through another source of the connection", async () => {
    const categories = await ctx.db.prisma.source.create({ data: { connectionId, platform: 'smartlead', ingressCode: 'relayCategoriesOnly' } });

    const { r, row } = await categoryChange('ById', null, { id: 7, name: 'Warm lead' }, categories.ingressCode);

    expect(row).toMatchObject({ status: 'sent', reason: null, attempts: 1 });
    expect(await waitForMailTo(smtp, r.ccEmail)).toHaveLength(1);
  });

  it("decides on the reply's own category when no newer one is stored, and skips a lead with none", async () => {
    // Setup
    const r = await relay('OwnCategory', { categoryAllowlist: allowlist });

    // Action
    const allowed = await ingest(r.code, reply('own.allowed@prospect.test', 'Yes', { lead_category: { new_id: 7, new_name: 'Interested' } }));
    const none = await ingest(r.code, reply('own.none@prospect.test', 'Maybe'));

    // Assertions
    const sent = await executionWhen(ctx.db, allowed, isFinal, 'final');
    const skipped = await executionWhen(ctx.db, none, isFinal, 'final');
    expect(sent).toMatchObject({ status: 'sent', attempts: 1 });
    expect(skipped).toMatchObject({ status: 'skipped', reason: 'the lead has no category, and the allowlist names Interested', attempts: 0 });
    const mail = await waitForMailTo(smtp, r.ccEmail);
    await sleep(300);
    expect(mail.map((m) => headerValue(m, 'x-pipeline-sync-request-id'))).toEqual([String(allowed)]);
  });
});

describe('the email', () => {
  it('goes to the rep from SMTP_FROM with the default body, Reply-To the prospect, the request id and the fixed Message-ID', async () => {
    // Setup
    const r = await relay('Default');
    const lead = 'default@prospect.test';

    // Action: Smartlead's real reply sample.
    const requestId = await ingest(r.code, smartleadReplySample(lead, '<default-1@prospect.test>'));

    // Assertions
    const [mail] = await waitForMailTo(smtp, r.ccEmail);
    const row = await executionWhen(ctx.db, requestId, (e) => e.status === 'sent', 'sent');
    expect(mail).toMatchObject({
      envelope: { from: 'relays@pipeline.test', to: [r.ccEmail] },
      to: r.ccEmail,
      replyTo: lead,
      subject: 'Re: Quick question',
      messageId: relayMessageId(r.relayId, requestId),
    });
    expect(mail!.from).toBe('"Pipeline Sync" <relays@pipeline.test>');
    expect(headerValue(mail!, 'x-pipeline-sync-request-id')).toBe(String(requestId));
    expect(mail!.text).toContain('Jane Doe replied to the campaign Q1 Outreach (Smartlead).');
    expect(mail!.text).toContain('Sounds good, send times');
    expect(mail!.text).toContain(`Lead: Jane Doe <${lead}>`);
    expect(mail!.text).toContain('Open in Smartlead: https://app.smartlead.example/app/master-inbox?leadMap=1438627');
    expect(mail!.html).toContain('Jane Doe replied to the campaign Q1 Outreach (Smartlead).');
    expect(mail!.html).toContain(`Lead: Jane Doe &lt;${lead}&gt;`);
    expect(row).toMatchObject({ status: 'sent', reason: null, attempts: 1, unknown_placeholders: [], next_attempt_at: null, sending_since: null });
    expect(row.smtp_response).toMatch(/^250 /);
    expect(row.sent_at).toBeInstanceOf(Date);
    expect(row.attempt_log).toEqual([expect.objectContaining({ outcome: 'sent' })]);
  });

  it('keeps hostile payload text out of the headers and out of the markup', async () => {
    // Setup
    const r = await relay('Hostile');
    const lead = 'hostile@prospect.test';

    // Action
    const requestId = await ingest(
      r.code,
      reply(lead, '<img src=x onerror=alert(1)> & "quotes"', {
        subject: 'Quick question\r\nBcc: evil@x.test',
        lead_data: { email: lead, first_name: '<script>alert(1)</script>', last_name: 'Doe' },
        campaign_name: '</div><b>Q2</b>',
      }),
    );

    // Assertions: one subject line, no header of the payload's, the message to the rep alone.
    const [mail] = await waitForMailTo(smtp, r.ccEmail);
    expect(mail!.subject).toBe('Re: Quick question Bcc: evil@x.test');
    expect(mail!.envelope.to).toEqual([r.ccEmail]);
    const keys = mail!.headerLines.map((h) => h.key);
    expect(keys).not.toContain('bcc');
    expect(keys.sort()).toEqual(['content-type', 'date', 'from', 'message-id', 'mime-version', 'reply-to', 'subject', 'to', 'x-pipeline-sync-request-id']);
    const headerBlock = mail!.raw.slice(0, mail!.raw.indexOf('\r\n\r\n'));
    expect(headerBlock).not.toMatch(/^bcc:/im);
    expect(headerBlock).toMatch(/^Subject: Re: Quick question Bcc: evil@x\.test\r?$/m);
    expect(headerValue(mail!, 'x-pipeline-sync-request-id')).toBe(String(requestId));
    // The text part says what the payload said; the HTML part has it as text only.
    expect(mail!.text).toContain('<script>alert(1)</script> Doe replied to the campaign </div><b>Q2</b> (Smartlead).');
    expect(mail!.text).toContain('<img src=x onerror=alert(1)> & "quotes"');
    expect(mail!.html).toContain('&lt;script&gt;alert(1)&lt;/script&gt; Doe replied to the campaign &lt;/div&gt;&lt;b&gt;Q2&lt;/b&gt; (Smartlead).');
    expect(mail!.html).toContain('&lt;img src=x onerror=alert(1)&gt; &amp; &quot;quotes&quot;');
    expect(mail!.html).not.toMatch(/<script|<img|<b>/i);
  });

  it("renders the relay's templates, each a paragraph; an unknown placeholder renders empty and is recorded", async () => {
    // Setup
    const r = await relay('Template', {
      bodyTemplates: ['New reply from {{lead.email}} ({{lead.name}}) in {{campaign.name}}', 'Unknown: [{{nope.x}}]\n{{reply.text}}'],
    });
    const lead = 'template@prospect.test';

    // Action
    const requestId = await ingest(
      r.code,
      reply(lead, 'See you <then>', { lead_data: { email: lead, first_name: '<script>alert(1)</script>', last_name: 'Lee' }, campaign_name: 'Q3 & more' }),
    );

    // Assertions
    const [mail] = await waitForMailTo(smtp, r.ccEmail);
    const row = await executionWhen(ctx.db, requestId, (e) => e.status === 'sent', 'sent');
    expect(mail!.text?.trimEnd()).toBe(`New reply from ${lead} (<script>alert(1)</script> Lee) in Q3 & more\n\nUnknown: []\nSee you <then>`);
    expect(mail!.html).toContain(`New reply from ${lead} (&lt;script&gt;alert(1)&lt;/script&gt; Lee) in Q3 &amp; more`);
    expect(mail!.html).toContain('See you &lt;then&gt;');
    expect(mail!.html).not.toContain('<script');
    expect(mail!.replyTo).toBe(lead);
    expect(row.unknown_placeholders).toEqual(['nope.x']);
  });
});

describe('SMTP failures', () => {
  it('retries while the SMTP server is down and sends once it is back, once', async () => {
    // Setup
    const r = await relay('Down');
    await smtp.down();
    let requestId: number;
    let failed: ExecutionRow;
    try {
      // Action
      requestId = await ingest(r.code, reply('down@prospect.test'));
      failed = await executionWhen(ctx.db, requestId, (e) => e.status === 'failed', 'failed');
    } finally {
      await smtp.up();
    }

    // Assertions: the failure recorded with its next attempt, then the email, once.
    expect(failed.reason).toMatch(/ECONNREFUSED/);
    expect(failed.next_attempt_at).toBeInstanceOf(Date);
    expect(failed.attempt_log[0]).toMatchObject({ outcome: 'failed', error: expect.stringMatching(/ECONNREFUSED/) as unknown });
    expect(failed.attempt_log[0]!.smtpCode).toBeUndefined();
    const sent = await executionWhen(ctx.db, requestId, (e) => e.status === 'sent', 'sent');
    await sleep(PAST_THE_SCHEDULE_MS);
    const mail = mailTo(smtp, r.ccEmail);
    expect(mail).toHaveLength(1);
    expect(mail[0]!.messageId).toBe(sent.message_id);
    expect(sent.attempts).toBeGreaterThanOrEqual(2);
    expect(sent.attempt_log).toHaveLength(sent.attempts);
    expect(sent.attempt_log.map((e) => e.outcome)).toEqual([...Array<string>(sent.attempts - 1).fill('failed'), 'sent']);
    expect(sent).toMatchObject({ reason: null, next_attempt_at: null });
  });

  it('retries a transient 4xx reply', async () => {
    // Setup
    const r = await relay('Transient');
    smtp.failNext(451);

    // Action
    const requestId = await ingest(r.code, reply('transient@prospect.test'));

    // Assertions
    const sent = await executionWhen(ctx.db, requestId, (e) => e.status === 'sent', 'sent');
    expect(sent.attempts).toBe(2);
    expect(sent.attempt_log).toEqual([
      expect.objectContaining({ outcome: 'failed', smtpCode: 451 }),
      expect.objectContaining({ outcome: 'sent', response: expect.stringMatching(/^250 /) as unknown }),
    ]);
    await sleep(PAST_THE_SCHEDULE_MS);
    expect(mailTo(smtp, r.ccEmail)).toHaveLength(1);
  });

  it('does not retry a permanent 5xx reply', async () => {
    // Setup: one refusal queued.
    const r = await relay('Permanent');
    smtp.failNext(550);

    // Action
    const requestId = await ingest(r.code, reply('permanent@prospect.test'));

    // Assertions: failed for good at once...
    const failed = await executionWhen(ctx.db, requestId, (e) => e.status === 'failed', 'failed');
    expect(failed).toMatchObject({ attempts: 1, next_attempt_at: null, sent_at: null });
    expect(failed.reason).toMatch(/550/);
    expect(failed.attempt_log).toEqual([expect.objectContaining({ outcome: 'failed', smtpCode: 550 })]);
    // ...and still so past the retry schedule: a retry would have gone through (one refusal only).
    await sleep(PAST_THE_SCHEDULE_MS);
    expect(mailTo(smtp, r.ccEmail)).toEqual([]);
    const [after] = await executionsOf(ctx.db, [requestId]);
    expect(after).toMatchObject({ status: 'failed', attempts: 1, next_attempt_at: null });
    expect(after!.attempt_log).toHaveLength(1);
    expect(await sendJobOf(ctx.db, failed.id)).toBeUndefined();
    // The refusal was spent on that one attempt: the next email goes through at its first attempt.
    const probe = await ingest(r.code, reply('permanent.probe@prospect.test'));
    const probeSent = await executionWhen(ctx.db, probe, (e) => e.status === 'sent', 'sent');
    expect(probeSent.attempts).toBe(1);
    expect(mailTo(smtp, r.ccEmail).map((m) => headerValue(m, 'x-pipeline-sync-request-id'))).toEqual([String(probe)]);
  });

  it('fails with "SMTP is not configured" while SMTP_URL is unset, retries, and sends once it is set', async () => {
    // Setup
    const r = await relay('Unset');
    let requestId = 0;
    let failed: ExecutionRow | undefined;

    // Action: a worker without SMTP_URL, retrying after about 2 s.
    await withWorker({ smtpUrl: undefined, retrySchedule: [2] }, async () => {
      requestId = await ingest(r.code, reply('unset@prospect.test'));
      failed = await executionWhen(ctx.db, requestId, (e) => e.status === 'failed', 'failed');
    });

    // Assertions
    expect(failed!.reason).toContain('SMTP is not configured');
    expect(failed!.next_attempt_at).toBeInstanceOf(Date);
    expect(failed!.next_attempt_at!.getTime()).toBeGreaterThan(failed!.updated_at.getTime());
    expect(failed!).toMatchObject({ attempts: 1, sent_at: null });
    expect(failed!.attempt_log).toEqual([expect.objectContaining({ outcome: 'failed', error: expect.stringContaining('SMTP is not configured') as unknown })]);
    expect(mailTo(smtp, r.ccEmail)).toEqual([]);
    // The file's worker (SMTP_URL set) makes the planned retry.
    const sent = await executionWhen(ctx.db, requestId, (e) => e.status === 'sent', 'sent', 10_000);
    expect(sent.attempts).toBe(2);
    expect(mailTo(smtp, r.ccEmail)).toHaveLength(1);
  });

  it('authenticates with the credentials in SMTP_URL, and fails for good on refused credentials without repeating them', async () => {
    const password = 'p@ss w0rd!';
    const authSmtp = await startSmtpEmulator({ auth: { user: 'relay-user', pass: password } });
    try {
      // Setup
      const good = await relay('Auth');
      const bad = await relay('AuthRefused');
      const wrongUrl = authSmtp.url.replace(encodeURIComponent(password), 'wrong-secret');
      expect(wrongUrl).not.toBe(authSmtp.url);

      // Action
      let sent: ExecutionRow | undefined;
      await withWorker({ smtpUrl: authSmtp.url }, async () => {
        const requestId = await ingest(good.code, reply('auth@prospect.test'));
        sent = await executionWhen(ctx.db, requestId, isFinal, 'final');
      });
      let refused: ExecutionRow | undefined;
      await withWorker({ smtpUrl: wrongUrl }, async () => {
        const requestId = await ingest(bad.code, reply('auth.refused@prospect.test'));
        refused = await executionWhen(ctx.db, requestId, isFinal, 'final');
      });

      // Assertions
      expect(sent).toMatchObject({ status: 'sent', attempts: 1 });
      expect(mailTo(authSmtp, good.ccEmail)).toHaveLength(1);
      expect(refused).toMatchObject({ status: 'failed', attempts: 1, next_attempt_at: null });
      expect(refused!.reason).toMatch(/535/);
      expect(JSON.stringify(refused)).not.toContain('wrong-secret');
      expect(mailTo(authSmtp, bad.ccEmail)).toEqual([]);
    } finally {
      await authSmtp.close();
    }
  });
});

describe('duplicates', () => {
  it("relays a payload that arrives twice once; the second request's execution names the first", async () => {
    // Setup: a reply without a message id, keyed by its body.
    const r = await relay('Twice');
    const body = smartleadEvent('EMAIL_REPLY', 'twice@prospect.test', { reply_message: { text: 'Count me in' } });

    // Action
    const first = await ingest(r.code, body);
    await executionWhen(ctx.db, first, () => true, 'written');
    const second = await ingest(r.code, body);
    await schedulingDone(ctx.db, [first, second]);

    // Assertions
    await executionWhen(ctx.db, first, (e) => e.status === 'sent', 'sent');
    await sleep(500);
    const rows = await executionsOf(ctx.db, [first, second]);
    expect(rows.map((e) => [Number(e.request_id), e.status, e.reason])).toEqual([
      [first, 'sent', null],
      [second, 'skipped', `the same reply as request ${first}, relayed once`],
    ]);
    expect(rows[1]).toMatchObject({ attempts: 0, sent_at: null, attempt_log: [] });
    expect(await sendJobOf(ctx.db, rows[1]!.id)).toBeUndefined();
    const mail = mailTo(smtp, r.ccEmail);
    expect(mail.map((m) => headerValue(m, 'x-pipeline-sync-request-id'))).toEqual([String(first)]);
  });

  it("relays a sequencer's redelivery of a reply (same reply message id, another body) once, even when both arrive at once", async () => {
    // Setup
    const r = await relay('Redelivered');
    const lead = 'redelivered@prospect.test';
    const bodies = [1, 2].map((i) =>
      smartleadReplySample(lead, '<redelivered@prospect.test>', { event_timestamp: `2025-03-28T09:35:0${i}+00:00`, webhook_id: i }),
    );

    // Action
    const requestIds = await Promise.all(bodies.map((body) => ingest(r.code, body)));
    await schedulingDone(ctx.db, requestIds);

    // Assertions: one sent, and one skipped naming the other.
    const rows = await eventually(async () => {
      const list = await executionsOf(ctx.db, requestIds);
      return list.length === 2 && list.every(isFinal) ? list : undefined;
    });
    const sent = rows.filter((e) => e.status === 'sent');
    const skipped = rows.filter((e) => e.status === 'skipped');
    expect(sent).toHaveLength(1);
    expect(skipped).toHaveLength(1);
    expect(skipped[0]!.reason).toBe(`the same reply as request ${sent[0]!.request_id}, relayed once`);
    await sleep(500);
    expect(mailTo(smtp, r.ccEmail).map((m) => headerValue(m, 'x-pipeline-sync-request-id'))).toEqual([sent[0]!.request_id]);
  });
});
