import { randomBytes, randomUUID } from 'node:crypto';
import type http from 'node:http';
import { LoopbackEmulator } from './loopback.js';
import { readBody } from './faults.js';
import { takeSlot } from './rolling-window.js';
import { INVALID_JSON, parseJson } from './json-body.js';

/**
 * A HeyReach public API on one real HTTP server on 127.0.0.1 (docs/vendors/heyreach.md): base
 * `/api/public`, a workspace per `X-API-KEY` ({@link HeyReachEmulator.addKey}; any other key answers 401),
 * `GET /auth/CheckApiKey` and the inbox's `POST /inbox/GetConversationsV2` (filters, `offset` + `limit` ≤ 100,
 * `totalCount`; newest conversation first, each with its whole thread oldest first). Its limit is HeyReach's
 * published 300 requests a minute per key (429, with `Retry-After` as the doc says to emulate). Tests and
 * benchmarks make its traffic with {@link HeyReachEmulator.addLead} and {@link HeyReachEmulator.message}: each
 * message is stored in its conversation and the webhook body HeyReach would post for it is returned, so the
 * webhooks and the history agree.
 */

/** A lead of a campaign, as a test adds it. */
interface LeadInput {
  profileUrl: string;
  firstName: string;
  lastName: string;
  email?: string | null;
  companyName?: string | null;
  campaignId: number;
  campaignName: string;
  /** The LinkedIn seat talking to the lead; default {@link DEFAULT_ACCOUNT_ID}. */
  linkedInAccountId?: number;
}

/** A message of a conversation, as a test sends it: `ME` is our seat, `CORRESPONDENT` the lead. */
interface MessageInput {
  text: string;
  at: Date;
  from: 'ME' | 'CORRESPONDENT';
  inMail?: boolean;
}

interface HeyReachEmulatorOptions {
  /** Requests a key may make in any 60 s (429 beyond); default 300, HeyReach's published limit. */
  requestsPerMinute?: number;
  /**
   * Whether a 429 carries `Retry-After` (the seconds until the key's oldest counted request leaves the
   * window). HeyReach documents none; docs/vendors/heyreach.md says to emulate one, so default true;
   * false lets a test see a client fall back on its own back-off.
   */
  retryAfter?: boolean;
}

interface Lead {
  /** HeyReach's lead id, which the webhook's `lead.id` carries (never shown by the inbox). */
  id: number;
  linkedinId: string;
  profileUrl: string;
  firstName: string;
  lastName: string;
  email: string | null;
  companyName: string | null;
  campaign: { id: number; name: string };
  accountId: number;
}

interface Message {
  /** ISO 8601 with milliseconds, as the inbox answers it. */
  createdAt: string;
  body: string;
  isInMail: boolean;
  sender: 'ME' | 'CORRESPONDENT';
  /** Order of storage: breaks ties between messages of one millisecond. */
  seq: number;
}

interface Conversation {
  id: string;
  lead: Lead;
  /** In the order stored (a test may send them out of time order). */
  messages: Message[];
  seq: number;
}

interface Workspace {
  /** In the order created. */
  conversations: Map<string, Conversation>;
  /** When each counted request of the last minute came (ms, oldest first), for the limit. */
  hits: number[];
}

interface LoggedRequest {
  method: string;
  path: string;
  status: number;
  at: number;
  /** The `X-API-KEY` it carried (empty without one). */
  key: string;
  /** Its JSON body (the text when it is not JSON; undefined when empty). */
  body: unknown;
}

/** The seat a lead talks to unless told otherwise (the id in HeyReach's own example). */
const DEFAULT_ACCOUNT_ID = 93126;

/** Items a page of the inbox may hold ([pm] "up to 100"). */
const MAX_LIMIT = 100;

/**
 * Items a page holds when the request names no `limit`: V2's default is unverified, V3's is documented as 10;
 * the smaller one makes a client that forgets `limit` page wrongly in tests rather than in production.
 */
