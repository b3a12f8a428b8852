/**
 * Reply relays in integration tests: a source of its own bound to a relay of its own (its own rep's
 * address, so a test only reads the mail it caused), the relay_executions rows as the tests read them,
 * the jobs that move them, and the real Smartlead samples as bodies.
 */
import net, { type AddressInfo, type Socket } from 'node:net';
import type { PrismaClient } from '../../src/db/prisma.js';
import { readSample } from '../../src/connectors/sequencers/samples.js';
import type { CapturedMail, SmtpEmulator } from '../../src/emulators/smtp.js';
import type { TestDatabase } from './database.js';
import { eventually } from './worker.js';

/** SMTP_FROM in the relay tests; the executions' Message-IDs end in its domain. */
export const RELAY_FROM = 'Pipeline Sync <relays@pipeline.test>';

/** The Message-ID an execution's email carries (src/jobs/reply_relays__schedule.ts). */
export function relayMessageId(relayId: number, requestId: number): string {
  return `<relay-${relayId}-${requestId}@pipeline.test>`;
}

/** A relay of its own, and a source of its own bound to it. */
export interface TestRelay {
  relayId: number;
  sourceId: number;
  /** The source's ingress code. */
  code: string;
  /** The relay's rep: only this test's mail goes there. */
  ccEmail: string;
}

/**
 * Creates a relay on `connectionId` (rep `<name>@reps.test`) and a source (`platform`, smartlead unless
 * said; ingress code `relay<name>`) bound to it.
 */
export async function createRelay(
  prisma: PrismaClient,
  options: {
    connectionId: number;
    name: string;
    platform?: string;
    delayMinutes?: number;
    bodyTemplates?: string[];
    categoryAllowlist?: Array<{ id: string; name: string }>;
  },
): Promise<TestRelay> {
  const { connectionId, name } = options;
  const ccEmail = `${name.toLowerCase()}@reps.test`;
  const relay = await prisma.replyRelay.create({
    data: {
      connectionId,
      description: `relay ${name}`,
      ccEmail,
      delayMinutes: options.delayMinutes ?? 0,
      bodyTemplates: options.bodyTemplates ?? [],
      categoryAllowlist: options.categoryAllowlist ?? [],
    },
  });
  const source = await prisma.source.create({ data: { connectionId, platform: options.platform ?? 'smartlead', ingressCode: `relay${name}` } });
  await prisma.source.update({ where: { id: source.id }, data: { replyRelayId: relay.id } });
  return { relayId: relay.id, sourceId: source.id, code: source.ingressCode, ccEmail };
}

/** A relay_executions row as the tests read it. */
export interface ExecutionRow {
  id: string;
  relay_id: number;
  request_id: string;
  status: string;
  reason: string | null;
  message_id: string;
  smtp_response: string | null;
  attempts: number;
  attempt_log: Array<{ at: string; outcome: string; error?: string; smtpCode?: number; response?: string }>;
  unknown_placeholders: string[];
  run_at: Date;
  next_attempt_at: Date | null;
  sending_since: Date | null;
  sent_at: Date | null;
  created_at: Date;
  updated_at: Date;
}

/** The executions of these requests, oldest first. */
export function executionsOf(db: TestDatabase, requestIds: number[]): Promise<ExecutionRow[]> {
  return db.query<ExecutionRow>('SELECT * FROM relay_executions WHERE request_id = ANY($1::bigint[]) ORDER BY id', [requestIds]);
}

/** Waits until the request's execution satisfies `done` (and returns it). */
export function executionWhen(db: TestDatabase, requestId: number, done: (row: ExecutionRow) => boolean, what: string, ms = 15_000): Promise<ExecutionRow> {
  return eventually(
    async () => {
      const [row] = await executionsOf(db, [requestId]);
      return row && done(row) ? row : undefined;
    },
    ms,
    `the execution of request ${requestId}: ${what}`,
  );
}

/**
 * Waits until the scheduling jobs of these requests have run and succeeded (graphile-worker deletes a
 * job it completed; a failed one stays, with its key, to be retried).
 */
export async function schedulingDone(db: TestDatabase, requestIds: number[], ms = 15_000): Promise<void> {
  const keys = requestIds.map((id) => `relay-schedule:${id}`);
  await eventually(
    async () => {
      const [row] = await db.query<{ n: number }>('SELECT count(*)::int AS n FROM graphile_worker._private_jobs WHERE key = ANY($1::text[])', [keys]);
      return row!.n === 0 ? true : undefined;
    },
    ms,
    `the scheduling of requests ${requestIds.join(', ')}`,
  );
}

/** The waiting send job of an execution (graphile-worker's row, by its key), if there is one. */
export async function sendJobOf(db: TestDatabase, executionId: string): Promise<{ run_at: Date; attempts: number } | undefined> {
  const [row] = await db.query<{ run_at: Date; attempts: number }>('SELECT run_at, attempts FROM graphile_worker._private_jobs WHERE key = $1', [
    `relay:${executionId}`,
  ]);
  return row;
}

/** Makes a delayed execution due now: its send job and its row, as if its delay had passed. */
export async function pullForward(db: TestDatabase, executionId: string): Promise<void> {
  await db.query('UPDATE graphile_worker._private_jobs SET run_at = now() WHERE key = $1 AND locked_at IS NULL', [`relay:${executionId}`]);
  await db.query('UPDATE relay_executions SET run_at = now() WHERE id = $1', [executionId]);
}

