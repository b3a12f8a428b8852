import { randomBytes, randomUUID } from 'node:crypto';
import type http from 'node:http';
import { LoopbackEmulator } from './loopback.js';
import { readBody } from './faults.js';
import { takeSlot } from './rolling-window.js';

/**
 * A lemlist API on one real HTTP server on 127.0.0.1 (docs/vendors/lemlist.md): base `/api`, a team per API
 * key sent as HTTP Basic with an empty user (`:key`; {@link LemlistEmulator.addKey}, anything else answers a
 * bare 401), `GET /team` and `GET /activities?version=v2` (filters `campaignId`, `leadId`, `type`, `isFirst`,
 * `minDate`/`maxDate`; a bare array, newest first, `limit` ≤ 100 by `offset`). Its limit is lemlist's 20
 * requests every 2 seconds per key, and every answer carries `Retry-After` and the `X-RateLimit-*` headers
 * (the reset a date string, as lemlist writes it). Tests and benchmarks make its traffic with
 * {@link LemlistEmulator.addLead} and {@link LemlistEmulator.activity}: each activity is stored and returned
 * as the webhook body lemlist would post (a webhook body is the activity), so the webhooks and the history agree.
 */

/** A lead of a campaign, as a test adds it (lemlist holds one lead per campaign and email). */
interface LeadInput {
  email: string;
  firstName?: string;
  lastName?: string;
  linkedinUrl?: string | null;
  campaignId: string;
  campaignName: string;
}

/** An activity of a lead, as a test records it. */
interface ActivityInput {
  /** lemlist's activity type: `emailsSent`, `emailsOpened`, `emailsReplied`, `linkedinSent`, `linkedinReplied`, ... */
  type: string;
  at: Date;
  text?: string;
  subject?: string;
  /** The 0-based `sequenceStep`, as lemlist counts it; default 0. */
  step?: number;
}

interface LemlistEmulatorOptions {
  /** Requests a key may make in any 2 s (429 beyond); default 20, lemlist's published limit. */
  requestsPer2s?: number;
}

interface Lead {
  id: string;
  contactId: string;
  email: string;
  firstName: string | null;
  lastName: string | null;
  linkedinUrl: string | null;
  campaign: { id: string; name: string };
}

interface Activity {
  /** The activity as lemlist holds it and its webhook posts it (without the `lead` v2 nests). */
  fields: Record<string, unknown>;
  type: string;
  leadId: string;
  campaignId: string;
  step: number;
  isFirst: boolean;
  /** Milliseconds, for the date filters and the order. */
  at: number;
  /** Order of storage: breaks ties between activities of one millisecond. */
  seq: number;
}

interface Team {
  id: string;
  name: string;
  leads: Map<string, Lead>;
  activities: Activity[];
  /** Each lead's latest activity (its v2 `state`), kept as activities come: a page's leads are not a scan of every activity each. */
  latest: Map<string, Activity>;
  /** A stable id per campaign (`seq_`), per campaign step (`stp_`) and per lead step's email (`eml_`). */
  ids: Map<string, string>;
  /** When each counted request of the last 2 s came (ms, oldest first), for the limit. */
  hits: number[];
}

interface LoggedRequest {
  method: string;
  path: string;
  /** The query string, without `?`. */
  query: string;
  status: number;
  at: number;
  /** The key its Basic password carried (empty without one). */
  key: string;
}

const WINDOW_MS = 2_000;

/** `limit`'s default and maximum ([OAS]). */
const MAX_LIMIT = 100;

/** The user every campaign sends as. */
const SENDER = { id: 'usr_EvXz6JqPSJJL9lHkp', email: 'jai@acme-mail.test', name: 'Jai Toor' };

/** Answer bodies: a string is sent as text/plain (lemlist's errors are: `Bad team`), anything else as JSON. */
type Answer = [status: number, payload?: unknown, headers?: Record<string, string>];

export class LemlistEmulator extends LoopbackEmulator {
  readonly requests: LoggedRequest[] = [];
  requestsPer2s: number;

