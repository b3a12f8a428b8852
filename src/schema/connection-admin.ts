import { connectLink, type ConnectLink } from '../connect/links.js';
import { CRM_KINDS, crmKindOf, type CrmKind } from '../connectors/crm/kinds.js';
import { CRMS } from '../connectors/crm/registry.js';
import { builder } from './builder.js';
import type { Context } from './context.js';
import { requireStaff, serviceError } from './errors.js';

/**
 * Support staff connect a customer's CRM from the explorer (issue 30): create a connection for a CRM
 * kind and hand the customer its connect link (src/connect/: valid 15 minutes, connects once), get a
 * fresh link for a connection, and disconnect one (its credentials wiped: its syncs then end as
 * `crm_not_connected` and `/account/status` shows `crm_disconnected`). Staff only; audited like every
 * staff mutation (src/http/graphql.ts). No answer carries a credential.
 */

const ConnectLinkRef = builder.objectRef<ConnectLink>('ConnectLink').implement({
  description: "A connect link: the customer opens it, consents on the CRM's page, and the connection is connected.",
  fields: (t) => ({
    url: t.exposeString('url', { description: '`<BASE_URL>/connect/<crm>/start?state=...`: hand it to the customer.' }),
    expiresAt: t.expose('expiresAt', { type: 'DateTime', description: 'Until when it can be used (15 minutes); it connects once.' }),
    available: t.exposeBoolean('available', {
      description:
        "Whether this service has the CRM's app (its client id and secret variables): without it, the link's page says the CRM cannot be connected here.",
    }),
  }),
});

const ConnectionWithLink = builder.objectRef<{ connection: { id: number }; connectLink: ConnectLink }>('ConnectionWithLink').implement({
  description: 'A connection and a new connect link for it.',
  fields: (t) => ({
    connection: t.prismaField({
      type: 'Connection',
      description: 'The connection, as REST shows it (`status` stays `disconnected` until the customer has connected).',
      resolve: (query, parent, _args, ctx) => ctx.prisma.connection.findUniqueOrThrow({ ...query, where: { id: parent.connection.id } }),
    }),
    connectLink: t.expose('connectLink', { type: ConnectLinkRef, description: 'The link to hand the customer.' }),
  }),
});

const NewConnectionInput = builder.inputType('NewConnectionInput', {
  description: 'A connection to create.',
  fields: (t) => ({
    accountId: t.int({ required: true, description: 'The account it belongs to.' }),
    crm: t.string({ required: true, description: `Its CRM kind: ${CRM_KINDS.join(', ')}.` }),
  }),
});

builder.mutationFields((t) => ({
  createConnection: t.field({
    type: ConnectionWithLink,
    description:
      'Support staff: creates a connection of an account for a CRM kind, not yet connected (`disconnected`, no credentials), ' +
      'and answers its connect link for the customer. Audited.',
    args: { input: t.arg({ type: NewConnectionInput, required: true, description: 'The account and the CRM.' }) },
    resolve: async (_root, { input }, ctx) => {
      requireStaff(ctx);
      const kind = crmKindOf(input.crm);
      const account = await ctx.prisma.account.findUnique({ where: { id: input.accountId }, select: { id: true } });
      const problems = [
        ...(account ? [] : [`input.accountId: no account ${input.accountId}`]),
        ...(kind ? [] : [`input.crm: must be one of ${CRM_KINDS.join(', ')}`]),
      ];
      if (problems.length > 0 || !kind) throw serviceError('BAD_REQUEST', problems);
      const connection = await ctx.prisma.connection.create({ data: { accountId: input.accountId, crm: kind, status: 'disconnected' }, select: { id: true } });
      return { connection, connectLink: linkFor(ctx, connection.id, kind) };
    },
  }),
  createConnectLink: t.field({
    type: ConnectionWithLink,
    description:
      'Support staff: a new connect link for a connection (the earlier ones stay valid until they expire). Connecting a connection ' +
      'that is connected already replaces its credentials with those of the account the customer consents for. Audited.',
    args: { id: t.arg.int({ required: true, description: 'Connection id.' }) },
    resolve: async (_root, args, ctx) => {
      requireStaff(ctx);
      const connection = await liveConnection(ctx, args.id);
      const kind = crmKindOf(connection.crm);
      if (!kind) throw serviceError('BAD_REQUEST', `Connection ${args.id} is a ${connection.crm} connection: this service does not connect ${connection.crm}`);
      return { connection, connectLink: linkFor(ctx, connection.id, kind) };
    },
  }),
  disconnectConnection: t.prismaField({
    type: 'Connection',
    description:
      "Support staff: wipes a connection's CRM credentials and marks it `disconnected`: its syncs end as `crm_not_connected` until the " +
      'customer connects it again (`createConnectLink`). Its organisation id and domain stay, to tell which account it was. Audited.',
    args: { id: t.arg.int({ required: true, description: 'Connection id.' }) },
    resolve: async (query, _root, args, ctx) => {
      requireStaff(ctx);
      const connection = await liveConnection(ctx, args.id);
      return ctx.prisma.connection.update({
        ...query,
        where: { id: connection.id },
        data: { status: 'disconnected', credentialsEncrypted: null, tokenExpiresAt: null, credentialsRenewalHolder: null, credentialsRenewalUntil: null },
      });
    },
  }),
}));

/** The connection (not deleted), or a 404. */
async function liveConnection(ctx: Context, id: number): Promise<{ id: number; crm: string }> {
  const connection = await ctx.prisma.connection.findFirst({ where: { id, deletedAt: null }, select: { id: true, crm: true } });
  if (!connection) throw serviceError('NOT_FOUND', `Connection ${id} not found`);
  return connection;
}

function linkFor(ctx: Context, connectionId: number, kind: CrmKind): ConnectLink {
  if (!ctx.connect) throw serviceError('BAD_REQUEST', `Connect links are not available in this context: connect ${CRMS[kind].name} from the explorer`);
  return connectLink(ctx.connect, connectionId, kind);
}
