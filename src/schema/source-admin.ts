import { ingressInUse, newIngressCode, type Problem, sourceSchema } from '../admin/entities.js';
import { Prisma } from '../generated/prisma/client.js';
import { builder } from './builder.js';
import type { Context } from './context.js';
import { requireStaff, serviceError } from './errors.js';
import { DeletedObject, given, inputConnection, parsed, refuseProblems, refuseWithHistory } from './staff-input.js';

/**
 * Support staff's source mutations in the explorer (issue 30): create a source (its answer carries the
 * ingress URL to paste into the sequencer, as GET /api/v1/sources shows it), change its platform, sync
 * options and reply relay, delete one that never received anything. Staff only, each audited by the
 * explorer; input is checked with the fixture format's source schema (src/admin/entities.ts).
 */

export const SourceConfigInput = builder.inputType('SourceConfigInput', {
  description: 'What the sync writes for a source; a field left out is off for a new source and unchanged by an update.',
  fields: (t) => ({
    createOrUpdateCompany: t.boolean({ required: false, description: 'Create or update the company by the contact’s email domain.' }),
    createOrUpdateTask: t.boolean({ required: false, description: 'Create a CRM task for each event.' }),
    assignContactOwner: t.boolean({ required: false, description: 'Assign the contact to the sender’s CRM user.' }),
    crmObjectType: t.string({
      required: false,
      description: 'The object a new person is created as, for the CRM kind that has a choice (Salesforce: Lead or Contact); null: the default.',
    }),
  }),
});

const SourceImportInput = builder.inputType('SourceImportInput', {
  description:
    'Only for a source moved here from the previous system: the ingress it already has, so the sequencer keeps posting to the URL it knows. ' +
    'A new source gets a generated code and never the legacy form.',
  fields: (t) => ({
    ingressCode: t.string({ required: false, description: 'Its ingress code: 8 to 128 letters, digits, _ or - (a secret).' }),
    legacyIds: t.stringList({ required: false, description: 'Its legacy pair of ids: the source is reachable at /webhooks/<first>/<second>.' }),
  }),
});

const CreateSourceInput = builder.inputType('CreateSourceInput', {
  description: 'A new source of a connection.',
  fields: (t) => ({
    connectionId: t.int({ required: true, description: 'The connection its events are written to.' }),
    platform: t.string({ required: true, description: 'Sequencer platform, lowercase: smartlead, instantly, heyreach, lemlist, ...' }),
    config: t.field({ type: SourceConfigInput, required: false, description: 'What the sync writes; all off unless set.' }),
    replyRelayId: t.int({ required: false, description: 'A reply relay of the same connection to copy a sales rep on its replies.' }),
    imported: t.field({ type: SourceImportInput, required: false, description: 'Imports only: the ingress it already has.' }),
  }),
});

const UpdateSourceInput = builder.inputType('UpdateSourceInput', {
  description: 'What to change of a source; what is left out stays. Its ingress URL never changes.',
  fields: (t) => ({
    platform: t.string({ required: false, description: 'Sequencer platform, lowercase: how its later events are read.' }),
    config: t.field({ type: SourceConfigInput, required: false, description: 'The sync options to change.' }),
    replyRelayId: t.int({ required: false, description: 'A reply relay of the same connection; null unbinds the one it has.' }),
  }),
});

const idArg = builder.args((t) => ({ id: t.int({ required: true, description: 'Source id.' }) }));

