import { startAttioEmulator, type AttioEmulator } from '../emulators/attio.js';
import { startCloseEmulator, type CloseEmulator } from '../emulators/close.js';
import { startDestinationEmulator, type DestinationEmulator } from '../emulators/destination.js';
import { startEmailBisonEmulator, type EmailBisonEmulator } from '../emulators/emailbison.js';
import { startHeyReachEmulator, type HeyReachEmulator } from '../emulators/heyreach.js';
import { startLemlistEmulator, type LemlistEmulator } from '../emulators/lemlist.js';
import { startHubspotEmulator, type HubspotEmulator } from '../emulators/hubspot.js';
import { startSalesforceEmulator, type SalesforceEmulator } from '../emulators/salesforce.js';
import { startSequencerEmulator, type SequencerEmulator } from '../emulators/sequencer.js';
import { startSmtpEmulator, type CapturedMail, type SmtpEmulator } from '../emulators/smtp.js';
import { SANDBOX_CREDENTIALS, SANDBOX_LISTS, SANDBOX_REPS } from './demo.js';
import { SANDBOX_SYSTEMS, type SandboxSystem } from './system-table.js';

export type { SandboxSystem };

/**
 * The sandbox's outside systems: the emulators the tests use (src/emulators/, one implementation for
 * tests, benchmarks and the sandbox), each on its own loopback port, reached through the service's
 * `/sandbox/<system>/` paths (src/sandbox/router.ts); which system each emulator serves is a column of
 * src/sandbox/system-table.ts. They hold their state in memory; the journal
 * (src/sandbox/journal.ts) is what persists it.
 */
export interface SandboxSystems {
  hubspot: HubspotEmulator;
  salesforce: SalesforceEmulator;
  /** Close (its API and app host; named `closeCrm`, as `close()` stops the systems). */
  closeCrm: CloseEmulator;
  attio: AttioEmulator;
  /** Smartlead's and Instantly's block list and history APIs (one emulator answers both). */
  sequencers: SequencerEmulator;
  /** An EmailBison instance (blacklists, leads' mail). */
  emailbison: EmailBisonEmulator;
  /** HeyReach's and lemlist's APIs (conversations, activities). */
  heyreach: HeyReachEmulator;
  lemlist: LemlistEmulator;
  /** The forwarding and platform webhook receivers: every request answered 200 unless a failure is forced. */
  receivers: DestinationEmulator;
  /** Null in a process that found the port taken: another API process's sandbox holds the inbox (journaled, so shown by every process). */
  smtp: SmtpEmulator | null;
  close(): Promise<void>;
}

