import { randomUUID } from 'node:crypto';
import http from 'node:http';
import { htmlToText } from '../connectors/sequencers/event.js';
import { escapeHtml } from '../domain/html.js';
import { LoopbackEmulator } from './loopback.js';
import { readBody } from './faults.js';
import { takeSlot } from './rolling-window.js';
import { INVALID_JSON, parseJson } from './json-body.js';

/**
 * The sequencers' APIs a sync and a backfill call, on one real HTTP server on 127.0.0.1, so the service
 * can be pointed at it by base URL: Smartlead's (`/api/v1/...`, `?api_key=`) and Instantly v2's
 * (`/api/v2/...`, `Authorization: Bearer`).
 *
 * Block lists: Smartlead's `/api/v1/leads/...-domain-block-list` and Instantly's
 * `/api/v2/block-lists-entries[/bulk-create]`. Each registered key has its own block list, a set: a value
 * already held is a no-op, yet every value received is logged, so tests can see what a sync re-sends. A
 * call holding any value `rejects` refuses is refused whole (400, nothing stored), as strict vendor
 * validation does. Every step is O(values): a bench pushes 100,000 values through it.
 *
 * Message history, for the backfill (docs/vendors/smartlead.md, docs/vendors/instantly.md): Smartlead's
 * `GET /api/v1/campaigns/{campaign_id}/leads/{lead_id}/message-history` (and the lead lookup
 * `GET /api/v1/leads/?email=`), within 60 requests a minute per key; Instantly's `GET /api/v2/emails`,
 * paged by cursor, within 20 requests a minute per key. Tests make the traffic with
 * {@link SequencerEmulator.smartleadSend}, {@link SequencerEmulator.smartleadReply} and
 * {@link SequencerEmulator.instantlyEmail}: each stores the message and answers the webhook body the
 * vendor would post for it, so the webhooks a test posts and the history the backfill reads agree. The
 * block-list routes are outside those limits (their tests push thousands of values at once).
 *
 * Faults come from the shared plan (faults.ts).
 */

/** A Smartlead block list entry, as `get-domain-block-list` lists it. */
export interface SmartleadEntry {
  id: number;
  email_or_domain: string;
  created_at: string;
  source: 'api';
  client_id: number | null;
}

/** An Instantly block list entry, as the v2 API answers it. */
export interface InstantlyEntry {
  id: string;
  timestamp_created: string;
  organization_id: string;
  bl_value: string;
  is_domain: boolean;
}

/** One key's block list and what reached it. */
export interface BlockList<E> {
  /** The values held, each once, in the order first stored. */
  readonly values: Set<string>;
  /** The entries as the vendor lists them, in order of creation (one per value). */
  readonly entries: E[];
  /** Every value of every accepted call, in order, duplicates included (refused calls are in `rejected`). */
  readonly received: string[];
  /** Every value of the calls refused 400 for a rejected value, in order. */
  readonly rejected: string[];
  /** Values received that were new (stored). */
  distinct: number;
  /** Values received that were already held (no-ops): what a sync sent again. */
  duplicates: number;
}

/** One item of a Smartlead lead's `message-history`, as Smartlead answers it (docs/vendors/smartlead.md). */
interface SmartleadHistoryItem {
  /** The sent email's statistics id: a REPLY carries the one of the email it answers. */
  stats_id: string;
  type: 'SENT' | 'REPLY';
  /** The RFC Message-ID, with angle brackets: what the webhooks carry. */
  message_id: string;
  time: string;
  /** HTML. */
  email_body: string;
  /** SENT items only: no example shows one on a REPLY. */
  subject?: string;
  /** A string, `"1"`, as Smartlead answers it. */
  email_seq_number: string;
  from: string;
  to: string;
  open_count: number;
  click_count: number;
}

/** A Smartlead lead: one id per email within a key, in as many campaigns as it was added to. */
interface SmartleadLead {
  id: number;
  email: string;
  first_name: string | null;
  last_name: string | null;
  /** By campaign id. */
  campaigns: Map<number, SmartleadCampaignLead>;
}

/** A lead in one campaign: its lead-map id and its message history there, in the order stored. */
interface SmartleadCampaignLead {
  campaignId: number;
  campaignName: string;
  leadMapId: number;
  history: SmartleadHistoryItem[];
}

/** What a Smartlead key holds beyond its block list. */
interface SmartleadAccount {
  leads: Map<number, SmartleadLead>;
  /** By lower-cased email. */
  byEmail: Map<string, SmartleadLead>;
  /** When each history request of the last minute came (ms, oldest first), for the limit. */
  hits: number[];
}

