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
    // Test files share their worker's loaded modules (Prisma, the GraphQL schema, the app): loading them
    // per file cost ~150 s of the suite's time. Safe here: no test mocks modules, stubs globals or sets
    // process.env; each file has its own database and servers.
    isolate: false,
    maxWorkers: 2,
    testTimeout: 30_000,
    hookTimeout: 60_000,
    env: { NODE_ENV: 'test' },
  },
});
