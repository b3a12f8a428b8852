import { sql, type Sql } from '../db/sql.js';
import { afterPause, resyncRefusal, type BlocklistStatus } from '../domain/blocklist.js';
import { fetchQueuedSql, queueFetchSql } from '../jobs/blocklist-rounds.js';
import { builder } from './builder.js';
import type { Context } from './context.js';
import { serviceError } from './errors.js';
import { writableRows } from './key-access.js';

/**
 * Pause and resync of a block list (spec: Block lists, and the status machine of src/domain/blocklist.ts),
 * for API keys through the REST facade and for support staff in the explorer, under the same rules: the
 * write scope first (keys; staff may), then for a resync the block list capability, then the lookup.
 * Each runs in one transaction holding the list's row, so two calls at once are one after the other.
 */

const BlocklistPause = builder.objectRef<{ id: number; isEnabled: false; status: BlocklistStatus }>('BlocklistPause').implement({
  description: 'A paused block list.',
  fields: (t) => ({
    id: t.exposeInt('id', { description: 'Block list id.' }),
    isEnabled: t.exposeBoolean('isEnabled', { description: 'Always false.' }),
    status: t.exposeString('status', { description: 'The status after the pause (FETCHING and SYNCING become SYNCING_NEW_CONTACTS).' }),
  }),
});

const BlocklistResync = builder.objectRef<{ id: number; queued: true; isEnabled: true; status: 'FETCHING' }>('BlocklistResync').implement({
  description: 'A queued full resync of a block list.',
  fields: (t) => ({
    id: t.exposeInt('id', { description: 'Block list id.' }),
    queued: t.exposeBoolean('queued', { description: 'Always true: the CRM fetch is queued, not awaited.' }),
    isEnabled: t.exposeBoolean('isEnabled', { description: 'Always true.' }),
    status: t.exposeString('status', { description: 'Always FETCHING.' }),
  }),
});

const notFound = (id: number) => serviceError('NOT_FOUND', `Blocklist ${id} not found`);

builder.mutationField('pauseBlocklist', (t) =>
  t.field({
    type: BlocklistPause,
    description:
      'Pauses a block list: nothing more is pushed to the sequencer and no round runs (a fetch in flight may finish storing entries). ' +
      'FETCHING and SYNCING become SYNCING_NEW_CONTACTS; other statuses stay. Idempotent. The sequencer keeps what it has. Write scope, checked first.',
    args: { id: t.arg.int({ required: true, description: 'Block list id.' }) },
    resolve: async (_root, args, ctx) => {
      const scope = writeScope(ctx);
      return ctx.prisma.$transaction(async (tx) => {
        const [list] = await tx.$queryRaw<{ status: BlocklistStatus }[]>(lockList(args.id, scope));
        if (!list) throw notFound(args.id);
        const status = afterPause(list.status);
        await tx.$executeRaw(sql`UPDATE blocklists SET is_enabled = false, status = ${status}::blocklist_status, updated_at = now() WHERE id = ${args.id}`);
        return { id: args.id, isEnabled: false as const, status };
      });
    },
  }),
);

builder.mutationField('resyncBlocklist', (t) =>
  t.field({
    type: BlocklistResync,
    description:
      'Queues a full reload of a block list from its CRM (the fetch replaces the local entries; entries already pushed are not pushed again; ' +
      'the sequencer is never cleared) and enables it: the only way to resume after a pause. Answers at once. Write scope, then block lists ' +
      'enabled, then the lookup; 409 while a round is in progress or queued, or without a CRM source.',
    args: { id: t.arg.int({ required: true, description: 'Block list id.' }) },
    resolve: async (_root, args, ctx) => {
      const scope = writeScope(ctx);
      if (ctx.viewer.kind === 'apiKey' && !ctx.viewer.capabilities.canBlockList) throw serviceError('FORBIDDEN', BLOCKLISTS_NOT_ENABLED);
      return ctx.prisma.$transaction(async (tx) => {
        const [list] = await tx.$queryRaw<{ status: BlocklistStatus; hasCrmSource: boolean; canBlockList: boolean; roundQueued: boolean }[]>(
          lockList(args.id, scope),
        );
        if (!list) throw notFound(args.id);
        if (!list.canBlockList) throw serviceError('FORBIDDEN', BLOCKLISTS_NOT_ENABLED);
        const refusal = resyncRefusal(list);
        if (refusal)
          throw serviceError('CONFLICT', refusal === 'in_progress' ? 'Blocklist resync already in progress' : 'Blocklist has no CRM source to resync from');
        await tx.$executeRaw(
          sql`UPDATE blocklists SET status = 'FETCHING', is_enabled = true, last_fetched_at = NULL, last_error = NULL, updated_at = now() WHERE id = ${args.id}`,
        );
        await tx.$queryRaw(sql`SELECT count(*) FROM ${queueFetchSql(sql`(SELECT ${args.id}::int AS id, 'full' AS kind) AS resync`)}`);
        return { id: args.id, queued: true as const, isEnabled: true as const, status: 'FETCHING' as const };
      });
    },
  }),
);

const BLOCKLISTS_NOT_ENABLED = 'Block lists are not enabled for this connection';

/** The lists the caller may act on: a key's account and connections (after its write check), or every list for staff. */
function writeScope(ctx: Context): Sql {
  return writableRows(ctx, { account: sql`c.account_id`, connection: sql`c.id` });
}

/** The list's row, locked, with what a pause or a resync decides on; no row when it is not the caller's. */
function lockList(id: number, scope: Sql): Sql {
  return sql`
  SELECT b.status::text AS status, b.has_crm_source AS "hasCrmSource", a.can_block_list AS "canBlockList",
         ${fetchQueuedSql(id)} AS "roundQueued"
    FROM blocklists b JOIN connections c ON c.id = b.connection_id JOIN accounts a ON a.id = c.account_id
   WHERE b.id = ${id} AND c.deleted_at IS NULL AND ${scope}
     FOR UPDATE OF b`;
}