/** An email of an Instantly workspace, as `GET /api/v2/emails` lists it (docs/vendors/instantly.md). */
interface InstantlyEmail {
  id: string;
  timestamp_created: string;
  timestamp_email: string;
  message_id: string;
  subject: string;
  from_address_email: string;
  /** Comma-separated, not an array, as Instantly answers it. */
  to_address_email_list: string;
  body: { text: string; html: string };
  content_preview: string;
  organization_id: string;
  eaccount: string;
  campaign_id: string;
  lead: string;
  /** 1 sent from a campaign, 2 received (3 manual sends and 4 scheduled are never stored here). */
  ue_type: 1 | 2;
  step: number;
  is_unread: 0 | 1;
  is_auto_reply: 0 | 1;
  thread_id: string;
}

/** What an Instantly key holds beyond its block list. */
interface InstantlyAccount {
  /** In the order stored. */
  emails: InstantlyEmail[];
  campaignNames: Map<string, string>;
  /** A thread per campaign and lead (`${campaign}\n${lead}`). */
  threads: Map<string, string>;
  /** When each email-list request of the last minute came (ms, oldest first), for the limit. */
  hits: number[];
}

interface LoggedRequest {
  vendor: 'smartlead' | 'instantly';
  method: string;
  /** Without the query string (it holds Smartlead's key). */
  path: string;
  status: number;
  at: number;
  /** The key it carried (empty without one). */
  key: string;
  /** How many block list values its body carried (0 for reads), counted for faulted and refused requests too. */
  values: number;
}

export interface SequencerEmulatorOptions {
  smartleadKeys?: string[];
  instantlyKeys?: string[];
  /** Refuses a call holding a value it returns true for; default: neither a plausible email nor a plausible domain. */
  rejects?: (value: string) => boolean;
  /** Smartlead history requests (every `/api/v1/` route but the block list's) a key may make in any 60 s; default 60. */
  smartleadRequestsPerMinute?: number;
  /** Instantly `GET /api/v2/emails` requests a key may make in any 60 s; default 20. */
  instantlyEmailsPerMinute?: number;
}

/** The mailbox every emulated campaign sends from (Smartlead's `from_email`, Instantly's `eaccount`). */
const MAILBOX = 'tom@northwind.test';
/** The rolling window of both limits. */
const WINDOW_MS = 60_000;

type Answer = [number, unknown, Record<string, string>?];

export class SequencerEmulator extends LoopbackEmulator {
  readonly requests: LoggedRequest[] = [];
  /** Refuses (400) the whole call holding a value it returns true for. */
  rejects: (value: string) => boolean;

  private readonly smartleadLists = new Map<string, BlockList<SmartleadEntry>>();
  private readonly instantlyLists = new Map<string, BlockList<InstantlyEntry> & { organizationId: string }>();
  private readonly smartleadAccounts = new Map<string, SmartleadAccount>();
  private readonly instantlyAccounts = new Map<string, InstantlyAccount>();
  private readonly smartleadRequestsPerMinute: number;
  private readonly instantlyEmailsPerMinute: number;
  private nextSmartleadId = 1000;

  constructor(options: SequencerEmulatorOptions = {}) {
    super();
    for (const key of options.smartleadKeys ?? []) this.addKey('smartlead', key);
    for (const key of options.instantlyKeys ?? []) this.addKey('instantly', key);
    this.rejects = options.rejects ?? ((value) => !isPlausibleEmail(value) && !isPlausibleDomain(value));
    this.smartleadRequestsPerMinute = options.smartleadRequestsPerMinute ?? 60;
    this.instantlyEmailsPerMinute = options.instantlyEmailsPerMinute ?? 20;
  }

  /** Registers a key (a customer's account) with an empty block list and no messages; other keys answer 401. */
  addKey(vendor: 'smartlead' | 'instantly', key: string): void {
    if (vendor === 'smartlead') {
      if (this.smartleadLists.has(key)) return;
      this.smartleadLists.set(key, emptyList());
      this.smartleadAccounts.set(key, { leads: new Map(), byEmail: new Map(), hits: [] });
    } else {
      if (this.instantlyLists.has(key)) return;
      this.instantlyLists.set(key, { ...emptyList(), organizationId: randomUUID() });
      this.instantlyAccounts.set(key, { emails: [], campaignNames: new Map(), threads: new Map(), hits: [] });
    }
  }

  /** The Smartlead block list of this API key, for tests to inspect. */
  smartlead(key: string): BlockList<SmartleadEntry> {
    const list = this.smartleadLists.get(key);
    if (!list) throw new Error(`no Smartlead key ${key}`);
    return list;
  }

