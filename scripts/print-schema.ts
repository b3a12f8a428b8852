/**
 * Writes the GraphQL schema as SDL to schema.graphql: what GraphQL Code Generator types the REST facade's
 * persisted operations against, and a readable record of schema changes in review. A test fails when the
 * committed file is stale (`npm run codegen` rewrites it).
 */
import { writeFile } from 'node:fs/promises';
import { printSchemaFile, SCHEMA_SDL_FILE } from '../src/schema/sdl.js';

await writeFile(SCHEMA_SDL_FILE, printSchemaFile());
process.stderr.write(`wrote ${SCHEMA_SDL_FILE}\n`);
