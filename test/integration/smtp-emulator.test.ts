/**
 * The SMTP emulator (src/emulators/smtp.ts) against the real mail client the service uses (nodemailer
 * over SMTP_URL): what it captures, AUTH, refusals with a chosen reply code, going down and coming back
 * on the same port, and waitFor's timeout. Tests that rely on the emulator trust these behaviours.
 */
import net from 'node:net';
import nodemailer from 'nodemailer';
import { afterEach, describe, expect, it } from 'vitest';
import { startSmtpEmulator, type CapturedMail, type SmtpEmulator, type SmtpEmulatorOptions } from '../../src/emulators/smtp.js';

const started: SmtpEmulator[] = [];

async function start(options?: SmtpEmulatorOptions): Promise<SmtpEmulator> {
  const smtp = await startSmtpEmulator(options);
  started.push(smtp);
  return smtp;
}

afterEach(async () => {
  await Promise.all(started.splice(0).map((smtp) => smtp.close()));
});

/** One message through a fresh transport (no pool), as the service sends. */
async function send(url: string, subject = 'Hello'): Promise<void> {
  const transport = nodemailer.createTransport(url);
  try {
    await transport.sendMail({ from: 'Sender <sender@example.com>', to: 'rcpt@example.net', subject, text: `body of ${subject}` });
  } finally {
    transport.close();
  }
}

/** The rejection of `promise`, failing the test when it resolves. */
async function failure(promise: Promise<unknown>): Promise<{ code?: string; responseCode?: number; message: string }> {
  try {
    await promise;
  } catch (error) {
    return error as { code?: string; responseCode?: number; message: string };
  }
  throw new Error('expected the send to fail');
}

function only(messages: CapturedMail[]): CapturedMail {
  expect(messages).toHaveLength(1);
  return messages[0]!;
}

describe('SMTP emulator', () => {
  it('captures a message with its envelope, headers and parts', async () => {
    const smtp = await start();
    expect(smtp.url).toBe(`smtp://127.0.0.1:${smtp.port}`);

    const transport = nodemailer.createTransport(smtp.url);
    const info = await transport.sendMail({
      from: '"Ann Sender" <ann@example.com>',
      to: ['bob@example.net', 'carol@example.org'],
      replyTo: 'replies@example.com',
      subject: 'Quarterly update',
      text: 'Plain body',
      html: '<p>HTML body</p>',
      messageId: '<fixed-id@example.com>',
      headers: { 'X-Campaign': 'c-42' },
      envelope: { from: 'bounces@example.com', to: ['bob@example.net', 'carol@example.org'] },
    });
    transport.close();
    expect(info.accepted).toEqual(['bob@example.net', 'carol@example.org']);

    const mail = only(await smtp.waitFor(1));
    expect(mail.envelope).toEqual({ from: 'bounces@example.com', to: ['bob@example.net', 'carol@example.org'] });
    expect(mail.subject).toBe('Quarterly update');
    expect(mail.from).toBe('"Ann Sender" <ann@example.com>');
    expect(mail.to).toBe('bob@example.net, carol@example.org');
    expect(mail.replyTo).toBe('replies@example.com');
    expect(mail.messageId).toBe('<fixed-id@example.com>');
    expect(mail.text?.trim()).toBe('Plain body');
    expect(mail.html).toBe('<p>HTML body</p>');
    expect(mail.raw).toContain('Subject: Quarterly update');
    expect(mail.headerLines.filter((h) => h.key === 'x-campaign')).toEqual([{ key: 'x-campaign', line: 'X-Campaign: c-42' }]);
    expect(mail.headerLines.filter((h) => h.key === 'subject')).toHaveLength(1);
    expect(mail.at).toBeGreaterThan(Date.now() - 10_000);

    await send(smtp.url, 'text only');
    const [, second] = await smtp.waitFor(2);
    expect(second?.html).toBeUndefined();
    expect(smtp.messages.map((m) => m.subject)).toEqual(['Quarterly update', 'text only']);
  });

  it('with auth, refuses wrong credentials with 535 and accepts the right ones', async () => {
    const smtp = await start({ auth: { user: 'mailer@example.com', pass: 'p@ss:w/rd' } });
    expect(smtp.url).toBe(`smtp://mailer%40example.com:p%40ss%3Aw%2Frd@127.0.0.1:${smtp.port}`);

    const wrong = await failure(send(`smtp://mailer%40example.com:nope@127.0.0.1:${smtp.port}`));
    expect(wrong.responseCode).toBe(535);
    expect(smtp.messages).toHaveLength(0);

    await send(smtp.url, 'authenticated');
    expect(only(await smtp.waitFor(1)).subject).toBe('authenticated');
  });

  it('failNext(451) refuses one message, then accepts the next', async () => {
    const smtp = await start();
    smtp.failNext(451);

    const refused = await failure(send(smtp.url, 'first'));
    expect(refused.responseCode).toBe(451);
    expect(smtp.messages).toHaveLength(0);

    await send(smtp.url, 'second');
    expect(only(await smtp.waitFor(1)).subject).toBe('second');
  });

  it('failNext gives the chosen code and text, as many times as asked', async () => {
    const smtp = await start();
    smtp.failNext(550, 2, 'No such user here');
    smtp.failNext(421);

    for (let i = 0; i < 2; i++) {
      const refused = await failure(send(smtp.url));
      expect(refused.responseCode).toBe(550);
      expect(refused.message).toContain('No such user here');
    }
    expect((await failure(send(smtp.url))).responseCode).toBe(421);

    await send(smtp.url, 'through');
    expect(only(smtp.messages).subject).toBe('through');
  });

  it('down() refuses connections and cuts open ones; up() listens again on the same port', async () => {
    const smtp = await start();
    const client = net.connect(smtp.port, '127.0.0.1');
    const greeting = await new Promise<string>((resolve) => client.once('data', (data: Buffer) => resolve(data.toString())));
    expect(greeting).toMatch(/^220 /);
    const cut = new Promise<void>((resolve) => client.once('close', () => resolve()));

    await smtp.down();
    await cut;
    const refused = await failure(send(smtp.url));
    expect(refused.code === 'ECONNECTION' || refused.code === 'ESOCKET' || refused.message.includes('ECONNREFUSED')).toBe(true);

    await smtp.up();
    await send(smtp.url, 'back up');
    expect(only(await smtp.waitFor(1)).subject).toBe('back up');
  });

  it('waitFor rejects with a clear error after its timeout', async () => {
    const smtp = await start();
    await send(smtp.url, 'lonely');
    await expect(smtp.waitFor(2, 200)).rejects.toThrow('expected at least 2 message(s) within 200 ms, got 1 (subjects: "lonely")');
  });
});
