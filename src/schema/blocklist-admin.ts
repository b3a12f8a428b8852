import { isDeepStrictEqual } from 'node:util';
import { blocklistSchema, checkSequencer, jsonColumn, parseCrmSource, type Problem, sequencerColumns } from '../admin/entities.js';
import { withholdFromAudit } from './audit.js';
import { builder } from './builder.js';
import type { Context } from './context.js';
import { requireStaff, serviceError } from './errors.js';
import { DeletedObject, given, inputConnection, parsed, refuseProblems } from './staff-input.js';

/**
 * Support staff's block list mutations in the explorer (issue 30): create a block list (the CRM list it
 * reads, checked with the CRM registry's `crmSource` schema; the sequencer account it is pushed to,
 * checked with the sequencer registry's credentials and stored sealed, as the fixture stores it), change
 * it, delete it. Staff only, each audited: the sequencer's key never reaches the audit row or an answer.
 * Pausing and resuming are `pauseBlocklist` and `resyncBlocklist`.
 */

const SEQUENCER_FIELD =
  'The sequencer account the list is pushed to, in its platform’s keys: Smartlead `{apiKey, clientId?}`, Instantly `{apiKey}`. ' +
  'Stored encrypted, never shown (nor written to the audit log).';

const CreateBlocklistInput = builder.inputType('CreateBlocklistInput', {
  description: 'A new block list of a connection: the CRM list it reads and the sequencer it is pushed to. Its first full fetch runs within a minute.',
  fields: (t) => ({
    connectionId: t.int({ required: true, description: 'The connection whose CRM holds the list.' }),
    listName: t.string({ required: true, description: 'Its name (as the CRM calls it).' }),
    platform: t.string({ required: true, description: 'The sequencer it is pushed to, lowercase: smartlead, instantly.' }),
    blockType: t.string({ required: true, description: '`ADDRESS` (contacts’ email addresses) or `DOMAIN` (companies’ domains).' }),
    hasCrmSource: t.boolean({ required: false, description: 'Whether a CRM list backs it (default true).' }),
    crmSource: t.field({
      type: 'JSON',
      required: false,
      description:
        'Where the list comes from in the CRM (required when hasCrmSource): HubSpot `{listId}`; Salesforce `{object, field?}` ' +
        '(Contact, Lead or Account records whose checkbox `field` is true; Contact and Lead default to HasOptedOutOfEmail); ' +
        'Close `{}` (the organization’s unsubscribed emails) or `{smartViewId}` (the addresses of a Smart View’s contacts, `save_...`); ' +
        'Attio `{listId}` (an Attio list, by id or slug: its people’s email addresses or its companies’ domains).',
    }),
    sequencer: t.field({ type: 'JSON', required: false, description: `${SEQUENCER_FIELD} Without it the list is fetched but pushed nowhere yet.` }),
  }),
});

const UpdateBlocklistInput = builder.inputType('UpdateBlocklistInput', {
  description:
    'What to change of a block list; what is left out stays. Its platform and block type are fixed (another is a new list). A new CRM ' +
    'source reloads the list fully within a minute (a paused list on its resync).',
  fields: (t) => ({
    listName: t.string({ required: false, description: 'Its name.' }),
    hasCrmSource: t.boolean({ required: false, description: 'Whether a CRM list backs it.' }),
    crmSource: t.field({ type: 'JSON', required: false, description: 'Where the list comes from in the CRM (as on create); null removes it.' }),
    sequencer: t.field({
      type: 'JSON',
      required: false,
      description: `${SEQUENCER_FIELD} A new key for the same account (entries already pushed are not pushed again); null: push nowhere.`,
    }),
  }),
});

const idArg = builder.args((t) => ({ id: t.int({ required: true, description: 'Block list id.' }) }));

builder.prismaObjectField('Blocklist', 'hasSequencerAccount', (t) =>
  t.boolean({
    description: 'Whether a sequencer account to push to is stored (its key is never exposed).',
    select: { sequencerCredentialsEncrypted: true },
    resolve: (list) => list.sequencerCredentialsEncrypted !== null,
  }),
);

