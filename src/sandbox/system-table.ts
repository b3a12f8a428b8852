import type { SandboxSystems } from './systems.js';

/**
 * The sandbox's systems, one row each: the system, the path below `<BASE_URL>` where the router serves it
 * (src/sandbox/router.ts), the environment variable whose sandbox default that path is (src/config.ts;
 * none for systems a connection or a customer URL names), and which started emulator serves it on
 * loopback (src/sandbox/systems.ts starts them). The router, the configuration and the sandbox all read
 * this table, so a default cannot point where nothing is served. Its one import is a type: the
 * configuration reads it without loading an emulator.
 */
export const SANDBOX_SYSTEMS = [
  row('hubspot', 'HUBSPOT_BASE_URL', (s) => s.hubspot.url),
  // HubSpot's app host, where a connect link sends the customer to consent (the same emulator serves it).
  row('hubspot-app', 'HUBSPOT_APP_URL', (s) => s.hubspot.url),
  row('salesforce-login', 'SALESFORCE_LOGIN_URL', (s) => s.salesforce.loginUrl),
  // Named by the connection's credentials (src/sandbox/demo.ts) and by the token endpoint's answer.
  row('salesforce-instance', null, (s) => s.salesforce.instanceUrl),
  // Close's API and its app host, where a connect link sends the customer to consent (one emulator serves both).
  row('close', 'CLOSE_BASE_URL', (s) => s.closeCrm.url),
  row('close-app', 'CLOSE_APP_URL', (s) => s.closeCrm.url),
  // Attio's API and its app host (consent, code exchange): one emulator serves both.
  row('attio', 'ATTIO_BASE_URL', (s) => s.attio.url),
  row('attio-app', 'ATTIO_APP_URL', (s) => s.attio.url),
  // One emulator answers both sequencers' block list APIs.
  row('smartlead', 'SMARTLEAD_BASE_URL', (s) => s.sequencers.url),
  row('instantly', 'INSTANTLY_BASE_URL', (s) => s.sequencers.url),
  // An EmailBison instance: every customer's has its own host, which a source's or block list's account names (src/sandbox/demo.ts).
  row('emailbison', null, (s) => s.emailbison.url),
  // HeyReach's and lemlist's APIs, which the backfill reads.
  row('heyreach', 'HEYREACH_BASE_URL', (s) => s.heyreach.url),
  row('lemlist', 'LEMLIST_BASE_URL', (s) => s.lemlist.url),
  // Customer URLs (forwarding destinations, webhook endpoints): the demo's are pointed here (src/sandbox/demo.ts).
  row('forwarding', null, (s) => s.receivers.url),
  row('webhooks', null, (s) => s.receivers.url),
];

/** The systems a request to `/sandbox/<system>/...` reaches. */
export type SandboxSystem = (typeof SANDBOX_SYSTEMS)[number]['system'];

/** The environment variables whose sandbox default is a system of the table. */
export type SandboxVariable = NonNullable<(typeof SANDBOX_SYSTEMS)[number]['variable']>;

/** The path below `<BASE_URL>` that `variable` defaults to with the sandbox on. */
export function sandboxDefaultPath(variable: SandboxVariable): string {
  const found = SANDBOX_SYSTEMS.find((system) => system.variable === variable);
  if (!found) throw new Error(`no sandbox system for ${variable}`);
  return found.path;
}

function row<const System extends string, const Variable extends string | null>(
  system: System,
  variable: Variable,
  /** The loopback base URL of the started emulator that serves the system. */
  servedBy: (systems: SandboxSystems) => string,
) {
  return { system, path: `/sandbox/${system}` as const, variable, servedBy };
}
