import { randomUUID } from 'node:crypto';
import type http from 'node:http';
import { LoopbackEmulator, NthCall } from './loopback.js';
import { readBody } from './faults.js';
import { takeSlot } from './rolling-window.js';
import { INVALID_JSON, parseJson } from './json-body.js';

/**
 * An EmailBison instance on one real HTTP server on 127.0.0.1 (docs/vendors/emailbison.md): workspaces by
 * `api-user` token (`Authorization: Bearer`), each with its blacklisted emails and domains
 * (`POST /api/blacklisted-emails {email}`, `.../blacklisted-domains {domain}`: 201, or 422 "has already
 * been taken"), its leads and their mail: `GET /api/leads/{id or email}/replies` and `/sent-emails`,
 * newest first, `?page=` pages of {@link PAGE_SIZE} with `meta.last_page`. Its limit is the 3,000
 * requests a minute public clients name (429 with `Retry-After`). Tests and benchmarks make its traffic
 * with {@link EmailBisonEmulator.send} and {@link EmailBisonEmulator.reply}: each stores the message and
 * answers the webhook body EmailBison would post for it, so the webhooks and the history agree.
 */

/** Items per page of every list (EmailBison's default in public clients). */
const PAGE_SIZE = 15;

export interface EmailBisonLead {
  id: number;
  email: string;
  first_name: string | null;
  last_name: string | null;
  company: string | null;
  campaign: { id: number; name: string };
}

/** A sent campaign email, as `sent-emails` lists it. */
interface ScheduledEmail {
  id: number;
  lead_id: number;
  campaign_id: number;
  sequence_step_order: number;
  sequence_step_variant: number;
  email_subject: string;
  email_body: string;
  status: 'sent';
  sent_at: string;
  raw_message_id: string;
  sender_email_id: number;
}

/** A message of the master inbox (a lead's reply, or a rep's own email), as `replies` lists it. */
interface Reply {
  id: number;
  uuid: string;
  subject: string;
  interested: boolean;
  automated_reply: boolean;
  html_body: string;
  text_body: string;
  date_received: string;
  from_name: string | null;
  from_email_address: string;
  primary_to_email_address: string;
  to: Array<{ name: string | null; address: string }>;
  folder: 'inbox' | 'sent';
  raw_message_id: string;
  scheduled_email_id: number | null;
  campaign_id: number;
  lead_id: number;
  sender_email_id: number;
  tracked_reply: boolean;
  read: boolean;
}

interface Workspace {
  id: number;
  name: string;
  emails: Map<string, { id: number; email: string; created_at: string }>;
  domains: Map<string, { id: number; domain: string; created_at: string }>;
  leads: Map<number, EmailBisonLead>;
  sent: ScheduledEmail[];
  replies: Reply[];
  /** When each request of the last minute came (ms), for the limit. */
  hits: number[];
}

interface LoggedRequest {
  method: string;
  path: string;
  status: number;
  at: number;
  token: string;
}

export interface EmailBisonEmulatorOptions {
  /** Requests a workspace may make in any 60 s (429 beyond); default 3,000. */
  requestsPerMinute?: number;
}

/** The sender mailbox every message goes through. */
const SENDER = { id: 40, name: 'Sam Seller', email: 'sam@acme-mail.test' };

type Answer = [number, unknown, Record<string, string>?];

export class EmailBisonEmulator extends LoopbackEmulator {
  readonly requests: LoggedRequest[] = [];
  requestsPerMinute: number;

  private readonly workspaces = new Map<string, Workspace>();
  private nextId = 1000;
  private readonly interception = new NthCall();

  constructor(options: EmailBisonEmulatorOptions = {}) {
    super();
    this.requestsPerMinute = options.requestsPerMinute ?? 3_000;
  }

  /**
   * Runs `action` at the `n`th request that reaches the API (a crash test kills its caller there):
   * `before` it is answered (the caller never gets it), or once `answered`.
   */
  interceptNth(n: number, phase: 'before' | 'answered', action: () => void): void {
    this.interception.arm(n, phase, action);
  }

  /** Registers an `api-user` token with its own, empty workspace; other tokens answer 401. */
  addWorkspace(token: string, name = 'Acme outbound'): void {
    if (this.workspaces.has(token)) return;
    this.workspaces.set(token, {
      id: this.workspaces.size + 1,
      name,
      emails: new Map(),
      domains: new Map(),
      leads: new Map(),
      sent: [],
      replies: [],
      hits: [],
    });
  }

  /** The blacklisted emails and domains of a token's workspace, in order of creation. */
  blacklist(token: string): { emails: string[]; domains: string[] } {
    const workspace = this.workspace(token);
    return { emails: [...workspace.emails.keys()], domains: [...workspace.domains.keys()] };
  }

  /** Adds a lead to a campaign of the token's workspace. */
  addLead(token: string, lead: Omit<EmailBisonLead, 'id'> & { id?: number }): EmailBisonLead {
    const stored = { ...lead, id: lead.id ?? this.nextId++ };
    this.workspace(token).leads.set(stored.id, stored);
    return stored;
  }

