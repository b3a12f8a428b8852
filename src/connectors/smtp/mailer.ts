/**
 * Sends one email through the operator's SMTP server (SMTP_URL, nodemailer). One connection per
 * message: relays are a few emails a minute, and a pool would keep sockets open past the worker's stop.
 * Failures come back as {@link MailFailure}: the SMTP reply code when the server answered, and a message
 * that never carries the URL's credentials.
 */
import nodemailer from 'nodemailer';
import type SMTPTransport from 'nodemailer/lib/smtp-transport/index.js';
import { storableText } from '../../domain/storable-text.js';

interface OutgoingMail {
  from: string;
  to: string;
  replyTo: string | null;
  subject: string;
  text: string;
  html: string;
  /** `<...@...>`: the same on every attempt of one email, so a repeat is recognisable. */
  messageId: string;
  headers?: Record<string, string>;
}

type MailResult = { ok: true; response: string } | { ok: false; failure: MailFailure };

interface MailFailure {
  responseCode?: number | undefined;
  message: string;
}

export interface Mailer {
  send(mail: OutgoingMail): Promise<MailResult>;
}

/** What an attempt says when SMTP_URL is unset: retried, since an operator may set it. */
const SMTP_NOT_CONFIGURED = 'SMTP is not configured (SMTP_URL is unset)';

const TIMEOUTS = { connectionTimeout: 10_000, greetingTimeout: 10_000, socketTimeout: 30_000 };

export function createMailer(smtpUrl: string | undefined): Mailer {
  if (!smtpUrl) return { send: () => Promise.resolve({ ok: false, failure: { message: SMTP_NOT_CONFIGURED } }) };
  const secrets = credentialsOf(smtpUrl);
  const transport = nodemailer.createTransport({ url: smtpUrl, ...TIMEOUTS } as SMTPTransport.Options);
  return {
    async send(mail) {
      try {
        const info = await transport.sendMail({
          from: mail.from,
          to: mail.to,
          ...(mail.replyTo ? { replyTo: mail.replyTo } : {}),
          subject: mail.subject,
          text: mail.text,
          html: mail.html,
          messageId: mail.messageId,
          headers: mail.headers ?? {},
          // Header values are ours or one line already; nodemailer encodes what is not ASCII.
          disableFileAccess: true,
          disableUrlAccess: true,
        });
        return { ok: true, response: redact(info.response, secrets) };
      } catch (error) {
        return { ok: false, failure: failureOf(error, secrets) };
      }
    },
  };
}

function failureOf(error: unknown, secrets: string[]): MailFailure {
  const e = error as { responseCode?: unknown; message?: unknown; code?: unknown };
  const responseCode = typeof e.responseCode === 'number' ? e.responseCode : undefined;
  const message = typeof e.message === 'string' ? e.message : String(error);
  const code = typeof e.code === 'string' ? `${e.code}: ` : '';
  return { responseCode, message: redact(`${code}${message}`, secrets).slice(0, 500) };
}

// The URL's user and password, decoded and as written, so no message repeats them.
function credentialsOf(smtpUrl: string): string[] {
  const url = new URL(smtpUrl);
  return [url.username, url.password, decodeURIComponent(url.username), decodeURIComponent(url.password)].filter((s) => s.length >= 3);
}

/** The server's words, without our credentials, storable (they are outside text, kept on the execution). */
function redact(text: string, secrets: string[]): string {
  return storableText(secrets.reduce((out, secret) => out.replaceAll(secret, '***'), text));
}
