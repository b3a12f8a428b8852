import type { AddressInfo, Socket } from 'node:net';
import { simpleParser, type AddressObject } from 'mailparser';
import { SMTPServer, type SMTPServerError } from 'smtp-server';

/**
 * A mail relay: a real SMTP server on 127.0.0.1 (smtp-server) that the code under test reaches through
 * `SMTP_URL` with its real mail client (nodemailer), so what is checked is what went over the wire, not
 * what a mocked transport was handed. Every accepted message is kept raw and parsed (mailparser), with
 * its header lines as received so a header injection is visible. The server can be told to refuse the
 * next messages with a given reply code (transient 421/451, permanent 550), to require AUTH, or to go
 * down (connections refused) and come back on the same port, which is what retries are tested against.
 *
 * Plain SMTP only: STARTTLS is disabled so the client never upgrades on loopback, and AUTH is offered
 * over the clear connection only when credentials are configured.
 */

export interface SmtpEmulatorOptions {
  /** Require AUTH PLAIN/LOGIN with these credentials (any other credentials: 535). Without it, no auth is offered or required. */
  auth?: { user: string; pass: string };
  /** Where to listen on 127.0.0.1 (the sandbox's SANDBOX_SMTP_PORT); default: any free port. */
  port?: number;
  /** Called with each message accepted (the sandbox journals its inbox). */
  onMessage?: (mail: CapturedMail) => void;
}

export interface CapturedMail {
  /** `Date.now()` when the message was accepted. */
  at: number;
  /** The SMTP envelope (MAIL FROM, RCPT TO), which need not match the headers. */
  envelope: { from: string; to: string[] };
  /** The whole message as received (headers + body). */
  raw: string;
  /** Every header line as received, names lowercased, in order (a header injection shows up as an extra entry). */
  headerLines: Array<{ key: string; line: string }>;
  subject: string | undefined;
  /** The From header's address text as mailparser gives it (`.text`), e.g. `"Ann" <ann@example.com>`. */
  from: string | undefined;
  /** The To header(s) as text; several To headers are joined with `, `. */
  to: string | undefined;
  replyTo: string | undefined;
  /** The Message-ID header, angle brackets included. */
  messageId: string | undefined;
  text: string | undefined;
  /** Undefined when the message has no HTML part. */
  html: string | undefined;
}

export interface SmtpEmulator {
  /** `smtp://127.0.0.1:<port>`, or `smtp://user:pass@127.0.0.1:<port>` with auth (credentials URL-encoded): what SMTP_URL takes. */
  url: string;
  port: number;
  /** Every message accepted, oldest first. */
  readonly messages: CapturedMail[];
  /**
   * The next `times` (default 1) messages are refused at the end of DATA with this SMTP reply code and
   * `text`, e.g. 421 / 451 (transient) or 550 (permanent). A 421 also closes the connection, as a real
   * server going away does. Refused messages are not captured.
   */
  failNext(code: number, times?: number, text?: string): void;
  /** Stops listening (connections refused) and drops open connections, keeping the port and the captured messages; `up()` listens again on the same port. */
  down(): Promise<void>;
  up(): Promise<void>;
  /** Resolves with the messages once at least `n` were accepted (default timeout 10 s, then rejects with a clear error). */
  waitFor(n: number, ms?: number): Promise<CapturedMail[]>;
  close(): Promise<void>;
}

const HOST = '127.0.0.1';

/** Reply texts for the usual refusal codes, so `failNext(451)` reads like a real server's answer. */
const DEFAULT_REFUSAL_TEXT: Record<number, string> = {
  421: 'Service not available, closing transmission channel',
  450: 'Requested mail action not taken: mailbox unavailable',
  451: 'Requested action aborted: local error in processing',
  452: 'Requested action not taken: insufficient system storage',
  550: 'Requested action not taken: mailbox unavailable',
  552: 'Requested mail action aborted: exceeded storage allocation',
  554: 'Transaction failed',
};

