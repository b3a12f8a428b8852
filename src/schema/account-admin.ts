import { accountEmailSchema, capabilitiesSchema } from '../admin/account-entities.js';
import { sql } from '../db/sql.js';
import { closePendingSql } from '../jobs/webhook-delivery-store.js';
import { builder } from './builder.js';
import type { Context } from './context.js';
import { given, parsed, refuseProblems } from './staff-input.js';
import type { Problem } from '../admin/entities.js';
import { requireStaff, serviceError } from './errors.js';

/**
 * Support staff's account mutations in the explorer (issue 30): create an account, change its email and
 * capabilities, deactivate it. Staff only (an API key gets 403; the explorer refuses it with 401 before
 * that), each audited by the explorer (src/http/graphql.ts). Input is checked with the fixture format's
 * rules (src/admin/account-entities.ts); every problem is named by its field in one 400.
 */

/** Why a webhook endpoint of a deactivated account is disabled. */
const DEACTIVATED_REASON = 'The account was deactivated by support';

const CapabilitiesInput = builder.inputType('AccountCapabilitiesInput', {
  description: 'Capability flags; a flag left out is on for a new account and unchanged by an update.',
  fields: (t) => ({
    canUseApi: t.boolean({ required: false, description: 'REST API access (without it every key of the account gets 403).' }),
    canUserAccount: t.boolean({ required: false, description: 'Destinations: forwarding and reply relays.' }),
    canBlockList: t.boolean({ required: false, description: 'Block list syncs.' }),
    canUseWebhooks: t.boolean({ required: false, description: 'Platform webhooks and the event log.' }),
  }),
});

const CreateAccountInput = builder.inputType('CreateAccountInput', {
  description: 'A new customer account.',
  fields: (t) => ({
    email: t.string({ required: true, description: "The owner's email (personal data)." }),
    capabilities: t.field({ type: CapabilitiesInput, required: false, description: 'Capability flags; all on unless turned off here.' }),
  }),
});

const UpdateAccountInput = builder.inputType('UpdateAccountInput', {
  description: 'What to change of an account; what is left out stays.',
  fields: (t) => ({
    email: t.string({ required: false, description: "The owner's email." }),
    capabilities: t.field({ type: CapabilitiesInput, required: false, description: 'The flags to change.' }),
  }),
});

const Deactivation = builder.objectRef<{ accountId: number; connectionIds: number[]; webhookEndpointIds: string[] }>('AccountDeactivation').implement({
  description:
    'A deactivated account, and what deactivating it turned off (so that it can be turned back on: `updateAccount` for the capabilities, ' +
    "the connections' sync setting, `updateWebhookEndpoint(input: {isActive: true})` for the endpoints).",
  fields: (t) => ({
    account: t.prismaField({
      type: 'Account',
      description: 'The account, every capability off.',
      resolve: (query, parent, _args, ctx) => ctx.prisma.account.findUniqueOrThrow({ ...query, where: { id: parent.accountId } }),
    }),
    syncDisabledConnectionIds: t.intList({
      description: 'Connections whose sync this deactivation turned off (empty when none was on).',
      resolve: (parent) => parent.connectionIds,
    }),
    disabledWebhookEndpointIds: t.stringList({
      description: 'Webhook endpoints (`svcwh_`) this deactivation disabled; their pending deliveries ended as DEAD.',
      resolve: (parent) => parent.webhookEndpointIds,
    }),
  }),
});

const idArg = builder.args((t) => ({ id: t.int({ required: true, description: 'Account id.' }) }));

builder.mutationFields((t) => ({
  createAccount: t.prismaField({
    type: 'Account',
    description: 'Support staff: creates a customer account (no connection or key yet). Audited.',
    args: { input: t.arg({ type: CreateAccountInput, required: true, description: 'Its email and capabilities.' }) },
    resolve: async (query, _root, { input }, ctx) => {
      requireStaff(ctx);
      const problems: Problem[] = [];
      const email = parsed(accountEmailSchema, input.email, problems, ['email']);
      const capabilities = parsed(capabilitiesSchema, given(input.capabilities ?? {}), problems, ['capabilities']);
      refuseProblems(problems);
      return ctx.prisma.account.create({ ...query, data: { email: email as string, ...capabilities } });
    },
  }),
  updateAccount: t.prismaField({
    type: 'Account',
    description: "Support staff: changes an account's email or capability flags (those given; the rest stay). Audited.",
    args: { ...idArg, input: t.arg({ type: UpdateAccountInput, required: true, description: 'What to change.' }) },
    resolve: async (query, _root, args, ctx) => {
      requireStaff(ctx);
      const problems: Problem[] = [];
      const email = args.input.email == null ? undefined : parsed(accountEmailSchema, args.input.email, problems, ['email']);
      const capabilities = parsed(capabilitiesSchema, given(args.input.capabilities ?? {}), problems, ['capabilities']);
      if (email === undefined && problems.length === 0 && Object.keys(capabilities ?? {}).length === 0) {
        problems.push({ path: [], message: 'give an email or at least one capability flag to change' });
      }
      refuseProblems(problems);
      await findAccount(ctx, args.id);
      return ctx.prisma.account.update({ ...query, where: { id: args.id }, data: { ...(email === undefined ? {} : { email }), ...capabilities } });
    },
  }),
  deactivateAccount: t.field({
    type: Deactivation,
    description:
      'Support staff: deactivates an account, keeping everything it has. Every capability goes off (its API keys then get 403 ' +
      '`API access is not enabled for this account`, as the API answers any account without API access; they are not revoked), ' +
      'its connections stop writing to their CRM (sync off), and its webhook endpoints are disabled. Deactivating it again changes ' +
      'nothing. Audited.',
    args: idArg,
    resolve: async (_root, args, ctx) => {
      requireStaff(ctx);
      await findAccount(ctx, args.id);
      return ctx.prisma.$transaction(async (tx) => {
        await tx.account.update({
          where: { id: args.id },
          data: { canUseApi: false, canUserAccount: false, canBlockList: false, canUseWebhooks: false },
        });
        const connections = await tx.connection.updateManyAndReturn({
          where: { accountId: args.id, deletedAt: null, syncEnabled: true },
          data: { syncEnabled: false },
          select: { id: true },
        });
        const endpoints = await tx.webhookEndpoint.updateManyAndReturn({
          where: { accountId: args.id, deletedAt: null, isActive: true },
          data: { isActive: false, disabledAt: new Date(), disabledReason: DEACTIVATED_REASON },
          select: { id: true, publicId: true },
        });
        if (endpoints.length > 0) await tx.$executeRaw(closePendingSql(sql`${endpoints.map((e) => e.id)}::int[]`, 'disabled'));
        return {
          accountId: args.id,
          connectionIds: connections.map((c) => c.id).sort((a, b) => a - b),
          webhookEndpointIds: endpoints.map((e) => e.publicId).sort(),
        };
      });
    },
  }),
}));

/** The account, or a 404 naming it. */
async function findAccount(ctx: Context, id: number): Promise<void> {
  const account = await ctx.prisma.account.findUnique({ where: { id }, select: { id: true } });
  if (!account) throw serviceError('NOT_FOUND', `Account ${id} not found`);
}
