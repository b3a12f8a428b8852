import { OutboundError, retryAfterMs, type HttpClient, type HttpResponse } from '../http/client.js';
import type { BlocklistPush, ApiAccount } from './definition.js';

/**
 * Where a block list goes: the sequencer (its name in messages, and its call from its definition,
 * `<platform>/blocklist-push.ts`) and the account.
 */
export interface PushTarget extends ApiAccount {
  name: string;
  push: BlocklistPush;
}

/**
 * A sequencer's answer to one push: accepted; refused for its values (a 4xx other than 401, 403 and 429:
 * split the call to find the value, see src/jobs/blocklists__push.ts); later (429, with the sequencer's
 * wait); a key it refuses; or no clear answer (5xx, timeout, broken connection: the call may have landed,
 * and pushing a value to a block list twice adds nothing). Messages never carry the API key.
 */
export type PushAnswer =
  | { ok: true }
  | { ok: false; kind: 'rejected'; message: string }
  | { ok: false; kind: 'rate_limited'; retryAfterMs: number | undefined; message: string }
  | { ok: false; kind: 'auth'; message: string }
  | { ok: false; kind: 'unavailable'; message: string };

const TIMEOUT_MS = 30_000;

/** Sends up to the sequencer's batch of values to its block list in one call. */
export async function pushValues(http: HttpClient, target: PushTarget, values: readonly string[]): Promise<PushAnswer> {
  const { name } = target;
  const account = { baseUrl: target.baseUrl.replace(/\/+$/, ''), apiKey: target.apiKey, clientId: target.clientId };
  let response: HttpResponse;
  try {
    response = await http.request({ ...target.push.request(account, values), timeoutMs: TIMEOUT_MS });
  } catch (error) {
    if (error instanceof OutboundError)
      return { ok: false, kind: 'unavailable', message: `${name} block list: ${error.code === 'timeout' ? 'no answer in time' : error.code}` };
    throw error;
  }
  if (response.status >= 200 && response.status < 300) return { ok: true };
  if (target.push.alreadyHeld?.(response.status, response.text())) return { ok: true };
  const said = vendorMessage(response, target.apiKey);
  const message = `${name} answered ${response.status}${said ? `: ${said}` : ''}`;
  if (response.status === 429) return { ok: false, kind: 'rate_limited', retryAfterMs: retryAfterMs(response.headers['retry-after']), message };
  if (response.status === 401 || response.status === 403) return { ok: false, kind: 'auth', message: `${message} (check the sequencer API key)` };
  if (response.status >= 500) return { ok: false, kind: 'unavailable', message };
  return { ok: false, kind: 'rejected', message };
}

/** The sequencer's own words, short, with the key cut out should it echo it. */
export function vendorMessage(response: HttpResponse, apiKey: string): string | undefined {
  const body = response.json();
  const record = body !== null && typeof body === 'object' && !Array.isArray(body) ? (body as Record<string, unknown>) : {};
  const said = [record.message, record.error].find((v) => typeof v === 'string' && v !== '') as string | undefined;
  const text = said ?? response.text().slice(0, 200);
  return text === '' ? undefined : text.split(apiKey).join('[key]').slice(0, 300);
}
