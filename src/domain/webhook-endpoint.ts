import { excerpt } from './excerpt.js';
import { PLATFORM_EVENT_TYPES } from './platform-events.js';

/** What a webhook endpoint may be registered with (its address is checked by the HTTP client's rule too). Pure. */

export const MAX_ENDPOINT_URL_LENGTH = 2048;
export const MAX_ENDPOINT_DESCRIPTION_LENGTH = 1000;
/** Entries `enabledEvents` may have. */
export const MAX_ENABLED_EVENTS = 20;
/** Endpoints (not deleted) one account may have. */
export const MAX_ENDPOINTS_PER_ACCOUNT = 100;

type Checked<T> = { ok: true; value: T } | { ok: false; message: string };

/**
 * An endpoint URL: https only (the signature protects integrity, not confidentiality), at most
 * {@link MAX_ENDPOINT_URL_LENGTH} characters, no credentials (they would be stored and shown as plain
 * text). `allowHttp` is for the service's own sandbox URLs only.
 */
export function checkEndpointUrl(raw: string, allowHttp = false): Checked<URL> {
  if (raw.length > MAX_ENDPOINT_URL_LENGTH) return { ok: false, message: `url must be at most ${MAX_ENDPOINT_URL_LENGTH} characters` };
  if (!URL.canParse(raw)) return { ok: false, message: 'url must be an absolute https:// URL' };
  const url = new URL(raw);
  if (url.protocol !== 'https:' && !(allowHttp && url.protocol === 'http:')) return { ok: false, message: 'url must use https://' };
  if (url.username !== '' || url.password !== '') return { ok: false, message: 'url must not contain credentials' };
  // What is stored is the normalised form, which percent-encoding can make longer than what was sent.
  if (url.href.length > MAX_ENDPOINT_URL_LENGTH) return { ok: false, message: `url must be at most ${MAX_ENDPOINT_URL_LENGTH} characters` };
  return { ok: true, value: url };
}

/** `enabledEvents`: known types only (an empty list means every type), each once, in the order given; at most 20 entries. */
export function checkEnabledEvents(types: readonly string[]): Checked<string[]> {
  if (types.length > MAX_ENABLED_EVENTS) return { ok: false, message: `enabledEvents must have at most ${MAX_ENABLED_EVENTS} items` };
  const unknown = [...new Set(types)].filter((type) => !(PLATFORM_EVENT_TYPES as readonly string[]).includes(type));
  if (unknown.length > 0) {
    return {
      ok: false,
      message: `enabledEvents has unknown event types (${unknown.map((type) => excerpt(type, 64)).join(', ')}); known types: ${PLATFORM_EVENT_TYPES.join(', ')}`,
    };
  }
  return { ok: true, value: [...new Set(types)] };
}
