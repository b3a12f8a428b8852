import type { HsObject } from '../emulators/hubspot.js';
import type { SfRecord } from '../emulators/salesforce.js';
import type { Fault } from './journal.js';
import { SANDBOX_CREDENTIALS } from './demo.js';
import type { Sandbox } from './sandbox.js';

/** Rows per section: the newest ones. */
const ROWS = 50;

/** One thing a sandbox system holds or received, and the request that caused it (a link into the support explorer). */
export interface SandboxRow {
  at: string;
  title: string;
  detail: string;
  /** The inbound request behind it, when one is known. */
  requestId: string | null;
  /** The platform event it delivered (webhook receiver). */
  eventId?: string | null;
  /** Receivers: the status answered; webhooks: whether the signature verified. */
  status?: number;
  verified?: boolean | null;
  forced?: boolean;
  /** Inbox: the body is HTML (rendered in a sandboxed frame) rather than text. */
  html?: boolean;
  /** Inbox: the addresses as the email's headers give them (null when it has none), so a reader sees which rep it went to. */
  addresses?: MailAddresses;
}

/** An email's To, From and Reply-To headers as text, e.g. `"Ann" <ann@example.com>`. */
export interface MailAddresses {
  to: string | null;
  from: string | null;
  replyTo: string | null;
}

/** Everything the sandbox page shows, newest first; `/sandbox/state` answers it as JSON. */
export interface SandboxView {
  sandbox: true;
  notice: string;
  hubspot: { contacts: SandboxRow[]; activities: SandboxRow[] };
  salesforce: { contacts: SandboxRow[]; activities: SandboxRow[] };
  close: { contacts: SandboxRow[]; activities: SandboxRow[] };
  attio: { contacts: SandboxRow[]; activities: SandboxRow[] };
  forwarding: SandboxRow[];
  webhooks: SandboxRow[];
  inbox: SandboxRow[];
  blocklists: { smartlead: string[]; instantly: string[] };
  faults: Fault[];
}

const SANDBOX_NOTICE = 'SANDBOX: these systems stand in for the CRMs, sequencers, destinations, webhook receivers and mailboxes. Nothing here is real.';

