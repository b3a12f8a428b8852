import { readFile } from 'node:fs/promises';
import { describe, expect, it } from 'vitest';
import { printSchemaFile, SCHEMA_SDL_FILE } from '../../src/schema/sdl.js';

describe('schema.graphql', () => {
  it('is the SDL of the current schema (run npm run codegen after changing src/schema)', async () => {
    expect(await readFile(SCHEMA_SDL_FILE, 'utf8')).toBe(printSchemaFile());
  });

  it('describes every type and field, as the schema files promise', () => {
    const sdl = printSchemaFile();
    // Each field or type line must be preceded by a description block.
    const undocumented = sdl
      .split('\n')
      .map((line, i, lines) => ({ line, previous: lines[i - 1] ?? '' }))
      .filter(({ line }) => /^(\s{2}\w+[(:]|type |scalar )/.test(line) && !/^\s*("""|")/.test(line))
      .filter(({ previous }) => !previous.trim().endsWith('"""') && !previous.trim().endsWith('"'))
      .map(({ line }) => line.trim());
    expect(undocumented).toEqual([]);
  });
});