export async function startSmtpEmulator(options: SmtpEmulatorOptions = {}): Promise<SmtpEmulator> {
  const { auth } = options;
  const messages: CapturedMail[] = [];
  const refusals: Array<{ code: number; text: string; remaining: number }> = [];
  const waiters = new Set<{ n: number; settle: (error?: Error) => void }>();
  let listening: { server: SMTPServer; sockets: Set<Socket> } | undefined;
  let port = options.port ?? 0;
  let closed = false;

  function smtpError(code: number, text: string): SMTPServerError {
    const error: SMTPServerError = new Error(text);
    error.responseCode = code;
    return error;
  }

  /** The refusal for the message now ending DATA, if one is queued (and counts it). */
  function takeRefusal(): SMTPServerError | undefined {
    const next = refusals[0];
    if (!next) return undefined;
    next.remaining -= 1;
    if (next.remaining <= 0) refusals.shift();
    return smtpError(next.code, next.text);
  }

  function accepted(mail: CapturedMail): void {
    messages.push(mail);
    options.onMessage?.(mail);
    for (const waiter of waiters) if (messages.length >= waiter.n) waiter.settle();
  }

  // A fresh SMTPServer per `up()`: smtp-server's own close() waits (closeTimeout) for clients to leave,
  // whereas going down here means the listening socket is closed and every open connection is cut now.
  function createServer(): { server: SMTPServer; sockets: Set<Socket> } {
    const sockets = new Set<Socket>();
    const server = new SMTPServer({
      secure: false,
      name: HOST,
      logger: false,
      disableReverseLookup: true,
      disabledCommands: auth ? ['STARTTLS'] : ['STARTTLS', 'AUTH'],
      authOptional: !auth,
      authMethods: ['PLAIN', 'LOGIN'],
      // There is no TLS on loopback, so AUTH has to be allowed on the clear connection.
      allowInsecureAuth: true,
      onAuth(credentials, _session, callback) {
        if (auth && credentials.username === auth.user && credentials.password === auth.pass) return callback(null, { user: auth.user });
        callback(smtpError(535, 'Authentication credentials invalid'));
      },
      onData(stream, session, callback) {
        const chunks: Buffer[] = [];
        stream.on('data', (chunk: Buffer) => chunks.push(chunk));
        stream.on('end', () => {
          const refusal = takeRefusal();
          if (refusal) return callback(refusal);
          const raw = Buffer.concat(chunks);
          const envelope = {
            from: session.envelope.mailFrom ? session.envelope.mailFrom.address : '',
            to: session.envelope.rcptTo.map((rcpt) => rcpt.address),
          };
          simpleParser(raw).then(
            (parsed) => {
              accepted({
                at: Date.now(),
                envelope,
                raw: raw.toString('utf8'),
                headerLines: parsed.headerLines.map(({ key, line }) => ({ key, line })),
                subject: parsed.subject,
                from: parsed.from?.text,
                to: addressText(parsed.to),
                replyTo: parsed.replyTo?.text,
                messageId: parsed.messageId,
                text: parsed.text,
                html: parsed.html || undefined,
              });
              callback(null, 'OK: message captured');
            },
            (error: unknown) => callback(smtpError(554, `SMTP emulator could not parse the message: ${String(error)}`)),
          );
        });
      },
    });
    // Clients are cut off on purpose (down(), tests killing connections): nothing to report.
    server.on('error', () => {});
    server.server.on('connection', (socket: Socket) => {
      sockets.add(socket);
      socket.on('close', () => sockets.delete(socket));
    });
    return { server, sockets };
  }

  async function listen(): Promise<void> {
    if (closed) throw new Error('SMTP emulator: already closed');
    if (listening) return;
    const instance = createServer();
    await new Promise<void>((resolve, reject) => {
      const onError = (error: Error) => reject(new Error(`SMTP emulator: cannot listen on ${HOST}:${port}: ${error.message}`));
      instance.server.server.once('error', onError);
      instance.server.listen(port, HOST, () => {
        instance.server.server.off('error', onError);
        resolve();
      });
    });
    listening = instance;
    port = (instance.server.server.address() as AddressInfo).port;
  }

  async function stopListening(): Promise<void> {
    const instance = listening;
    if (!instance) return;
    listening = undefined;
    await new Promise<void>((resolve) => {
      // net.Server#close stops accepting at once and calls back when the last connection is gone.
      instance.server.server.close(() => resolve());
      for (const socket of instance.sockets) socket.destroy();
    });
  }

  await listen();
  const credentials = auth ? `${encodeURIComponent(auth.user)}:${encodeURIComponent(auth.pass)}@` : '';

  return {
    url: `smtp://${credentials}${HOST}:${port}`,
    port,
    messages,
    failNext(code, times = 1, text) {
      if (!Number.isInteger(code) || code < 400 || code > 599) throw new Error(`SMTP emulator: failNext takes a 4xx or 5xx reply code, not ${code}`);
      refusals.push({ code, text: text ?? DEFAULT_REFUSAL_TEXT[code] ?? 'Refused by the SMTP emulator', remaining: times });
    },
    down: stopListening,
    up: listen,
    waitFor(n, ms = 10_000) {
      if (messages.length >= n) return Promise.resolve(messages.slice());
      return new Promise<CapturedMail[]>((resolve, reject) => {
        const waiter = {
          n,
          settle(error?: Error) {
            clearTimeout(timer);
            waiters.delete(waiter);
            if (error) reject(error);
            else resolve(messages.slice());
          },
        };
        const timer = setTimeout(() => {
          const subjects = messages.map((m) => JSON.stringify(m.subject ?? null)).join(', ');
          waiter.settle(
            new Error(`SMTP emulator: expected at least ${n} message(s) within ${ms} ms, got ${messages.length}${subjects ? ` (subjects: ${subjects})` : ''}`),
          );
        }, ms);
        waiters.add(waiter);
      });
    },
    async close() {
      closed = true;
      for (const waiter of waiters) waiter.settle(new Error(`SMTP emulator: closed while waiting for ${waiter.n} message(s), got ${messages.length}`));
      await stopListening();
    },
  };
}

/** mailparser gives an array when the message has several To headers. */
function addressText(value: AddressObject | AddressObject[] | undefined): string | undefined {
  if (value === undefined) return undefined;
  return Array.isArray(value) ? value.map((v) => v.text).join(', ') : value.text;
}
