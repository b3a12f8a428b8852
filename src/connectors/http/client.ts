import { lookup as dnsLookup } from 'node:dns/promises';
import http from 'node:http';
import https from 'node:https';
import type { LookupFunction } from 'node:net';
import ipaddr from 'ipaddr.js';
import { storableJson, storableText } from '../../domain/storable-text.js';
import { RequestFilteringHttpAgent, RequestFilteringHttpsAgent } from 'request-filtering-agent';

/**
 * The one outbound HTTP client (CRMs, forwarding, platform webhooks, sequencers).
 *
 * SSRF: every connection goes through request-filtering-agent's agents, which check IP literals and
 * every address a DNS answer holds (so a name that resolves to 127.0.0.1 is refused, and a rebinding
 * answer cannot slip in between the check and the connect: the checked address is the one used).
 * Private, loopback, link-local, unique-local, IPv4-mapped and other non-unicast ranges are refused
 * unless `allowPrivate` (OUTBOUND_ALLOW_PRIVATE, tests and local demos only). Redirects are never
 * followed: a 3xx is returned to the caller like any other answer.
 *
 * Nothing here logs. Error messages name the method and the origin only: paths and queries may carry
 * personal data or keys (`?api_key=`), and bodies and headers are never copied into errors.
 */

export interface HttpClientOptions {
  /** OUTBOUND_ALLOW_PRIVATE: let requests reach private and loopback addresses. */
  allowPrivate: boolean;
  /** Whole-request deadline (connect, send, full answer), unless a request sets its own. Default 15 s. */
  timeoutMs?: number;
  /** Answers larger than this are cut off with an error. Default 5 MiB. */
  maxResponseBytes?: number;
  /**
   * Keep only this much of each answer: the rest is read and dropped, and the answer counts as complete
   * (forwarding needs a destination's status and the head of its body, whatever it sends).
   */
  keepResponseBytes?: number;
  /** Connections open at once to one origin. Default 32. */
  maxSocketsPerOrigin?: number;
  userAgent?: string;
  /** A resolver to use instead of the system's (tests); its answers are checked like any other. */
  lookup?: LookupFunction;
  /**
   * The service's own sandbox (SANDBOX, `<BASE_URL>` origin): requests to exactly this origin skip the
   * address rule, so the demo reaches its sandbox on loopback while every other URL stays held to it.
   */
  trustedOrigin?: string;
}

export interface HttpRequest {
  method?: string;
  url: string | URL;
  headers?: Record<string, string>;
  /** A raw body; or use `json` / `form`, which also set the content type. */
  body?: string | Uint8Array;
  json?: unknown;
  form?: Record<string, string>;
  timeoutMs?: number;
  signal?: AbortSignal;
}

export interface HttpResponse {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: Buffer;
  text(): string;
  /** The body parsed as JSON; `undefined` when the body is empty or not JSON. */
  json(): unknown;
}

export type OutboundErrorCode = 'blocked' | 'invalid_url' | 'timeout' | 'network' | 'too_large' | 'aborted';

/** A request that got no complete HTTP answer. */
export class OutboundError extends Error {
  constructor(
    readonly code: OutboundErrorCode,
    message: string,
    /** False when the request certainly never reached the server (refused before or at connect). */
    readonly maybeSent: boolean,
  ) {
    super(message);
    this.name = 'OutboundError';
  }
}

export interface HttpClient {
  request(request: HttpRequest): Promise<HttpResponse>;
  /** Closes idle keep-alive sockets. */
  close(): void;
}

const DEFAULT_TIMEOUT_MS = 15_000;
const DEFAULT_MAX_RESPONSE_BYTES = 5 * 1024 * 1024;

