import type { ApiKeyViewer, Context } from './context.js';
import { requireApiKey, serviceError } from './errors.js';

/**
 * Who may use platform webhooks and the event log (the spec's Authentication section), with its exact
 * messages; the REST layer checks the same rules, in the same order, before it reads a body.
 */

/** 403 on /webhooks* and /events* when the account may not use platform webhooks. */
export const WEBHOOKS_NOT_ENABLED = 'Platform webhooks are not enabled for this account';
/** 403 on /webhooks* for a connection-scoped key. */
export const ACCOUNT_KEY_REQUIRED = 'Webhook endpoint management requires an account-scoped API key';
/** 403 on a webhook mutation without the write scope. */
export const WEBHOOK_WRITE_REQUIRED = "This endpoint requires the 'write' scope";

/** The key, when its account may use platform webhooks and events (/events*). */
export function requireWebhooks(ctx: Context): ApiKeyViewer {
  const viewer = requireApiKey(ctx);
  if (!viewer.capabilities.canUseWebhooks) throw serviceError('FORBIDDEN', WEBHOOKS_NOT_ENABLED);
  return viewer;
}

/** The key, when it may manage the account's webhook endpoints (/webhooks*): account-scoped, capable, and for `write`, writing. */
export function requireWebhookManagement(ctx: Context, access: 'read' | 'write'): ApiKeyViewer {
  const viewer = requireApiKey(ctx);
  if (viewer.connectionScope !== 'account') throw serviceError('FORBIDDEN', ACCOUNT_KEY_REQUIRED);
  if (!viewer.capabilities.canUseWebhooks) throw serviceError('FORBIDDEN', WEBHOOKS_NOT_ENABLED);
  if (access === 'write' && !viewer.scopes.includes('write')) throw serviceError('FORBIDDEN', WEBHOOK_WRITE_REQUIRED);
  return viewer;
}
