/**
 * The demo fixture pointed at the sandbox (SANDBOX): every connection, destination, block list and
 * webhook endpoint of fixtures/demo.json gets the sandbox's URLs and credentials, so every path of the
 * product works on first start without an account anywhere. Pure.
 */

import { crmKindOf, type CrmKind } from '../connectors/crm/kinds.js';
import { sequencerPlatformOf } from '../connectors/sequencers/platforms.js';
import { sequencerDefinition } from '../connectors/sequencers/registry.js';
import { unreachable } from '../domain/unreachable.js';

/** The credentials the sandbox's systems accept; the demo's connections and block lists are given them. */
export const SANDBOX_CREDENTIALS = {
  // With the client's id and secret, a 401 forced from the sandbox page is met by an OAuth refresh, as in production.
  hubspot: [
    {
      accessToken: 'sandbox-hubspot-access-token',
      refreshToken: 'sandbox-hubspot-refresh-token',
      clientId: 'sandbox-hubspot-client',
      clientSecret: 'sandbox-hubspot-secret',
    },
  ],
  salesforce: {
    accessToken: 'sandbox-salesforce-access-token',
    refreshToken: 'sandbox-salesforce-refresh-token',
    clientId: 'sandbox-salesforce-client',
    clientSecret: 'sandbox-salesforce-secret',
  },
  close: { apiKey: 'sandbox-close-api-key', clientId: 'sandbox-close-client', clientSecret: 'sandbox-close-secret' },
  attio: { accessToken: 'sandbox-attio-token', clientId: 'sandbox-attio-client', clientSecret: 'sandbox-attio-secret' },
  smartlead: 'sandbox-smartlead-key',
  instantly: 'sandbox-instantly-key',
  emailbison: '9|sandbox-emailbison-token',
  heyreach: 'sandbox-heyreach-key',
  lemlist: 'sandbox-lemlist-key',
} as const;

/** The service's app at the sandbox CRM of `kind` (its client id and secret): with SANDBOX on, the default of its app variables (src/config.ts). */
export function sandboxApp(kind: CrmKind): { clientId: string; clientSecret: string } {
  switch (kind) {
    case 'HUBSPOT':
      return { clientId: SANDBOX_CREDENTIALS.hubspot[0].clientId, clientSecret: SANDBOX_CREDENTIALS.hubspot[0].clientSecret };
    case 'SALESFORCE':
      return { clientId: SANDBOX_CREDENTIALS.salesforce.clientId, clientSecret: SANDBOX_CREDENTIALS.salesforce.clientSecret };
    case 'CLOSE':
      return { clientId: SANDBOX_CREDENTIALS.close.clientId, clientSecret: SANDBOX_CREDENTIALS.close.clientSecret };
    case 'ATTIO':
      return { clientId: SANDBOX_CREDENTIALS.attio.clientId, clientSecret: SANDBOX_CREDENTIALS.attio.clientSecret };
    default:
      return unreachable(kind);
  }
}

/**
 * The sales reps who send the demo's and the samples' emails: the sandbox CRMs know each as a user
 * (HubSpot owner, Salesforce User, Close user, Attio workspace member), so a source that assigns the contact owner finds one.
 */
export const SANDBOX_REPS: ReadonlyArray<{ email: string; firstName: string; lastName: string }> = [
  { email: 'tom@northwind.test', firstName: 'Tom', lastName: 'North' },
  { email: 'sender@northwind.test', firstName: 'Sam', lastName: 'Sender' },
  { email: 'tom@acme.test', firstName: 'Tom', lastName: 'Acme' },
];

/** The HubSpot lists the demo's block lists read (their `crmSource.listId` in fixtures/demo.json). */
export const SANDBOX_LISTS: ReadonlyArray<{ listId: string; name: string; objectType: 'contacts' | 'companies'; values: string[] }> = [
  { listId: '101', name: 'Customers and partners', objectType: 'companies', values: ['globex.test', 'initech.test', 'umbrella.test'] },
  { listId: '102', name: 'Do not contact', objectType: 'contacts', values: ['legal@prospect.test', 'no-thanks@example.test'] },
];

type Json = Record<string, unknown>;

/**
 * A shell command (one line) that posts a realistic Smartlead reply, from a lead the demo's reply relay
 * copies (category Interested), to `ingressUrl`; each run is a new reply (its message id has the time).
 */
