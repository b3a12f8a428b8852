import { fileURLToPath } from 'node:url';
import { lexicographicSortSchema, printSchema } from 'graphql';
import { schema } from './index.js';

/** schema.graphql at the project root. */
export const SCHEMA_SDL_FILE = fileURLToPath(new URL('../../schema.graphql', import.meta.url));

/** The schema as committed SDL: sorted, with a header saying where it comes from. */
export function printSchemaFile(): string {
  return `# Generated from src/schema by \`npm run codegen\`; do not edit.\n\n${printSchema(lexicographicSortSchema(schema))}\n`;
}
