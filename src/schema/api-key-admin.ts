import { apiKeyNameSchema, apiKeyScopesSchema } from '../admin/account-entities.js';
import { apiKeyPrefix, hashApiKey, PREFIX, randomToken } from '../domain/secrets.js';
import { withholdFromAudit } from './audit.js';
import { builder } from './builder.js';
import type { Context } from './context.js';
import { parsed, refuseProblems } from './staff-input.js';
import type { Problem } from '../admin/entities.js';
import { requireStaff, serviceError } from './errors.js';

/**
 * Support staff's API key mutations in the explorer (issue 30): create a key (for the whole account or
 * one connection), rotate it, revoke it. The key is shown once, in the answer of create and rotate; only
 * its SHA-256 is stored (src/domain/secrets.ts) and the audit row says `[shown once, not recorded]` in its
 * place. A rotated key stops working at once, like a revoked one (the spec's uniform 401). Staff only.
 */

const NewApiKey = builder.objectRef<{ id: number; key: string }>('NewApiKey').implement({
  description: 'A new API key and its value: the only time the value is shown.',
  fields: (t) => ({
    apiKey: t.prismaField({
      type: 'ApiKey',
      description: 'The key as it is stored (name, scopes, reach; never its value or hash).',
      resolve: (query, parent, _args, ctx) => ctx.prisma.apiKey.findUniqueOrThrow({ ...query, where: { id: parent.id } }),
    }),
    key: t.exposeString('key', {
      description: 'The key, `svcapi_...`: hand it to the customer now, it is never shown again (only its hash is stored, and the audit log withholds it).',
    }),
  }),
});

const CreateApiKeyInput = builder.inputType('CreateApiKeyInput', {
  description: 'A new API key of an account: for the whole account, or for one of its connections.',
  fields: (t) => ({
    accountId: t.int({ required: true, description: 'The account the key belongs to.' }),
    name: t.string({ required: true, description: 'What the customer calls the key, 1 to 100 characters.' }),
    scopes: t.stringList({
      required: false,
      defaultValue: ['read'],
      description: '`read` (every key has it, the default) and `write` (mutations: retries, replays, block list actions, webhook endpoints).',
    }),
    connectionId: t.int({
      required: false,
      description: 'Makes the key connection-scoped: it reaches only this (live) connection of the account. Left out: the key reaches the whole account.',
    }),
  }),
});

const keyIdArg = builder.args((t) => ({ id: t.int({ required: true, description: 'Key id (as `Account.apiKeys` lists it).' }) }));

builder.mutationFields((t) => ({
  createApiKey: t.field({
    type: NewApiKey,
    description: 'Support staff: creates an API key and answers its value, shown this once. Audited (without the value).',
    args: { input: t.arg({ type: CreateApiKeyInput, required: true, description: 'The key.' }) },
    resolve: async (_root, { input }, ctx) => {
      requireStaff(ctx);
      const problems: Problem[] = [];
      const name = parsed(apiKeyNameSchema, input.name, problems, ['name']);
      const scopes = parsed(apiKeyScopesSchema, input.scopes ?? ['read'], problems, ['scopes']);
      const account = await ctx.prisma.account.findUnique({ where: { id: input.accountId }, select: { id: true } });
      if (!account) problems.push({ path: ['accountId'], message: `account ${input.accountId} not found` });
      if (account && input.connectionId != null) {
        const connection = await ctx.prisma.connection.findFirst({
          where: { id: input.connectionId, accountId: account.id, deletedAt: null },
          select: { id: true },
        });
        if (!connection)
          problems.push({ path: ['connectionId'], message: `connection ${input.connectionId} is not a live connection of account ${account.id}` });
      }
      refuseProblems(problems);
      return issueKey(ctx, ctx.prisma, {
        accountId: input.accountId,
        name: name as string,
        scopes: scopes as string[],
        connectionScope: input.connectionId == null ? 'account' : 'connection',
        connectionId: input.connectionId ?? null,
      });
    },
  }),
  rotateApiKey: t.field({
    type: NewApiKey,
    description:
      'Support staff: replaces a key with a new one of the same name, scopes and reach, and answers its value, shown this once. ' +
      'The old key stops working at once (401, like a revoked key); its `rotatedAt` is set. Audited (without the value).',
    args: keyIdArg,
    resolve: async (_root, args, ctx) => {
      requireStaff(ctx);
      const old = await ctx.prisma.apiKey.findUnique({ where: { id: args.id } });
      if (!old) throw serviceError('NOT_FOUND', `API key ${args.id} not found`);
      if (old.revokedAt) throw serviceError('CONFLICT', `API key ${args.id} is revoked: create a new key instead`);
      if (old.rotatedAt) {
        throw serviceError(
          'CONFLICT',
          `API key ${args.id} was already rotated${old.replacedById == null ? '' : `: rotate its replacement, key ${old.replacedById}`}`,
        );
      }
      return ctx.prisma.$transaction(async (tx) => {
        const issued = await issueKey(ctx, tx, old);
        // Only a key still live is replaced: of two rotations at once, one wins and the other changes nothing.
        const replaced = await tx.apiKey.updateMany({
          where: { id: old.id, revokedAt: null, rotatedAt: null },
          data: { rotatedAt: new Date(), replacedById: issued.id },
        });
        if (replaced.count !== 1) throw serviceError('CONFLICT', `API key ${args.id} was rotated or revoked meanwhile`);
        return issued;
      });
    },
  }),
  revokeApiKey: t.prismaField({
    type: 'ApiKey',
    description: 'Support staff: revokes a key; it gets 401 from now on. Revoking a revoked key changes nothing (its first revocation time stands). Audited.',
    args: keyIdArg,
    resolve: async (query, _root, args, ctx) => {
      requireStaff(ctx);
      await ctx.prisma.apiKey.updateMany({ where: { id: args.id, revokedAt: null }, data: { revokedAt: new Date() } });
      const key = await ctx.prisma.apiKey.findUnique({ ...query, where: { id: args.id } });
      if (!key) throw serviceError('NOT_FOUND', `API key ${args.id} not found`);
      return key;
    },
  }),
}));

/** Stores a new key (its hash and prefix) and returns its id and value; the value is withheld from the audit row. */
async function issueKey(
  ctx: Context,
  db: Pick<Context['prisma'], 'apiKey'>,
  fields: { accountId: number; name: string; scopes: string[]; connectionScope: 'account' | 'connection'; connectionId: number | null },
): Promise<{ id: number; key: string }> {
  const key = randomToken(PREFIX.apiKey);
  withholdFromAudit(ctx, key);
  const row = await db.apiKey.create({
    data: {
      accountId: fields.accountId,
      name: fields.name,
      keyHash: hashApiKey(key),
      keyPrefix: apiKeyPrefix(key),
      scopes: fields.scopes,
      connectionScope: fields.connectionScope,
      connectionId: fields.connectionId,
    },
    select: { id: true },
  });
  return { id: row.id, key };
}
