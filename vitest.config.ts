import { createRequire } from 'node:module';
import { defineConfig } from 'vitest/config';

const require = createRequire(import.meta.url);

export default defineConfig({
  resolve: {
    // graphql 16 has no "exports": Node (and so production) loads its CommonJS build, while Vite would
    // pick its "module" build for our sources; two copies break `instanceof GraphQLError` in yoga.
    alias: [{ find: /^graphql$/, replacement: require.resolve('graphql') }],
  },
  test: {
    include: ['test/**/*.test.ts'],
    // One embedded PostgreSQL for the whole run; each test file clones a migrated template database.
    globalSetup: ['test/setup/postgres.ts'],
    pool: 'forks',
    maxWorkers: 2,
    testTimeout: 30_000,
    hookTimeout: 60_000,
    env: { NODE_ENV: 'test' },
  },
});
