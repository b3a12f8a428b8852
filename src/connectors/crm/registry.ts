import { ATTIO } from './attio/definition.js';
import { CLOSE } from './close/definition.js';
import type { CrmDefinition } from './definition.js';
import { HUBSPOT } from './hubspot/definition.js';
import { crmKindOf, type CrmKind } from './kinds.js';
import { SALESFORCE } from './salesforce/definition.js';

/**
 * Every CRM the service writes into, by kind: a CRM is its folder (src/connectors/crm/<kind>/) and its
 * line here. A kind added to CRM_KINDS without its line does not compile.
 */
export const CRMS: { readonly [K in CrmKind]: CrmDefinition & { kind: K } } = { HUBSPOT, SALESFORCE, CLOSE, ATTIO };

/** The definition of the CRM a connection's `crm` names, or undefined for one the service does not write into. */
export function crmDefinition(crm: string): CrmDefinition | undefined {
  const kind = crmKindOf(crm);
  return kind === undefined ? undefined : CRMS[kind];
}
