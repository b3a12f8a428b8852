/**
 * What the service says of a request whose raw body is past RAW_BODY_RETENTION_DAYS (issue 31): the
 * request still lists, but nothing that needs its body (a sync, a retry, a forwarding replay, the
 * explorer's parse) can use it.
 */
export const BODY_GONE = 'the raw body of this request is past RAW_BODY_RETENTION_DAYS and was deleted';

/** The 409 message of a retry or replay that would need a body past its retention. */
export function bodyGoneConflict(what: 'sync' | 'delivery'): string {
  return `The ${what} cannot be ${what === 'sync' ? 'retried' : 'replayed'}: ${BODY_GONE}`;
}
