import { defineConfig } from 'prisma/config';

// The Prisma CLI is used here only for `prisma generate`: migrations are written and applied by
// src/db/migrations.ts over Prisma's WebAssembly schema engine (the CLI cannot download its binary here).
export default defineConfig({
  schema: 'prisma/schema.prisma',
});