/** The sandbox's state now, each row linked to the request behind it where one is known. */
export async function sandboxView(sandbox: Sandbox): Promise<SandboxView> {
  const { hubspot, salesforce, closeCrm, attio, sequencers } = sandbox.systems;
  const hsContacts = newest([...hubspot.contacts.values()], (c) => c.createdAt);
  const hsActivities = newest([...hubspot.emails.values(), ...hubspot.notes.values(), ...hubspot.tasks.values()], (a) => a.createdAt);
  const sfPeople = newest([...salesforce.contacts.values(), ...salesforce.leads.values()], (r) => r.CreatedDate);
  const sfTasks = newest([...salesforce.tasks.values()], (r) => r.CreatedDate);
  const closeContacts = newest([...closeCrm.contacts.values()], (c) => c.date_created);
  // Activities and follow-up tasks, by when Close received them.
  const closeActivities = newest<Record<string, unknown> & { date_created: string }>(
    [...closeCrm.activities.values(), ...[...closeCrm.tasks.values()].map((t) => ({ ...t, date_created: text(t.date_created) }))],
    (a) => a.date_created,
  );
  // A person as syncs.to_email names them: the email, or a social-only person's profile URL.
  const closeIdentityOf = (contactId: unknown): string | null => {
    const contact = typeof contactId === 'string' ? closeCrm.contacts.get(contactId) : undefined;
    return contact?.emails[0]?.email ?? contact?.urls[0]?.url ?? null;
  };
  const attioPeople = newest([...attio.records.people.values()], (p) => p.created_at);
  const attioIdentityOf = (recordId: unknown): string | null => {
    const values = typeof recordId === 'string' ? attio.records.people.get(recordId)?.values : undefined;
    const value = values?.email_addresses?.[0]?.email_address ?? values?.linkedin?.[0]?.value;
    return typeof value === 'string' ? value : null;
  };
  // Notes and follow-up tasks, by when Attio received them.
  const attioActivities = newest(
    [
      ...[...attio.notes.values()].map((n) => ({ at: n.created_at, title: n.title, detail: n.content_plaintext, recordId: n.parent_record_id })),
      ...[...attio.tasks.values()].map((t) => ({
        at: t.created_at,
        title: `Task: ${t.content_plaintext}`,
        detail: t.deadline_at ? `due ${t.deadline_at}` : '',
        recordId: t.linked_records[0]?.target_record_id,
      })),
    ],
    (a) => a.at,
  );
  const hsEmailOf = (activity: HsObject) => {
    const link = hubspot.associations.find((a) => a.fromId === activity.id && a.toType === 'contacts');
    return link ? (hubspot.contacts.get(link.toId)?.properties.email ?? null) : null;
  };
  const sfEmailOf = (task: SfRecord) => {
    const who = typeof task.WhoId === 'string' ? (salesforce.contacts.get(task.WhoId) ?? salesforce.leads.get(task.WhoId)) : undefined;
    return typeof who?.Email === 'string' ? who.Email : null;
  };
  const emails = [
    ...hsContacts.map((c) => c.properties.email),
    ...hsActivities.map(hsEmailOf),
    ...sfPeople.map((p) => p.Email),
    ...sfTasks.map(sfEmailOf),
    ...closeContacts.map((c) => closeIdentityOf(c.id)),
    ...closeActivities.map((a) => closeIdentityOf(a.contact_id)),
    ...attioPeople.map((p) => attioIdentityOf(p.id.record_id)),
    ...attioActivities.map((a) => attioIdentityOf(a.recordId)),
  ].filter((e): e is string => typeof e === 'string');
  const [requestsByEmail, forwarding, webhooks, inbox, faults] = await Promise.all([
    latestRequestByEmail(sandbox, emails),
    sandbox.journal.recent('forwarding', ROWS),
    sandbox.journal.recent('webhooks', ROWS),
    sandbox.journal.recent('inbox', ROWS),
    sandbox.journal.faults(),
  ]);
  const requestsByMessageId = await relayRequests(
    sandbox,
    inbox.map((m) => m.headers.messageId ?? ''),
  );
  const byEmail = (email: unknown) => (typeof email === 'string' ? (requestsByEmail.get(email.toLowerCase()) ?? null) : null);
  return {
    sandbox: true,
    notice: SANDBOX_NOTICE,
    hubspot: {
      contacts: hsContacts.map((c) => ({
        at: c.createdAt,
        title: c.properties.email ?? `contact ${c.id}`,
        detail: [c.properties.firstname, c.properties.lastname, c.properties.company].filter(Boolean).join(' '),
        requestId: byEmail(c.properties.email),
      })),
      activities: hsActivities.map((a) => ({
        at: a.createdAt,
        title: a.properties.hs_email_subject ?? a.properties.hs_task_subject ?? 'note',
        detail: excerpt(a.properties.hs_email_text ?? a.properties.hs_note_body ?? a.properties.hs_task_body ?? ''),
        requestId: byEmail(hsEmailOf(a)),
      })),
    },
    salesforce: {
      contacts: sfPeople.map((p) => ({
        at: p.CreatedDate,
        title: text(p.Email) || p.Id,
        detail: [p.FirstName, p.LastName, p.Company].filter(Boolean).join(' '),
        requestId: byEmail(p.Email),
      })),
      activities: sfTasks.map((t) => ({
        at: t.CreatedDate,
        title: text(t.Subject) || 'Task',
        detail: excerpt(text(t.Description)),
        requestId: byEmail(sfEmailOf(t)),
      })),
    },
    close: {
      contacts: closeContacts.map((c) => ({
        at: c.date_created,
        title: c.emails[0]?.email ?? c.urls[0]?.url ?? c.id,
        detail: [c.name, closeCrm.leads.get(c.lead_id)?.name].filter(Boolean).join(' / lead: '),
        requestId: byEmail(closeIdentityOf(c.id)),
      })),
      activities: closeActivities.map((a) => ({
        at: a.date_created,
        title: text(a.subject) || text(a.title) || (a._type === 'lead' ? `Task: ${text(a.text)}` : text(a._type)),
        detail: excerpt(text(a.body_text) || text(a.note) || (typeof a.status === 'string' ? `status ${a.status}` : '')),
        requestId: byEmail(closeIdentityOf(a.contact_id)),
      })),
    },
    attio: {
      contacts: attioPeople.map((p) => {
        const name = p.values.name?.[0]?.full_name;
        return {
          at: p.created_at,
          title: attioIdentityOf(p.id.record_id) ?? p.id.record_id,
          detail: text(name),
          requestId: byEmail(attioIdentityOf(p.id.record_id)),
        };
      }),
      activities: attioActivities.map((a) => ({ at: a.at, title: a.title, detail: excerpt(a.detail), requestId: byEmail(attioIdentityOf(a.recordId)) })),
    },
    forwarding: forwarding.map((r) => ({
      at: r.createdAt.toISOString(),
      title: `${r.method} /sandbox/forwarding${r.path}`,
      detail: excerpt(r.body),
      requestId: digits(r.headers['service-event-id']),
      status: r.status,
      forced: r.forced,
    })),
    webhooks: webhooks.map((r) => ({
      at: r.createdAt.toISOString(),
      title: `${r.headers['service-event-type'] ?? eventType(r.body)} to /sandbox/webhooks${r.path}`,
      detail: excerpt(r.body),
      requestId: null,
      eventId: /^svcevt_[A-Za-z0-9]+$/.test(r.headers['service-event-id'] ?? '') ? r.headers['service-event-id']! : null,
      status: r.status,
      verified: r.verified,
      forced: r.forced,
    })),
    inbox: inbox.map((m) => ({
      at: m.createdAt.toISOString(),
      title: m.headers.subject ?? '(no subject)',
      detail: m.body,
      requestId: requestsByMessageId.get(m.headers.messageId ?? '') ?? null,
      html: m.headers.html === 'yes',
      // Mail journaled before Reply-To was kept has none.
      addresses: { to: m.headers.to || null, from: m.headers.from || null, replyTo: m.headers.replyTo || null },
    })),
    blocklists: {
      smartlead: [...sequencers.smartlead(SANDBOX_CREDENTIALS.smartlead).values].reverse().slice(0, ROWS),
      instantly: [...sequencers.instantly(SANDBOX_CREDENTIALS.instantly).values].reverse().slice(0, ROWS),
    },
    faults,
  };
}

