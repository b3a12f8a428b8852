/**
 * `npm run admin -- generate-history`: bulk request / sync / delivery history for existing accounts, for
 * benchmarks and demos (fixtures carry hand-written history; this makes millions of rows).
 *
 * Set-based: each chunk is one `INSERT ... SELECT generate_series` statement whose data-modifying CTEs
 * write the requests, their syncs and their deliveries together (ids drawn from the requests sequence up
 * front, so every sync and delivery points at a request of the same statement). Chunks walk the window
 * from oldest to newest (with `jobs`, several at a time), rows sorted by time inside a chunk, so ids grow
 * with `created_at` as with live traffic; with several accounts, each chunk mixes all of them, so their
 * rows interleave on disk as a shared production table's do.
 */
import pg from 'pg';
import { DEFAULT_RETENTION } from '../config.js';
import { ensureHistoryPartitions } from '../db/history/maintain.js';
import { query, sql, type Sql } from '../db/sql.js';

export interface GenerateHistoryOptions {
  /** Accounts to fill; each gets the same volume. */
  accountIds: number[];
  /** Requests per account. */
  requests: number;
  /** Share of requests (0..1) that got a sync; a request has at most one (syncs.request_id is unique). */
  syncRatio: number;
  /** Forwarding deliveries per account, spread evenly over the requests. */
  deliveries: number;
  /** `created_at` is uniform over the last `days` days (millisecond precision). */
  days: number;
  /** Share of syncs (and of deliveries) that failed. */
  errorRate: number;
  /** Share of syncs written with a partial problem. */
  warningRate: number;
  /** Share of syncs that never recorded a result (status NULL). */
  nullRate: number;
  /** Requests per INSERT statement, all accounts together; progress is reported once per chunk. */
  chunkSize: number;
  /** Connections writing chunks in parallel (1 to 8). */
  jobs: number;
  /** setseed() value in [-1, 1], for repeatable data (ids still depend on what the tables hold). */
  seed?: number | undefined;
  /** VACUUM (ANALYZE) the tables at the end (sets the visibility map, so index-only scans work); else ANALYZE only. */
  vacuum: boolean;
  /** End of the window; default now. */
  now?: Date;
  /** Progress lines (default: standard error). */
  progress?: (line: string) => void;
}

export const HISTORY_DEFAULTS = {
  requests: 100_000,
  syncRatio: 1,
  deliveries: 10_000,
  days: 60,
  errorRate: 0.05,
  warningRate: 0.03,
  nullRate: 0.01,
  chunkSize: 50_000,
  jobs: 1,
  vacuum: true,
} as const;

export interface GenerateHistorySummary {
  accounts: { id: number; sources: number; sourcesWithDestinations: number }[];
  window: { from: string; to: string };
  /** Rows written, all accounts together. */
  inserted: { requests: number; syncs: number; deliveries: number };
  syncsByStatus: { success: number; warning: number; error: number; null: number };
  deliveriesByStatus: { success: number; error: number };
  chunks: number;
  elapsedMs: { insert: number; vacuum: number; total: number };
  /** Requests + syncs + deliveries written per second of insert time. */
  rowsPerSecond: number;
}

/**
 * Generates the history; the tables must exist (migrations applied). Uses `jobs` connections of its own,
 * each writing whole chunks (one PostgreSQL backend per connection, so jobs up to the core count help).
 */