const DEFAULT_LIMIT = 10;

/** How many of the conversation's messages a webhook's `recent_messages` carries. */
const RECENT_MESSAGES = 5;

const WINDOW_MS = 60_000;

/** The webhook `event_type` for a message: by InMail or not, then reply or not. */
const EVENT_TYPES = {
  message: { sent: 'message_sent', reply: 'every_message_reply_received' },
  inMail: { sent: 'inmail_sent', reply: 'inmail_reply_received' },
} as const;

type Answer = [status: number, payload?: unknown, headers?: Record<string, string>];

export class HeyReachEmulator extends LoopbackEmulator {
  readonly requests: LoggedRequest[] = [];
  requestsPerMinute: number;
  retryAfter: boolean;

  private readonly workspaces = new Map<string, Workspace>();
  private nextId = 5000;

  constructor(options: HeyReachEmulatorOptions = {}) {
    super();
    this.requestsPerMinute = options.requestsPerMinute ?? 300;
    this.retryAfter = options.retryAfter ?? true;
  }

  /** Registers an API key with its own, empty workspace; other keys answer 401. */
  addKey(key: string): void {
    if (!this.workspaces.has(key)) this.workspaces.set(key, { conversations: new Map(), hits: [] });
  }

  /** Adds a lead to a campaign of the key's workspace, with its (empty) conversation: one per lead added. */
  addLead(key: string, lead: LeadInput): { conversationId: string } {
    const workspace = this.workspace(key);
    const accountId = lead.linkedInAccountId ?? DEFAULT_ACCOUNT_ID;
    const stored: Lead = {
      id: this.nextId++,
      linkedinId: `ACoAA${randomBytes(24).toString('base64url').slice(0, 34)}`,
      profileUrl: lead.profileUrl,
      firstName: lead.firstName,
      lastName: lead.lastName,
      email: lead.email ?? null,
      companyName: lead.companyName ?? null,
      campaign: { id: lead.campaignId, name: lead.campaignName },
      accountId,
    };
    // HeyReach's ids are `2-` and base64 (with `=`, maybe `+` `/`: a client must URL-encode them in paths).
    const id = `2-${Buffer.from(`${randomUUID()}_${accountId}`).toString('base64')}`;
    workspace.conversations.set(id, { id, lead: stored, messages: [], seq: this.nextId++ });
    return { conversationId: id };
  }

  /**
   * Appends a message to a conversation, for the inbox, and returns the webhook body HeyReach would post
   * for it: `message_sent` / `every_message_reply_received`, or their InMail twins, with `recent_messages`
   * holding this message first, then the conversation's earlier ones (the parser takes the newest of the
   * event's direction). Webhook times are to the second, as in our samples, while the inbox keeps
   * milliseconds: a backfill must key messages on the second.
   */
  message(key: string, conversationId: string, m: MessageInput): Record<string, unknown> {
    const conversation = this.workspace(key).conversations.get(conversationId);
    if (!conversation) throw new Error(`no HeyReach conversation ${conversationId}`);
    const stored: Message = { createdAt: m.at.toISOString(), body: m.text, isInMail: m.inMail === true, sender: m.from, seq: this.nextId++ };
    const earlier = newestFirst(conversation.messages.filter((x) => at(x) <= at(stored))).slice(0, RECENT_MESSAGES - 1);
    conversation.messages.push(stored);
    const { lead } = conversation;
    const reply = m.from === 'CORRESPONDENT';
    const time = toSecond(stored.createdAt);
    return {
      event_type: EVENT_TYPES[stored.isInMail ? 'inMail' : 'message'][reply ? 'reply' : 'sent'],
      is_inmail: stored.isInMail,
      recent_messages: [stored, ...earlier].map((x) => ({ creation_time: toSecond(x.createdAt), message: x.body, is_reply: x.sender === 'CORRESPONDENT' })),
      message: stored.body,
      conversation_id: conversation.id,
      campaign: { id: lead.campaign.id, name: lead.campaign.name },
      sender: {
        id: lead.accountId,
        first_name: SEAT.firstName,
        last_name: SEAT.lastName,
        full_name: `${SEAT.firstName} ${SEAT.lastName}`,
        email_address: SEAT.email,
      },
      lead: {
        id: String(lead.id),
        profile_url: lead.profileUrl,
        first_name: lead.firstName,
        last_name: lead.lastName,
        full_name: `${lead.firstName} ${lead.lastName}`,
        company_name: lead.companyName,
        // Webhooks carry the lead's email when HeyReach has one (our samples), unlike the V2 inbox.
        ...(lead.email !== null ? { email_address: lead.email } : {}),
      },
      timestamp: time,
    };
  }

