import { crmObject, jsonColumn, parseCrmRateLimit, type Problem, sourceConfigSchema } from '../admin/entities.js';
import { builder } from './builder.js';
import { requireStaff, serviceError } from './errors.js';
import { configGiven, SourceConfigInput } from './source-admin.js';
import { parsed, refuseProblems } from './staff-input.js';

/**
 * Support staff change a connection's settings in the explorer (issue 30): whether its events are
 * written to the CRM, its own CRM request budget, and what the sync writes (company, owner, task, object
 * type: options each of its sources carries, set here on all of them at once). Staff only, audited;
 * checked with the fixture format's rules (the CRM registry's `rateLimit` schema).
 */

const ConnectionSettingsInput = builder.inputType('ConnectionSettingsInput', {
  description: 'What to change of a connection; what is left out stays.',
  fields: (t) => ({
    syncEnabled: t.boolean({ required: false, description: 'Whether its events are written to the CRM (off: syncs end as `sync_disabled`).' }),
    crmRateLimit: t.field({
      type: 'JSON',
      required: false,
      description:
        "Its own CRM request budget, in its CRM's keys: HubSpot `{requestsPer10s}` (1 to 250), Salesforce `{maxConcurrency}` (1 to 25), " +
        "Close `{requestsPerSecond}` (1 to 1,000), Attio `{requestsPerSecond}` (1 to 100); null: the service's defaults again.",
    }),
    sourceConfig: t.field({
      type: SourceConfigInput,
      required: false,
      description: 'Sync options (company, task, contact owner, object type) set on every source of the connection; `updateSource` sets one.',
    }),
  }),
});

builder.mutationField('updateConnectionSettings', (t) =>
  t.prismaField({
    type: 'Connection',
    description:
      'Support staff: changes whether a connection syncs, its CRM request budget, and the sync options of all its sources (read them ' +
      'under `sources { config }`). Audited.',
    args: {
      id: t.arg.int({ required: true, description: 'Connection id.' }),
      input: t.arg({ type: ConnectionSettingsInput, required: true, description: 'What to change.' }),
    },
    resolve: async (query, _root, args, ctx) => {
      requireStaff(ctx);
      const connection = await ctx.prisma.connection.findFirst({ where: { id: args.id, deletedAt: null }, select: { crm: true } });
      if (!connection) throw serviceError('NOT_FOUND', `Connection ${args.id} not found`);
      const { syncEnabled, crmRateLimit } = args.input;
      const problems: Problem[] = [];
      let rateLimit: Record<string, unknown> | null | undefined = crmRateLimit === null ? null : undefined;
      if (crmRateLimit != null) {
        const object = parsed(crmObject, crmRateLimit, problems, ['crmRateLimit']);
        if (object) {
          const checked = parseCrmRateLimit(connection.crm, object);
          problems.push(...checked.problems);
          rateLimit = checked.value;
        }
      }
      // Checked whole (its defaults fill what is left out); only the options given are written.
      const options = configGiven(args.input.sourceConfig);
      parsed(sourceConfigSchema, options, problems, ['sourceConfig']);
      if (problems.length === 0 && syncEnabled == null && crmRateLimit === undefined && Object.keys(options).length === 0) {
        problems.push({ path: [], message: 'give syncEnabled, crmRateLimit or a sourceConfig option to change' });
      }
      refuseProblems(problems);
      return ctx.prisma.$transaction(async (tx) => {
        if (Object.keys(options).length > 0) await tx.source.updateMany({ where: { connectionId: args.id }, data: options });
        return tx.connection.update({
          ...query,
          where: { id: args.id },
          data: {
            ...(syncEnabled == null ? {} : { syncEnabled }),
            ...(rateLimit === undefined ? {} : { crmRateLimit: jsonColumn(rateLimit) }),
          },
        });
      });
    },
  }),
);