/** The messages the emulator accepted for `address` (by SMTP envelope). */
export function mailTo(smtp: SmtpEmulator, address: string): CapturedMail[] {
  return smtp.messages.filter((m) => m.envelope.to.includes(address));
}

/** Waits until `address` has at least `n` messages (and returns them). */
export function waitForMailTo(smtp: SmtpEmulator, address: string, n = 1, ms = 15_000): Promise<CapturedMail[]> {
  return eventually(
    () => {
      const mail = mailTo(smtp, address);
      return Promise.resolve(mail.length >= n ? mail : undefined);
    },
    ms,
    `${n} message(s) to ${address}`,
  );
}

/** The value of the message's header `name` (lowercase) as received, without its name. */
export function headerValue(mail: CapturedMail, name: string): string | undefined {
  const line = mail.headerLines.find((h) => h.key === name)?.line;
  return line?.slice(line.indexOf(':') + 1).trim();
}

type Sample = 'EMAIL_REPLY' | 'LEAD_CATEGORY_UPDATED';

/** A real Smartlead body (src/connectors/sequencers/smartlead/samples/<name>.json) as an object. */
function sample(name: Sample): Record<string, unknown> {
  return JSON.parse(readSample('smartlead', `${name}.json`)) as Record<string, unknown>;
}

/**
 * The real Smartlead reply sample about `email`, with its own reply message id (`replyId`), and `extra`
 * fields on top.
 */
export function smartleadReplySample(email: string, replyId: string, extra: Record<string, unknown> = {}): string {
  const body = sample('EMAIL_REPLY');
  const reply = body.reply_message as Record<string, unknown>;
  return JSON.stringify({
    ...body,
    sl_lead_email: email,
    to_email: email,
    message_id: replyId,
    reply_message: { ...reply, message_id: replyId },
    leadCorrespondence: { targetLeadEmail: email, replyReceivedFrom: email },
    description: `${email} replied`,
    ...extra,
  });
}

/** The real Smartlead category update sample: `email`'s category is now `category`. */
export function smartleadCategorySample(email: string, category: { id: number | string; name: string }): string {
  const body = sample('LEAD_CATEGORY_UPDATED');
  const lead = body.lead_data as Record<string, unknown>;
  const now = new Date().toISOString();
  return JSON.stringify({
    ...body,
    to_email: email,
    lead_data: { ...lead, email },
    lead_category: { old_id: null, old_name: null, new_id: category.id, new_name: category.name },
    created_at: now,
    event_timestamp: now,
  });
}

/** Where a stalling mail server stops answering: before its greeting, at EHLO, MAIL, RCPT, or after the whole message. */
export const SMTP_STALLS = ['greeting', 'ehlo', 'mail', 'rcpt', 'message'] as const;
export type SmtpStall = (typeof SMTP_STALLS)[number];

/**
 * A mail server that speaks SMTP up to `stall` and then never says another word: a client sending
 * through it waits for an answer (nodemailer: 10 s for the greeting, minutes for the rest), so a worker
 * killed meanwhile dies at that point of its conversation. At `message` it has read the whole message,
 * final dot included, and never confirms it: the worst case, an email the sender cannot know went out.
 */
interface SilentSmtp {
  url: string;
  /** Connections accepted so far. */
  readonly connections: number;
  /** Whether a client has reached the stall (the server has stopped answering it). */
  readonly stalled: boolean;
  /** At the `message` stall: the message it read and never confirmed, headers included. */
  readonly swallowed: string | undefined;
  close(): Promise<void>;
}

export async function startSilentSmtp(stall: SmtpStall = 'greeting'): Promise<SilentSmtp> {
  const sockets = new Set<Socket>();
  let connections = 0;
  let stalled = false;
  let swallowed: string | undefined;
  const server = net.createServer((socket) => {
    connections += 1;
    sockets.add(socket);
    socket.on('error', () => {});
    socket.on('close', () => sockets.delete(socket));
    if (stall === 'greeting') {
      stalled = true;
      return;
    }
    socket.write('220 silent.test ESMTP\r\n');
    let buffered = '';
    let inMessage = false;
    socket.on('data', (chunk: Buffer) => {
      buffered += chunk.toString('latin1');
      if (inMessage) {
        if (buffered.includes('\r\n.\r\n')) {
          stalled = true;
          swallowed = buffered;
        }
        return;
      }
      let newline: number;
      while (!stalled && (newline = buffered.indexOf('\r\n')) >= 0) {
        const command = buffered.slice(0, newline).toUpperCase();
        buffered = buffered.slice(newline + 2);
        const answer = replyTo(command);
        if (answer === null) stalled = true;
        else socket.write(answer);
        if (command === 'DATA') inMessage = true;
      }
    });
  });
  /** The answer to one command, or null where the server falls silent. */
  function replyTo(command: string): string | null {
    if (command.startsWith('EHLO') || command.startsWith('HELO')) return stall === 'ehlo' ? null : '250-silent.test\r\n250 8BITMIME\r\n';
    if (command.startsWith('MAIL')) return stall === 'mail' ? null : '250 OK\r\n';
    if (command.startsWith('RCPT')) return stall === 'rcpt' ? null : '250 OK\r\n';
    if (command === 'DATA') return '354 End data with <CR><LF>.<CR><LF>\r\n';
    return '250 OK\r\n';
  }
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  const { port } = server.address() as AddressInfo;
  return {
    url: `smtp://127.0.0.1:${port}`,
    get connections() {
      return connections;
    },
    get stalled() {
      return stalled;
    },
    get swallowed() {
      return swallowed;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        for (const socket of sockets) socket.destroy();
      }),
  };
}
