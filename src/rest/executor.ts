import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { execute } from 'graphql';
import type { TypedDocumentNode } from '@graphql-typed-document-node/core';
import { schema } from '../schema/index.js';
import type { Context } from '../schema/context.js';

/**
 * Runs the REST facade's persisted operations in-process. Only documents in the manifest written by
 * GraphQL Code Generator (src/rest/operations/*.graphql) can run: the REST layer names an operation by
 * its hash and never takes a query from a caller.
 */
const MANIFEST = fileURLToPath(new URL('../generated/graphql/persisted-documents.json', import.meta.url));

const persisted = new Set(Object.keys(JSON.parse(readFileSync(MANIFEST, 'utf8')) as Record<string, string>));

interface OperationError {
  message: string;
  extensions?: { code?: string; http?: { status?: number }; messages?: string[] };
}

export type OperationResult<T> = { ok: true; data: T } | { ok: false; errors: OperationError[]; cause?: unknown };

/** Executes the persisted operation `document` stands for (by its hash), with `variables`. */
export async function runOperation<T, V extends Record<string, unknown>>(
  document: TypedDocumentNode<T, V>,
  variables: V,
  context: Context,
): Promise<OperationResult<T>> {
  const hash = (document as unknown as { __meta__?: { hash?: string } }).__meta__?.hash;
  if (!hash || !persisted.has(hash)) throw new Error(`Operation ${hash ?? '(unnamed)'} is not in the persisted manifest: run npm run codegen`);
  // The typed document keeps the field order of its .graphql file (the manifest's copy is normalised),
  // and JSON answers follow that order.
  const result = await execute({ schema, document, variableValues: variables, contextValue: context });
  if (result.errors?.length) {
    return {
      ok: false,
      errors: result.errors.map((e) => ({ message: e.message, extensions: e.extensions })),
      cause: result.errors.find((e) => !e.extensions?.code)?.originalError ?? result.errors[0],
    };
  }
  return { ok: true, data: result.data as T };
}
