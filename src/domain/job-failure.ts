/**
 * Whether a job's failure is one a later run can get past (issue 20): the database or the network
 * going away, a deadlock, a serialization conflict, PostgreSQL short of resources or shutting down.
 * Anything else (a value PostgreSQL refuses, a parser exception, a programming error) fails the same
 * way every time: the job records an outcome after {@link UNRECOVERABLE_AFTER} runs instead of spending
 * the queue's attempts in silence. Pure.
 */

/** Runs of a job that failed for a reason no retry changes, before it records that as its outcome. */
export const UNRECOVERABLE_AFTER = 3;

// SQLSTATE classes: 08 connection, 40 rollback (deadlock, serialization), 53 insufficient resources, 57 operator intervention;
// but 08P01, a protocol violation (a statement over the protocol's limits, such as 65,535 parameters), fails the same way every time.
const TRANSIENT_SQLSTATE = /^(08(?!P01)|40|53|57)/;
const TRANSIENT_NODE = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH']);

export function isTransientFailure(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  if (typeof code !== 'string')
    return /Connection terminated|timeout exceeded when trying to connect|Client has encountered a connection error/i.test(messageOf(error));
  return TRANSIENT_SQLSTATE.test(code) || TRANSIENT_NODE.has(code);
}

/** What a recorded outcome says of a failure: its message, one line, at most 300 characters. */
export function failureMessage(error: unknown): string {
  const text = messageOf(error).replace(/\s+/g, ' ').trim();
  return text.length > 300 ? `${text.slice(0, 300)}…` : text || 'unknown error';
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
