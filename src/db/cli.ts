/**
 * `npm run db:migrate` applies pending migrations; `npm run db:migration -- NAME` writes a new one from
 * the difference between the last migrated schema and prisma/schema.prisma.
 */
import { loadConfig } from '../config.js';
import { openDatabase, releaseOnSignals } from './database.js';
import { applyMigrations, createMigration } from './migrations.js';

const [command, name] = process.argv.slice(2);

try {
  const config = loadConfig();
  if (command !== 'migrate' && command !== 'migration') throw new Error('usage: db/cli.ts migrate | migration NAME');
  if (command === 'migration' && !name) throw new Error('usage: npm run db:migration -- NAME');
  const database = await openDatabase(config, 'borrow');
  const unhook = releaseOnSignals(database);
  try {
    if (command === 'migrate') {
      const applied = await applyMigrations(database.url);
      process.stderr.write(applied.length ? `applied: ${applied.join(', ')}\n` : 'no pending migrations\n');
    } else {
      const folder = await createMigration(name as string, database.url);
      process.stderr.write(folder ? `wrote prisma/migrations/${folder}/migration.sql\n` : 'schema.prisma has not changed: no migration written\n');
    }
  } finally {
    await database.release();
    unhook();
  }
} catch (error) {
  process.stderr.write(`${error instanceof Error ? error.message : String(error)}\n`);
  process.exitCode = 1;
}
