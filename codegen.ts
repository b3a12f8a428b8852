import type { CodegenConfig } from '@graphql-codegen/cli';

/**
 * GraphQL Code Generator: types the REST facade's persisted operations (src/rest/operations/*.graphql)
 * against schema.graphql, and writes the persisted-operation manifest (sha256 of each document) that the
 * REST route table executes in-process. `npm run codegen` prints the schema first, then runs this.
 */
const config: CodegenConfig = {
  schema: 'schema.graphql',
  documents: ['src/rest/operations/*.graphql'],
  ignoreNoDocuments: true,
  // ESM imports with explicit .js extensions, as NodeNext resolution requires.
  emitLegacyCommonJSImports: false,
  generates: {
    'src/generated/graphql/': {
      preset: 'client',
      presetConfig: {
        fragmentMasking: false,
        persistedDocuments: { hashAlgorithm: 'sha256' },
      },
      config: {
        useTypeImports: true,
        scalars: { DateTime: 'string', JSON: 'unknown' },
        enumsAsTypes: true,
      },
    },
  },
};

export default config;
