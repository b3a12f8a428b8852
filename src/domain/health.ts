/**
 * Platform health rollup (spec: Platform health). Pure: the checks come in, the rollup goes out.
 */

/** The reference value; clients are told not to depend on it (see docs/decisions.md). */
export const HEALTH_SCHEMA_VERSION = 3;

export type CheckStatus = 'operational' | 'outage';

/** The checks that watch the background worker (spec: `destinations_*`), each fed by the tasks that name it. */
export type WorkerCheck = 'destinations_activities' | 'destinations_forwarding' | 'destinations_blocklists' | 'destinations_reply_relays';
export type HealthStatus = 'operational' | 'partial_outage' | 'major_outage';

export interface HealthReport {
  schema_version: number;
  status: HealthStatus;
  checks: Record<string, CheckStatus>;
}

/** No check in outage: operational; some: partial_outage; every one: major_outage. */
export function rollUpHealth(checks: Record<string, CheckStatus>): HealthReport {
  const values = Object.values(checks);
  const down = values.filter((v) => v === 'outage').length;
  const status: HealthStatus = down === 0 ? 'operational' : down === values.length ? 'major_outage' : 'partial_outage';
  return { schema_version: HEALTH_SCHEMA_VERSION, status, checks };
}

/** HTTP 503 only for major_outage; 200 otherwise. */
export function healthHttpStatus(report: HealthReport): 200 | 503 {
  return report.status === 'major_outage' ? 503 : 200;
}
