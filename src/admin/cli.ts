/**
 * `npm run admin -- <command>`: operator commands. Machine-readable JSON on standard output, everything
 * else on standard error, so `npm run -s admin -- seed FILE | jq` works. Runs against DATABASE_URL, or the
 * embedded PostgreSQL of DATA_DIR (joined when `npm start` runs it, started briefly when not).
 */
import { readFile } from 'node:fs/promises';
import { Command, CommanderError, InvalidArgumentError } from 'commander';
import pg from 'pg';
import { loadConfig } from '../config.js';
import { openDatabase, releaseOnSignals, type Database } from '../db/database.js';
import { maintainHistory } from '../db/history/maintain.js';
import { applyMigrations } from '../db/migrations.js';
import { createPrisma, type PrismaClient } from '../db/prisma.js';
import { generateHistory, HISTORY_DEFAULTS } from './generate-history.js';
import { createApiKey, listAccounts, revokeApiKey } from './keys.js';
import { seedFixture } from './seed.js';

const program = new Command('admin')
  .description('Pipeline Sync Service administration')
  .exitOverride()
  .configureOutput({ writeOut: (s) => process.stderr.write(s), writeErr: (s) => process.stderr.write(s) });

program
  .command('seed')
  .description('Load a fixture (see ../shared/fixtures/README.md): validated first, all or nothing; prints the ref-to-id map')
  .argument('<file>', 'fixture JSON file')
  .action((file: string) =>
    withDatabase(async (prisma, database) => {
      const text = await readFile(file, 'utf8').catch(() => {
        throw new Error(`Cannot read ${file}`);
      });
      let input: unknown;
      try {
        input = JSON.parse(text);
      } catch {
        throw new Error(`${file} is not valid JSON`);
      }
      return seedFixture(prisma, input, database.encryptionKey);
    }),
  );

program
  .command('create-key')
  .description('Create an API key; prints it once (only its hash is stored)')
  .requiredOption('--account <id>', 'account id', positiveInt)
  .requiredOption('--name <name>', 'key name')
  .option('--scopes <list>', 'comma-separated scopes: read, write', 'read')
  .option('--connection <id>', 'make the key connection-scoped to this connection', positiveInt)
  .action((options: { account: number; name: string; scopes: string; connection?: number }) =>
    withDatabase((prisma) =>
      createApiKey(prisma, { accountId: options.account, name: options.name, scopes: options.scopes.split(','), connectionId: options.connection }),
    ),
  );

program
  .command('revoke-key')
  .description('Revoke an API key by id or by its value')
  .option('--id <id>', 'key id', positiveInt)
  .option('--key <key>', 'the key itself (svcapi_...)')
  .action((options: { id?: number; key?: string }) => withDatabase((prisma) => revokeApiKey(prisma, options)));

program
  .command('list-accounts')
  .description('List accounts with their capabilities, connections and keys (never key secrets)')
  .action(() => withDatabase((prisma) => listAccounts(prisma)));