  /** Sends a campaign email to a lead at `at`: stored for `sent-emails`, and the EMAIL_SENT webhook body returned. */
  send(token: string, leadId: number, email: { subject: string; body: string; step?: number; at: Date }): Record<string, unknown> {
    const workspace = this.workspace(token);
    const lead = this.lead(workspace, leadId);
    const sent: ScheduledEmail = {
      id: this.nextId++,
      lead_id: lead.id,
      campaign_id: lead.campaign.id,
      sequence_step_order: email.step ?? 1,
      sequence_step_variant: 1,
      email_subject: email.subject,
      email_body: email.body,
      status: 'sent',
      sent_at: email.at.toISOString(),
      raw_message_id: `<${randomUUID()}@send.emailbison.test>`,
      sender_email_id: SENDER.id,
    };
    workspace.sent.push(sent);
    return this.webhook(workspace, 'EMAIL_SENT', 'Email Sent', lead, {
      scheduled_email: { ...sent, campaign_id: undefined, sender_email_id: undefined },
      campaign_event: { id: this.nextId++, event_type: 'sent', created_at: sent.sent_at },
    });
  }

  /**
   * A lead's reply at `at` to the campaign email `to` (a `send` answer's scheduled email id), or a rep's
   * own email to the lead (`manual`): stored for `replies`, and the webhook body returned (LEAD_REPLIED or
   * MANUAL_EMAIL_SENT).
   */
  reply(token: string, leadId: number, message: { text: string; at: Date; to?: number; automated?: boolean; manual?: boolean }): Record<string, unknown> {
    const workspace = this.workspace(token);
    const lead = this.lead(workspace, leadId);
    const parent = workspace.sent.find((s) => s.id === message.to);
    const manual = message.manual === true;
    const reply: Reply = {
      id: this.nextId++,
      uuid: randomUUID(),
      subject: `Re: ${parent?.email_subject ?? 'Hello'}`,
      interested: false,
      automated_reply: message.automated === true,
      html_body: `<p>${message.text}</p>`,
      text_body: message.text,
      date_received: message.at.toISOString(),
      from_name: manual ? SENDER.name : [lead.first_name, lead.last_name].filter(Boolean).join(' ') || null,
      from_email_address: manual ? SENDER.email : lead.email,
      primary_to_email_address: manual ? lead.email : SENDER.email,
      to: [{ name: null, address: manual ? lead.email : SENDER.email }],
      folder: manual ? 'sent' : 'inbox',
      raw_message_id: `<${randomUUID()}@mail.${manual ? 'acme-mail' : 'lead'}.test>`,
      scheduled_email_id: parent?.id ?? null,
      campaign_id: lead.campaign.id,
      lead_id: lead.id,
      sender_email_id: SENDER.id,
      tracked_reply: true,
      read: false,
    };
    workspace.replies.push(reply);
    const { subject, ...rest } = reply;
    return this.webhook(workspace, manual ? 'MANUAL_EMAIL_SENT' : 'LEAD_REPLIED', manual ? 'Manual Email Sent' : 'Contact Replied', lead, {
      reply: { ...rest, email_subject: subject },
      ...(parent ? { scheduled_email: { id: parent.id, sequence_step_order: parent.sequence_step_order, raw_message_id: parent.raw_message_id } } : {}),
      campaign_event: { id: this.nextId++, event_type: manual ? 'manual_sent' : 'replied', created_at: reply.date_received },
    });
  }

  // -------------------------------------------------------------------------------------------

  private workspace(token: string): Workspace {
    const workspace = this.workspaces.get(token);
    if (!workspace) throw new Error('no EmailBison workspace for this token');
    return workspace;
  }

  private lead(workspace: Workspace, id: number): EmailBisonLead {
    const lead = workspace.leads.get(id);
    if (!lead) throw new Error(`no EmailBison lead ${id}`);
    return lead;
  }

  private webhook(workspace: Workspace, type: string, name: string, lead: EmailBisonLead, data: Record<string, unknown>): Record<string, unknown> {
    const { campaign, ...person } = lead;
    return {
      event: { type, name, instance_url: this.url, workspace_id: workspace.id, workspace_name: workspace.name },
      data: { ...data, lead: person, campaign, sender_email: SENDER },
    };
  }