  /** The Instantly block list of this bearer key, for tests to inspect. */
  instantly(key: string): BlockList<InstantlyEntry> {
    const list = this.instantlyLists.get(key);
    if (!list) throw new Error(`no Instantly key ${key}`);
    return list;
  }

  /**
   * Adds a lead to a campaign of a Smartlead key. A lead is one per email within the key, as Smartlead's
   * lead ids are (the webhook's `sl_email_lead_id`, the history path's `lead_id`): the same email added to
   * a second campaign keeps its id. Names given replace the stored ones.
   */
  smartleadLead(
    key: string,
    lead: { email: string; firstName?: string | null; lastName?: string | null; campaignId: number; campaignName: string },
  ): { id: number } {
    const account = this.smartleadAccount(key);
    let stored = account.byEmail.get(lead.email.toLowerCase());
    if (!stored) {
      stored = { id: (this.nextSmartleadId += 1), email: lead.email, first_name: null, last_name: null, campaigns: new Map() };
      account.leads.set(stored.id, stored);
      account.byEmail.set(lead.email.toLowerCase(), stored);
    }
    if (lead.firstName !== undefined) stored.first_name = lead.firstName;
    if (lead.lastName !== undefined) stored.last_name = lead.lastName;
    const membership = stored.campaigns.get(lead.campaignId);
    if (membership) membership.campaignName = lead.campaignName;
    else
      stored.campaigns.set(lead.campaignId, {
        campaignId: lead.campaignId,
        campaignName: lead.campaignName,
        leadMapId: (this.nextSmartleadId += 1),
        history: [],
      });
    return { id: stored.id };
  }

  /**
   * A campaign email sent to a lead at `at`: stored as a SENT item of its message history, and the
   * EMAIL_SENT webhook body returned. `body` is the email's HTML (plain text reads as well). A lead in
   * several campaigns needs `campaignId`.
   */
  smartleadSend(key: string, leadId: number, email: { subject: string; body: string; at: Date; step?: number; campaignId?: number }): Record<string, unknown> {
    const lead = this.smartleadLeadOf(key, leadId);
    const membership = campaignOf(lead, email.campaignId);
    const statsId = randomUUID();
    const item: SmartleadHistoryItem = {
      stats_id: statsId,
      type: 'SENT',
      // Smartlead's own Message-IDs embed the stats id (docs/vendors/smartlead.md).
      message_id: `<${statsId}@smartlead.test>`,
      time: email.at.toISOString(),
      email_body: email.body,
      subject: email.subject,
      email_seq_number: String(email.step ?? 1),
      from: MAILBOX,
      to: lead.email,
      open_count: 0,
      click_count: 0,
    };
    membership.history.push(item);
    return {
      event_type: 'EMAIL_SENT',
      ...smartleadCommon(lead, membership, item),
      subject: item.subject,
      // EMAIL_SENT also carries the id at the top level (Smartlead's webhook events page).
      message_id: item.message_id,
      sent_message: { message_id: item.message_id, html: item.email_body, text: htmlToText(item.email_body) ?? '', time: item.time },
      time_sent: item.time,
    };
  }

  /**
   * A lead's reply at `at`: stored as a REPLY item of its message history, and the EMAIL_REPLY webhook
   * body returned. It answers the email whose Message-ID is `to`, by default the lead's latest send in
   * the campaign (none when it has none); a reply shares the stats id of the email it answers, as on
   * Smartlead. A lead in several campaigns needs `campaignId`.
   */
  smartleadReply(key: string, leadId: number, reply: { text: string; at: Date; to?: string; campaignId?: number }): Record<string, unknown> {
    const lead = this.smartleadLeadOf(key, leadId);
    const membership = campaignOf(lead, reply.campaignId);
    const parent = reply.to === undefined ? latestSent(membership.history) : membership.history.find((item) => item.message_id === reply.to);
    if (reply.to !== undefined && !parent) throw new Error(`no Smartlead message ${reply.to} of lead ${leadId} in campaign ${membership.campaignId}`);
    const item: SmartleadHistoryItem = {
      stats_id: parent?.stats_id ?? randomUUID(),
      type: 'REPLY',
      message_id: `<${randomUUID()}@mail.${domainOf(lead.email)}>`,
      time: reply.at.toISOString(),
      email_body: htmlOf(reply.text),
      email_seq_number: parent?.email_seq_number ?? '1',
      from: lead.email,
      to: MAILBOX,
      open_count: 0,
      click_count: 0,
    };
    membership.history.push(item);
    return {
      event_type: 'EMAIL_REPLY',
      ...smartleadCommon(lead, membership, item),
      ...(parent?.subject !== undefined ? { subject: `Re: ${parent.subject}` } : {}),
      ...(parent
        ? { sent_message: { message_id: parent.message_id, html: parent.email_body, text: htmlToText(parent.email_body) ?? '', time: parent.time } }
        : {}),
      reply_message: { message_id: item.message_id, text: reply.text, html: item.email_body, time: item.time },
      // Deprecated twin of reply_message.message_id, still sent (Smartlead's Threaded Replies page).
      message_id: item.message_id,
      time_replied: item.time,
      leadCorrespondence: { targetLeadEmail: lead.email, replyReceivedFrom: lead.email, repliedCompanyDomain: domainOf(lead.email) },
    };
  }

