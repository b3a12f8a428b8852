import { sql, type Sql } from '../db/sql.js';
import { addJobsSql } from './enqueue.js';
import { relayExecutionsSend, relayJobKeySql } from './relay_executions__send.js';

// Relay executions as the statement that writes them queues their sends: the scheduling job
// (`reply_relays__schedule`) writes a reply's execution and its send job (`relay_executions__send`, whose
// module says how its jobs are keyed) in one statement (RelayStore.schedule, given this SQL), so no
// execution waits without its send. The sends' own SQL (attempts, outcomes) is src/jobs/relay-store.ts.

/** SQL for a CTE that queues one send job for each execution in `executions` (id, run_at). */
export function queueRelaySendSql(executions: Sql): Sql {
  return sql`SELECT count(*) FROM ${addJobsSql(relayExecutionsSend, {
    from: sql`${executions} AS e`,
    payload: { executionId: sql`e.id` },
    runAt: sql`e.run_at`,
    jobKey: relayJobKeySql(sql`e.id`),
  })}`;
}