export async function generateHistory(databaseUrl: string, options: GenerateHistoryOptions): Promise<GenerateHistorySummary> {
  validate(options);
  const progress = options.progress ?? ((line: string) => process.stderr.write(`${line}\n`));
  const started = performance.now();
  const clients: pg.Client[] = [];
  try {
    for (let j = 0; j < options.jobs; j++) {
      const client = new pg.Client({ connectionString: databaseUrl });
      clients.push(client);
      await client.connect();
    }
    const end = options.now ?? new Date();
    const spanMs = options.days * 86_400_000;
    const start = new Date(end.getTime() - spanMs);
    // History older than the partitions the service keeps (its retention) gets partitions of its own.
    await ensurePartitionsFrom(databaseUrl, start);
    const sessions = await Promise.all(clients.map((client) => openSession(client, options)));
    const { accounts, sequence, skipFkTriggers } = sessions[0] as Session;
    const first = clients[0] as pg.Client;

    const perChunk = Math.max(1, Math.floor(options.chunkSize / options.accountIds.length));
    const chunks = Math.ceil(options.requests / perChunk);
    const total = { requests: 0, syncs: 0, deliveries: 0 };
    const syncsByStatus = { success: 0, warning: 0, error: 0, null: 0 };
    const deliveriesByStatus = { success: 0, error: 0 };
    const contacts = Math.max(1_000, Math.ceil(options.requests / 8));
    progress(
      `generate-history: ${fmt(options.requests)} requests per account for ${accounts.length} account(s) in ${chunks} chunk(s), ` +
        `${options.jobs} job(s); ` +
        (skipFkTriggers ? 'foreign keys checked by locking the referenced rows per chunk' : 'foreign keys checked per row (not a superuser)'),
    );

    let next = 0;
    let done = 0;
    let failed = false;
    const work = async (client: pg.Client) => {
      for (let chunk = next++; chunk < chunks && !failed; chunk = next++) {
        const lo = chunk * perChunk + 1;
        const hi = Math.min(options.requests, (chunk + 1) * perChunk);
        // This chunk's share of the window: ordinals lo..hi of `requests` cover the same share of the time.
        const sliceStart = start.getTime() + ((lo - 1) / options.requests) * spanMs;
        const sliceMs = ((hi - lo + 1) / options.requests) * spanMs;
        await query(client, sql`BEGIN`);
        try {
          // A seed per chunk keeps the data repeatable whichever job writes the chunk.
          if (options.seed !== undefined) await query(client, sql`SELECT setseed(${chunkSeed(options.seed, chunk)})`);
          if (skipFkTriggers) await lockReferencedRows(client);
          const { rows } = await query<ChunkResult>(
            client,
            chunkStatement({
              lo,
              hi,
              requests: options.requests,
              deliveries: options.deliveries,
              sliceStart: new Date(sliceStart),
              sliceMs,
              end,
              syncRatio: options.syncRatio,
              nullRate: options.nullRate,
              errorRate: options.errorRate,
              warningRate: options.warningRate,
              contacts,
              sequence,
            }),
          );
          await query(client, sql`COMMIT`);
          add(rows[0]);
        } catch (error) {
          failed = true;
          await query(client, sql`ROLLBACK`).catch(() => {});
          throw error;
        }
        done += hi - lo + 1;
        const seconds = (performance.now() - started) / 1000;
        const share = done / options.requests;
        progress(
          `generate-history: ${(share * 100).toFixed(0).padStart(3)}%  requests ${fmt(total.requests)}, syncs ${fmt(total.syncs)}, ` +
            `deliveries ${fmt(total.deliveries)}  ${seconds.toFixed(1)} s, ` +
            `${fmt(Math.round((total.requests + total.syncs + total.deliveries) / seconds))} rows/s, ETA ${((seconds / share) * (1 - share)).toFixed(0)} s`,
        );
      }
    };
    const add = (row: ChunkResult | undefined) => {
      total.requests += Number(row?.requests ?? 0);
      for (const [status, n] of Object.entries(row?.syncs ?? {})) {
        syncsByStatus[status as keyof typeof syncsByStatus] += Number(n);
        total.syncs += Number(n);
      }
      for (const [status, n] of Object.entries(row?.deliveries ?? {})) {
        deliveriesByStatus[status as keyof typeof deliveriesByStatus] += Number(n);
        total.deliveries += Number(n);
      }
    };
    const outcomes = await Promise.allSettled(clients.map(work));
    const rejected = outcomes.find((o): o is PromiseRejectedResult => o.status === 'rejected');
    if (rejected) throw rejected.reason;
    const inserted = performance.now();
    if (skipFkTriggers) await query(first, sql`RESET session_replication_role`);

    // Sources show when they last received something (the account status derives from it).
    await query(
      first,
      sql`
      UPDATE sources s SET last_event_received_at = m.last
        FROM (SELECT g.source_id, (SELECT max(r.created_at) FROM requests r WHERE r.source_id = g.source_id) AS last FROM gh_sources g) m
       WHERE s.id = m.source_id AND m.last IS NOT NULL AND (s.last_event_received_at IS NULL OR s.last_event_received_at < m.last)`,
    );
    progress(`generate-history: ${options.vacuum ? 'VACUUM (ANALYZE)' : 'ANALYZE'} requests, syncs, deliveries ...`);
    await query(first, options.vacuum ? sql`VACUUM (ANALYZE) requests, syncs, deliveries` : sql`ANALYZE requests, syncs, deliveries`);
    const finished = performance.now();
    const insertMs = inserted - started;
    return {
      accounts,
      window: { from: start.toISOString(), to: end.toISOString() },
      inserted: total,
      syncsByStatus,
      deliveriesByStatus,
      chunks,
      elapsedMs: { insert: Math.round(insertMs), vacuum: Math.round(finished - inserted), total: Math.round(finished - started) },
      rowsPerSecond: Math.round((total.requests + total.syncs + total.deliveries) / (insertMs / 1000)),
    };
  } finally {
    await Promise.all(clients.map((client) => client.end().catch(() => {})));
  }
}