  /**
   * An email of an Instantly campaign at `at`, sent to the lead from {@link MAILBOX} or received from the
   * lead: stored for `GET /api/v2/emails`, and the webhook body Instantly would post for it returned
   * (`email_sent`, `reply_received` or `auto_reply_received`), whose `email_id` is the stored email's `id`.
   * `campaignName` is remembered per campaign (default `Campaign <id>`).
   */
  instantlyEmail(
    key: string,
    email: {
      campaignId: string;
      lead: string;
      subject: string;
      text: string;
      at: Date;
      kind: 'sent' | 'received';
      autoReply?: boolean;
      step?: number;
      campaignName?: string;
    },
  ): Record<string, unknown> {
    const account = this.instantlyAccount(key);
    const organizationId = this.instantlyLists.get(key)!.organizationId;
    if (email.campaignName !== undefined) account.campaignNames.set(email.campaignId, email.campaignName);
    const campaignName = account.campaignNames.get(email.campaignId) ?? `Campaign ${email.campaignId}`;
    const threadKey = `${email.campaignId}\n${email.lead.toLowerCase()}`;
    const threadId = account.threads.get(threadKey) ?? randomUUID();
    account.threads.set(threadKey, threadId);
    const sent = email.kind === 'sent';
    const at = email.at.toISOString();
    const stored: InstantlyEmail = {
      id: randomUUID(),
      timestamp_created: at,
      timestamp_email: at,
      message_id: `<${randomUUID()}@${sent ? domainOf(MAILBOX) : `mail.${domainOf(email.lead)}`}>`,
      subject: email.subject,
      // "Populated based on the eaccount", a received email's too (docs/vendors/instantly.md): never the contact.
      from_address_email: MAILBOX,
      to_address_email_list: sent ? email.lead : MAILBOX,
      body: { text: email.text, html: htmlOf(email.text) },
      content_preview: email.text.slice(0, 100),
      organization_id: organizationId,
      eaccount: MAILBOX,
      campaign_id: email.campaignId,
      lead: email.lead,
      ue_type: sent ? 1 : 2,
      step: email.step ?? 1,
      is_unread: sent ? 0 : 1,
      is_auto_reply: email.autoReply === true ? 1 : 0,
      thread_id: threadId,
    };
    account.emails.push(stored);
    const common = {
      timestamp: at,
      workspace: organizationId,
      campaign_id: email.campaignId,
      campaign_name: campaignName,
      lead_email: email.lead,
      email_account: MAILBOX,
      step: stored.step,
      variant: 1,
      email_id: stored.id,
    };
    if (sent)
      return {
        event_type: 'email_sent',
        ...common,
        is_first: stored.step === 1,
        email_subject: stored.subject,
        email_text: stored.body.text,
        email_html: stored.body.html,
      };
    return {
      event_type: email.autoReply === true ? 'auto_reply_received' : 'reply_received',
      ...common,
      unibox_url: `https://app.instantly.test/app/unibox?thread_search=${encodeURIComponent(email.lead)}`,
      reply_subject: stored.subject,
      reply_text: stored.body.text,
      reply_html: stored.body.html,
      reply_text_snippet: stored.content_preview,
    };
  }

  // -------------------------------------------------------------------------------------------

