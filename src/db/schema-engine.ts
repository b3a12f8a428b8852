import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { PrismaPg } from '@prisma/adapter-pg';
import { bindMigrationAwareSqlAdapterFactory } from '@prisma/driver-adapter-utils';
import * as wasmBindings from '@prisma/schema-engine-wasm/schema_engine_bg';

/**
 * Prisma's own schema engine, in its WebAssembly build: the Prisma CLI cannot download the native
 * engine on our machines, and this build's `diff` writes exactly the SQL `prisma migrate` would.
 */
export interface SchemaDiff {
  /** The migration SQL from `from` to `to`. */
  sql: string;
  /** False when the two schemas describe the same database. */
  changed: boolean;
}

/**
 * Diffs two Prisma schemas (`null` = an empty database) into migration SQL.
 * The engine insists on a reachable database at creation, though `diff` itself reads none.
 */
export async function diffSchemas(from: string | null, to: string, databaseUrl: string): Promise<SchemaDiff> {
  const engine = await createEngine(to, databaseUrl);
  const target = (content: string) => ({ tag: 'schemaDatamodel' as const, files: [{ path: 'schema.prisma', content }] });
  const result = await engine.diff({
    from: from === null ? { tag: 'empty' } : target(from),
    to: target(to),
    script: true,
    exitCode: true,
    filters: { externalTables: [], externalEnums: [] },
  });
  // exitCode 2 means "the schemas differ", 0 "identical" (`prisma migrate diff --exit-code`).
  return { sql: result.stdout ?? '', changed: result.exitCode === 2 };
}

let initialised: Promise<void> | undefined;

async function createEngine(schema: string, databaseUrl: string): Promise<wasmBindings.SchemaEngine> {
  initialised ??= instantiateWasm();
  await initialised;
  const adapter = bindMigrationAwareSqlAdapterFactory(new PrismaPg({ connectionString: databaseUrl }, { schema: 'public' }));
  return wasmBindings.SchemaEngine.new({ datamodels: [['schema.prisma', schema]] }, () => {}, adapter);
}

// @types/node 20 does not declare the WebAssembly global; this is the one call we make of it.
const wasm = (
  globalThis as unknown as {
    WebAssembly: { instantiate(bytes: Uint8Array, imports: object): Promise<{ instance: { exports: Record<string, unknown> } }> };
  }
).WebAssembly;

// The package's default entry imports the .wasm file as an ES module, which Node cannot do;
// instantiate it by hand against the package's JS glue instead.
async function instantiateWasm(): Promise<void> {
  const require = createRequire(import.meta.url);
  const gluePath = require.resolve('@prisma/schema-engine-wasm/schema_engine_bg');
  const bytes = await readFile(gluePath.replace(/\.js$/, '.wasm'));
  const { instance } = await wasm.instantiate(bytes, { './schema_engine_bg.js': wasmBindings });
  wasmBindings.__wbg_set_wasm(instance.exports);
  (instance.exports as { __wbindgen_start?: () => void }).__wbindgen_start?.();
}