  // -------------------------------------------------------------------------------------------

  private workspace(key: string): Workspace {
    const workspace = this.workspaces.get(key);
    if (!workspace) throw new Error('no HeyReach workspace for this key');
    return workspace;
  }

  protected async handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://emulator');
    const method = req.method ?? 'GET';
    const header = req.headers['x-api-key'];
    const key = typeof header === 'string' ? header : '';
    const text = await readBody(req);
    const json = text === '' ? undefined : parseJson(text);
    await this.plan.wait(url.pathname);
    const answer = ([status, payload, headers]: Answer) => {
      this.requests.push({ method, path: url.pathname, status, at: Date.now(), key, body: json === INVALID_JSON ? text : json });
      if (res.destroyed) return;
      // ASP.NET answers 401, 404 and an empty 200 without a body.
      if (payload === undefined) return void res.writeHead(status, headers).end();
      res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', ...headers }).end(JSON.stringify(payload));
    };
    try {
      const fault = this.plan.take(url.pathname, key);
      if (fault) {
        const headers = fault.retryAfter !== undefined ? { 'retry-after': String(fault.retryAfter) } : undefined;
        return answer([fault.status, fault.body ?? { errorMessage: 'injected failure' }, headers]);
      }
      const workspace = this.workspaces.get(key);
      if (!workspace) return answer([401]);
      const now = Date.now();
      const seconds = takeSlot(workspace.hits, this.requestsPerMinute, WINDOW_MS, now);
      if (seconds !== undefined) {
        return answer([
          429,
          { errorMessage: 'Too many requests. The limit is 300 requests per minute.' },
          this.retryAfter ? { 'retry-after': String(seconds) } : undefined,
        ]);
      }
      answer(this.route(workspace, method, url.pathname, json));
    } catch (error) {
      answer([500, { errorMessage: error instanceof Error ? error.message : 'Internal server error' }]);
    }
  }

  private route(workspace: Workspace, method: string, path: string, json: unknown): Answer {
    // ASP.NET routes ignore case.
    const route = path.toLowerCase().replace(/\/+$/, '');
    if (route === '/api/public/auth/checkapikey') return method === 'GET' ? [200] : [405];
    if (route === '/api/public/inbox/getconversationsv2') return method === 'POST' ? this.conversations(workspace, json) : [405];
    return [404];
  }

  /** `GetConversationsV2`: the workspace's conversations with messages that match the filters, newest first, one page. */
  private conversations(workspace: Workspace, json: unknown): Answer {
    if (json === undefined) return invalid('', 'A non-empty request body is required.');
    if (json === INVALID_JSON || !isRecord(json)) return invalid('$', 'The JSON value could not be converted to the request.');
    let request: ReturnType<typeof readRequest>;
    try {
      request = readRequest(json);
    } catch (error) {
      if (error instanceof Refused) return error.answer;
      throw error;
    }
    const matching = [...workspace.conversations.values()].filter((c) => c.messages.length > 0 && matches(c, request.filters));
    const ordered = matching.sort((a, b) => at(lastMessage(b)) - at(lastMessage(a)) || b.seq - a.seq);
    return [200, { totalCount: ordered.length, items: ordered.slice(request.offset, request.offset + request.limit).map(item) }];
  }
}