program
  .command('generate-history')
  .description(
    'Generate bulk request/sync/delivery history for existing accounts (benchmarks): set-based INSERTs in chunks, ' +
      'progress on stderr, a JSON summary on stdout; VACUUM (ANALYZE) at the end',
  )
  .requiredOption('--account <ids>', 'account id, or several comma-separated (each gets the same volume; their rows interleave in time)', idList)
  .option('--requests <n>', 'requests per account', wholeNumber, HISTORY_DEFAULTS.requests)
  .option('--sync-ratio <r>', 'share of requests that got a sync (0..1; a request has at most one)', fraction, HISTORY_DEFAULTS.syncRatio)
  .option('--deliveries <n>', 'forwarding deliveries per account, to the destinations bound to the sources', wholeNumber, HISTORY_DEFAULTS.deliveries)
  .option('--days <n>', 'created_at uniform over the last N days, millisecond precision', positiveNumber, HISTORY_DEFAULTS.days)
  .option('--error-rate <r>', 'share of syncs and deliveries that failed', fraction, HISTORY_DEFAULTS.errorRate)
  .option('--warning-rate <r>', 'share of syncs written with a partial problem', fraction, HISTORY_DEFAULTS.warningRate)
  .option('--null-rate <r>', 'share of syncs that never recorded a result (status null, listed as error)', fraction, HISTORY_DEFAULTS.nullRate)
  .option('--chunk <n>', 'requests per INSERT statement, all accounts together (progress is printed per chunk)', wholeNumber, HISTORY_DEFAULTS.chunkSize)
  .option('--jobs <n>', "connections writing chunks in parallel, 1 to 8 (up to the database's cores)", wholeNumber, HISTORY_DEFAULTS.jobs)
  .option('--seed <x>', 'random seed from -1 to 1, for repeatable data', Number)
  .option('--no-vacuum', 'only ANALYZE at the end (VACUUM sets the visibility map that index-only scans need)')
  .addHelpText(
    'after',
    '\nStatuses are drawn per sync: null, error, warning, else success. Event types, contacts (emails, or LinkedIn\n' +
      "profile URLs for LinkedIn platforms) and request bodies follow each source's platform. Example:\n" +
      '  npm run -s admin -- generate-history --account 1 --requests 200000 --deliveries 20000 --days 60 | jq',
  )
  .action(
    (o: {
      account: number[];
      requests: number;
      syncRatio: number;
      deliveries: number;
      days: number;
      errorRate: number;
      warningRate: number;
      nullRate: number;
      chunk: number;
      jobs: number;
      seed?: number;
      vacuum: boolean;
    }) =>
      withDatabase((_prisma, database) =>
        generateHistory(database.url, {
          accountIds: o.account,
          requests: o.requests,
          syncRatio: o.syncRatio,
          deliveries: o.deliveries,
          days: o.days,
          errorRate: o.errorRate,
          warningRate: o.warningRate,
          nullRate: o.nullRate,
          chunkSize: o.chunk,
          jobs: o.jobs,
          seed: o.seed,
          vacuum: o.vacuum,
        }),
      ),
  );

program
  .command('history-round')
  .description(
    'Run one round of history upkeep now, as the hourly history__maintain job does: move tables onto time partitions, ' +
      'create partitions ahead, drop those past RETENTION_DAYS / RAW_BODY_RETENTION_DAYS / AUDIT_RETENTION_DAYS; ' +
      'prints what it created, dropped and kept (with why)',
  )
  .action(() =>
    withDatabase(async (_prisma, database) => {
      const pool = new pg.Pool({ connectionString: database.url, max: 1 });
      try {
        return await maintainHistory(pool, {
          retention: loadConfig().retention,
          log: (message, fields) => process.stderr.write(`${message} ${JSON.stringify(fields ?? {})}\n`),
        });
      } finally {
        await pool.end();
      }
    }),
  );

try {
  await program.parseAsync(process.argv);
} catch (error) {
  if (!(error instanceof CommanderError)) throw error;
  // Commander has already printed its own message (usage, unknown command, bad option) to stderr.
  process.exitCode = error.exitCode;
}

/** Opens the database, runs the command, prints its JSON result; any error becomes a message and exit 1. */
async function withDatabase(command: (prisma: PrismaClient, database: Database) => Promise<unknown>): Promise<void> {
  let database: Database | undefined;
  let prisma: PrismaClient | undefined;
  let unhook = () => {};
  try {
    database = await openDatabase(loadConfig(), 'borrow');
    unhook = releaseOnSignals(database);
    await applyMigrations(database.url);
    prisma = createPrisma(database.url, { max: 2 });
    const result = await command(prisma, database);
    process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
  } catch (error) {
    process.stderr.write(`${error instanceof Error ? error.message : String(error)}\n`);
    process.exitCode = 1;
  } finally {
    await prisma?.$disconnect();
    await database?.release();
    unhook();
  }
}

function positiveInt(value: string): number {
  if (!/^\d+$/.test(value) || Number(value) < 1) throw new InvalidArgumentError('must be a positive whole number');
  return Number(value);
}

function wholeNumber(value: string): number {
  if (!/^\d+$/.test(value.replace(/_/g, ''))) throw new InvalidArgumentError('must be a whole number');
  return Number(value.replace(/_/g, ''));
}

function positiveNumber(value: string): number {
  const n = Number(value);
  if (!Number.isFinite(n) || n <= 0) throw new InvalidArgumentError('must be a number above 0');
  return n;
}

function fraction(value: string): number {
  const n = Number(value);
  if (value.trim() === '' || !Number.isFinite(n) || n < 0 || n > 1) throw new InvalidArgumentError('must be a number from 0 to 1');
  return n;
}

function idList(value: string): number[] {
  const ids = value.split(',').map((part) => part.trim());
  if (ids.some((id) => !/^\d+$/.test(id) || Number(id) < 1)) throw new InvalidArgumentError('must be positive account ids, comma-separated');
  return ids.map(Number);
}