interface ChunkResult {
  requests: string;
  syncs: Record<string, number> | null;
  deliveries: Record<string, number> | null;
}

interface Session {
  accounts: GenerateHistorySummary['accounts'];
  sequence: string;
  skipFkTriggers: boolean;
}

/** Session settings and the sources temp tables, on one connection. */
async function openSession(client: pg.Client, options: GenerateHistoryOptions): Promise<Session> {
  // Generated rows are cheap to make again: no need to wait for each commit's WAL flush. JIT would
  // compile every chunk's plan anew for nothing.
  await query(client, sql`SET synchronous_commit = off; SET jit = off; SET work_mem = '64MB'`);
  const accounts = await prepareSources(client, options);
  const { rows } = await query<{ name: string | null }>(client, sql`SELECT pg_get_serial_sequence('requests', 'id') AS name`);
  const sequence = rows[0]?.name;
  if (!sequence) throw new Error('generate-history: requests.id has no sequence (are the migrations applied?)');
  // Every reference a generated row makes is to a row read above (accounts, connections, sources,
  // destinations) or written by the same statement (requests), and each chunk locks the rows it refers
  // to (FOR KEY SHARE) as a foreign-key check would; so, where the role may, the per-row foreign-key
  // triggers are skipped (they cost over half the time). A deletion racing a chunk waits for it and then
  // cascades as usual.
  const skipFkTriggers = await query(client, sql`SET session_replication_role = replica`).then(
    () => true,
    () => false,
  );
  return { accounts, sequence, skipFkTriggers };
}

/** A setseed() value in [-1, 1] for chunk `k`, derived from the run's seed. */
function chunkSeed(seed: number, k: number): number {
  const x = ((seed + 1) * 0.5 + k * 0.6180339887498949) % 1;
  return x * 2 - 1;
}

function validate(o: GenerateHistoryOptions): void {
  const problems: string[] = [];
  if (o.accountIds.length === 0 || o.accountIds.some((id) => !Number.isInteger(id) || id < 1)) problems.push('account: one or more positive account ids');
  if (new Set(o.accountIds).size !== o.accountIds.length) problems.push('account: the same account twice');
  if (!Number.isInteger(o.requests) || o.requests < 1) problems.push('requests: a positive whole number');
  if (!Number.isInteger(o.deliveries) || o.deliveries < 0) problems.push('deliveries: a whole number, 0 or more');
  if (!(o.days > 0) || o.days > 3650) problems.push('days: more than 0, at most 3650');
  if (!Number.isInteger(o.chunkSize) || o.chunkSize < 100 || o.chunkSize > 1_000_000) problems.push('chunk: a whole number from 100 to 1,000,000');
  for (const [name, value] of [
    ['sync-ratio', o.syncRatio],
    ['error-rate', o.errorRate],
    ['warning-rate', o.warningRate],
    ['null-rate', o.nullRate],
  ] as const) {
    if (!(value >= 0 && value <= 1)) problems.push(`${name}: a number from 0 to 1`);
  }
  if (o.errorRate + o.warningRate + o.nullRate > 1) problems.push('error-rate + warning-rate + null-rate must not exceed 1');
  if (!Number.isInteger(o.jobs) || o.jobs < 1 || o.jobs > 8) problems.push('jobs: a whole number from 1 to 8');
  if (o.seed !== undefined && !(o.seed >= -1 && o.seed <= 1)) problems.push('seed: a number from -1 to 1');
  if (problems.length > 0) throw new Error(`generate-history: ${problems.join('; ')}`);
}

