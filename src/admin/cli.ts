/**
 * `npm run admin -- <command>`: operator commands. Machine-readable JSON on standard output, everything
 * else on standard error, so `npm run -s admin -- seed FILE | jq` works. Runs against DATABASE_URL, or the
 * embedded PostgreSQL of DATA_DIR (joined when `npm start` runs it, started briefly when not).
 */
import { readFile } from 'node:fs/promises';
import { Command, CommanderError, InvalidArgumentError } from 'commander';
import { loadConfig } from '../config.js';
import { openDatabase, releaseOnSignals, type Database } from '../db/database.js';
import { applyMigrations } from '../db/migrations.js';
import { createPrisma, type PrismaClient } from '../db/prisma.js';
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
    withDatabase((prisma) => createApiKey(prisma, { accountId: options.account, name: options.name, scopes: options.scopes.split(','), connectionId: options.connection })),
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