  private readonly teams = new Map<string, Team>();
  private seq = 0;

  constructor(options: LemlistEmulatorOptions = {}) {
    super();
    this.requestsPer2s = options.requestsPer2s ?? 20;
  }

  /** Registers an API key with its own, empty team; other keys answer 401. */
  addKey(key: string, teamName = 'Acme outbound'): void {
    if (!this.teams.has(key))
      this.teams.set(key, { id: lemlistId('tea'), name: teamName, leads: new Map(), activities: [], latest: new Map(), ids: new Map(), hits: [] });
  }

  /** Adds a lead to a campaign of the key's team. */
  addLead(key: string, lead: LeadInput): { leadId: string } {
    const team = this.team(key);
    const stored: Lead = {
      id: lemlistId('lea'),
      contactId: lemlistId('ctc'),
      email: lead.email,
      firstName: lead.firstName ?? null,
      lastName: lead.lastName ?? null,
      linkedinUrl: lead.linkedinUrl ?? null,
      campaign: { id: lead.campaignId, name: lead.campaignName },
    };
    team.leads.set(stored.id, stored);
    return { leadId: stored.id };
  }

  /**
   * Records an activity of a lead at `at`, for `/activities`, and returns the webhook body lemlist would post
   * for it: the activity itself (docs/vendors/lemlist.md), with the same `_id` the history answers.
   */
  activity(key: string, leadId: string, a: ActivityInput): Record<string, unknown> {
    const team = this.team(key);
    const lead = team.leads.get(leadId);
    if (!lead) throw new Error(`no lemlist lead ${leadId}`);
    const step = a.step ?? 0;
    const campaignId = lead.campaign.id;
    const ofLeadStep = team.activities.filter((x) => x.leadId === lead.id && x.step === step);
    const email = a.type.startsWith('emails');
    // Opens, clicks and replies point at the step's send: its time, as `relatedSentAt`.
    const sentType = email ? 'emailsSent' : a.type.startsWith('linkedin') ? 'linkedinSent' : undefined;
    const related = a.type !== sentType ? ofLeadStep.filter((x) => x.type === sentType).at(-1) : undefined;
    const fields: Record<string, unknown> = {
      _id: lemlistId('act'),
      type: a.type,
      isFirst: !ofLeadStep.some((x) => x.type === a.type),
      stopped: false,
      createdAt: a.at.toISOString(),
      bot: false,
      teamId: team.id,
      leadId: lead.id,
      campaignId,
      sequenceId: stableId(team, 'seq', campaignId),
      sequenceStep: step,
      stepId: stableId(team, 'stp', `${campaignId}/${step}`),
      createdBy: SENDER.id,
      sendUserId: SENDER.id,
      sendUserEmail: SENDER.email,
      sendUserName: SENDER.name,
      name: lead.campaign.name,
      campaignName: lead.campaign.name,
      leadFirstName: lead.firstName,
      leadLastName: lead.lastName,
      leadEmail: lead.email,
      contactId: lead.contactId,
      // A lead's custom variables are flattened at the top level: `linkedinUrl` is one.
      ...(lead.linkedinUrl !== null ? { linkedinUrl: lead.linkedinUrl } : {}),
      ...(email ? { emailId: stableId(team, 'eml', `${lead.id}/${step}`) } : {}),
      ...(a.type === 'emailsSent' || a.type === 'emailsReplied'
        ? { messageId: `<${randomUUID()}@${a.type === 'emailsSent' ? 'acme-mail' : 'lead'}.test>` }
        : {}),
      ...(related ? { relatedSentAt: related.fields.createdAt } : {}),
      ...(a.subject !== undefined ? { subject: a.subject } : {}),
      ...(a.text !== undefined ? { text: a.text } : {}),
      metaData: { teamId: team.id, campaignId, leadId: lead.id, type: a.type, createdBy: SENDER.id },
    };
    const stored: Activity = { fields, type: a.type, leadId: lead.id, campaignId, step, isFirst: fields.isFirst === true, at: a.at.getTime(), seq: this.seq++ };
    team.activities.push(stored);
    const before = team.latest.get(lead.id);
    if (!before || stored.at > before.at || (stored.at === before.at && stored.seq > before.seq)) team.latest.set(lead.id, stored);
    return structuredClone(fields);
  }

