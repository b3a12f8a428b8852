import { raw, sql, type Sql } from '../sql.js';

/**
 * A request's raw body in SQL, for the request aliased `alias`: its `request_bodies` row (read in the
 * partition of the request's own time), or the column a request received before the partitioning kept
 * it in until the partitioning moved it; null once past RAW_BODY_RETENTION_DAYS.
 */
export function requestBodySql(alias: string): Sql {
  const r = raw(alias);
  return sql`COALESCE((SELECT b.body FROM request_bodies b WHERE b.request_id = ${r}.id AND b.created_at = ${r}.created_at), ${r}.body)`;
}
