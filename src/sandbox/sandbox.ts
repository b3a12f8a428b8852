import type { PrismaClient } from '../db/prisma.js';
import type { Logger } from '../logger.js';
import { SandboxJournal, type JournalEntry, type NewEntry } from './journal.js';
import { startSandboxSystems, systemUrl, type SandboxSystem, type SandboxSystems } from './systems.js';

/** The systems whose state is built from what they received (the receivers and the inbox only record). */
const STATEFUL: readonly SandboxSystem[] = [
  'hubspot',
  'hubspot-app',
  'salesforce-login',
  'salesforce-instance',
  'close',
  'close-app',
  'attio',
  'attio-app',
  'smartlead',
  'instantly',
  'emailbison',
];

/** An answer of a sandbox system, as the router relays it. */
interface SystemAnswer {
  status: number;
  headers: Record<string, string>;
  body: Buffer;
}

/**
 * The running sandbox of one API process: its systems, its journal, and the order it applies requests
 * in. On start it replays the journal into fresh emulators; before each request it replays what other
 * API processes journaled since, so every process answers from the same state.
 */
export class Sandbox {
  private applied = 0n;
  private tail: Promise<unknown> = Promise.resolve();

  private constructor(
    readonly systems: SandboxSystems,
    readonly journal: SandboxJournal,
    /** `<BASE_URL>/sandbox`. */
    readonly url: string,
    readonly prisma: PrismaClient,
    readonly encryptionKey: Buffer,
  ) {}

  static async start(options: { prisma: PrismaClient; baseUrl: string; smtpPort: number; encryptionKey: Buffer; logger: Logger }): Promise<Sandbox> {
    const journal = new SandboxJournal(options.prisma);
    const url = `${options.baseUrl}/sandbox`;
    const systems = await startSandboxSystems({
      sandboxUrl: url,
      smtpPort: options.smtpPort,
      onMail: (mail) =>
        void journal
          .append({
            system: 'inbox',
            method: 'SMTP',
            path: mail.envelope.to.join(', '),
            headers: {
              subject: mail.subject ?? '',
              from: mail.from ?? '',
              to: mail.to ?? '',
              replyTo: mail.replyTo ?? '',
              messageId: mail.messageId ?? '',
              html: mail.html ? 'yes' : 'no',
            },
            body: mail.html ?? mail.text ?? '',
            status: 250,
          })
          .catch((error: unknown) => options.logger.warn({ err: error }, 'sandbox inbox: could not journal a message')),
    });
    const sandbox = new Sandbox(systems, journal, url, options.prisma, options.encryptionKey);
    // What earlier runs received, replayed before the first request is answered.
    await sandbox.inOrder(() => Promise.resolve());
    options.logger.info({ sandbox: url }, 'sandbox ready');
    return sandbox;
  }

  /**
   * Hands `request` to `system` once every journaled request before it is applied, and journals it:
   * requests are applied one at a time in journal order.
   */
  handle(system: SandboxSystem, request: { method: string; path: string; headers: Record<string, string>; body: Buffer }, note: Partial<NewEntry> = {}) {
    return this.inOrder(async () => {
      const answer = await send(systemUrl(this.systems, system), request);
      const id = await this.journal.append({
        system,
        method: request.method,
        path: request.path,
        headers: request.headers,
        body: request.body.toString('utf8'),
        status: answer.status,
        ...note,
      });
      if (id > this.applied) this.applied = id;
      return answer;
    });
  }

  async close(): Promise<void> {
    await this.systems.close();
  }

  /** Runs `work` after the journal's new requests are replayed, after every earlier call; answers what `work` does. */
  private inOrder<T>(work: () => Promise<T>): Promise<T> {
    const run = this.tail.then(async () => {
      const missed = await this.journal.replayable(STATEFUL, this.applied);
      for (const entry of missed) await this.replay(entry);
      return work();
    });
    this.tail = run.catch(() => undefined);
    return run;
  }

  private async replay(entry: JournalEntry): Promise<void> {
    const body = Buffer.from(entry.body, 'utf8');
    await send(systemUrl(this.systems, entry.system as SandboxSystem), { method: entry.method, path: entry.path, headers: entry.headers, body });
    this.applied = entry.id;
  }
}

/** The headers a system's request keeps in the journal: what replaying it and showing it need, nothing else. */
export const JOURNALED_HEADERS = ['content-type', 'authorization', 'service-event-id', 'service-delivery-id', 'service-signature', 'service-event-type'];

async function send(base: string, request: { method: string; path: string; headers: Record<string, string>; body: Buffer }): Promise<SystemAnswer> {
  const hasBody = request.method !== 'GET' && request.method !== 'HEAD';
  const response = await fetch(`${base}${request.path}`, {
    method: request.method,
    headers: request.headers,
    body: hasBody ? new Uint8Array(request.body) : undefined,
    // A consent page's answer redirects the browser to the service's callback: relayed, never followed here.
    redirect: 'manual',
  });
  const headers: Record<string, string> = {};
  for (const [name, value] of response.headers)
    if (!['connection', 'keep-alive', 'transfer-encoding', 'content-length', 'content-encoding'].includes(name)) headers[name] = value;
  return { status: response.status, headers, body: Buffer.from(await response.arrayBuffer()) };
}