/**
 * Session temp tables the chunk statement reads: every source of the accounts' live connections with
 * the destinations its deliveries may go to (its bindings, else its connection's destinations), and per
 * account the source count and which sources can take deliveries.
 */
async function prepareSources(client: pg.Client, o: GenerateHistoryOptions): Promise<GenerateHistorySummary['accounts']> {
  await query(client, sql`DROP TABLE IF EXISTS pg_temp.gh_sources, pg_temp.gh_accounts`);
  await query(
    client,
    sql`CREATE TEMP TABLE gh_sources AS
     SELECT a.ord::int AS ord, a.account_id,
            (row_number() OVER (PARTITION BY a.ord ORDER BY s.id) - 1)::int AS idx,
            s.id AS source_id, s.connection_id, s.platform, s.ingress_code,
            COALESCE(bound.ids, conn.ids) AS dest_ids, COALESCE(bound.urls, conn.urls) AS dest_urls
       FROM unnest(${o.accountIds}::int[]) WITH ORDINALITY AS a(account_id, ord)
       JOIN connections c ON c.account_id = a.account_id AND c.deleted_at IS NULL
       JOIN sources s ON s.connection_id = c.id
       LEFT JOIN LATERAL (
         SELECT array_agg(d.id ORDER BY d.id) AS ids, array_agg(d.url ORDER BY d.id) AS urls
           FROM destination_bindings b JOIN destinations d ON d.id = b.destination_id AND d.connection_id = s.connection_id
          WHERE b.source_id = s.id) bound ON true
       LEFT JOIN LATERAL (
         SELECT array_agg(d.id ORDER BY d.id) AS ids, array_agg(d.url ORDER BY d.id) AS urls
           FROM destinations d WHERE d.connection_id = s.connection_id) conn ON true`,
  );
  await query(
    client,
    sql`CREATE TEMP TABLE gh_accounts AS
     SELECT ord, account_id, count(*)::int AS nsrc,
            COALESCE(array_agg(idx ORDER BY idx) FILTER (WHERE dest_ids IS NOT NULL), '{}') AS dmap
       FROM gh_sources GROUP BY ord, account_id`,
  );
  await query(client, sql`ANALYZE gh_sources; ANALYZE gh_accounts`);
  const { rows } = await query<{ account_id: number; nsrc: number; ndest: number; exists: boolean }>(
    client,
    sql`SELECT a.account_id, COALESCE(g.nsrc, 0) AS nsrc, COALESCE(cardinality(g.dmap), 0) AS ndest,
            EXISTS (SELECT 1 FROM accounts x WHERE x.id = a.account_id) AS exists
       FROM unnest(${o.accountIds}::int[]) WITH ORDINALITY AS a(account_id, ord) LEFT JOIN gh_accounts g ON g.ord = a.ord
      ORDER BY a.ord`,
  );
  const problems: string[] = [];
  for (const row of rows) {
    if (!row.exists) problems.push(`account ${row.account_id} does not exist`);
    else if (row.nsrc === 0) problems.push(`account ${row.account_id} has no source on a live connection`);
    else if (o.deliveries > 0 && row.ndest === 0) problems.push(`account ${row.account_id} has no forwarding destination for deliveries (use --deliveries 0)`);
  }
  if (problems.length > 0) throw new Error(`generate-history: ${problems.join('; ')}`);
  return rows.map((r) => ({ id: r.account_id, sources: r.nsrc, sourcesWithDestinations: r.ndest }));
}

/**
 * Takes the locks the skipped foreign-key triggers would have taken, for this chunk's transaction, and
 * fails if any referenced row went away since the sources were read.
 */
