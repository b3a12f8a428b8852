import type { EndpointVariable } from '../config.js';
import type { ApiAccount } from '../connectors/sequencers/definition.js';
import { openSecret } from '../domain/secrets.js';

/** Why a sealed account cannot be used: its caller words it for its reader (a block list's error, a round's). */
export type AccountProblem = 'unreadable' | 'no_key' | 'no_instance';

/**
 * Opens a sealed sequencer account (a block list's or a source's `sequencer`) and finds where to call it:
 * the service-wide URL of `endpoint` (`configured`, else its default), or, for a sequencer of
 * white-labelled instances (no endpoint), the account's own `baseUrl`.
 */
export function openSequencerAccount(
  encryptionKey: Buffer,
  sealed: string,
  endpoint: EndpointVariable | undefined,
  configured: string | undefined,
): { ok: true; account: ApiAccount } | { ok: false; problem: AccountProblem } {
  let stored: { apiKey?: unknown; baseUrl?: unknown; clientId?: unknown };
  try {
    stored = JSON.parse(openSecret(encryptionKey, sealed)) as typeof stored;
  } catch {
    return { ok: false, problem: 'unreadable' };
  }
  if (typeof stored.apiKey !== 'string' || stored.apiKey === '') return { ok: false, problem: 'no_key' };
  const baseUrl = endpoint ? (configured ?? endpoint.default) : stored.baseUrl;
  if (typeof baseUrl !== 'string' || baseUrl === '') return { ok: false, problem: 'no_instance' };
  return {
    ok: true,
    account: { baseUrl: baseUrl.replace(/\/+$/, ''), apiKey: stored.apiKey, clientId: typeof stored.clientId === 'string' ? stored.clientId : null },
  };
}