  protected async handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://emulator');
    const vendor = url.pathname.startsWith('/api/v1/') ? 'smartlead' : 'instantly';
    const key = vendor === 'smartlead' ? (url.searchParams.get('api_key') ?? '') : (/^Bearer (.+)$/.exec(req.headers.authorization ?? '')?.[1] ?? '');
    const body = await readBody(req);
    await this.plan.wait(url.pathname);
    const json = req.method === 'POST' ? parseJson(body) : undefined;
    const values = countValues(json);
    const answer = (status: number, payload: unknown, headers: Record<string, string> = {}) => {
      this.requests.push({ vendor, method: req.method ?? '', path: url.pathname, status, at: Date.now(), key, values });
      if (res.destroyed) return;
      res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', ...headers });
      res.end(JSON.stringify(payload));
    };
    try {
      const fault = this.plan.take(url.pathname);
      if (fault)
        return answer(
          fault.status,
          fault.body ?? failure(vendor, fault.status, 'injected failure'),
          fault.retryAfter !== undefined ? { 'retry-after': String(fault.retryAfter) } : {},
        );
      const list = vendor === 'smartlead' ? this.smartleadLists.get(key) : this.instantlyLists.get(key);
      if (!list) return answer(401, failure(vendor, 401, vendor === 'smartlead' ? 'Invalid API key' : 'Invalid API key or missing scope'));
      const limited = this.overLimit(vendor, req.method ?? 'GET', url.pathname, key);
      if (limited) return answer(...limited);
      if (req.method === 'POST') {
        if (!/^application\/json/.test(req.headers['content-type'] ?? '')) return answer(415, failure(vendor, 415, 'Content-Type must be application/json'));
        if (json === INVALID_JSON) return answer(400, failure(vendor, 400, 'Body is not valid JSON'));
      }
      answer(...this.route(req.method ?? 'GET', url, key, json));
    } catch (e) {
      answer(500, failure(vendor, 500, e instanceof Error ? e.message : 'internal error'));
    }
  }

  /**
   * The 429 a request meets when its key has used up its limit, else undefined (its slot taken). Only
   * the backfill's reads are limited: Smartlead's history routes (every `/api/v1/` one but the block
   * list's; its limit covers all endpoints, the block-list tests push thousands of values at once) and
   * Instantly's email list, whose own limit is far below the workspace's.
   */
  private overLimit(vendor: 'smartlead' | 'instantly', method: string, path: string, key: string): Answer | undefined {
    const now = Date.now();
    if (vendor === 'smartlead') {
      if (path.endsWith('-domain-block-list')) return undefined;
      const account = this.smartleadAccount(key);
      const retryAfter = takeSlot(account.hits, this.smartleadRequestsPerMinute, WINDOW_MS, now);
      if (retryAfter === undefined) return undefined;
      // The body and headers Smartlead's rate-limit guide documents (docs/vendors/smartlead.md).
      return [
        429,
        { error: { code: 'RATE_LIMIT_EXCEEDED', message: `Too many requests. Please retry after ${retryAfter} seconds.`, retry_after: retryAfter } },
        {
          'retry-after': String(retryAfter),
          'x-ratelimit-limit': String(this.smartleadRequestsPerMinute),
          'x-ratelimit-remaining': '0',
          'x-ratelimit-reset': String(Math.ceil(now / 1000) + retryAfter),
        },
      ];
    }
    if (method !== 'GET' || path !== '/api/v2/emails') return undefined;
    // Instantly documents neither a Retry-After nor a 429 body (docs/vendors/instantly.md): none is sent, so
    // a client meets the case it must handle; `failNext` injects a 429 with one when a test needs it.
    if (takeSlot(this.instantlyAccount(key).hits, this.instantlyEmailsPerMinute, WINDOW_MS, now) === undefined) return undefined;
    return [429, failure('instantly', 429, 'Rate limit exceeded')];
  }

  private route(method: string, url: URL, key: string, json: unknown): Answer {
    const path = url.pathname;
    const body = asRecord(json);
    if (method === 'POST' && path === '/api/v1/leads/add-domain-block-list') {
      const list = body.domain_block_list;
      if (!isStrings(list) || list.length === 0) return [400, failure('smartlead', 400, 'domain_block_list must be a non-empty array of strings')];
      const clientId = body.client_id ?? null;
      if (clientId !== null && !Number.isInteger(clientId)) return [400, failure('smartlead', 400, 'client_id must be an integer')];
      return this.addSmartlead(key, list, clientId as number | null);
    }
    if (method === 'GET' && path === '/api/v1/leads/get-domain-block-list') return this.listSmartlead(key, url.searchParams);
    if (method === 'POST' && path === '/api/v2/block-lists-entries/bulk-create') {
      const list = body.bl_values;
      if (!isStrings(list) || list.length === 0 || list.length > 1000)
        return [400, failure('instantly', 400, 'body/bl_values must be an array of 1 to 1000 strings')];
      return this.addInstantly(key, list, 'bulk');
    }
    if (method === 'POST' && path === '/api/v2/block-lists-entries') {
      if (typeof body.bl_value !== 'string') return [400, failure('instantly', 400, "body must have required property 'bl_value'")];
      return this.addInstantly(key, [body.bl_value], 'single');
    }
    const history = /^\/api\/v1\/campaigns\/([^/]+)\/leads\/([^/]+)\/message-history$/.exec(path);
    if (method === 'GET' && history) return this.smartleadHistory(key, decodeURIComponent(history[1]!), decodeURIComponent(history[2]!), url.searchParams);
    if (method === 'GET' && (path === '/api/v1/leads/' || path === '/api/v1/leads')) return this.smartleadLeadByEmail(key, url.searchParams.get('email'));
    if (method === 'GET' && path === '/api/v2/emails') return this.listInstantlyEmails(key, url.searchParams);
    const vendor = path.startsWith('/api/v1/') ? 'smartlead' : 'instantly';
    return [404, failure(vendor, 404, `Route ${method}:${path} not found`)];
  }

  /**
   * Smartlead add to the account's global block list: one entry per new value, tagged with the call's
   * client id (a value already held is a no-op whatever the client id); any rejected value refuses the call.
   */
  private addSmartlead(key: string, values: string[], clientId: number | null): Answer {
    const list = this.smartlead(key);
    const bad = this.refused(list, values);
    if (bad) return [400, failure('smartlead', 400, `Invalid email or domain: ${bad.join(', ')}`)];
    const now = new Date().toISOString();
    store(list, values, (value) => ({ id: (this.nextSmartleadId += 1), email_or_domain: value, created_at: now, source: 'api', client_id: clientId }));
    return [200, { ok: true, message: 'Domain block list updated' }];
  }

  /** Smartlead list: `offset`/`limit` (default 100, at most 1,000) over the entries the filters keep. */
  private listSmartlead(key: string, query: URLSearchParams): Answer {
    const offset = Number(query.get('offset') ?? '0');
    const limit = Number(query.get('limit') ?? '100');
    if (!Number.isInteger(offset) || offset < 0) return [400, failure('smartlead', 400, 'offset must be a non-negative integer')];
    if (!Number.isInteger(limit) || limit < 1 || limit > 1000) return [400, failure('smartlead', 400, 'limit must be an integer from 1 to 1000')];
    const client = query.get('filter_client_id');
    const search = query.get('filter_email_or_domain')?.toLowerCase();
    let entries = this.smartlead(key).entries;
    if (client !== null || search) {
      entries = entries.filter((e) => (client === null || String(e.client_id) === client) && (!search || e.email_or_domain.toLowerCase().includes(search)));
    }
    return [200, entries.slice(offset, offset + limit)];
  }

  /**
   * Instantly create: bulk answers the entries created (values already held are neither created again
   * nor returned); single answers the entry, the one already held when it exists. Any rejected value refuses the call.
   */
  private addInstantly(key: string, values: string[], mode: 'bulk' | 'single'): Answer {
    const list = this.instantlyLists.get(key)!;
    const bad = this.refused(list, values);
    if (bad) return [400, failure('instantly', 400, `body/bl_values must be valid emails or domains: ${bad.join(', ')}`)];
    const now = new Date().toISOString();
    const created = store(list, values, (value) => ({
      id: randomUUID(),
      timestamp_created: now,
      organization_id: list.organizationId,
      bl_value: value,
      is_domain: !value.includes('@'),
    }));
    if (mode === 'bulk') return [200, created];
    return [200, created[0] ?? list.entries.find((e) => e.bl_value === values[0])];
  }

  /**
   * Smartlead's message history of a campaign lead, oldest first, `event_time_gt` keeping the items
   * after that time. An unknown campaign, or a lead not in it, answers 404: Smartlead documents that
   * 404 (for the campaign's leads list) while a client found 200 `{}` on a live account; the vendor
   * notes ask the emulator for the 404, which the backfill reads as "gone" (it must read `{}` so too).
   */
  private smartleadHistory(key: string, campaignId: string, leadId: string, query: URLSearchParams): Answer {
    const account = this.smartleadAccount(key);
    const campaign = Number(campaignId);
    const known = [...account.leads.values()].some((lead) => lead.campaigns.has(campaign));
    if (!known) return [404, failure('smartlead', 404, 'Campaign not found - Invalid campaign_id.')];
    const lead = account.leads.get(Number(leadId));
    const membership = lead?.campaigns.get(campaign);
    if (!lead || !membership) return [404, failure('smartlead', 404, 'Lead not found - Invalid lead_id.')];
    const after = query.get('event_time_gt');
    const afterMs = after === null ? -Infinity : Date.parse(after);
    if (Number.isNaN(afterMs)) return [400, failure('smartlead', 400, 'event_time_gt must be an ISO 8601 date')];
    const history = membership.history.filter((item) => Date.parse(item.time) > afterMs).sort((a, b) => compareTimes(a.time, b.time));
    return [200, { history, from: MAILBOX, to: lead.email }];
  }

  /** Smartlead's lead by email, with its campaigns; an unknown email answers 200 `{}`, as clients found it does. */
  private smartleadLeadByEmail(key: string, email: string | null): Answer {
    if (email === null || email === '') return [400, failure('smartlead', 400, 'email is required')];
    const lead = this.smartleadAccount(key).byEmail.get(email.toLowerCase());
    if (!lead) return [200, {}];
    return [
      200,
      {
        id: lead.id,
        email: lead.email,
        first_name: lead.first_name,
        last_name: lead.last_name,
        lead_campaign_data: [...lead.campaigns.values()].map((c) => ({
          campaign_id: c.campaignId,
          campaign_name: c.campaignName,
          campaign_lead_map_id: c.leadMapId,
          lead_category_id: null,
          last_sent_at: latestSent(c.history)?.time ?? null,
          last_reply_at: c.history.filter((item) => item.type === 'REPLY').at(-1)?.time ?? null,
        })),
      },
    ];
  }

  /**
   * Instantly's email list: the filters, ordered by `timestamp_created` (`sort_order`, default desc;
   * emails of the same time in the order stored), `limit` a page after the `starting_after` cursor, the
   * id of the previous page's last email. `next_starting_after` is the page's last id, null on the last
   * page. Both time bounds are inclusive (unverified: the backfill asks with an overlap and dedupes).
   */
  private listInstantlyEmails(key: string, query: URLSearchParams): Answer {
    const bad = (field: string, rule: string): Answer => [400, failure('instantly', 400, `querystring/${field} ${rule}`)];
    const limit = Number(query.get('limit') ?? '100');
    if (!Number.isInteger(limit) || limit < 1 || limit > 100) return bad('limit', 'must be an integer from 1 to 100');
    const order = query.get('sort_order') ?? 'desc';
    if (order !== 'asc' && order !== 'desc') return bad('sort_order', 'must be equal to one of the allowed values');
    const type = query.get('email_type');
    if (type !== null && type !== 'sent' && type !== 'received' && type !== 'manual') return bad('email_type', 'must be equal to one of the allowed values');
    const bounds: number[] = [];
    for (const field of ['min_timestamp_created', 'max_timestamp_created']) {
      const value = query.get(field);
      const ms = value === null ? (field.startsWith('min') ? -Infinity : Infinity) : Date.parse(value);
      if (Number.isNaN(ms)) return bad(field, 'must match format "date-time"');
      bounds.push(ms);
    }
    const [min, max] = bounds as [number, number];
    const campaign = query.get('campaign_id');
    const lead = query.get('lead')?.toLowerCase();
    // `manual` is every email but campaign sends: none is stored here (only ue_type 1 and 2).
    const ueType = type === 'sent' ? 1 : type === 'received' ? 2 : type === 'manual' ? 3 : undefined;
    const kept = this.instantlyAccount(key).emails.filter((e) => {
      const at = Date.parse(e.timestamp_created);
      return (
        (campaign === null || e.campaign_id === campaign) &&
        (lead === undefined || e.lead.toLowerCase() === lead) &&
        (ueType === undefined || e.ue_type === ueType) &&
        at >= min &&
        at <= max
      );
    });
    // Stable: emails of the same time keep the order stored, in either direction, so the cursor is well defined.
    const sorted = kept.sort((a, b) => (order === 'asc' ? 1 : -1) * compareTimes(a.timestamp_created, b.timestamp_created));
    const cursor = query.get('starting_after');
    let start = 0;
    if (cursor !== null) {
      const at = sorted.findIndex((e) => e.id === cursor);
      if (at < 0) return bad('starting_after', 'must be the id of an email of the previous page');
      start = at + 1;
    }
    const items = sorted.slice(start, start + limit);
    const more = start + limit < sorted.length;
    return [200, { items, next_starting_after: more ? items.at(-1)!.id : null }];
  }

  private smartleadAccount(key: string): SmartleadAccount {
    const account = this.smartleadAccounts.get(key);
    if (!account) throw new Error(`no Smartlead key ${key}`);
    return account;
  }

  private smartleadLeadOf(key: string, leadId: number): SmartleadLead {
    const lead = this.smartleadAccount(key).leads.get(leadId);
    if (!lead) throw new Error(`no Smartlead lead ${leadId}`);
    return lead;
  }

  private instantlyAccount(key: string): InstantlyAccount {
    const account = this.instantlyAccounts.get(key);
    if (!account) throw new Error(`no Instantly key ${key}`);
    return account;
  }

  /** The values `rejects` refuses (logged to `rejected` with the whole call), or undefined when none. */
  private refused(list: BlockList<unknown>, values: string[]): string[] | undefined {
    const bad = values.filter((v) => this.rejects(v));
    if (bad.length === 0) return undefined;
    for (const value of values) list.rejected.push(value);
    return bad;
  }
}