  // -------------------------------------------------------------------------------------------

  private team(key: string): Team {
    const team = this.teams.get(key);
    if (!team) throw new Error('no lemlist team for this key');
    return team;
  }

  protected async handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://emulator');
    const method = req.method ?? 'GET';
    const key = basicPassword(req.headers.authorization);
    await readBody(req);
    await this.plan.wait(url.pathname);
    const answer = ([status, payload, headers]: Answer) => {
      this.requests.push({ method, path: url.pathname, query: url.search.slice(1), status, at: Date.now(), key });
      if (res.destroyed) return;
      if (payload === undefined) return void res.writeHead(status, headers).end();
      const textual = typeof payload === 'string';
      res
        .writeHead(status, { 'content-type': textual ? 'text/plain; charset=utf-8' : 'application/json; charset=utf-8', ...headers })
        .end(textual ? payload : JSON.stringify(payload));
    };
    try {
      const fault = this.plan.take(url.pathname, key);
      if (fault) {
        const headers = fault.retryAfter !== undefined ? { 'retry-after': String(fault.retryAfter) } : undefined;
        return answer([fault.status, fault.body ?? 'Injected failure', headers]);
      }
      const team = this.teams.get(key);
      // A bare 401, as lemlist's OpenAPI document shows it.
      if (!team) return answer([401]);
      const { allowed, headers } = this.count(team);
      if (!allowed) return answer([429, 'Too Many Requests - Rate limit exceeded', headers]);
      const [status, payload] = this.route(team, method, url);
      answer([status, payload, headers]);
    } catch (error) {
      answer([500, error instanceof Error ? error.message : 'Internal Server Error']);
    }
  }

  /**
   * Counts a request against the key's window and the headers every answer carries: `Retry-After` (seconds
   * until the oldest counted request leaves the window), `X-RateLimit-Limit`, `-Remaining`, and `-Reset` as a
   * human-readable date (`Tue Feb 16 2021 09:02:42 GMT+0100 (...)`), which a client must not parse as a number.
   */
  private count(team: Team): { allowed: boolean; headers: Record<string, string> } {
    const now = Date.now();
    const allowed = takeSlot(team.hits, this.requestsPer2s, WINDOW_MS, now) === undefined;
    const reset = (team.hits[0] ?? now) + WINDOW_MS;
    return {
      allowed,
      headers: {
        'retry-after': String(Math.max(1, Math.ceil((reset - now) / 1000))),
        'x-ratelimit-limit': String(this.requestsPer2s),
        'x-ratelimit-remaining': String(Math.max(0, this.requestsPer2s - team.hits.length)),
        'x-ratelimit-reset': new Date(reset).toString(),
      },
    };
  }

  private route(team: Team, method: string, url: URL): Answer {
    const path = url.pathname.replace(/\/+$/, '');
    if (path === '/api/team') return method === 'GET' ? [200, { _id: team.id, name: team.name, userIds: [SENDER.id] }] : [405, 'Method Not Allowed'];
    if (path === '/api/activities') return method === 'GET' ? activities(team, url.searchParams) : [405, 'Method Not Allowed'];
    return [404, 'Not Found'];
  }
}