export function demoReplyCommand(ingressUrl: string): string {
  const at = '2026-01-15T09:35:01+00:00';
  const id = `<reply-'$(date +%s)'@prospect.test>`;
  const body =
    `{"event_type":"EMAIL_REPLY","sl_lead_email":"jane@prospect.test","to_email":"jane@prospect.test","to_name":"Jane Doe",` +
    `"from_email":"tom@acme.test","subject":"Re: Quick question","campaign_id":9181,"campaign_name":"Q1 Outreach","sequence_number":1,` +
    `"reply_message":{"message_id":"${id}","text":"Sounds good, send times for Thursday","html":"<div>Sounds good, send times for Thursday</div>","time":"${at}"},` +
    `"message_id":"${id}","time_replied":"${at}","event_timestamp":"${at}","lead_category":{"new_id":1,"new_name":"Interested"}}`;
  return `curl -s -X POST ${ingressUrl} -H 'Content-Type: application/json' -d '${body}'`;
}

/** `fixture` (as parsed JSON) with its outside systems replaced by the sandbox at `sandboxUrl` (`<BASE_URL>/sandbox`). */
export function sandboxFixture(fixture: unknown, sandboxUrl: string): unknown {
  const accounts = list((fixture as Json).accounts);
  return {
    ...(fixture as Json),
    accounts: accounts.map((account) => ({
      ...account,
      connections: list(account.connections).map((connection) => ({
        ...connection,
        ...crmCredentials(connection, sandboxUrl),
        destinations: list(connection.destinations).map((d) => ({ ...d, url: `${sandboxUrl}/forwarding/${String(d.ref)}` })),
        // Relayed at once: the demo's email arrives while its user watches.
        replyRelays: list(connection.replyRelays).map((r) => ({ ...r, delayMinutes: 0 })),
        blocklists: list(connection.blocklists).map((b) => ({ ...b, ...(pushedTo(b.platform) ? sequencerAccount(b.platform, sandboxUrl) : {}) })),
        // Every source holds its sandbox sequencer's account: the backfill reads the stand-in's history.
        sources: list(connection.sources).map((source) => ({ ...source, ...sequencerAccount(source.platform, sandboxUrl) })),
      })),
      webhookEndpoints: list(account.webhookEndpoints).map((w) => ({ ...w, url: `${sandboxUrl}/webhooks/${String(w.ref)}` })),
    })),
  };
}

function crmCredentials(connection: Json, sandboxUrl: string): Json {
  const kind = typeof connection.crm === 'string' ? crmKindOf(connection.crm) : undefined;
  if (kind === undefined) return {};
  switch (kind) {
    case 'HUBSPOT':
      return { credentials: SANDBOX_CREDENTIALS.hubspot[0] };
    case 'SALESFORCE':
      return { credentials: { instanceUrl: `${sandboxUrl}/salesforce-instance`, ...SANDBOX_CREDENTIALS.salesforce } };
    case 'CLOSE':
      return { credentials: { apiKey: SANDBOX_CREDENTIALS.close.apiKey } };
    case 'ATTIO':
      return { credentials: { accessToken: SANDBOX_CREDENTIALS.attio.accessToken } };
    default:
      return unreachable(kind);
  }
}

/** Whether block lists of `platform` are pushed (only those take a sequencer account). */
function pushedTo(platform: unknown): boolean {
  return typeof platform === 'string' && sequencerDefinition(platform)?.blocklistPush !== undefined;
}

/** The sandbox account of a sequencer, as a source's or block list's `sequencer`. */
function sequencerAccount(platform: unknown, sandboxUrl: string): Json {
  const platformOf = typeof platform === 'string' ? sequencerPlatformOf(platform) : undefined;
  if (platformOf === undefined) return {};
  switch (platformOf) {
    case 'smartlead':
    case 'instantly':
    case 'heyreach':
    case 'lemlist':
      return { sequencer: { apiKey: SANDBOX_CREDENTIALS[platformOf] } };
    case 'emailbison':
      return { sequencer: { apiKey: SANDBOX_CREDENTIALS.emailbison, baseUrl: `${sandboxUrl}/emailbison` } };
    default:
      return unreachable(platformOf);
  }
}

function list(value: unknown): Json[] {
  return Array.isArray(value) ? (value as Json[]) : [];
}