export async function startSequencerEmulator(options: SequencerEmulatorOptions = {}): Promise<SequencerEmulator> {
  return new SequencerEmulator(options).start();
}

// ---------------------------------------------------------------------------------------------

/** How many block list values a request body carries, whatever becomes of the request (the request log's `values`). */
function countValues(json: unknown): number {
  const body = asRecord(json);
  const list = body.domain_block_list ?? body.bl_values;
  if (Array.isArray(list)) return list.length;
  return body.bl_value === undefined ? 0 : 1;
}

/** The fields every Smartlead webhook of a lead's message carries. */
function smartleadCommon(lead: SmartleadLead, membership: SmartleadCampaignLead, item: SmartleadHistoryItem): Record<string, unknown> {
  const name = [lead.first_name, lead.last_name].filter(Boolean).join(' ');
  return {
    campaign_id: membership.campaignId,
    campaign_name: membership.campaignName,
    // A string, as Smartlead's own example sends it; the lead-map id a number.
    sl_email_lead_id: String(lead.id),
    sl_email_lead_map_id: membership.leadMapId,
    sl_lead_email: lead.email,
    to_email: lead.email,
    to_name: name === '' ? null : name,
    lead_data: { email: lead.email, first_name: lead.first_name, last_name: lead.last_name },
    from_email: MAILBOX,
    sequence_number: Number(item.email_seq_number),
    stats_id: item.stats_id,
    event_timestamp: item.time,
  };
}