/** Creates a client with its own keep-alive agents. Share one per process and `allowPrivate` value. */
export function createHttpClient(options: HttpClientOptions): HttpClient {
  const agentOptions = {
    keepAlive: true,
    maxSockets: options.maxSocketsPerOrigin ?? 32,
    allowPrivateIPAddress: options.allowPrivate,
    // 0.0.0.0 and :: route to this host: refused even when private addresses are allowed.
    allowMetaIPAddress: false,
  };
  const agents = { 'http:': new RequestFilteringHttpAgent(agentOptions), 'https:': new RequestFilteringHttpsAgent(agentOptions) };
  const trustedAgents = { 'http:': new http.Agent({ keepAlive: true, maxSockets: agentOptions.maxSockets }), 'https:': new https.Agent({ keepAlive: true }) };
  const defaultTimeout = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  const maxBytes = options.maxResponseBytes ?? DEFAULT_MAX_RESPONSE_BYTES;
  const keepBytes = options.keepResponseBytes;

  return {
    request(request) {
      let url: URL;
      try {
        url = new URL(request.url);
      } catch {
        return Promise.reject(new OutboundError('invalid_url', 'Outbound request refused: not a URL', false));
      }
      if (url.protocol !== 'http:' && url.protocol !== 'https:') {
        return Promise.reject(new OutboundError('invalid_url', `Outbound request refused: ${url.protocol} is not http(s)`, false));
      }
      const method = (request.method ?? 'GET').toUpperCase();
      const where = `${method} ${url.origin}`;
      const { body, contentType } = encodeBody(request);
      const headers: Record<string, string> = { accept: 'application/json', ...lowerKeys(request.headers ?? {}) };
      if (options.userAgent) headers['user-agent'] ??= options.userAgent;
      if (contentType) headers['content-type'] ??= contentType;
      if (body !== undefined) headers['content-length'] = String(body.byteLength);
      const timeoutMs = request.timeoutMs ?? defaultTimeout;

      return new Promise<HttpResponse>((resolve, reject) => {
        let settled = false;
        let connected = false;
        const fail = (error: OutboundError) => {
          if (settled) return;
          settled = true;
          clearTimeout(timer);
          request.signal?.removeEventListener('abort', onAbort);
          req.destroy();
          reject(error);
        };
        const send = url.protocol === 'https:' ? https.request : http.request;
        const req = send({
          agent: (url.origin === options.trustedOrigin ? trustedAgents : agents)[url.protocol as 'http:' | 'https:'],
          protocol: url.protocol,
          // node:http wants IPv6 literals without their brackets.
          hostname: url.hostname.replace(/^\[(.*)\]$/, '$1'),
          port: url.port || undefined,
          path: `${url.pathname}${url.search}`,
          method,
          headers,
          ...(options.lookup ? { lookup: options.lookup } : {}),
        });
        const timer = setTimeout(() => fail(new OutboundError('timeout', `${where} timed out after ${timeoutMs} ms`, connected)), timeoutMs);
        const onAbort = () => fail(new OutboundError('aborted', `${where} was aborted`, connected));
        if (request.signal?.aborted) return onAbort();
        request.signal?.addEventListener('abort', onAbort, { once: true });

        req.on('socket', (socket) => {
          // A reused keep-alive socket is already connected.
          if (!socket.connecting) connected = true;
          else socket.once('connect', () => (connected = true));
        });
        req.on('error', (error: NodeJS.ErrnoException) => {
          if (/is not allowed/.test(error.message)) {
            fail(new OutboundError('blocked', `${where} refused: the address is private, loopback or reserved (OUTBOUND_ALLOW_PRIVATE is off)`, false));
          } else {
            fail(new OutboundError('network', `${where} failed: ${error.code ?? 'network error'}`, connected));
          }
        });
        req.on('response', (res) => {
          const chunks: Buffer[] = [];
          let size = 0;
          res.on('data', (chunk: Buffer) => {
            if (keepBytes !== undefined) {
              if (size < keepBytes) chunks.push(chunk.subarray(0, keepBytes - size));
              size += chunk.byteLength;
              return;
            }
            size += chunk.byteLength;
            if (size > maxBytes) return fail(new OutboundError('too_large', `${where} answered more than ${maxBytes} bytes`, true));
            chunks.push(chunk);
          });
          res.on('error', () => fail(new OutboundError('network', `${where} failed while reading the answer`, true)));
          res.on('end', () => {
            if (settled) return;
            settled = true;
            clearTimeout(timer);
            request.signal?.removeEventListener('abort', onAbort);
            resolve(makeResponse(res.statusCode ?? 0, res.headers, Buffer.concat(chunks)));
          });
        });
        req.end(body);
      });
    },
    close() {
      for (const agent of [agents['http:'], agents['https:'], trustedAgents['http:'], trustedAgents['https:']]) agent.destroy();
    },
  };
}

/**
 * Whether the client would refuse to connect to `url`'s host, checked ahead of time (a URL a customer
 * registers is refused at once, not at its first send): its name is resolved as the agents resolve it
 * and every address is held to their rule (`unicast` only, unless `allowPrivate`; never 0.0.0.0 or ::).
 * `unresolvable` when the name has no address.
 */
export async function refusedAddress(url: URL, options: { allowPrivate: boolean }): Promise<'private' | 'unresolvable' | null> {
  let addresses: string[];
  try {
    addresses = (await dnsLookup(url.hostname.replace(/^\[(.*)\]$/, '$1'), { all: true, verbatim: true })).map((a) => a.address);
  } catch {
    return 'unresolvable';
  }
  for (const address of addresses) {
    // An address ipaddr.js cannot read (an IPv6 zone) is refused like the agents refuse it.
    const range = ipaddr.isValid(address) ? ipaddr.process(address).range() : 'unreadable';
    if (range === 'unspecified' || (!options.allowPrivate && range !== 'unicast')) return 'private';
  }
  return addresses.length === 0 ? 'unresolvable' : null;
}

