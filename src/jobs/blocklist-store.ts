import type pg from 'pg';
import { query, sql, type Sql } from '../db/sql.js';
import { withTransaction } from '../db/transaction.js';
import { afterError, afterFetch, afterPush, roundStatus, type BlocklistStatus, type BlockType, type RoundKind } from '../domain/blocklist.js';

/** A block list as its jobs need it: its state, its CRM connection, and where it is pushed. */
export interface BlocklistRow {
  id: number;
  status: BlocklistStatus;
  isEnabled: boolean;
  hasCrmSource: boolean;
  blockType: BlockType;
  crmSource: unknown;
  platform: string;
  clientId: string | null;
  sequencerCredentialsEncrypted: string | null;
  lastFetchedAt: Date | null;
  connectionId: number;
  /** The CRM account (portal, org) the connection is connected to. */
  organizationId: string | null;
  crm: string;
  credentialsEncrypted: string | null;
  crmRateLimit: unknown;
  /** The account may use block lists, and the connection is not deleted. */
  allowed: boolean;
}

/** One entry still to push. */
export interface PendingEntry {
  id: string;
  value: string;
}

/**
 * What a block list job (fetch or push) records when it failed on our side for a reason no retry
 * changes (`recordUnrecoverable`, src/jobs/task.ts): the failure as the list's last error, the list back
 * where it rests; the next round runs as usual.
 */
export function recordListFailure(env: { pool: pg.Pool }): (job: { blocklistId: number }, message: string) => Promise<void> {
  const store = new BlocklistStore(env.pool);
  return (job, message) => store.failRound(job.blocklistId, `Failed on our side and not retried automatically: ${message}`);
}

/**
 * The block list jobs' statements (src/jobs/blocklists__fetch.ts, blocklists__push.ts). Status moves
 * follow src/domain/blocklist.ts, each under the list row's lock so a pause or a resync in between is
 * seen: a paused list is never pushed, and a round never overwrites a pause.
 */
export class BlocklistStore {
  constructor(private readonly pool: pg.Pool) {}

  /** The list, unlocked (null: gone). */
  async get(id: number): Promise<BlocklistRow | null> {
    const { rows } = await query<BlocklistRow>(this.pool, selectList(id, sql``));
    return rows[0] ?? null;
  }

  /**
   * Starts a round: the list runs under the round's status, attempted now. Null when it may not run (gone,
   * paused, no CRM source, or its account lost block lists): nothing is changed then.
   */
  async startRound(id: number, kind: RoundKind): Promise<BlocklistRow | null> {
    return withTransaction(this.pool, async (client) => {
      const list = (await query<BlocklistRow>(client, selectList(id, sql`FOR UPDATE OF b`))).rows[0];
      if (!list || !list.isEnabled || !list.hasCrmSource || !list.allowed) return null;
      const status = roundStatus(kind);
      await query(client, sql`UPDATE blocklists SET status = ${status}::blocklist_status, last_attempted_at = now(), updated_at = now() WHERE id = ${id}`);
      return { ...list, status };
    });
  }

  /**
   * Stores what a round fetched, in one transaction: the new values as pending entries (a value already
   * present keeps its row, so one already pushed is not pushed again); a full round also drops the local
   * entries the CRM list no longer holds (never the sequencer's). The list moves on (afterFetch) with
   * `lastFetchedAt` now, and `then` runs in the same transaction when it is still enabled (queues the push).
   */
  async storeFetched(id: number, kind: RoundKind, values: readonly string[], then: (client: pg.PoolClient) => Promise<void>): Promise<void> {
    await withTransaction(this.pool, async (client) => {
      const list = await lockState(client, id);
      if (!list) return;
      const fetched = sql`unnest(${values}::text[]) AS v(value)`;
      if (kind === 'full') {
        await query(
          client,
          sql`DELETE FROM blocklist_entries e WHERE e.blocklist_id = ${id} AND NOT EXISTS (SELECT 1 FROM ${fetched} WHERE v.value = e.value)`,
        );
      }
      await query(
        client,
        sql`INSERT INTO blocklist_entries (blocklist_id, value) SELECT ${id}, value FROM ${fetched} ON CONFLICT (blocklist_id, value) DO NOTHING`,
      );
      await query(
        client,
        sql`UPDATE blocklists SET status = ${afterFetch(list)}::blocklist_status, last_fetched_at = now(), updated_at = now(),
                   synced_count = (SELECT count(*) FROM blocklist_entries WHERE blocklist_id = ${id} AND pushed_at IS NOT NULL),
                   pending_count = (SELECT count(*) FROM blocklist_entries WHERE blocklist_id = ${id} AND pushed_at IS NULL AND push_error IS NULL)
             WHERE id = ${id}`,
      );
      if (list.isEnabled) await then(client);
    });
  }

