import type { TestDatabase } from './database.js';
import { SUPPORT_TOKEN } from './server.js';

/** An explorer answer: the HTTP status and the GraphQL body. */
export interface ExplorerAnswer {
  status: number;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- answers are checked field by field
  body: { data?: Record<string, any> | null; errors?: Array<{ message: string; extensions?: { code?: string; messages?: string[] } }> };
}

/** One operation against the real explorer over HTTP, as support staff (or with `token`). */
export async function explorer(baseUrl: string, query: string, variables?: Record<string, unknown>, token = SUPPORT_TOKEN): Promise<ExplorerAnswer> {
  const res = await fetch(`${baseUrl}/graphql`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
    body: JSON.stringify({ query, ...(variables ? { variables } : {}) }),
  });
  return { status: res.status, body: (await res.json()) as ExplorerAnswer['body'] };
}

/** The audit rows of `action`, oldest first, as stored. */
export function auditRows(db: TestDatabase, action: string) {
  return db.query<{ staff: string; action: string; arguments: { variables: Record<string, unknown>; operation: string }; result: Record<string, unknown> }>(
    'SELECT staff, action, arguments, result FROM audit_log WHERE action = $1 ORDER BY id',
    [action],
  );
}

/** The first error's message, and its code. */
export function refusal(answer: ExplorerAnswer): { message: string | undefined; code: string | undefined } {
  const [error] = answer.body.errors ?? [];
  return { message: error?.message, code: error?.extensions?.code };
}
