import type pg from 'pg';
import { query, rows, sql } from '../db/sql.js';
import { acceptRowsSql } from '../ingress/accept.js';

/** A backfilled source as a round starts it. */
export interface BackfillSource {
  sourceId: number;
  platform: string;
  /** The sealed sequencer account; null when the source holds none (nothing to backfill). */
  credentialsEncrypted: string | null;
  paused: boolean;
  /** Whether the source can still take requests (its connection not deleted). */
  live: boolean;
}

/** One message a round found, as the request it becomes. */
export interface FoundMessage {
  /** Its key (src/connectors/sequencers/message-key.ts): a message already keyed for the source is not new. */
  key: string;
  /** The webhook-shaped body, as JSON text. */
  body: string;
}

/** How much a round may look back, and what it starts from. */
export interface RoundStart {
  /** The database's clock when the round started. */
  startedAt: Date;
  /** What the round asks for: since the last finished round (less its overlap), never before the lookback. */
  since: Date;
}

/**
 * The backfill's rows (src/jobs/backfills__run.ts): each source's state in `source_backfills`, the
 * leads it has seen (`source_leads`, written by the drain), and the requests a round creates. Every
 * page of found messages becomes requests in one statement that claims their keys first, so a message
 * found twice, or found again after a crash, is never a second request.
 */
export class BackfillStore {
  constructor(private readonly pool: pg.Pool) {}

  async source(sourceId: number): Promise<BackfillSource | undefined> {
    const { rows: found } = await query<BackfillSource>(
      this.pool,
      sql`SELECT s.id AS "sourceId", s.platform, s.sequencer_credentials_encrypted AS "credentialsEncrypted",
                 COALESCE(b.paused, false) AS paused, c.deleted_at IS NULL AS live
            FROM sources s JOIN connections c ON c.id = s.connection_id LEFT JOIN source_backfills b ON b.source_id = s.id
           WHERE s.id = ${sourceId}`,
    );
    return found[0];
  }

  /** Marks the round started; answers from when it asks (the last round's start less `overlapMs`, within `lookbackDays`). */
  async begin(sourceId: number, lookbackDays: number, overlapMs: number): Promise<RoundStart> {
    const { rows: started } = await query<RoundStart>(
      this.pool,
      sql`INSERT INTO source_backfills AS b (source_id, last_round_started_at, updated_at) VALUES (${sourceId}, now(), now())
          ON CONFLICT (source_id) DO UPDATE SET last_round_started_at = now(), updated_at = now()
          RETURNING now() AS "startedAt",
                    GREATEST(COALESCE(b.since - ${overlapMs}::int * interval '1 millisecond', '-infinity'), now() - ${lookbackDays}::int * interval '1 day') AS since`,
    );
    return started[0]!;
  }

  /** The leads the source has seen within the lookback, most recently seen first. */
  async leads(sourceId: number, lookbackDays: number): Promise<Array<{ campaignId: string | null; leadId: string | null; contact: string }>> {
    const { rows: leads } = await query<{ campaignId: string | null; leadId: string | null; contact: string }>(
      this.pool,
      sql`SELECT campaign_id AS "campaignId", lead_id AS "leadId", contact FROM source_leads
           WHERE source_id = ${sourceId} AND last_seen_at > now() - ${lookbackDays}::int * interval '1 day'
           ORDER BY last_seen_at DESC, lead_key`,
    );
    return leads;
  }

  /**
   * One page of a round, in one statement: claims the keys of the messages no request of the source holds
   * yet (while its connection lives), creates a fetched request for each (accepted as the ingress accepts
   * one: waiting sync, forwarding, relay), and counts the page in the source's progress. Answers how
   * many requests it created.
   */
  async record(sourceId: number, messages: readonly FoundMessage[], seen: number): Promise<number> {
    const input = rows(
      'i',
      { idx: 'int', key: 'text', body: 'text' },
      messages.map((m, idx) => ({ idx, ...m })),
    );
    const { rows: created } = await query<{ id: string }>(
      this.pool,
      acceptRowsSql({
        fetched: true,
        before: sql`
          input AS (SELECT * FROM ${input}),
          live AS (SELECT s.id, s.connection_id, c.account_id, s.ingress_code, s.reply_relay_id
                     FROM sources s JOIN connections c ON c.id = s.connection_id AND c.deleted_at IS NULL WHERE s.id = ${sourceId}),
          keyed AS (
            INSERT INTO message_keys (source_id, key, request_id, fetched, created_at)
            SELECT ${sourceId}, key, nextval('requests_id_seq'), true, now() FROM input WHERE EXISTS (SELECT 1 FROM live) ORDER BY idx
            ON CONFLICT (source_id, key) DO NOTHING
            RETURNING key, request_id
          ),
          progress AS (
            UPDATE source_backfills SET messages_seen = messages_seen + ${seen}, events_synthesised = events_synthesised + (SELECT count(*) FROM keyed), updated_at = now()
             WHERE source_id = ${sourceId}
          )`,
        matched: sql`
          SELECT i.idx, k.request_id AS id, l.id AS source_id, l.connection_id, l.account_id, l.ingress_code, l.reply_relay_id, i.body, 'application/json' AS content_type
            FROM keyed k JOIN input i USING (key) CROSS JOIN live l`,
      }),
    );
    return created.length;
  }

  /** Whether staff paused the source's backfill (a round in flight checks between pages). */
  async paused(sourceId: number): Promise<boolean> {
    const { rows: found } = await query<{ paused: boolean }>(this.pool, sql`SELECT paused FROM source_backfills WHERE source_id = ${sourceId}`);
    return found[0]?.paused ?? false;
  }

  /** A round that read everything: the next asks from this round's start. */
  async finish(sourceId: number, startedAt: Date): Promise<void> {
    await query(
      this.pool,
      sql`UPDATE source_backfills SET since = ${startedAt}, last_round_at = now(), rounds = rounds + 1, failures = 0, last_error = NULL, updated_at = now()
           WHERE source_id = ${sourceId}`,
    );
  }

  /** A round that failed: why (never a secret), counted; the next asks from where this one did. */
  async fail(sourceId: number, message: string): Promise<void> {
    await query(
      this.pool,
      sql`UPDATE source_backfills SET last_round_at = now(), rounds = rounds + 1, failures = failures + 1, last_error = ${message}, updated_at = now()
           WHERE source_id = ${sourceId}`,
    );
  }
}
