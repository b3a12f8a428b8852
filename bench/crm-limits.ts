/**
 * `bench:ingress` (d): campaigns through the real ingress, worker processes and CRM emulators at the CRMs'
 * documented limits, every source option on (company, owner, follow-up task), each lead's five events
 * repeated as a sequencer sends them (bench/campaign.ts), pushed as a burst:
 * (d1) one HubSpot portal at BENCH_LIMITED_PER_10S (190) requests per rolling 10 s, BENCH_LIMITED_EVENTS
 *      (30,000) events, while a second connection posts BENCH_NEIGHBOUR_PER_S (5) events a second;
 * (d2) one HubSpot portal at BENCH_SMALL_PER_10S (30) requests per 10 s, BENCH_SMALL_EVENTS (3,000) events;
 * (d3) one Salesforce org capped at BENCH_SF_CONCURRENCY (3) requests in flight, BENCH_SF_EVENTS (3,000) events;
 * (d4) one Close organization at BENCH_CLOSE_PER_S (20: Close's example per key) requests a second, BENCH_CLOSE_EVENTS (500) events;
 * (d5) one Attio workspace at its 100 reads and 25 writes a second, BENCH_ATTIO_EVENTS (1,000) events.
 * Printed against the CRM's own ceiling: events/s, CRM calls per event per step, the share answered 429,
 * the busiest 10 s, requests in flight at once, the neighbour's p50/p95 from acceptance to outcome, lost
 * events and duplicate activities, tasks, companies and associations.
 */
import type { CrmKind } from '../src/connectors/crm/kinds.js';
import type { PrismaClient } from '../src/db/prisma.js';
import { seedFixture } from '../src/admin/seed.js';
import { startAttioEmulator, type AttioEmulator } from '../src/emulators/attio.js';
import { startCloseEmulator, type CloseEmulator } from '../src/emulators/close.js';
import { startHubspotEmulator, type HubspotEmulator } from '../src/emulators/hubspot.js';
import { startSalesforceEmulator, type SalesforceEmulator } from '../src/emulators/salesforce.js';
import { campaignCompanies, EVENTS_PER_LEAD, type Campaign } from '../test/support/campaign.js';
import type { BurstResult } from './campaign.js';
import { ask, type Child, cores, cpuMeter, postgresPids, untilRecorded } from './processes.js';
import { cleanups, envNumber, fmt, log, ms, out, pct } from './support.js';

const LIMITED_EVENTS = Math.round(envNumber('BENCH_LIMITED_EVENTS', 30_000));
const LIMITED_PER_10S = Math.round(envNumber('BENCH_LIMITED_PER_10S', 190));
const SMALL_EVENTS = Math.round(envNumber('BENCH_SMALL_EVENTS', 3_000));
const SMALL_PER_10S = Math.round(envNumber('BENCH_SMALL_PER_10S', 30));
const SF_EVENTS = Math.round(envNumber('BENCH_SF_EVENTS', 3_000));
const SF_CONCURRENCY = Math.round(envNumber('BENCH_SF_CONCURRENCY', 3));
const CLOSE_EVENTS = Math.round(envNumber('BENCH_CLOSE_EVENTS', 500));
const CLOSE_PER_S = Math.round(envNumber('BENCH_CLOSE_PER_S', 20));
const ATTIO_EVENTS = Math.round(envNumber('BENCH_ATTIO_EVENTS', 1_000));
/** Attio's documented limits: reads and writes a second. */
const ATTIO_LIMITS = { reads: 100, writes: 25 };
const LEADS_PER_COMPANY = Math.round(envNumber('BENCH_LEADS_PER_COMPANY', 3));
const NEIGHBOUR_PER_S = envNumber('BENCH_NEIGHBOUR_PER_S', 5);
const CONNECTIONS = Math.round(envNumber('BENCH_CONNECTIONS', 50));
const STALL_MS = 60_000;
const SENDER = 'rep@seller.test';
const TARGET = { d1: 600, d2: 100, callsPerEvent: 0.05, share429: 0.01, neighbourP95Ms: 2_000 };

