import { randomUUID } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { FaultPlan, readBody, type Fault } from './faults.js';
import { INVALID_JSON, parseJson } from './json-body.js';

/**
 * The sequencers' block-list APIs on one real HTTP server on 127.0.0.1, so the service can be pointed
 * at it by base URL: Smartlead's (`/api/v1/leads/...-domain-block-list`, `?api_key=`) and Instantly
 * v2's (`/api/v2/block-lists-entries[/bulk-create]`, `Authorization: Bearer`). Each registered key has
 * its own block list, a set: a value already held is a no-op, yet every value received is logged, so
 * tests can see what a sync re-sends. A call holding any value `rejects` refuses is refused whole (400,
 * nothing stored), as strict vendor validation does. Faults come from the shared plan (faults.ts).
 * Every step is O(values): a bench pushes 100,000 values through it.
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
}

type Answer = [number, unknown];

export class SequencerEmulator {
  url = '';
  readonly requests: LoggedRequest[] = [];
  /** Refuses (400) the whole call holding a value it returns true for. */
  rejects: (value: string) => boolean;

  private readonly smartleadLists = new Map<string, BlockList<SmartleadEntry>>();
  private readonly instantlyLists = new Map<string, BlockList<InstantlyEntry> & { organizationId: string }>();
  private readonly server: http.Server;
  private readonly plan = new FaultPlan();
  private nextSmartleadId = 1000;

  constructor(options: SequencerEmulatorOptions = {}) {
    for (const key of options.smartleadKeys ?? []) this.addKey('smartlead', key);
    for (const key of options.instantlyKeys ?? []) this.addKey('instantly', key);
    this.rejects = options.rejects ?? ((value) => !isPlausibleEmail(value) && !isPlausibleDomain(value));
    this.server = http.createServer((req, res) => void this.handle(req, res));
  }

  async start(): Promise<this> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
    return this;
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  /** The next `n` matching requests answer `fault.status` (with Retry-After when given), in the vendor's format. */
  failNext(n: number, fault: Fault): void {
    this.plan.failNext(n, fault);
  }

  /** Delays every answer (or those whose path matches) by `ms`; 0 turns it off. The request is still
   * carried out after the delay, as a server that answers too late does. */
  slow(ms: number, path?: string | RegExp): void {
    this.plan.slow(ms, path);
  }

  /** Registers a key (a customer's account) with an empty block list; other keys answer 401. */
  addKey(vendor: 'smartlead' | 'instantly', key: string): void {
    if (vendor === 'smartlead') {
      if (!this.smartleadLists.has(key)) this.smartleadLists.set(key, emptyList());
    } else if (!this.instantlyLists.has(key)) this.instantlyLists.set(key, { ...emptyList(), organizationId: randomUUID() });
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

  // -------------------------------------------------------------------------------------------

  private async handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
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
      if (req.method === 'POST') {
        if (!/^application\/json/.test(req.headers['content-type'] ?? '')) return answer(415, failure(vendor, 415, 'Content-Type must be application/json'));
        if (json === INVALID_JSON) return answer(400, failure(vendor, 400, 'Body is not valid JSON'));
      }
      const [status, payload] = this.route(req.method ?? 'GET', url, key, json);
      answer(status, payload);
    } catch (e) {
      answer(500, failure(vendor, 500, e instanceof Error ? e.message : 'internal error'));
    }
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