/** The seat's owner every account shows (one persona is enough for the backfill). */
const SEAT = { firstName: 'Tom', lastName: 'Reed', email: 'tom.reed@agency.test' };

interface Filters {
  campaignIds: number[] | null;
  linkedInAccountIds: number[] | null;
  leadProfileUrl: string | null;
  leadLinkedInId: string | null;
  searchString: string | null;
  tags: string[] | null;
  seen: boolean | null;
}

/** The body of `GetConversationsV2`, validated as ASP.NET would: a 400 ({@link Refused}) for a wrong type or a limit above 100. */
function readRequest(json: Record<string, unknown>): { filters: Filters; offset: number; limit: number } {
  const raw = json.filters ?? {};
  if (!isRecord(raw)) throw new Refused(invalid('filters', 'The filters field is invalid.'));
  const integers = (field: string): number[] | null => {
    const value = raw[field] ?? null;
    if (value === null) return null;
    if (!Array.isArray(value) || !value.every((v): v is number => Number.isInteger(v)))
      throw new Refused(invalid(`filters.${field}`, `The ${field} field must be a list of integers.`));
    // An empty list filters nothing, as pollers sending `filters: {}` expect.
    return value.length > 0 ? value : null;
  };
  const string = (field: string): string | null => {
    const value = raw[field] ?? null;
    if (value === null || value === '') return null;
    if (typeof value !== 'string') throw new Refused(invalid(`filters.${field}`, `The ${field} field must be a string.`));
    return value;
  };
  const strings = (field: string): string[] | null => {
    const value = raw[field] ?? null;
    if (value === null) return null;
    if (!Array.isArray(value) || !value.every((v): v is string => typeof v === 'string'))
      throw new Refused(invalid(`filters.${field}`, `The ${field} field must be a list of strings.`));
    return value.length > 0 ? value : null;
  };
  const seen = raw.seen ?? null;
  if (seen !== null && typeof seen !== 'boolean') throw new Refused(invalid('filters.seen', 'The seen field must be a boolean.'));
  const filters: Filters = {
    campaignIds: integers('campaignIds'),
    linkedInAccountIds: integers('linkedInAccountIds'),
    leadProfileUrl: string('leadProfileUrl'),
    leadLinkedInId: string('leadLinkedInId'),
    searchString: string('searchString'),
    tags: strings('tags'),
    seen,
  };
  if (filters.leadProfileUrl !== null && filters.leadLinkedInId !== null)
    throw new Refused([400, { errorMessage: 'Provide either leadProfileUrl or leadLinkedInId, not both.' }]);
  const offset = json.offset ?? 0;
  if (typeof offset !== 'number' || !Number.isInteger(offset) || offset < 0)
    throw new Refused(invalid('offset', 'The field Offset must be a non-negative integer.'));
  const limit = json.limit ?? DEFAULT_LIMIT;
  if (typeof limit !== 'number' || !Number.isInteger(limit) || limit < 1 || limit > MAX_LIMIT)
    throw new Refused(invalid('limit', `The field Limit must be between 1 and ${MAX_LIMIT}.`));
  return { filters, offset, limit };
}

/** A request refused with its answer (a 400), thrown from deep in the validation. */
class Refused extends Error {
  constructor(readonly answer: Answer) {
    super('refused');
  }
}

function matches(conversation: Conversation, filters: Filters): boolean {
  const { lead } = conversation;
  const search = filters.searchString?.toLowerCase();
  return (
    (filters.campaignIds === null || filters.campaignIds.includes(lead.campaign.id)) &&
    (filters.linkedInAccountIds === null || filters.linkedInAccountIds.includes(lead.accountId)) &&
    (filters.leadProfileUrl === null || sameProfile(filters.leadProfileUrl, lead.profileUrl)) &&
    (filters.leadLinkedInId === null || filters.leadLinkedInId === lead.linkedinId) &&
    (search === undefined || [lead.firstName, lead.lastName, `${lead.firstName} ${lead.lastName}`].some((name) => name.toLowerCase().includes(search))) &&
    // Leads added here carry no tags: a tag filter matches none of them.
    filters.tags === null &&
    (filters.seen === null || filters.seen === isRead(conversation))
  );
}