  protected async handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://emulator');
    const token = /^Bearer (.+)$/.exec(req.headers.authorization ?? '')?.[1] ?? '';
    const body = await readBody(req);
    await this.plan.wait(url.pathname);
    const answer = ([status, payload, headers]: Answer) => {
      this.requests.push({ method: req.method ?? '', path: url.pathname, status, at: Date.now(), token });
      if (res.destroyed) return;
      res.writeHead(status, { 'content-type': 'application/json', ...headers });
      res.end(JSON.stringify(payload));
    };
    try {
      const fault = this.plan.take(url.pathname, token);
      if (fault) {
        const headers = fault.retryAfter !== undefined ? { 'retry-after': String(fault.retryAfter) } : undefined;
        return answer([fault.status, fault.body ?? { message: 'injected failure' }, headers]);
      }
      const workspace = this.workspaces.get(token);
      if (!workspace) return answer([401, { message: 'Unauthenticated.' }]);
      const now = Date.now();
      const retryAfter = takeSlot(workspace.hits, this.requestsPerMinute, 60_000, now);
      if (retryAfter !== undefined) return answer([429, { message: 'Too Many Attempts.' }, { 'retry-after': String(retryAfter) }]);
      const json = req.method === 'POST' ? parseJson(body) : undefined;
      if (json === INVALID_JSON) return answer([400, { message: 'The body is not valid JSON.' }]);
      const intercepted = this.interception.take(req.method ?? 'GET', url.pathname);
      // The caller is gone before its answer: nothing reaches it.
      if (intercepted?.phase === 'before') return intercepted.action();
      answer(this.route(workspace, req.method ?? 'GET', url, json));
      intercepted?.action();
    } catch (error) {
      answer([500, { message: error instanceof Error ? error.message : 'Server Error' }]);
    }
  }

  private route(workspace: Workspace, method: string, url: URL, json: unknown): Answer {
    const path = url.pathname;
    const body = typeof json === 'object' && json !== null ? (json as Record<string, unknown>) : {};
    if (method === 'POST' && path === '/api/blacklisted-emails') return this.blacklistEmail(workspace, body.email);
    if (method === 'POST' && path === '/api/blacklisted-domains') return this.blacklistDomain(workspace, body.domain);
    if (method === 'GET' && path === '/api/blacklisted-emails') return page([...workspace.emails.values()], url);
    if (method === 'GET' && path === '/api/blacklisted-domains') return page([...workspace.domains.values()], url);
    const mail = /^\/api\/leads\/([^/]+)\/(replies|sent-emails)$/.exec(path);
    if (method === 'GET' && mail) {
      const key = decodeURIComponent(mail[1]!).toLowerCase();
      const lead = [...workspace.leads.values()].find((l) => String(l.id) === key || l.email.toLowerCase() === key);
      if (!lead) return [404, { data: { success: false, message: 'Record not found.' } }];
      if (mail[2] === 'sent-emails')
        return page(
          newestFirst(
            workspace.sent.filter((s) => s.lead_id === lead.id),
            (s) => s.sent_at,
          ),
          url,
        );
      const folder = url.searchParams.get('folder') ?? 'inbox';
      const replies = workspace.replies.filter((r) => r.lead_id === lead.id && (folder === 'all' || r.folder === folder));
      return page(
        newestFirst(replies, (r) => r.date_received),
        url,
      );
    }
    return [404, { message: `The route ${path} could not be found.` }];
  }

  private blacklistEmail(workspace: Workspace, email: unknown): Answer {
    if (typeof email !== 'string' || !/^[^@\s]+@[^@\s]+\.[^@\s]+$/.test(email)) return invalid('email', 'The email field must be a valid email address.');
    const value = email.toLowerCase();
    if (workspace.emails.has(value)) return invalid('email', 'The email has already been taken.');
    const entry = { id: this.nextId++, email: value, created_at: new Date().toISOString() };
    workspace.emails.set(value, entry);
    return [201, { data: { ...entry, updated_at: entry.created_at } }];
  }

  private blacklistDomain(workspace: Workspace, domain: unknown): Answer {
    if (typeof domain !== 'string' || !/^[a-z0-9-]+(\.[a-z0-9-]+)+$/i.test(domain)) return invalid('domain', 'The domain field must be a valid domain.');
    const value = domain.toLowerCase();
    if (workspace.domains.has(value)) return invalid('domain', 'The domain has already been taken.');
    const entry = { id: this.nextId++, domain: value, created_at: new Date().toISOString() };
    workspace.domains.set(value, entry);
    return [201, { data: { ...entry, updated_at: entry.created_at } }];
  }
}

/** A Laravel validation answer (422). */
function invalid(field: string, message: string): Answer {
  return [422, { message, errors: { [field]: [message] } }];
}

function newestFirst<T>(items: T[], at: (item: T) => string): T[] {
  return [...items].sort((a, b) => at(b).localeCompare(at(a)));
}

/** One `?page=` of a list, Laravel's paginator shape. */
function page<T>(items: T[], url: URL): Answer {
  const lastPage = Math.max(1, Math.ceil(items.length / PAGE_SIZE));
  const current = Number(url.searchParams.get('page') ?? '1');
  if (!Number.isInteger(current) || current < 1) return invalid('page', 'The page field must be an integer of at least 1.');
  const data = items.slice((current - 1) * PAGE_SIZE, current * PAGE_SIZE);
  return [
    200,
    {
      data,
      links: { next: current < lastPage ? `?page=${current + 1}` : null },
      meta: { current_page: current, last_page: lastPage, per_page: PAGE_SIZE, total: items.length },
    },
  ];
}

/** Starts an instance; `addWorkspace` its tokens. */
export async function startEmailBisonEmulator(options: EmailBisonEmulatorOptions = {}): Promise<EmailBisonEmulator> {
  return new EmailBisonEmulator(options).start();
}
