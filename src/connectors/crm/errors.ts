/** Why a CRM write failed, in the terms the job layer acts on. */
export type CrmErrorKind = 'auth' | 'rate_limited' | 'unavailable' | 'rejected';

/**
 * Why a write failed. `rate_limited` and `unavailable` are worth rescheduling (after `retryAfterMs`
 * when set); `auth` needs the customer to reconnect; `rejected` will fail the same way again.
 * Messages never carry credentials; `payload` is the CRM's error body for the sync row.
 */
export class CrmError extends Error {
  readonly kind: CrmErrorKind;
  readonly httpStatus?: number;
  readonly retryAfterMs?: number;
  readonly payload?: unknown;
  /** No request was sent: the connection's budget is used up or paused (waiting is not a failure of the sync). */
  readonly throttled: boolean;

  constructor(kind: CrmErrorKind, message: string, details: { httpStatus?: number; retryAfterMs?: number; payload?: unknown; throttled?: boolean } = {}) {
    super(message);
    this.name = 'CrmError';
    this.kind = kind;
    if (details.httpStatus !== undefined) this.httpStatus = details.httpStatus;
    if (details.retryAfterMs !== undefined) this.retryAfterMs = details.retryAfterMs;
    if (details.payload !== undefined) this.payload = details.payload;
    this.throttled = details.throttled ?? false;
  }

  /**
   * Whether the CRM surely did not carry the request out: it was never sent (throttled), or the CRM
   * refused it with 429 before doing anything (a rate limiter answers ahead of the write).
   */
  get unsent(): boolean {
    return this.throttled || this.httpStatus === 429;
  }

  /** Whether the job layer should try again later. */
  get retryable(): boolean {
    return this.kind === 'rate_limited' || this.kind === 'unavailable';
  }
}