async function lockReferencedRows(client: pg.Client): Promise<void> {
  const { rows } = await query<{ missing: boolean }>(
    client,
    sql`
    WITH want AS (SELECT DISTINCT account_id, connection_id, source_id, dest_ids FROM gh_sources),
    accounts_locked AS (SELECT id FROM accounts WHERE id IN (SELECT account_id FROM want) FOR KEY SHARE),
    connections_locked AS (SELECT id FROM connections WHERE id IN (SELECT connection_id FROM want) AND deleted_at IS NULL FOR KEY SHARE),
    sources_locked AS (SELECT id FROM sources WHERE id IN (SELECT source_id FROM want) FOR KEY SHARE),
    destinations_locked AS (SELECT id FROM destinations WHERE id IN (SELECT unnest(dest_ids) FROM want) FOR KEY SHARE)
    SELECT (SELECT count(*) FROM accounts_locked) < (SELECT count(DISTINCT account_id) FROM want)
        OR (SELECT count(*) FROM connections_locked) < (SELECT count(DISTINCT connection_id) FROM want)
        OR (SELECT count(*) FROM sources_locked) < (SELECT count(*) FROM want)
        OR (SELECT count(*) FROM destinations_locked) < (SELECT count(DISTINCT d) FROM want, unnest(dest_ids) AS d) AS missing`,
  );
  if (rows[0]?.missing) {
    throw new Error('generate-history: a source, connection, destination or account was deleted meanwhile; the chunks written so far stay');
  }
}

/** How each platform names our canonical event types in its own payloads (for realistic request bodies). */
const BODY_EVENT_NAMES: Record<string, Record<string, string>> = {
  instantly: {
    EMAIL_SENT: 'email_sent',
    EMAIL_OPEN: 'email_opened',
    EMAIL_LINK_CLICK: 'link_clicked',
    EMAIL_REPLY: 'reply_received',
    EMAIL_BOUNCE: 'email_bounced',
    LEAD_UNSUBSCRIBED: 'lead_unsubscribed',
  },
  lemlist: {
    EMAIL_SENT: 'emailsSent',
    EMAIL_OPEN: 'emailsOpened',
    EMAIL_LINK_CLICK: 'emailsClicked',
    EMAIL_REPLY: 'emailsReplied',
    EMAIL_BOUNCE: 'emailsBounced',
    LEAD_UNSUBSCRIBED: 'emailsUnsubscribed',
  },
  heyreach: {
    CONNECTION_REQUEST_SENT: 'connection_request_sent',
    CONNECTION_REQUEST_ACCEPTED: 'connection_request_accepted',
    MESSAGE_SENT: 'message_sent',
    MESSAGE_REPLY_RECEIVED: 'message_reply_received',
  },
};

/** 20 slots each, repeated by weight: sends outnumber opens, opens outnumber replies. */
const EMAIL_EVENTS = [
  ...Array<string>(9).fill('EMAIL_SENT'),
  ...Array<string>(5).fill('EMAIL_OPEN'),
  'EMAIL_LINK_CLICK',
  'EMAIL_LINK_CLICK',
  'EMAIL_REPLY',
  'EMAIL_REPLY',
  'EMAIL_BOUNCE',
  'LEAD_UNSUBSCRIBED',
];
const LINKEDIN_EVENTS = [
  ...Array<string>(6).fill('CONNECTION_REQUEST_SENT'),
  ...Array<string>(3).fill('CONNECTION_REQUEST_ACCEPTED'),
  ...Array<string>(8).fill('MESSAGE_SENT'),
  ...Array<string>(3).fill('MESSAGE_REPLY_RECEIVED'),
];
/** Platforms whose leads are LinkedIn profiles rather than email addresses. */
const LINKEDIN_PLATFORMS = ['heyreach', 'expandi', 'dripify', 'waalaxy', 'linkedhelper'];
/** A failed sync's error (JSON text), as the CRMs word theirs. */
const SYNC_ERRORS = [
  '{"status": 429, "category": "RATE_LIMITS", "message": "You have reached your secondly limit."}',
  '{"status": 401, "category": "INVALID_AUTHENTICATION", "message": "Authentication credentials not found."}',
  '{"status": 400, "category": "VALIDATION_ERROR", "message": "Property values were not valid: invalid email address"}',
  '{"status": 409, "category": "CONFLICT", "message": "Contact already exists. Existing ID: 51234"}',
  '[{"errorCode": "REQUIRED_FIELD_MISSING", "message": "Required fields are missing: [LastName]", "fields": ["LastName"]}]',
  '[{"errorCode": "INVALID_SESSION_ID", "message": "Session expired or invalid"}]',
  '{"status": 502, "message": "CRM did not answer in time"}',
];
/** A sync's partial problem (JSON text). */
const SYNC_WARNINGS = [
  '{"message": "Contact written; company not created: free email domain"}',
  '{"message": "Contact written; task not created: no owner to assign"}',
  '{"message": "Activity written; contact owner not assigned: owner is deactivated"}',
];

