/**
 * The CRMs the service writes into: a closed list. Adding one adds its registry entry
 * (src/connectors/crm/registry.ts), which the compiler then asks for, and a case to every `switch` over
 * the kind (each ends in `unreachable()`, src/domain/unreachable.ts).
 */
export const CRM_KINDS = ['HUBSPOT', 'SALESFORCE', 'CLOSE', 'ATTIO'] as const;
export type CrmKind = (typeof CRM_KINDS)[number];

/** The kind a connection's `crm` names (stored uppercase; any case accepted), or undefined for a CRM the service does not write into. */
export function crmKindOf(crm: string): CrmKind | undefined {
  const upper = crm.toUpperCase();
  return (CRM_KINDS as readonly string[]).includes(upper) ? (upper as CrmKind) : undefined;
}