function encodeBody(request: HttpRequest): { body: Buffer | undefined; contentType: string | undefined } {
  if (request.json !== undefined) return { body: Buffer.from(JSON.stringify(request.json)), contentType: 'application/json' };
  if (request.form !== undefined) return { body: Buffer.from(new URLSearchParams(request.form).toString()), contentType: 'application/x-www-form-urlencoded' };
  if (request.body !== undefined) return { body: Buffer.from(request.body), contentType: undefined };
  return { body: undefined, contentType: undefined };
}

function lowerKeys(headers: Record<string, string>): Record<string, string> {
  return Object.fromEntries(Object.entries(headers).map(([k, v]) => [k.toLowerCase(), v]));
}

function makeResponse(status: number, headers: http.IncomingHttpHeaders, body: Buffer): HttpResponse {
  return {
    status,
    headers,
    body,
    // An answer is outside text: decoded storable (src/domain/storable-text.ts), whoever stores it later.
    text: () => storableText(body.toString('utf8')),
    json: () => {
      if (body.byteLength === 0) return undefined;
      try {
        return storableJson(JSON.parse(body.toString('utf8')));
      } catch {
        return undefined;
      }
    },
  };
}

/**
 * A `Retry-After` header in milliseconds: delta-seconds or an HTTP date; `undefined` when absent or
 * unreadable. A date in the past gives 0.
 */
export function retryAfterMs(value: string | string[] | undefined, now = Date.now()): number | undefined {
  const header = Array.isArray(value) ? value[0] : value;
  if (header === undefined) return undefined;
  const trimmed = header.trim();
  if (/^\d+(\.\d+)?$/.test(trimmed)) return Math.round(Number(trimmed) * 1000);
  const date = Date.parse(trimmed);
  return Number.isNaN(date) ? undefined : Math.max(0, date - now);
}

/** How a caller retries answers that say "later" (429, 5xx) within one short unit of work. */
export interface RetryPolicy {
  /** Attempts per request, the first included. */
  attempts: number;
  /** Backoff without Retry-After: base * 2^(attempt-1), capped at maxDelayMs, then a random wait between half of it and all of it. */
  baseDelayMs: number;
  maxDelayMs: number;
}

/** Waiting time shared by every request of one unit of work (a sync), so the unit stays short. */
export interface RetryBudget {
  remainingMs: number;
}

export interface RetriedResponse {
  response: HttpResponse;
  /** Set when the answer still says "later": how long the server asked for, or our next backoff. */
  retryAfterMs?: number;
}

export interface RetryOptions {
  policy: RetryPolicy;
  budget: RetryBudget;
  /** Whether sending the request twice is harmless: then a timeout, a reset or a 5xx is retried too. */
  idempotent: boolean;
  /** Which answers mean "try again later". Default: 429, and 5xx for an idempotent request. */
  retryable?: (response: HttpResponse) => boolean;
}

/**
 * Sends a request, retrying "later" answers with backoff that honours `Retry-After` while the policy's
 * attempts and the budget's waiting time last. A wait the budget cannot cover is not waited: the last
 * answer comes back with `retryAfterMs`, for the caller to reschedule. Network failures and 5xx answers
 * are retried only when the request never left (refused connection) or is idempotent; otherwise they
 * come back, since a create that timed out, or that a gateway answered 502, may have been written (the
 * caller looks for it before creating again). A 429 is a refusal before anything was done: always retried.
 */
export async function requestWithRetry(client: HttpClient, request: HttpRequest, options: RetryOptions): Promise<RetriedResponse> {
  const retryable = options.retryable ?? ((r: HttpResponse) => r.status === 429 || (options.idempotent && r.status >= 500));
  for (let attempt = 1; ; attempt += 1) {
    const backoff = Math.min(options.policy.maxDelayMs, options.policy.baseDelayMs * 2 ** (attempt - 1));
    let response: HttpResponse;
    try {
      response = await client.request(request);
    } catch (error) {
      const safe =
        error instanceof OutboundError &&
        error.code !== 'blocked' &&
        error.code !== 'invalid_url' &&
        error.code !== 'aborted' &&
        (!error.maybeSent || options.idempotent);
      const wait = Math.round(backoff / 2 + Math.random() * (backoff / 2));
      if (!safe || attempt >= options.policy.attempts || wait > options.budget.remainingMs) throw error;
      options.budget.remainingMs -= wait;
      await sleep(wait);
      continue;
    }
    if (!retryable(response)) return { response };
    const asked = retryAfterMs(response.headers['retry-after']);
    // Equal jitter (half the backoff, plus a random part of the other half) when the server names no
    // time: many workers do not retry in step, and none retries at once.
    const wait = asked ?? Math.round(backoff / 2 + Math.random() * (backoff / 2));
    if (attempt >= options.policy.attempts || wait > options.budget.remainingMs) return { response, retryAfterMs: wait };
    options.budget.remainingMs -= wait;
    await sleep(wait);
  }
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