/** Starts every system with the demo's credentials and CRM lists. `sandboxUrl` is `<BASE_URL>/sandbox`. */
export async function startSandboxSystems(options: { sandboxUrl: string; smtpPort: number; onMail: (mail: CapturedMail) => void }): Promise<SandboxSystems> {
  // The portal a connect link from the sandbox connects (src/connect/): a sandbox account of its own.
  const hubspot = await startHubspotEmulator({
    ...SANDBOX_CREDENTIALS.hubspot[0],
    portal: { portalId: 7_700_001, hubDomain: 'sandbox-portal.hubspot.test', accountType: 'SANDBOX', user: 'owner@acme.test' },
  });
  for (const credentials of SANDBOX_CREDENTIALS.hubspot) {
    hubspot.accessTokens.add(credentials.accessToken);
    if (credentials.refreshToken) hubspot.refreshTokens.add(credentials.refreshToken);
  }
  for (const list of SANDBOX_LISTS) hubspot.addList(list);
  const salesforce = await startSalesforceEmulator(SANDBOX_CREDENTIALS.salesforce);
  SANDBOX_REPS.forEach((rep, i) => {
    hubspot.owners.push({ id: String(7001 + i), email: rep.email, firstName: rep.firstName, lastName: rep.lastName, userId: 97001 + i });
    const id = `0055B000000${String(7001 + i)}AAA`;
    salesforce.users.set(id, { Id: id, Email: rep.email, IsActive: true, Name: `${rep.firstName} ${rep.lastName}`, CreatedDate: new Date().toISOString() });
  });
  // The instance the token endpoint names is the sandbox's public path, not the emulator's loopback port.
  salesforce.refreshInstanceUrl = `${options.sandboxUrl}/salesforce-instance`;
  // Likewise the identity URL a code exchange names: the service reads it through the sandbox's login path.
  salesforce.identityLoginUrl = `${options.sandboxUrl}/salesforce-login`;
  const closeCrm = await startCloseEmulator({
    apiKeys: [SANDBOX_CREDENTIALS.close.apiKey],
    clientId: SANDBOX_CREDENTIALS.close.clientId,
    clientSecret: SANDBOX_CREDENTIALS.close.clientSecret,
    users: SANDBOX_REPS.map((rep, i) => ({
      id: `user_sandbox${String(7001 + i).padStart(17, '0')}`,
      email: rep.email,
      first_name: rep.firstName,
      last_name: rep.lastName,
    })),
    organization: { id: 'orga_sandbox000000000000000001', name: 'Sandbox Close organization' },
  });
  const attio = await startAttioEmulator({
    tokens: [SANDBOX_CREDENTIALS.attio.accessToken],
    clientId: SANDBOX_CREDENTIALS.attio.clientId,
    clientSecret: SANDBOX_CREDENTIALS.attio.clientSecret,
    members: SANDBOX_REPS.map((rep, i) => ({
      id: `a0000000-0000-4000-8000-00000000${String(7001 + i)}`,
      email_address: rep.email,
      first_name: rep.firstName,
      last_name: rep.lastName,
      access_level: 'member' as const,
    })),
    workspace: { id: '22222222-2222-4222-8222-222222222222', name: 'Sandbox Attio workspace', slug: 'sandbox' },
  });
  const sequencers = await startSequencerEmulator({ smartleadKeys: [SANDBOX_CREDENTIALS.smartlead], instantlyKeys: [SANDBOX_CREDENTIALS.instantly] });
  const emailbison = await startEmailBisonEmulator();
  emailbison.addWorkspace(SANDBOX_CREDENTIALS.emailbison);
  const heyreach = await startHeyReachEmulator();
  heyreach.addKey(SANDBOX_CREDENTIALS.heyreach);
  const lemlist = await startLemlistEmulator();
  lemlist.addKey(SANDBOX_CREDENTIALS.lemlist);
  const receivers = await startDestinationEmulator();
  // One inbox per machine: a second API process on the embedded database finds the port taken by the first,
  // whose inbox journals every mail in PostgreSQL, where every process's page reads it.
  const smtp = await startSmtpEmulator({ port: options.smtpPort, onMessage: options.onMail }).catch((error: unknown) => {
    if (error instanceof Error && error.message.includes('EADDRINUSE')) return null;
    throw error;
  });
  return {
    hubspot,
    salesforce,
    closeCrm,
    attio,
    sequencers,
    emailbison,
    heyreach,
    lemlist,
    receivers,
    smtp,
    async close() {
      await Promise.all([
        hubspot.close(),
        salesforce.close(),
        closeCrm.close(),
        attio.close(),
        sequencers.close(),
        emailbison.close(),
        heyreach.close(),
        lemlist.close(),
        receivers.close(),
        smtp?.close(),
      ]);
    },
  };
}

/** The loopback base URL serving `system`: its row's emulator (src/sandbox/system-table.ts). */
export function systemUrl(systems: SandboxSystems, system: SandboxSystem): string {
  const row = SANDBOX_SYSTEMS.find((candidate) => candidate.system === system);
  if (!row) throw new Error(`not a sandbox system: ${system}`);
  return row.servedBy(systems);
}
