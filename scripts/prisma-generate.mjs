// Runs `prisma generate` without the native schema engine, which the Prisma CLI cannot download here:
// generation never runs the engine, it only needs the variable to name an existing file.
import { spawnSync } from 'node:child_process';

const result = spawnSync('prisma', ['generate'], {
  stdio: 'inherit',
  env: { ...process.env, PRISMA_SCHEMA_ENGINE_BINARY: process.execPath, PRISMA_HIDE_UPDATE_MESSAGE: '1' },
});
process.exit(result.status ?? 1);