/** What one chunk writes; the counts and rates are the run's ({@link GenerateHistoryOptions}). */
interface Chunk extends Pick<GenerateHistoryOptions, 'requests' | 'deliveries' | 'syncRatio' | 'nullRate' | 'errorRate' | 'warningRate'> {
  /** First and last request ordinal (1-based, of `requests` per account) this chunk writes. */
  lo: number;
  hi: number;
  /** The chunk's share of the window: requests are timed inside [sliceStart, sliceStart + sliceMs ms). */
  sliceStart: Date;
  sliceMs: number;
  /** End of the window: no sync or delivery is timed after it. */
  end: Date;
  /** Contacts are drawn from 1..contacts (per account). */
  contacts: number;
  /** The requests.id sequence, for ids drawn up front. */
  sequence: string;
}

/**
 * One chunk: ordinals `lo..hi` of `requests` per account, timed inside [sliceStart, sliceStart + sliceMs
 * ms). Ordinal g carries floor(g*D/R) - floor((g-1)*D/R) deliveries (D `deliveries`, R `requests`), so the
 * total is exactly D; such requests come from a source that has destinations. A request gets a sync when
 * its draw is below `syncRatio`; sync status by one uniform draw: null | error | warning | success, in
 * shares `nullRate`, `errorRate`, `warningRate` and the rest. Deliveries fail at `errorRate`.
 */