/** What the (d) cases take from bench:ingress: its database, the ingress process, and how it starts its roles. */
export interface LimitsRig {
  q: <T extends Record<string, unknown>>(text: string, values?: unknown[]) => Promise<T[]>;
  prisma: PrismaClient;
  encryptionKey: Buffer;
  apiPort: number;
  api: Child;
  postmaster: number;
  /** Worker processes wired as src/main.ts wires one, against these CRM hosts. */
  startWorkers(crmUrls: Partial<Record<CrmKind, string>>): Promise<Child[]>;
  /** The `--burst` load generator (bench/campaign.ts), one process for every case. */
  burst: Child;
}

interface Case {
  label: string;
  crm: CrmKind;
  events: number;
  limit: number;
  target: number | undefined;
  neighbour: boolean;
}

/** Runs (d1), (d2) and (d3); true when every target was met and nothing was lost or written twice. */
export async function crmLimitCases(rig: LimitsRig): Promise<boolean> {
  out('');
  out(`(d) campaigns at the CRMs' limits: ${EVENTS_PER_LEAD} events per lead (sent, follow-up sent, opened, reply, category change) in waves,`);
  out(`    ${LEADS_PER_COMPANY} leads per company, every source option on (company, owner from the sender, follow-up task), pushed by`);
  out(
    `    ${CONNECTIONS} keep-alive connections as fast as the ingress takes them; worker processes wired as \`src/main.ts worker\`, emulators in this process`,
  );
  const cases: Case[] = [
    { label: '(d1)', crm: 'HUBSPOT', events: LIMITED_EVENTS, limit: LIMITED_PER_10S, target: TARGET.d1, neighbour: true },
    { label: '(d2)', crm: 'HUBSPOT', events: SMALL_EVENTS, limit: SMALL_PER_10S, target: TARGET.d2, neighbour: false },
    { label: '(d3)', crm: 'SALESFORCE', events: SF_EVENTS, limit: SF_CONCURRENCY, target: undefined, neighbour: false },
    { label: '(d4)', crm: 'CLOSE', events: CLOSE_EVENTS, limit: CLOSE_PER_S, target: undefined, neighbour: false },
    { label: '(d5)', crm: 'ATTIO', events: ATTIO_EVENTS, limit: ATTIO_LIMITS.writes, target: undefined, neighbour: false },
  ];
  let ok = true;
  for (const c of cases) ok = (await runCase(rig, c)) && ok;
  return ok;
}