/** `GET /activities`: the team's activities matching the query, newest first, one page. */
function activities(team: Team, query: URLSearchParams): Answer {
  // Without v2 lemlist's old route answered its last 100 activities; what it does today is unverified, so refuse.
  if (query.get('version') !== 'v2') return [400, 'version=v2 is mandatory'];
  const min = date(query.get('minDate') ?? query.get('startDate'));
  const max = date(query.get('maxDate') ?? query.get('endDate'));
  if (Number.isNaN(min) || Number.isNaN(max)) return [400, 'minDate and maxDate must be ISO 8601 dates or Unix seconds'];
  if (min !== null && max !== null && max <= min) return [400, 'maxDate must be greater than minDate'];
  const limit = integer(query.get('limit'), MAX_LIMIT);
  const offset = integer(query.get('offset'), 0);
  if (limit === null || limit < 1 || limit > MAX_LIMIT) return [400, `limit must be an integer between 1 and ${MAX_LIMIT}`];
  if (offset === null || offset < 0) return [400, 'offset must be a non-negative integer'];
  const isFirst = query.get('isFirst');
  if (isFirst !== null && isFirst !== 'true' && isFirst !== 'false') return [400, 'isFirst must be true or false'];
  const campaignId = query.get('campaignId');
  const leadId = query.get('leadId');
  const type = query.get('type');
  const matching = team.activities.filter(
    (a) =>
      (campaignId === null || a.campaignId === campaignId) &&
      (leadId === null || a.leadId === leadId) &&
      (type === null || a.type === type) &&
      (isFirst === null || a.isFirst === (isFirst === 'true')) &&
      (min === null || a.at >= min) &&
      (max === null || a.at <= max),
  );
  const page = matching.sort((a, b) => b.at - a.at || b.seq - a.seq).slice(offset, offset + limit);
  return [200, page.map((a) => ({ ...structuredClone(a.fields), lead: nestedLead(team, a.leadId) }))];
}

/** The lead v2 nests in each activity, as it is now: its state is its latest activity. */
function nestedLead(team: Team, leadId: string): Record<string, unknown> {
  const lead = team.leads.get(leadId)!;
  const latest = team.latest.get(leadId);
  return {
    _id: lead.id,
    isPaused: false,
    state: latest?.type ?? 'scanned',
    personalized: false,
    source: 'api',
    contactId: lead.contactId,
    enrichment: {},
    variables: {
      email: lead.email,
      ...(lead.firstName !== null ? { firstName: lead.firstName } : {}),
      ...(lead.lastName !== null ? { lastName: lead.lastName } : {}),
      ...(lead.linkedinUrl !== null ? { linkedinUrl: lead.linkedinUrl } : {}),
    },
  };
}

/** The key of `Authorization: Basic base64(":" + key)`; a key sent as the user (`key:`) is no key. */
function basicPassword(header: string | undefined): string {
  const encoded = /^Basic\s+(\S+)$/i.exec(header ?? '')?.[1];
  if (encoded === undefined) return '';
  const decoded = Buffer.from(encoded, 'base64').toString('utf8');
  return decoded.startsWith(':') ? decoded.slice(1) : '';
}

/** A date parameter in ms: Unix seconds or ISO 8601; null when absent, NaN when unreadable. */
function date(value: string | null): number | null {
  if (value === null || value === '') return null;
  return /^\d+$/.test(value) ? Number(value) * 1000 : Date.parse(value);
}

/** An integer parameter, `fallback` when absent, null when not an integer. */
function integer(value: string | null, fallback: number): number | null {
  if (value === null || value === '') return fallback;
  return /^\d+$/.test(value) ? Number(value) : null;
}

/** The id a team keeps for `scope` (a campaign's sequence, a step, a lead step's email), made on first use. */
function stableId(team: Team, prefix: string, scope: string): string {
  const key = `${prefix}:${scope}`;
  let id = team.ids.get(key);
  if (id === undefined) team.ids.set(key, (id = lemlistId(prefix)));
  return id;
}

const ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';

/** A lemlist id: a prefix and 17 letters or digits (`act_x6esGLhoPa2SMHCZ7`). */
function lemlistId(prefix: string): string {
  return `${prefix}_${[...randomBytes(17)].map((b) => ALPHABET[b % ALPHABET.length]).join('')}`;
}

/** Starts an instance; `addKey` its keys. */
export async function startLemlistEmulator(options: LemlistEmulatorOptions = {}): Promise<LemlistEmulator> {
  return new LemlistEmulator(options).start();
}