function chunkStatement({
  lo,
  hi,
  requests,
  deliveries,
  sliceStart,
  sliceMs,
  end,
  syncRatio,
  nullRate,
  errorRate,
  warningRate,
  contacts,
  sequence,
}: Chunk): Sql {
  return sql`
WITH o AS (
  SELECT a.ord, a.account_id, a.nsrc, a.dmap,
         ((g * ${deliveries}::bigint) / ${requests}::bigint - ((g - 1) * ${deliveries}::bigint) / ${requests}::bigint)::int AS n_deliveries,
         date_trunc('milliseconds', ${sliceStart}::timestamptz + random() * ${sliceMs}::float8 * interval '1 millisecond') AS created_at,
         random() AS r_src, random() AS r_sync, random() AS r_status, random() AS r_event,
         1 + floor(random() * ${contacts}::int)::int AS contact, 1 + floor(random() * 400)::int AS campaign
    FROM gh_accounts a CROSS JOIN generate_series(${lo}::bigint, ${hi}::bigint) AS g
),
picked AS (
  SELECT o.*, s.source_id, s.connection_id, s.platform, s.ingress_code, s.dest_ids, s.dest_urls,
         s.platform = ANY(${LINKEDIN_PLATFORMS}::text[]) AS linkedin
    FROM o JOIN gh_sources s
      ON s.ord = o.ord
     AND s.idx = CASE WHEN o.n_deliveries > 0 THEN o.dmap[1 + floor(o.r_src * cardinality(o.dmap))::int]
                      ELSE floor(o.r_src * o.nsrc)::int END
),
described AS (
  SELECT p.*,
         CASE WHEN p.linkedin THEN (${LINKEDIN_EVENTS}::text[])[1 + floor(p.r_event * 20)::int]
              ELSE (${EMAIL_EVENTS}::text[])[1 + floor(p.r_event * 20)::int] END AS event_type,
         CASE WHEN p.linkedin THEN 'https://www.linkedin.com/in/lead-' || p.contact
              ELSE 'lead' || p.contact || '@company' || (p.contact % 997) || '.example' END AS to_email
    FROM picked p
),
base AS MATERIALIZED (
  SELECT nextval(${sequence}::regclass) AS request_id, x.*
    FROM (SELECT d.*, COALESCE(${JSON.stringify(BODY_EVENT_NAMES)}::jsonb -> d.platform ->> d.event_type, d.event_type) AS body_event
            FROM described d ORDER BY d.created_at) x
),
ins_r AS (
  INSERT INTO requests (id, account_id, source_id, connection_id, path, created_at)
  SELECT request_id, account_id, source_id, connection_id, ingress_code, created_at FROM base
  RETURNING 1
),
ins_b AS (
  INSERT INTO request_bodies (request_id, created_at, body)
  SELECT request_id, created_at,
         (CASE platform
            WHEN 'lemlist' THEN json_build_object('type', body_event, 'leadEmail', to_email, 'campaignId', 'cam_' || campaign, 'createdAt', created_at)
            WHEN 'heyreach' THEN json_build_object('event_type', body_event, 'lead', json_build_object('profile_url', to_email), 'campaign_id', campaign, 'timestamp', created_at)
            ELSE json_build_object('event_type', body_event, 'to_email', to_email, 'campaign_id', campaign, 'event_timestamp', created_at)
          END)::text
    FROM base
),
ins_s AS (
  INSERT INTO syncs (account_id, connection_id, source_id, request_id, platform, status, event_type, to_email, error, attempts, created_at, updated_at)
  SELECT b.account_id, b.connection_id, b.source_id, b.request_id, b.platform, st.status::sync_status, b.event_type, b.to_email,
         CASE st.status WHEN 'error' THEN (${SYNC_ERRORS}::jsonb[])[1 + floor(random() * 7)::int]
                        WHEN 'warning' THEN (${SYNC_WARNINGS}::jsonb[])[1 + floor(random() * 3)::int] END,
         CASE WHEN st.status IS NULL THEN 0 WHEN st.status = 'error' THEN 1 + floor(random() * 3)::int ELSE 1 END,
         b.created_at, st.done
    FROM base b
    CROSS JOIN LATERAL (
      SELECT CASE WHEN b.r_status < ${nullRate}::float8 THEN NULL
                  WHEN b.r_status < ${nullRate}::float8 + ${errorRate}::float8 THEN 'error'
                  WHEN b.r_status < ${nullRate}::float8 + ${errorRate}::float8 + ${warningRate}::float8 THEN 'warning'
                  ELSE 'success' END AS status,
             LEAST(${end}::timestamptz, date_trunc('milliseconds', b.created_at + (40 + b.r_event * 2500) * interval '1 millisecond')) AS done
    ) st
   WHERE b.r_sync < ${syncRatio}::float8
   ORDER BY b.request_id
  RETURNING status
),
ins_d AS (
  INSERT INTO deliveries (account_id, destination_id, destination_url, connection_id, source_id, request_id, event_type, to_email,
                          status, http_status, error, created_at)
  SELECT b.account_id, b.dest_ids[p.j], b.dest_urls[p.j], b.connection_id, b.source_id, b.request_id, b.event_type, b.to_email,
         CASE WHEN p.failed THEN 'error' ELSE 'success' END::delivery_status,
         CASE WHEN NOT p.failed THEN 200 ELSE (ARRAY[500, 502, 503, 504, 404, 410, NULL])[1 + floor(p.r * 7)::int] END,
         CASE WHEN NOT p.failed THEN NULL
              WHEN p.r >= 6.0 / 7 THEN '{"message": "connect ETIMEDOUT after 10000 ms"}'::jsonb
              ELSE '{"message": "destination answered with an error status"}'::jsonb END,
         LEAST(${end}::timestamptz, date_trunc('milliseconds', b.created_at + (100 + p.r * 1500 + k * 50) * interval '1 millisecond'))
    FROM base b
    CROSS JOIN LATERAL generate_series(1, b.n_deliveries) AS k
    CROSS JOIN LATERAL (
      SELECT 1 + ((k - 1) + floor(b.r_sync * cardinality(b.dest_ids))::int) % cardinality(b.dest_ids) AS j,
             random() < ${errorRate}::float8 AS failed, random() AS r
    ) p
   WHERE b.n_deliveries > 0
   ORDER BY b.request_id, k
  RETURNING status
)
SELECT (SELECT count(*) FROM ins_r) AS requests,
       (SELECT json_object_agg(COALESCE(status::text, 'null'), n) FROM (SELECT status, count(*) AS n FROM ins_s GROUP BY 1) x) AS syncs,
       (SELECT json_object_agg(status::text, n) FROM (SELECT status, count(*) AS n FROM ins_d GROUP BY 1) y) AS deliveries`;
}

async function ensurePartitionsFrom(databaseUrl: string, from: Date): Promise<void> {
  const pool = new pg.Pool({ connectionString: databaseUrl, max: 1 });
  try {
    await ensureHistoryPartitions(pool, from, DEFAULT_RETENTION);
  } finally {
    await pool.end();
  }
}

function fmt(n: number): string {
  return n.toLocaleString('en-US');
}