  /** A round failed: the error recorded, the list back where it rests (afterError); the next round or a resync retries. */
  async failRound(id: number, message: string): Promise<void> {
    await withTransaction(this.pool, async (client) => {
      const list = await lockState(client, id);
      if (!list) return;
      await query(
        client,
        sql`UPDATE blocklists SET status = ${afterError(list)}::blocklist_status, last_error = ${message}, last_attempted_at = now(), updated_at = now()
             WHERE id = ${id}`,
      );
    });
  }

  /** The next entries to push, oldest first: not pushed, not refused (in id order from the index, no sort). */
  async pending(id: number, limit: number): Promise<PendingEntry[]> {
    const { rows } = await query<PendingEntry>(
      this.pool,
      sql`SELECT e.id::text AS id, e.value FROM blocklist_entries e
           WHERE e.blocklist_id = ${id} AND e.pushed_at IS NULL AND e.push_error IS NULL ORDER BY e.id LIMIT ${limit}`,
    );
    return rows;
  }

  /** The sequencer has these entries of list `id`: marked pushed, and the list's counts moved with them. */
  async markPushed(id: number, entryIds: readonly string[]): Promise<void> {
    await query(
      this.pool,
      sql`WITH done AS (UPDATE blocklist_entries SET pushed_at = now()
                         WHERE blocklist_id = ${id} AND id = ANY(${entryIds}::bigint[]) AND pushed_at IS NULL AND push_error IS NULL RETURNING 1)
          UPDATE blocklists SET synced_count = synced_count + (SELECT count(*) FROM done), pending_count = pending_count - (SELECT count(*) FROM done)
           WHERE id = ${id}`,
    );
  }

  /** The sequencer refused this entry's value: recorded on it, not pushed again, no longer pending. */
  async markRefused(id: number, entryId: string, message: string): Promise<void> {
    await query(
      this.pool,
      sql`WITH refused AS (UPDATE blocklist_entries SET push_error = ${message}
                            WHERE blocklist_id = ${id} AND id = ${entryId}::bigint AND pushed_at IS NULL AND push_error IS NULL RETURNING 1)
          UPDATE blocklists SET pending_count = pending_count - (SELECT count(*) FROM refused) WHERE id = ${id}`,
    );
  }

  /** Nothing left to push: SYNCED (a paused list keeps its status), its error cleared. */
  async finishPush(id: number): Promise<void> {
    await withTransaction(this.pool, async (client) => {
      const list = await lockState(client, id);
      if (!list || !list.isEnabled) return;
      await query(client, sql`UPDATE blocklists SET status = ${afterPush(list)}::blocklist_status, last_error = NULL, updated_at = now() WHERE id = ${id}`);
    });
  }
}

/** The list's state, its row locked for the rest of the transaction (undefined: gone). */
async function lockState(client: pg.PoolClient, id: number): Promise<{ status: BlocklistStatus; isEnabled: boolean; lastFetchedAt: Date | null } | undefined> {
  const { rows } = await query<{ status: BlocklistStatus; isEnabled: boolean; lastFetchedAt: Date | null }>(
    client,
    sql`SELECT status, is_enabled AS "isEnabled", last_fetched_at AS "lastFetchedAt" FROM blocklists WHERE id = ${id} FOR UPDATE`,
  );
  return rows[0];
}

function selectList(id: number, lock: Sql): Sql {
  return sql`
  SELECT b.id, b.status, b.is_enabled AS "isEnabled", b.has_crm_source AS "hasCrmSource", b.block_type AS "blockType", b.crm_source AS "crmSource",
         b.platform, b.client_id AS "clientId", b.sequencer_credentials_encrypted AS "sequencerCredentialsEncrypted",
         b.last_fetched_at AS "lastFetchedAt", c.id AS "connectionId", c.crm, c.credentials_encrypted AS "credentialsEncrypted",
         c.crm_rate_limit AS "crmRateLimit", c.organization_id AS "organizationId", (a.can_block_list AND c.deleted_at IS NULL) AS allowed
    FROM blocklists b JOIN connections c ON c.id = b.connection_id JOIN accounts a ON a.id = c.account_id
   WHERE b.id = ${id}
   ${lock}`;
}