/** The lead's campaign: the one named, else its only one. */
function campaignOf(lead: SmartleadLead, campaignId: number | undefined): SmartleadCampaignLead {
  if (campaignId !== undefined) {
    const membership = lead.campaigns.get(campaignId);
    if (!membership) throw new Error(`Smartlead lead ${lead.id} is not in campaign ${campaignId}`);
    return membership;
  }
  if (lead.campaigns.size !== 1) throw new Error(`Smartlead lead ${lead.id} is in ${lead.campaigns.size} campaigns: name one (campaignId)`);
  return [...lead.campaigns.values()][0]!;
}

/** The latest SENT item by time (the last stored among equals). */
function latestSent(history: SmartleadHistoryItem[]): SmartleadHistoryItem | undefined {
  let latest: SmartleadHistoryItem | undefined;
  for (const item of history) if (item.type === 'SENT' && (!latest || item.time >= latest.time)) latest = item;
  return latest;
}

/** Orders ISO times of `toISOString` (one format, so by their characters). */
function compareTimes(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/** A message's text as the HTML a mail client would send. */
function htmlOf(text: string): string {
  return `<div>${escapeHtml(text).replace(/\n/g, '<br>')}</div>`;
}

function domainOf(email: string): string {
  return email.slice(email.lastIndexOf('@') + 1) || 'example.test';
}

function emptyList<E>(): BlockList<E> {
  return { values: new Set(), entries: [], received: [], rejected: [], distinct: 0, duplicates: 0 };
}

/** Logs every value as received and stores the new ones; returns the entries created. */
function store<E>(list: BlockList<E>, values: string[], entry: (value: string) => E): E[] {
  const created: E[] = [];
  for (const value of values) {
    list.received.push(value);
    if (list.values.has(value)) {
      list.duplicates += 1;
      continue;
    }
    list.values.add(value);
    list.distinct += 1;
    const e = entry(value);
    list.entries.push(e);
    created.push(e);
  }
  return created;
}

/** The vendor's error format: Smartlead `{error}`, Instantly Fastify's `{statusCode, error, message}`. */
function failure(vendor: 'smartlead' | 'instantly', status: number, message: string): unknown {
  if (vendor === 'smartlead') return { error: status === 429 ? 'Too many requests, please retry later' : message };
  const reason = http.STATUS_CODES[status] ?? 'Error';
  return { statusCode: status, error: reason, message: status === 429 ? 'Rate limit exceeded, retry later' : message };
}

function isPlausibleEmail(value: string): boolean {
  const at = value.lastIndexOf('@');
  return at > 0 && !/[\s,;<>()]/.test(value) && value.indexOf('@') === at && isPlausibleDomain(value.slice(at + 1));
}

function isPlausibleDomain(value: string): boolean {
  return value.length <= 253 && /^(?:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z]{2,63}$/i.test(value);
}

function isStrings(value: unknown): value is string[] {
  return Array.isArray(value) && value.every((v) => typeof v === 'string');
}

function asRecord(value: unknown): Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>) : {};
}
