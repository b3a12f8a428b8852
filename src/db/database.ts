import type { Config } from '../config.js';
import { attachEmbeddedPostgres, attachOrStartEmbeddedPostgres, readLocalSecrets, startEmbeddedPostgres } from './embedded.js';

/** The database a process works against, and the key its secrets at rest are sealed with. */
export interface Database {
  url: string;
  encryptionKey: Buffer;
  /** Where it came from, for the start-up log (never the URL: it carries a password). */
  description: string;
  /** Stops the embedded cluster when this process started it; otherwise does nothing. */
  release(): Promise<void>;
}

/**
 * How a process gets its database when DATABASE_URL is unset:
 * - `own`: start the embedded cluster (npm start); refuse if another process already runs it.
 * - `join`: use the embedded cluster another process runs (npm run api / worker); refuse if none.
 * - `borrow`: join it when running, else start it for the duration of the command (admin, db CLIs).
 */
export type EmbeddedMode = 'own' | 'join' | 'borrow';

export async function openDatabase(config: Config, mode: EmbeddedMode): Promise<Database> {
  if (config.databaseUrl !== undefined) {
    // loadConfig guarantees the key whenever DATABASE_URL is set.
    return { url: config.databaseUrl, encryptionKey: config.encryptionKey as Buffer, description: 'DATABASE_URL', release: async () => {} };
  }
  const options = { dataDir: config.dataDir };
  const embedded =
    mode === 'own'
      ? await startEmbeddedPostgres(options)
      : mode === 'join'
        ? await attachEmbeddedPostgres(options)
        : await attachOrStartEmbeddedPostgres(options);
  if (!embedded) {
    throw new Error(`No embedded PostgreSQL is running on ${config.dataDir}: start one with "npm start", or set DATABASE_URL`);
  }
  const encryptionKey = config.encryptionKey ?? (await readLocalSecrets(config.dataDir)).encryptionKey;
  return {
    url: embedded.url,
    encryptionKey,
    description: `embedded PostgreSQL on 127.0.0.1:${embedded.port} (cluster in ${embedded.clusterDir})`,
    release: () => (embedded.owned ? embedded.stop() : Promise.resolve()),
  };
}

/**
 * For short-lived commands (admin, db): an interrupted command still stops the embedded cluster it
 * started (Node's default exit on a signal skips every cleanup). Returns the function that unhooks.
 */
export function releaseOnSignals(database: Database): () => void {
  const signals = { SIGINT: 130, SIGTERM: 143, SIGHUP: 129 } as const;
  const handler = (signal: NodeJS.Signals) => {
    process.stderr.write(`interrupted (${signal}): stopping\n`);
    void database.release().finally(() => process.exit(signals[signal as keyof typeof signals] ?? 1));
  };
  for (const signal of Object.keys(signals)) process.once(signal, handler);
  return () => {
    for (const signal of Object.keys(signals)) process.off(signal, handler);
  };
}
