/**
 * Every HubSpot path the connector calls, on HubSpot's date-based API version. HubSpot ships a version
 * each March and September and supports each for at least 18 months; the numeric paths (`/crm/v3/...`,
 * `/crm/v4/...`) lose support in September 2027 and v1 OAuth ends on 2027-02-16. Moving to a newer
 * version is this constant (and reading that version's changelog: 2026-09 enforces a portal's
 * required-property validation rules on writes, see docs/decisions.md).
 */
export const HUBSPOT_API_VERSION = '2026-03';

const V = HUBSPOT_API_VERSION;
const id = encodeURIComponent;

/** The CRM object types the connector reads and writes. */
export type HubspotObjectType = 'contacts' | 'companies' | 'emails' | 'notes' | 'tasks';

export const hubspotPaths = {
  /** `POST`: the OAuth token endpoint (refresh-token and authorization-code grants; RFC 6749 errors). */
  token: `/oauth/${V}/token`,
  /** `POST`: a token's metadata (its portal's `hub_id` and `hub_domain`, the installing user). */
  introspect: `/oauth/${V}/token/introspect`,
  /** `GET`: the portal's account details (`portalId`, `uiDomain`, time zone, currency). */
  accountDetails: `/account-info/${V}/details`,
  /** `POST` creates one; with an id, `GET` reads and `PATCH` updates it. */
  object: (type: HubspotObjectType, objectId?: string) => `/crm/objects/${V}/${type}${objectId === undefined ? '' : `/${id(objectId)}`}`,
  /** `POST` of up to 100 (read) or 200 (create, upsert) inputs. */
  batch: (type: HubspotObjectType, action: 'create' | 'read' | 'upsert') => `/crm/objects/${V}/${type}/batch/${action}`,
  search: (type: HubspotObjectType) => `/crm/objects/${V}/${type}/search`,
  /** `PUT`: the default association of two records. */
  associateDefault: (from: HubspotObjectType, fromId: string, to: HubspotObjectType, toId: string) =>
    `/crm/objects/${V}/${from}/${id(fromId)}/associations/default/${to}/${id(toId)}`,
  /** `POST`: default associations of many pairs. */
  associateDefaultBatch: (from: HubspotObjectType, to: HubspotObjectType) => `/crm/associations/${V}/${from}/${to}/batch/associate/default`,
  /** `GET`, paged: the portal's owners. */
  owners: `/crm/owners/${V}`,
  list: (listId: string) => `/crm/lists/${V}/${id(listId)}`,
  /** `GET`, paged: a list's members (record ids). */
  listMemberships: (listId: string) => `/crm/lists/${V}/${id(listId)}/memberships`,
} as const;