/** One inbox item as V2 answers it (docs/vendors/heyreach.md, the shape of a real answer). */
function item(conversation: Conversation): Record<string, unknown> {
  const { lead } = conversation;
  const messages = [...conversation.messages].sort((a, b) => at(a) - at(b) || a.seq - b.seq);
  const last = messages.at(-1)!;
  return {
    id: conversation.id,
    read: isRead(conversation),
    groupChat: false,
    blockedByMe: false,
    blockedByParticipant: false,
    lastMessageAt: last.createdAt,
    lastMessageText: last.body,
    lastMessageType: 'TEXT',
    lastMessageSender: last.sender,
    totalMessages: messages.length,
    // No `campaignId` and no `correspondentProfile.id`: HeyReach's example has them, every real answer read lacks them.
    linkedInAccountId: lead.accountId,
    correspondentProfile: {
      linkedin_id: lead.linkedinId,
      profileUrl: lead.profileUrl,
      firstName: lead.firstName,
      lastName: lead.lastName,
      headline: null,
      imageUrl: null,
      location: null,
      companyName: lead.companyName,
      companyUrl: null,
      position: null,
      about: null,
      connections: 0,
      followers: 0,
      tags: [],
      // Null on every real V2 item read, whatever HeyReach knows: identity is the profile URL.
      emailAddress: null,
      enrichedEmailAddress: null,
      customEmailAddress: null,
      customFields: [],
    },
    linkedInAccount: {
      id: lead.accountId,
      emailAddress: SEAT.email,
      firstName: SEAT.firstName,
      lastName: SEAT.lastName,
      authIsValid: true,
      isValidNavigator: false,
      isValidRecruiter: false,
      profileUrl: `https://www.linkedin.com/in/tom-reed-${lead.accountId}`,
    },
    messages: messages.map((m) => ({ createdAt: m.createdAt, body: m.body, subject: null, postLink: null, isInMail: m.isInMail, sender: m.sender })),
  };
}

/** Read once our seat spoke last: a lead's message waits unread. */
function isRead(conversation: Conversation): boolean {
  return lastMessage(conversation)?.sender !== 'CORRESPONDENT';
}

function lastMessage(conversation: Conversation): Message | undefined {
  return newestFirst(conversation.messages)[0];
}

function newestFirst(messages: Message[]): Message[] {
  return [...messages].sort((a, b) => at(b) - at(a) || b.seq - a.seq);
}

function at(message: Message | undefined): number {
  return message === undefined ? -Infinity : Date.parse(message.createdAt);
}

/** `2026-01-27T10:00:00.500Z` → `2026-01-27T10:00:00Z`, as webhooks write times. */
function toSecond(iso: string): string {
  return `${iso.slice(0, 19)}Z`;
}

/** A profile URL compared as LinkedIn means it: no scheme, `www.`, query or trailing slash, any case. */
function sameProfile(a: string, b: string): boolean {
  const canonical = (url: string) =>
    url
      .trim()
      .toLowerCase()
      .replace(/^https?:\/\//, '')
      .replace(/^www\./, '')
      .replace(/[?#].*$/, '')
      .replace(/\/+$/, '');
  return canonical(a) === canonical(b);
}

/** An ASP.NET validation answer (400), the shape public clients met. */
function invalid(field: string, message: string): Answer {
  return [400, { errors: { [field]: [message] } }];
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Starts an instance; `addKey` its keys. */
export async function startHeyReachEmulator(options: HeyReachEmulatorOptions = {}): Promise<HeyReachEmulator> {
  return new HeyReachEmulator(options).start();
}
