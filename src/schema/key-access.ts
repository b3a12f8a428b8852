import { sql, type Sql } from '../db/sql.js';
import type { ApiKeyViewer, Context } from './context.js';
import { requireApiKey, serviceError } from './errors.js';

/**
 * What a key may do (the spec's Authentication section), with its exact messages: one rule, applied by
 * the REST layer before it reads a body or looks anything up, and by the resolvers for every other caller.
 */

/** 403 on a mutation without the write scope. */
const WRITE_REQUIRED = 'API key requires the "write" scope';
/** 403 on /webhooks* and /events* when the account may not use platform webhooks. */
const WEBHOOKS_NOT_ENABLED = 'Platform webhooks are not enabled for this account';
/** 403 on /webhooks* for a connection-scoped key. */
const ACCOUNT_KEY_REQUIRED = 'Webhook endpoint management requires an account-scoped API key';
/** 403 on a webhook mutation without the write scope (the spec words it differently from the others). */
const WEBHOOK_WRITE_REQUIRED = "This endpoint requires the 'write' scope";

/** What an operation needs of its key. */
export interface KeyNeeds {
  /** Connection-scoped keys are refused (webhook endpoint management). */
  accountKey?: boolean;
  /** The account's platform webhooks capability (/webhooks*, /events*). */
  webhooks?: boolean;
  /** The write scope (mutations). */
  write?: boolean;
}

/** Why the key may not do it, in the spec's order (account key, capability, write), or null. */
export function keyRefusal(viewer: ApiKeyViewer, needs: KeyNeeds): string | null {
  if (needs.accountKey && viewer.connectionScope !== 'account') return ACCOUNT_KEY_REQUIRED;
  if (needs.webhooks && !viewer.capabilities.canUseWebhooks) return WEBHOOKS_NOT_ENABLED;
  if (needs.write && !viewer.scopes.includes('write')) return needs.webhooks ? WEBHOOK_WRITE_REQUIRED : WRITE_REQUIRED;
  return null;
}

/** The API key, when it may do what `needs` says; the spec's 403 otherwise (401 for anyone else). */
function requireKey(ctx: Context, needs: KeyNeeds): ApiKeyViewer {
  const viewer = requireApiKey(ctx);
  const refusal = keyRefusal(viewer, needs);
  if (refusal) throw serviceError('FORBIDDEN', refusal);
  return viewer;
}

/** The key, when its account may use platform webhooks and events (/events*). */
export function requireWebhooks(ctx: Context): ApiKeyViewer {
  return requireKey(ctx, { webhooks: true });
}

/** The key, when it may manage the account's webhook endpoints (/webhooks*): account-scoped, capable, and for `write`, writing. */
export function requireWebhookManagement(ctx: Context, access: 'read' | 'write'): ApiKeyViewer {
  return requireKey(ctx, { accountKey: true, webhooks: true, write: access === 'write' });
}

/**
 * Who a mutation may act for, as SQL over the target's columns: support staff (the explorer) on every
 * account; an API key, after its write check, on its account and connections (a row outside them is a
 * 404). `account` may be omitted where the connection implies it.
 */
export function writableRows(ctx: Context, columns: { account?: Sql; connection: Sql }): Sql {
  if (ctx.viewer.kind === 'staff') return sql`TRUE`;
  const viewer = requireKey(ctx, { write: true });
  const connection = sql`${columns.connection} = ANY(${viewer.connectionIds}::int[])`;
  return columns.account ? sql`${columns.account} = ${viewer.accountId} AND ${connection}` : connection;
}
