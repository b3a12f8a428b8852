import { chmod, mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { TestProject } from 'vitest/node';
import { startEmbeddedPostgres } from '../../src/db/embedded.js';
import { installJobSchema } from '../../src/db/job-schema.js';
import { applyMigrations } from '../../src/db/migrations.js';
import { prepareTestHistory } from '../support/history.js';
import { makeTestCertificate, type TestCertificate } from '../support/tls.js';

export const TEMPLATE_DATABASE = 'pss_template';

declare module 'vitest' {
  export interface ProvidedContext {
    /** URL of the cluster's maintenance database, for creating per-file databases. */
    postgresAdminUrl: string;
    templateDatabase: string;
    /** The certificate HTTPS test receivers serve, trusted by every test process (NODE_EXTRA_CA_CERTS). */
    testCertificate: TestCertificate;
  }
}

/**
 * Starts one throwaway embedded PostgreSQL for the run (durability off: it is thrown away) and
 * builds a migrated template database that every test file clones.
 */
export default async function setup(project: TestProject) {
  // Under os.tmpdir() and world-searchable: as root, PostgreSQL runs as `postgres` and must reach it.
  const dataDir = await mkdtemp(path.join(os.tmpdir(), 'pss-test-'));
  await chmod(dataDir, 0o755);
  let started: Awaited<ReturnType<typeof startEmbeddedPostgres>> | undefined;
  try {
    started = await startEmbeddedPostgres({
      dataDir,
      database: TEMPLATE_DATABASE,
      settings: { fsync: 'off', synchronous_commit: 'off', full_page_writes: 'off', max_connections: '300' },
    });
    await applyMigrations(started.url);
    await installJobSchema(started.url);
    await prepareTestHistory(started.url);
  } catch (error) {
    // Teardown never runs when setup fails: leave nothing behind.
    await started?.stop();
    await rm(dataDir, { recursive: true, force: true });
    throw error;
  }
  const db = started;
  const adminUrl = new URL(db.url);
  adminUrl.pathname = '/postgres';
  project.provide('postgresAdminUrl', adminUrl.toString());
  project.provide('templateDatabase', TEMPLATE_DATABASE);
  // Node reads NODE_EXTRA_CA_CERTS when a process starts: set here, before vitest forks its test
  // processes (which inherit it, as do the service processes they spawn).
  const certificate = await makeTestCertificate(dataDir);
  process.env.NODE_EXTRA_CA_CERTS = certificate.certPath;
  project.provide('testCertificate', certificate);

  return async () => {
    await db.stop();
    await rm(dataDir, { recursive: true, force: true });
  };
}