async function runCase(rig: LimitsRig, c: Case): Promise<boolean> {
  const tag = c.label.replace(/[()]/g, '');
  const campaign: Campaign = { leads: Math.ceil(c.events / EVENTS_PER_LEAD), leadsPerCompany: LEADS_PER_COMPANY, tag, sender: SENDER };
  const events = campaign.leads * EVENTS_PER_LEAD;
  const hubspot = c.crm === 'HUBSPOT' ? await startHubspotEmulator({ accessToken: `${tag}-busy`, requestsPer10s: c.limit, owners: OWNERS }) : undefined;
  const salesforce = c.crm === 'SALESFORCE' ? await startSalesforceEmulator({ accessToken: `${tag}-busy`, maxConcurrency: c.limit }) : undefined;
  const close =
    c.crm === 'CLOSE'
      ? await startCloseEmulator({
          apiKeys: [`${tag}-busy`],
          requestsPerSecond: c.limit,
          users: OWNERS.map((o) => ({ id: `user_bench${o.id.padStart(19, '0')}`, email: o.email, first_name: o.firstName, last_name: o.lastName })),
        })
      : undefined;
  const attio =
    c.crm === 'ATTIO'
      ? await startAttioEmulator({
          tokens: [`${tag}-busy`],
          limits: ATTIO_LIMITS,
          members: OWNERS.map((o, i) => ({
            id: `b0000000-0000-4000-8000-00000000000${i}`,
            email_address: o.email,
            first_name: o.firstName,
            last_name: o.lastName,
            access_level: 'member' as const,
          })),
        })
      : undefined;
  cleanups.push(async () => {
    await hubspot?.close();
    await salesforce?.close();
    await close?.close();
    await attio?.close();
  });
  if (hubspot) hubspot.accessTokens.add(`${tag}-neighbour`);
  const seeded = await seedFixture(rig.prisma, fixture(tag, c, salesforce), rig.encryptionKey);
  const busy = seeded.connections.busy!;
  const neighbourCode = `${tag}NeighbourSource`;
  out('');
  out(
    c.crm === 'HUBSPOT'
      ? `${c.label} one HubSpot portal at ${c.limit} requests per rolling 10 s (the emulator's limit and the connection's crmRateLimit): ${fmt(events)} events, ${fmt(campaign.leads)} leads, ${fmt(campaignCompanies(campaign))} companies${c.neighbour ? `; a second connection posts ${NEIGHBOUR_PER_S} events/s meanwhile` : ''}`
      : c.crm === 'SALESFORCE'
        ? `${c.label} one Salesforce org capped at ${c.limit} requests in flight (the emulator answers 403 REQUEST_LIMIT_EXCEEDED past it; the connection's crmRateLimit says the same): ${fmt(events)} events, ${fmt(campaign.leads)} leads`
        : c.crm === 'ATTIO'
          ? `${c.label} one Attio workspace at ${ATTIO_LIMITS.reads} reads and ${ATTIO_LIMITS.writes} writes a second (the emulator answers 429 past them; the connection's crmRateLimit says ${c.limit} a second in all): ${fmt(events)} events, ${fmt(campaign.leads)} leads, ${fmt(campaignCompanies(campaign))} companies`
          : `${c.label} one Close organization at ${c.limit} requests a second per key and endpoint group (the emulator answers 429 past it; the connection's crmRateLimit says ${c.limit} a second in all): ${fmt(events)} events, ${fmt(campaign.leads)} leads, ${fmt(campaignCompanies(campaign))} companies`,
  );

  const workers = await rig.startWorkers({
    ...(hubspot ? { HUBSPOT: hubspot.url } : {}),
    ...(salesforce ? { SALESFORCE: salesforce.loginUrl } : {}),
    ...(close ? { CLOSE: close.url } : {}),
    ...(attio ? { ATTIO: attio.url } : {}),
  });
  const [before] = await rig.q<{ id: string }>('SELECT coalesce(max(id), 0)::text AS id FROM requests');
  const cpu = cpuMeter({
    ingress: () => [rig.api.proc.pid!],
    load: () => [rig.burst.proc.pid!],
    worker: () => workers.map((w) => w.proc.pid!),
    'bench+emulator': () => [process.pid],
    postgres: () => postgresPids(rig.postmaster),
  });
  log(`${c.label}: pushing ${fmt(events)} events`);
  let pushed: BurstResult | undefined;
  const pushing = ask<BurstResult>(rig.burst, {
    port: rig.apiPort,
    paths: [`/webhooks/${tag}BusySourceA`, `/webhooks/${tag}BusySourceB`],
    campaign,
    connections: CONNECTIONS,
  }).then((r) => (pushed = r));
  const neighbour = c.neighbour ? neighbourSender(rig.apiPort, neighbourCode, tag) : undefined;

  await untilRecorded({
    counts: async () => {
      const [now] = await rig.q<{ accepted: string; recorded: string }>(
        `SELECT (SELECT count(*) FROM requests WHERE id > $1 AND connection_id = $2) AS accepted,
                (SELECT count(*) FROM syncs WHERE request_id > $1 AND connection_id = $2 AND status IS NOT NULL) AS recorded`,
        [before!.id, busy],
      );
      return { accepted: Number(now!.accepted), recorded: Number(now!.recorded) };
    },
    pushed: () => pushed !== undefined,
    stallMs: STALL_MS,
  });
  await pushing;
  const neighbourIds = (await neighbour?.stop()) ?? [];
  const used = cpu();
  const p = pushed!;

  const statuses = await rig.q<{ status: string; n: string }>(
    `SELECT coalesce(s.status::text, CASE WHEN s.id IS NULL THEN 'no sync row' ELSE 'no status' END) AS status, count(*) AS n
       FROM requests r LEFT JOIN syncs s ON s.request_id = r.id WHERE r.id > $1 AND r.connection_id = $2 GROUP BY 1 ORDER BY 1`,
    [before!.id, busy],
  );
  const [times] = await rig.q<{ last: string }>(
    'SELECT extract(epoch FROM max(updated_at)) * 1000 AS last FROM syncs WHERE request_id > $1 AND connection_id = $2',
    [before!.id, busy],
  );
  const warnings = await rig.q<{ message: string; n: string }>(
    `SELECT left(coalesce(w->>'message', ''), 140) AS message, count(*) AS n FROM syncs s, jsonb_array_elements(s.error->'warnings') w
      WHERE s.request_id > $1 AND s.connection_id = $2 AND s.status = 'warning' GROUP BY 1 ORDER BY 2 DESC LIMIT 3`,
    [before!.id, busy],
  );
  await Promise.all(workers.map((w) => w.stop()));
  const count = (status: string) => Number(statuses.find((s) => s.status === status)?.n ?? 0);
  const written = count('success') + count('warning');
  const seconds = (Number(times!.last) - p.startedAt) / 1000;
  const rate = written / seconds;
  const lost = events - written;

  out(
    `  ingress: ${fmt(p.ok)} x 200 in ${p.seconds.toFixed(1)} s (${fmt(Math.round(p.ok / p.seconds))} req/s, p50 ${ms(p.p50)} ms, p99 ${ms(p.p99)} ms), failed ${p.failed}`,
  );
  out(`  syncs: ${statuses.map((s) => `${s.status} ${fmt(Number(s.n))}`).join(', ')}`);
  for (const w of warnings) out(`  warning x ${fmt(Number(w.n))}: ${w.message}`);
  out(`  cpu cores used: ${cores(used)}`);
  const verdicts: boolean[] = [];
  const verdict = (ok: boolean) => (verdicts.push(ok), ok ? 'PASS' : 'FAIL');
  const calls = hubspot
    ? hubspot.requests.filter((r) => r.token === `${tag}-busy` || r.token === '')
    : close
      ? close.apiRequests()
      : attio
        ? attio.apiRequests()
        : salesforce!.requests;
  const refused = calls.filter((r) => r.status === 429 || r.status === 403).length;
  out(`  CRM calls: ${fmt(calls.length)} (${(calls.length / Math.max(1, written)).toFixed(3)} per event), by step (calls per event):`);
  const bySteps = new Map<string, number>();
  for (const call of calls) {
    const step = `${call.method} ${call.path.replace(/\/(\d+|[0-9A-Za-z]{18}|(?:lead|cont|acti|task|user|orga)_[0-9a-z]+|[0-9a-f]{8}-[0-9a-f-]{27})(?=\/|$)/g, '/:id')} ${call.status}`;
    bySteps.set(step, (bySteps.get(step) ?? 0) + 1);
  }
  for (const [step, n] of [...bySteps].sort((a, b) => b[1] - a[1]))
    out(`    ${step.padEnd(88)} ${fmt(n).padStart(7)}  ${(n / Math.max(1, written)).toFixed(4)}`);
  if (hubspot) {
    out(
      `  calls per event ${(calls.length / Math.max(1, written)).toFixed(3)} (target <= ${TARGET.callsPerEvent}): ${c.label === '(d1)' ? verdict(calls.length / Math.max(1, written) <= TARGET.callsPerEvent) : 'printed'}`,
    );
    out(
      `  answered 429: ${fmt(refused)} of ${fmt(calls.length)} (${((100 * refused) / Math.max(1, calls.length)).toFixed(2)} %, target < ${TARGET.share429 * 100} %): ${verdict(refused / Math.max(1, calls.length) < TARGET.share429)}`,
    );
    out(
      `  busiest 10 s: ${fmt(hubspot.busiestTenSeconds(`${tag}-busy`))} calls outside searches (the portal's limit: ${c.limit}; searches have a limit of their own)`,
    );
  } else if (close || attio) {
    out(
      `  answered 429: ${fmt(refused)} of ${fmt(calls.length)} (${((100 * refused) / Math.max(1, calls.length)).toFixed(2)} %, target < ${TARGET.share429 * 100} %): ${verdict(refused / Math.max(1, calls.length) < TARGET.share429)}`,
    );
    const writes = calls.filter((r) => r.method !== 'GET').length;
    out(
      close
        ? `  the floor Close's limit allows: ${(c.limit / Math.max(0.001, calls.length / Math.max(1, written))).toFixed(1)} events/s at these calls per event`
        : `  the floor Attio's limits allow: ${(c.limit / Math.max(0.001, writes / Math.max(1, written))).toFixed(1)} events/s at these writes per event (${(writes / Math.max(1, written)).toFixed(3)}; our one budget counts reads too)`,
    );
  } else {
    out(`  answered 403 REQUEST_LIMIT_EXCEEDED: ${fmt(refused)}: ${verdict(refused === 0)}`);
    out(`  requests in flight at once, at most: ${salesforce!.peakConcurrency} (the cap: ${c.limit}): ${verdict(salesforce!.peakConcurrency <= c.limit)}`);
  }
  out(
    `  end to end: ${fmt(written)} events written in ${seconds.toFixed(1)} s = ${fmt(Math.round(rate))} events/s${c.target !== undefined ? ` (target >= ${c.target}): ${verdict(rate >= c.target)}` : ' (printed)'}`,
  );
  out(`  lost (not written): ${fmt(lost)}: ${verdict(lost === 0)}`);
  const duplicates = hubspot
    ? hubspotDuplicates(hubspot, tag, written)
    : close
      ? closeDuplicates(close, tag, written)
      : attio
        ? attioDuplicates(attio, tag, written)
        : salesforceDuplicates(salesforce!, written);
  for (const [what, n] of Object.entries(duplicates)) out(`  duplicate ${what}: ${fmt(n)}: ${verdict(n === 0)}`);
  if (c.neighbour) {
    const rows = await rig.q<{ ms: number | null; at: number }>(
      `SELECT (extract(epoch FROM s.updated_at - r.created_at) * 1000)::float8 AS ms, (extract(epoch FROM r.created_at) * 1000)::float8 AS at
         FROM requests r LEFT JOIN syncs s ON s.request_id = r.id AND s.status IS NOT NULL WHERE r.id = ANY($1::bigint[])`,
      [neighbourIds],
    );
    const delays = rows.map((r) => r.ms ?? Number.POSITIVE_INFINITY);
    const windows = new Map<number, number[]>();
    for (const r of rows)
      windows.set(Math.floor((r.at - p.startedAt) / 10_000), [...(windows.get(Math.floor((r.at - p.startedAt) / 10_000)) ?? []), r.ms ?? Infinity]);
    out(
      `  neighbour per 10 s of the burst (p50/p95 ms): ${[...windows]
        .sort((a, b) => a[0] - b[0])
        .map(([w, d]) => `${w * 10}-${w * 10 + 10} s ${ms(pct(d, 0.5))}/${ms(pct(d, 0.95))}`)
        .join(', ')}`,
    );
    out(
      `  neighbour: ${fmt(delays.length)} events, acceptance to outcome p50 ${ms(pct(delays, 0.5))} ms, p95 ${ms(pct(delays, 0.95))} ms (target < ${TARGET.neighbourP95Ms} ms): ${verdict(delays.length > 0 && pct(delays, 0.95) < TARGET.neighbourP95Ms)}`,
    );
  }
  return verdicts.every(Boolean);
}

