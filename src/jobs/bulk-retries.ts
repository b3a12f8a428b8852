import { sql, type Sql } from '../db/sql.js';
import { addJobsSql } from './enqueue.js';
import { bulkRetryKeySql, syncsBulkRetry } from './syncs__bulk_retry.js';

// A staff bulk re-sync as the statement that asks for it (GraphQL `retrySyncs`) writes it: the bulk, its
// items and its first job (`syncs__bulk_retry`, whose module says how its jobs are keyed) in one
// statement, so no bulk waits without its job. The job's own SQL (its chunks of retries) is its module's.

/** The first job of a bulk, as SQL over a relation holding its `id` (the mutation writes the bulk and queues it in one statement). */
export function queueBulkRetrySql(from: Sql): Sql {
  return addJobsSql(syncsBulkRetry, { from, payload: { bulkRetryId: sql`id` }, jobKey: bulkRetryKeySql(sql`id`) });
}