builder.mutationFields((t) => ({
  createBlocklist: t.prismaField({
    type: 'Blocklist',
    description: 'Support staff: creates a block list of a connection; its first full fetch from the CRM runs within a minute, then its push. Audited.',
    args: { input: t.arg({ type: CreateBlocklistInput, required: true, description: 'The block list.' }) },
    resolve: async (query, _root, { input }, ctx) => {
      withholdSequencer(ctx, input.sequencer);
      requireStaff(ctx);
      const problems: Problem[] = [];
      const { connectionId, ...fields } = given(input);
      const list = parsed(blocklistSchema, fields, problems);
      const connection = await inputConnection(ctx, connectionId as number, problems);
      let crmSource: Record<string, unknown> | undefined;
      if (list && connection) {
        const source = parseCrmSource(connection.crm, list);
        problems.push(...source.problems, ...checkSequencer(list));
        crmSource = source.value;
      }
      refuseProblems(problems);
      const { listName, platform, blockType, hasCrmSource, sequencer } = list as NonNullable<typeof list>;
      return ctx.prisma.blocklist.create({
        ...query,
        data: {
          connectionId: connectionId as number,
          listName,
          platform,
          blockType,
          hasCrmSource,
          crmSource: jsonColumn(crmSource),
          ...sequencerColumns(ctx.encryptionKey, sequencer),
        },
      });
    },
  }),
  updateBlocklist: t.prismaField({
    type: 'Blocklist',
    description:
      'Support staff: renames a block list, changes its CRM source (a resting list reloads fully within a minute; 409 while a round runs: ' +
      'pause it first), or sets its sequencer account. Audited.',
    args: { ...idArg, input: t.arg({ type: UpdateBlocklistInput, required: true, description: 'What to change.' }) },
    resolve: async (query, _root, args, ctx) => {
      withholdSequencer(ctx, args.input.sequencer);
      requireStaff(ctx);
      const { crmSource: newSource, sequencer: newSequencer } = args.input;
      const changes = given(args.input);
      if (Object.keys(changes).length === 0 && newSource === undefined && newSequencer === undefined) {
        refuseProblems([{ path: [], message: 'give a listName, a CRM source or a sequencer to change' }]);
      }
      return ctx.prisma.$transaction(async (tx) => {
        // Locked as a pause, a resync and a round's start lock it: none of them runs in between.
        const locked = await tx.$queryRaw<{ id: number }[]>`
          SELECT b.id FROM blocklists b JOIN connections c ON c.id = b.connection_id
           WHERE b.id = ${args.id} AND c.deleted_at IS NULL FOR UPDATE OF b`;
        if (locked.length === 0) throw notFound(args.id);
        const current = await tx.blocklist.findUniqueOrThrow({ where: { id: args.id }, include: { connection: { select: { crm: true } } } });
        const merged = {
          listName: changes.listName ?? current.listName,
          platform: current.platform,
          blockType: current.blockType,
          hasCrmSource: changes.hasCrmSource ?? current.hasCrmSource,
          // Turning the CRM source off drops the stored one, unless a new one is given (then refused: it needs hasCrmSource).
          ...(newSource === null || (newSource === undefined && changes.hasCrmSource === false)
            ? {}
            : { crmSource: newSource ?? current.crmSource ?? undefined }),
          ...(newSequencer == null ? {} : { sequencer: newSequencer }),
        };
        const problems: Problem[] = [];
        const list = parsed(blocklistSchema, merged, problems);
        let crmSource: Record<string, unknown> | undefined;
        if (list) {
          const source = parseCrmSource(current.connection.crm, list);
          problems.push(...source.problems, ...checkSequencer(list));
          crmSource = source.value;
          const clientId = list.sequencer?.clientId ?? null;
          if (list.sequencer && current.syncedCount > 0 && clientId !== current.clientId) {
            problems.push({
              path: ['sequencer', 'clientId'],
              message: `the list has pushed ${current.syncedCount} entries to ${current.clientId === null ? 'the account itself' : `client ${current.clientId}`}: a list for another client is a new block list`,
            });
          }
        }
        refuseProblems(problems);
        const sourceChanged = merged.hasCrmSource !== current.hasCrmSource || !isDeepStrictEqual(crmSource ?? null, current.crmSource);
        if (sourceChanged && (current.status === 'FETCHING' || current.status === 'SYNCING')) {
          throw serviceError('CONFLICT', 'Blocklist round in progress: pause it (pauseBlocklist) or let it end before changing its CRM source');
        }
        // A resting list reloads from its new source within a minute (a full fetch: entries already pushed are not pushed again).
        const reload = sourceChanged && merged.hasCrmSource && (current.status === 'CREATED' || current.status === 'SYNCED');
        return tx.blocklist.update({
          ...query,
          where: { id: args.id },
          data: {
            listName: merged.listName,
            hasCrmSource: merged.hasCrmSource,
            crmSource: jsonColumn(crmSource),
            ...(newSequencer === undefined ? {} : sequencerColumns(ctx.encryptionKey, list?.sequencer)),
            ...(reload ? { status: 'CREATED' as const, lastAttemptedAt: null, lastError: null } : {}),
          },
        });
      });
    },
  }),
  deleteBlocklist: t.field({
    type: DeletedObject,
    description:
      'Support staff: deletes a block list and its local entries; a round in flight finds it gone. The sequencer keeps every value ' +
      'already pushed (as on a pause). Audited.',
    args: idArg,
    resolve: async (_root, args, ctx) => {
      requireStaff(ctx);
      const list = await ctx.prisma.blocklist.findFirst({ where: { id: args.id, connection: { deletedAt: null } }, select: { id: true } });
      if (!list) throw notFound(args.id);
      await ctx.prisma.blocklist.delete({ where: { id: args.id } });
      return { id: args.id, deleted: true as const };
    },
  }),
}));

const notFound = (id: number) => serviceError('NOT_FOUND', `Blocklist ${id} not found`);

/**
 * Keeps a sequencer's key out of the operation's audit row, before anything can refuse the input: every
 * text of `sequencer` but its client id (public: the list shows it). Empty texts are no secret.
 */
function withholdSequencer(ctx: Context, sequencer: unknown): void {
  const texts = (value: unknown): string[] =>
    typeof value === 'string' || typeof value === 'number'
      ? [String(value)]
      : value !== null && typeof value === 'object'
        ? Object.entries(value).flatMap(([key, v]) => (key === 'clientId' ? [] : texts(v)))
        : [];
  for (const text of texts(sequencer)) if (text !== '') withholdFromAudit(ctx, text);
}