/** POSTs a new lead's EMAIL_SENT to the neighbour's source at NEIGHBOUR_PER_S until stopped; its request ids. */
function neighbourSender(port: number, code: string, tag: string): { stop(): Promise<number[]> } {
  const ids: number[] = [];
  const inFlight = new Set<Promise<void>>();
  let n = 0;
  const timer = setInterval(() => {
    const body = JSON.stringify({
      event_type: 'EMAIL_SENT',
      from_email: SENDER,
      to_email: `neighbour-${tag}-${(n += 1)}@elsewhere.test`,
      custom_subject: 'Hi',
    });
    const sent = fetch(`http://127.0.0.1:${port}/webhooks/${code}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body })
      .then((r) => r.json() as Promise<{ requestId?: number }>)
      .then((answer) => void (answer.requestId !== undefined && ids.push(answer.requestId)))
      .catch(() => {})
      .finally(() => inFlight.delete(sent));
    inFlight.add(sent);
  }, 1_000 / NEIGHBOUR_PER_S);
  return {
    async stop() {
      clearInterval(timer);
      await Promise.all(inFlight);
      // Its last events get the time any event gets.
      await new Promise((r) => setTimeout(r, 3_000));
      return ids;
    },
  };
}

/** Written more than once in the HubSpot emulator, for the campaign's leads: activities, tasks, companies, associations. */
function hubspotDuplicates(hubspot: HubspotEmulator, tag: string, written: number): Record<string, number> {
  const ours = new Set([...hubspot.contacts.values()].filter((c) => (c.properties.email ?? '').startsWith(`lead-${tag}-`)).map((c) => c.id));
  const toContact = new Map<string, number>();
  const companiesOf = new Map<string, Set<string>>();
  for (const a of hubspot.associations) {
    if (a.toType === 'contacts' && ours.has(a.toId)) toContact.set(a.fromType, (toContact.get(a.fromType) ?? 0) + 1);
    if (a.fromType === 'contacts' && a.toType === 'companies' && ours.has(a.fromId))
      companiesOf.set(a.fromId, (companiesOf.get(a.fromId) ?? new Set()).add(a.toId));
  }
  const domains = new Map<string, number>();
  for (const company of hubspot.companies.values())
    if ((company.properties.domain ?? '').startsWith(`co-${tag}-`)) domains.set(company.properties.domain!, (domains.get(company.properties.domain!) ?? 0) + 1);
  return {
    'activities (emails and notes written minus events written)': (toContact.get('emails') ?? 0) + (toContact.get('notes') ?? 0) - written,
    'tasks (tasks written minus events written)': (toContact.get('tasks') ?? 0) - written,
    'companies (domains with more than one)': [...domains.values()].filter((n) => n > 1).length,
    'company associations (contacts with more than one company)': [...companiesOf.values()].filter((s) => s.size > 1).length,
  };
}

/** Written more than once in the Attio emulator: notes and tasks (one each per event), people by email, companies by domain. */
function attioDuplicates(attio: AttioEmulator, tag: string, written: number): Record<string, number> {
  const people = [...attio.records.people.values()].map((p) => String(p.values.email_addresses?.[0]?.email_address)).filter((e) => e.includes(`-${tag}-`));
  const companies = [...attio.records.companies.values()].map((c) => String(c.values.domains?.[0]?.domain)).filter((d) => d.includes(`-${tag}-`));
  return {
    'notes (beyond one per event)': Math.max(0, attio.notes.size - written),
    'tasks (beyond one per event)': Math.max(0, attio.tasks.size - written),
    people: people.length - new Set(people).size,
    companies: companies.length - new Set(companies).size,
  };
}

/** Written more than once in the Close emulator: activities and tasks (one each per event), contacts by email, leads by domain. */
function closeDuplicates(close: CloseEmulator, tag: string, written: number): Record<string, number> {
  const contacts = [...close.contacts.values()].filter((c) => c.emails[0]?.email.includes(`-${tag}-`));
  const emails = new Set(contacts.map((c) => c.emails[0]!.email));
  const leads = [...close.leads.values()].filter((l) => typeof l.url === 'string' && l.url.includes(`-${tag}-`));
  return {
    'activities (beyond one per event)': Math.max(0, close.activities.size - written),
    'tasks (beyond one per event)': Math.max(0, close.tasks.size - written),
    contacts: contacts.length - emails.size,
    'leads (companies)': leads.length - new Set(leads.map((l) => l.url)).size,
  };
}

/** Written more than once in the Salesforce emulator: Tasks (each event has a completed one and a follow-up), and people. */
function salesforceDuplicates(salesforce: SalesforceEmulator, written: number): Record<string, number> {
  const tasks = [...salesforce.tasks.values()];
  const people = new Map<string, number>();
  for (const record of [...salesforce.leads.values(), ...salesforce.contacts.values()]) {
    const email = typeof record.Email === 'string' ? record.Email.toLowerCase() : '';
    if (email) people.set(email, (people.get(email) ?? 0) + 1);
  }
  return {
    'activity Tasks (completed Tasks minus events written)': tasks.filter((t) => t.Status === 'Completed').length - written,
    'follow-up Tasks (minus events written)': tasks.filter((t) => t.Status === 'Not Started').length - written,
    'people (emails with more than one Lead or Contact)': [...people.values()].filter((n) => n > 1).length,
  };
}

const OWNERS = [
  { id: '501', email: SENDER, firstName: 'Rita', lastName: 'Rep', userId: 9001 },
  { id: '502', email: 'other@seller.test', firstName: 'Otto', lastName: 'Other', userId: 9002 },
];

function fixture(tag: string, c: Case, salesforce: SalesforceEmulator | undefined) {
  const options = { createOrUpdateCompany: true, createOrUpdateTask: true, assignContactOwner: true, crmObjectType: null };
  const sources = ['A', 'B'].map((s) => ({ ref: `busy${s}`, platform: 'smartlead', ingressCode: `${tag}BusySource${s}`, config: options }));
  const busy =
    c.crm === 'HUBSPOT'
      ? { ref: 'busy', crm: 'HUBSPOT', credentials: { accessToken: `${tag}-busy` }, crmRateLimit: { requestsPer10s: c.limit }, sources }
      : c.crm === 'SALESFORCE'
        ? {
            ref: 'busy',
            crm: 'SALESFORCE',
            credentials: { instanceUrl: salesforce!.instanceUrl, accessToken: `${tag}-busy` },
            crmRateLimit: { maxConcurrency: c.limit },
            sources,
          }
        : c.crm === 'CLOSE'
          ? { ref: 'busy', crm: 'CLOSE', credentials: { apiKey: `${tag}-busy` }, crmRateLimit: { requestsPerSecond: c.limit }, sources }
          : { ref: 'busy', crm: 'ATTIO', credentials: { accessToken: `${tag}-busy` }, crmRateLimit: { requestsPerSecond: c.limit }, sources };
  // Another customer's portal, with the same plan (and limit) on the same HubSpot.
  const neighbour = {
    ref: 'neighbour',
    crm: 'HUBSPOT',
    credentials: { accessToken: `${tag}-neighbour` },
    crmRateLimit: { requestsPer10s: c.limit },
    sources: [{ ref: 'neighbourSource', platform: 'smartlead', ingressCode: `${tag}NeighbourSource`, config: options }],
  };
  return {
    accounts: [
      { ref: `${tag}-busy`, email: `busy-${tag}@bench.example`, connections: [busy] },
      ...(c.neighbour ? [{ ref: `${tag}-neighbour`, email: `neighbour-${tag}@bench.example`, connections: [neighbour] }] : []),
    ],
  };
}
