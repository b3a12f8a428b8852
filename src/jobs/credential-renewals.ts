import { randomUUID } from 'node:crypto';
import type pg from 'pg';
import { CrmError } from '../connectors/crm/index.js';
import { query, sql } from '../db/sql.js';
import { openSecret, sealSecret } from '../domain/secrets.js';

/**
 * How long a renewal may hold a connection's lease. The token call ends well within it (its deadline and
 * retries are the session's, under half a minute); past it, a renewer that died is taken over.
 */
const LEASE_MS = 120_000;
/** How often a run waiting for another process's renewal looks whether it ended. */
const POLL_MS = 200;
/** The longest a run waits for another process's renewal in its job; past it, the job waits in the queue. */
const MAX_WAIT_IN_JOB_MS = 5_000;

/**
 * Renews connections' OAuth credentials once per connection, however many runs in however many
 * processes find them expired (a refresh-token rotation voids the old refresh token, so a second
 * exchange with it would fail), without a lock or a transaction held while the CRM's token endpoint
 * answers: the renewer takes a lease on the connection row (`credentials_renewal_holder` and `_until`,
 * one statement), calls the CRM with no transaction open, then stores the sealed credentials and ends
 * the lease in one statement that checks it still holds it. Runs of this process wait their turn here;
 * runs of other processes wait for the lease to end and read what it stored.
 */
export class CredentialRenewals {
  /** The last renewal queued per connection in this process. */
  private readonly turns = new Map<number, Promise<void>>();
  /** Until when another process's renewal of a connection is known to be running: the runs in line do not wait for it again. */
  private readonly busyUntil = new Map<number, number>();

  constructor(
    private readonly pool: pg.Pool,
    private readonly encryptionKey: Buffer,
  ) {}

  /**
   * The connection's credentials after a renewal: those stored now when their access token is no longer
   * `used`'s (another run renewed them, or the customer reconnected), else the ones `exchange` gets,
   * sealed and stored before this resolves.
   * @throws CrmError `auth` when the connection holds no readable credentials; `unavailable` (throttled:
   * not a failure of the run) when another process's renewal has not ended within a few seconds.
   */
  async renew(connectionId: number, used: { accessToken: string }, exchange: () => Promise<unknown>): Promise<unknown> {
    // One at a time per connection in this process: the others find the renewed credentials when their turn comes.
    const previous = this.turns.get(connectionId) ?? Promise.resolve();
    let result: unknown;
    const turn = previous.then(async () => {
      result = await this.renewUnderLease(connectionId, used, exchange);
    });
    const settled = turn.then(
      () => {},
      () => {},
    );
    this.turns.set(connectionId, settled);
    try {
      await turn;
      return result;
    } finally {
      if (this.turns.get(connectionId) === settled) this.turns.delete(connectionId);
    }
  }

  private async renewUnderLease(connectionId: number, used: { accessToken: string }, exchange: () => Promise<unknown>): Promise<unknown> {
    const holder = randomUUID();
    const started = Date.now();
    for (;;) {
      const lease = await this.claim(connectionId, holder);
      if (lease.claimed) {
        this.busyUntil.delete(connectionId);
        let stored = false;
        try {
          const current = this.open(lease.sealed);
          if (current.accessToken !== used.accessToken) return current;
          const next = await exchange();
          stored = await this.store(connectionId, holder, lease.sealed!, sealSecret(this.encryptionKey, JSON.stringify(next)));
          if (stored) return next;
          // The customer reconnected while the token endpoint answered: their credentials win. (Else the
          // lease was lost past LEASE_MS: the tokens in hand are valid for this run all the same.)
          const now = await this.claim(connectionId, randomUUID(), { peek: true });
          return now.sealed !== null && now.sealed !== lease.sealed ? this.open(now.sealed) : next;
        } finally {
          if (!stored) await this.release(connectionId, holder);
        }
      }
      // Another process renews: what it stored is the answer, once its lease has ended.
      const current = this.open(lease.sealed);
      if (current.accessToken !== used.accessToken) return current;
      if (Date.now() - started + POLL_MS > MAX_WAIT_IN_JOB_MS || (this.busyUntil.get(connectionId) ?? 0) > Date.now()) {
        const retryAfterMs = Math.max(1_000, Math.min(lease.leaseLeftMs, 30_000));
        // The next runs of this process in line for the connection do not each wait again.
        this.busyUntil.set(connectionId, Date.now() + retryAfterMs);
        throw new CrmError('unavailable', "Another process is renewing the connection's CRM credentials", { retryAfterMs, throttled: true });
      }
      await new Promise((resolve) => setTimeout(resolve, POLL_MS));
    }
  }

  /** Takes the lease when it is free or expired (one statement; `peek`: never); either way, the credentials stored now. */
  private async claim(
    connectionId: number,
    holder: string,
    options: { peek?: boolean } = {},
  ): Promise<{ claimed: boolean; sealed: string | null; leaseLeftMs: number }> {
    const { rows } = await query<{ claimed: boolean; sealed: string | null; lease_left_ms: number }>(
      this.pool,
      sql`WITH claimed AS (
            UPDATE connections SET credentials_renewal_holder = ${holder},
                   credentials_renewal_until = clock_timestamp() + ${LEASE_MS}::int * interval '1 millisecond'
             WHERE id = ${connectionId} AND NOT ${options.peek === true}::boolean
               AND (credentials_renewal_until IS NULL OR credentials_renewal_until <= clock_timestamp())
            RETURNING credentials_encrypted
          )
          -- The claimed row's own credentials: the statement's snapshot may predate a renewal that just ended.
          SELECT EXISTS (SELECT 1 FROM claimed) AS claimed,
                 CASE WHEN EXISTS (SELECT 1 FROM claimed) THEN (SELECT credentials_encrypted FROM claimed) ELSE c.credentials_encrypted END AS sealed,
                 GREATEST(0, extract(epoch FROM c.credentials_renewal_until - clock_timestamp()) * 1000)::float8 AS lease_left_ms
            FROM connections c WHERE c.id = ${connectionId}`,
    );
    const row = rows[0];
    return { claimed: row?.claimed ?? false, sealed: row?.sealed ?? null, leaseLeftMs: row?.lease_left_ms ?? 0 };
  }

  /**
   * Stores the renewed credentials and ends the lease, if this renewal still holds it and the credentials
   * are still the ones it renewed (a customer who reconnected meanwhile keeps theirs).
   */
  private async store(connectionId: number, holder: string, renewed: string, sealed: string): Promise<boolean> {
    const { rowCount } = await query(
      this.pool,
      sql`UPDATE connections SET credentials_encrypted = ${sealed}, credentials_renewal_holder = NULL, credentials_renewal_until = NULL, updated_at = now()
           WHERE id = ${connectionId} AND credentials_renewal_holder = ${holder} AND credentials_encrypted = ${renewed}`,
    );
    return rowCount === 1;
  }

  private async release(connectionId: number, holder: string): Promise<void> {
    await query(
      this.pool,
      sql`UPDATE connections SET credentials_renewal_holder = NULL, credentials_renewal_until = NULL
           WHERE id = ${connectionId} AND credentials_renewal_holder = ${holder}`,
    );
  }

  private open(sealed: string | null): { accessToken?: unknown } {
    if (sealed === null) throw new CrmError('auth', 'The connection holds no CRM credentials: reconnect the CRM');
    try {
      return JSON.parse(openSecret(this.encryptionKey, sealed)) as { accessToken?: unknown };
    } catch {
      throw new CrmError('auth', 'The stored CRM credentials cannot be read: reconnect the CRM');
    }
  }
}