builder.mutationFields((t) => ({
  createSource: t.prismaField({
    type: 'Source',
    description:
      'Support staff: creates a source of a connection. Its `url` is the ingress URL to paste into the sequencer (a secret, as in ' +
      'GET /api/v1/sources). Audited.',
    args: { input: t.arg({ type: CreateSourceInput, required: true, description: 'The source.' }) },
    resolve: async (query, _root, { input }, ctx) => {
      requireStaff(ctx);
      const problems: Problem[] = [];
      const imported = given(input.imported);
      const source = parsed(sourceSchema, { platform: input.platform, config: configGiven(input.config), ...imported }, problems);
      const connection = await inputConnection(ctx, input.connectionId, problems);
      if (connection && input.replyRelayId != null) problems.push(...(await relayProblems(ctx, connection.id, input.replyRelayId)));
      refuseProblems(problems.map(importedPath));
      const entity = source as NonNullable<typeof source>;
      const connectionId = (connection as NonNullable<typeof connection>).id;
      try {
        return await ctx.prisma.$transaction(async (tx) => {
          refuseProblems((await ingressInUse(tx, entity)).map(importedPath));
          return tx.source.create({
            ...query,
            data: {
              connectionId,
              platform: entity.platform,
              ingressCode: entity.ingressCode ?? newIngressCode(),
              legacyId1: entity.legacyIds?.[0] ?? null,
              legacyId2: entity.legacyIds?.[1] ?? null,
              ...entity.config,
              replyRelayId: input.replyRelayId ?? null,
            },
          });
        });
      } catch (error) {
        // Another source took the same imported ingress meanwhile (the unique indexes decide).
        if (error instanceof Prisma.PrismaClientKnownRequestError && error.code === 'P2002')
          refuseProblems([{ path: ['imported'], message: 'already in use' }]);
        throw error;
      }
    },
  }),
  updateSource: t.prismaField({
    type: 'Source',
    description:
      'Support staff: changes a source’s platform (how its later events are read), its sync options, or its reply relay. Its ingress URL ' + 'stays. Audited.',
    args: { ...idArg, input: t.arg({ type: UpdateSourceInput, required: true, description: 'What to change.' }) },
    resolve: async (query, _root, args, ctx) => {
      requireStaff(ctx);
      const current = await findSource(ctx, args.id);
      const { createOrUpdateCompany, createOrUpdateTask, assignContactOwner, crmObjectType } = current;
      const config = configGiven(args.input.config);
      const problems: Problem[] = [];
      const source = parsed(
        sourceSchema,
        {
          platform: args.input.platform ?? current.platform,
          config: { createOrUpdateCompany, createOrUpdateTask, assignContactOwner, crmObjectType, ...config },
        },
        problems,
      );
      const relayId = args.input.replyRelayId;
      if (relayId != null) problems.push(...(await relayProblems(ctx, current.connectionId, relayId)));
      if (problems.length === 0 && args.input.platform == null && Object.keys(config).length === 0 && relayId === undefined) {
        problems.push({ path: [], message: 'give a platform, a sync option or a replyRelayId to change' });
      }
      refuseProblems(problems);
      const { platform, config: options } = source as NonNullable<typeof source>;
      return ctx.prisma.source.update({
        ...query,
        where: { id: args.id },
        data: { platform, ...options, ...(relayId === undefined ? {} : { replyRelayId: relayId }) },
      });
    },
  }),
  deleteSource: t.field({
    type: DeletedObject,
    description:
      'Support staff: deletes a source that never received an event (its bindings go with it). A source with history is kept: its ' +
      'syncs and deliveries would be deleted with it (409). Audited.',
    args: idArg,
    resolve: async (_root, args, ctx) => {
      requireStaff(ctx);
      await findSource(ctx, args.id);
      await ctx.prisma.$transaction(async (tx) => {
        // Locked: a request written meanwhile waits for the delete, then fails on the missing source and is retried (the ingress
        // answers 5xx, the sequencer sends again), so no history is written between the check and the delete and cascaded away.
        const locked = await tx.$queryRaw<{ id: number }[]>`SELECT id FROM sources WHERE id = ${args.id} FOR UPDATE`;
        if (locked.length === 0) throw serviceError('NOT_FOUND', `Source ${args.id} not found`);
        const [request, sync, delivery] = await Promise.all([
          tx.request.findFirst({ where: { sourceId: args.id }, select: { id: true } }),
          tx.sync.findFirst({ where: { sourceId: args.id }, select: { id: true } }),
          tx.delivery.findFirst({ where: { sourceId: args.id }, select: { id: true } }),
        ]);
        if (request || sync || delivery) {
          refuseWithHistory(
            `Source ${args.id}`,
            'received events (requests with their syncs and deliveries)',
            'To stop it, have the customer remove its URL from the sequencer, and unbind its destinations and reply relay (updateSource, deleteDestinationBinding).',
          );
        }
        await tx.source.delete({ where: { id: args.id } });
      });
      return { id: args.id, deleted: true as const };
    },
  }),
}));

/** The config fields given: a boolean left out or null is unchanged; `crmObjectType: null` clears the object type. */
export function configGiven(config: { crmObjectType?: string | null } | null | undefined): Record<string, unknown> {
  return { ...given(config), ...(config?.crmObjectType === null ? { crmObjectType: null } : {}) };
}

/** A source of a live connection, or a 404 naming it. */
async function findSource(ctx: Context, id: number) {
  const source = await ctx.prisma.source.findFirst({ where: { id, connection: { deletedAt: null } } });
  if (!source) throw serviceError('NOT_FOUND', `Source ${id} not found`);
  return source;
}

/** Problems of binding reply relay `relayId` to a source of `connectionId` (a relay never crosses connections). */
async function relayProblems(ctx: Context, connectionId: number, relayId: number): Promise<Problem[]> {
  const relay = await ctx.prisma.replyRelay.findFirst({ where: { id: relayId, connectionId }, select: { id: true } });
  return relay ? [] : [{ path: ['replyRelayId'], message: `${relayId} is not a reply relay of this connection` }];
}

/** An import's fields are under `imported` in the input. */
function importedPath(problem: Problem): Problem {
  const [first] = problem.path;
  return first === 'ingressCode' || first === 'legacyIds' ? { ...problem, path: ['imported', ...problem.path] } : problem;
}