/** A request id from a header anyone could have sent: digits only, or none. */
function digits(value: string | undefined): string | null {
  return value !== undefined && /^\d{1,19}$/.test(value) ? value : null;
}

function newest<T>(rows: T[], at: (row: T) => string): T[] {
  // Rows come oldest first; reversed before the stable sort, rows stamped in the same millisecond (a replay
  // after a restart applies a day's requests at once) keep newest first, as they were shown before it.
  return rows
    .reverse()
    .sort((a, b) => at(b).localeCompare(at(a)))
    .slice(0, ROWS);
}

function excerpt(value: string): string {
  return value.length > 300 ? `${value.slice(0, 300)}…` : value;
}

/** A record's field as text: strings as they are, anything else empty. */
function text(value: unknown): string {
  return typeof value === 'string' ? value : '';
}

function eventType(body: string): string {
  try {
    return text((JSON.parse(body) as { type?: unknown }).type) || 'event';
  } catch {
    return 'event';
  }
}

/** The newest request synced for each email (the sync that wrote the contact or activity). */
async function latestRequestByEmail(sandbox: Sandbox, emails: string[]): Promise<Map<string, string>> {
  if (emails.length === 0) return new Map();
  const rows = await sandbox.prisma.$queryRaw<{ email: string; requestId: bigint }[]>`
    SELECT DISTINCT ON (to_email) to_email AS email, request_id AS "requestId"
      FROM syncs WHERE to_email = ANY(${[...new Set(emails.map((e) => e.toLowerCase()))]}::text[])
     ORDER BY to_email, id DESC`;
  return new Map(rows.map((r) => [r.email, String(r.requestId)]));
}

/** The request each relay email was sent for, by its Message-ID. */
async function relayRequests(sandbox: Sandbox, messageIds: string[]): Promise<Map<string, string>> {
  const ids = messageIds.filter((id) => id !== '');
  if (ids.length === 0) return new Map();
  const rows = await sandbox.prisma.$queryRaw<{ messageId: string; requestId: bigint }[]>`
    SELECT message_id AS "messageId", request_id AS "requestId" FROM relay_executions WHERE message_id = ANY(${ids}::text[])`;
  return new Map(rows.map((r) => [r.messageId, String(r.requestId)]));
}
