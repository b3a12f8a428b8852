/**
 * The support explorer's request lineage, after real traffic through the ingress and the real worker:
 * one GraphQL document from `request(id)` shows the raw body (and audits the read), what the parser made
 * of it, its HubSpot sync with the CRM's ids, both forwarding attempts (a 500, then its retry's 2xx), no
 * attempt still due, the reply relay's sent email and the platform events; a body the parser cannot read
 * shows why, next to its failed sync; and no one without a staff token reaches any of it.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startDestinationEmulator, type DestinationEmulator } from '../../src/emulators/destination.js';
import { startHubspotEmulator, type HubspotEmulator } from '../../src/emulators/hubspot.js';
import { startSmtpEmulator, type SmtpEmulator } from '../../src/emulators/smtp.js';
import { sealSecret } from '../../src/domain/secrets.js';
import { seedTestAccounts } from '../support/accounts.js';
import { TEST_ENCRYPTION_KEY } from '../support/database.js';
import { ingest } from '../support/forwarding.js';
import { RELAY_FROM, smartleadReplySample } from '../support/relays.js';
import { SUPPORT_TOKEN, useTestServer } from '../support/server.js';
import { eventually, startTestWorker } from '../support/worker.js';

const ctx = useTestServer();
const HUBSPOT_TOKEN = 'lineage-hubspot-token';
const LEAD = 'lineage.lead@prospect.test';
const REP = 'lineage.rep@reps.test';

let hubspot: HubspotEmulator;
let receiver: DestinationEmulator;
let smtp: SmtpEmulator;
let worker: { stop(): Promise<void> };
let accountId: number;
let connectionId: number;
let replySourceId: number;
let destinationId: number;
let relayId: number;
let apiKey: string;

beforeAll(async () => {
  const ids = await seedTestAccounts(ctx.db.prisma);
  accountId = ids.accounts['acme']!;
  apiKey = ids.keys.acmeRead;
  connectionId = ids.connections['acme-hubspot']!;
  hubspot = await startHubspotEmulator({ accessToken: HUBSPOT_TOKEN });
  receiver = await startDestinationEmulator();
  smtp = await startSmtpEmulator();
  // The connection holds the emulator's token, so the sync writes for real.
  await ctx.db.prisma.connection.update({
    where: { id: connectionId },
    data: { credentialsEncrypted: sealSecret(TEST_ENCRYPTION_KEY, JSON.stringify({ accessToken: HUBSPOT_TOKEN })) },
  });

  // The reply's source: one forwarding destination and a reply relay without delay or category filter.
  const relay = await ctx.db.prisma.replyRelay.create({ data: { connectionId, description: 'lineage relay', ccEmail: REP, delayMinutes: 0 } });
  relayId = relay.id;
  const source = await ctx.db.prisma.source.create({
    data: { connectionId, platform: 'smartlead', ingressCode: 'lineageReply01', replyRelayId: relay.id },
  });
  replySourceId = source.id;
  const destination = await ctx.db.prisma.forwardingDestination.create({ data: { connectionId, url: `${receiver.url}/lineage` } });
  destinationId = destination.id;
  await ctx.db.prisma.destinationBinding.create({ data: { sourceId: source.id, destinationId, isDelayed: false } });

  // The unreadable body's source: nothing bound, only its sync to look at.
  await ctx.db.prisma.source.create({ data: { connectionId, platform: 'smartlead', ingressCode: 'lineageBroken01' } });

  // A forwarding retry one second after a failure, and relays sent through the SMTP emulator.
  worker = await startTestWorker(
    ctx.db.url,
    { urls: { HUBSPOT: hubspot.url } },
    { forwarding: { retrySchedule: [1] }, relays: { smtpUrl: smtp.url, from: RELAY_FROM, retrySchedule: [1] } },
  );
});

afterAll(async () => {
  await worker?.stop();
  await smtp?.close();
  await hubspot?.close();
  await receiver?.close();
});

function graphql(query: string, variables: Record<string, unknown> = {}, authorization: string | null = `Bearer ${SUPPORT_TOKEN}`) {
  return fetch(`${ctx.server.baseUrl}/graphql`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...(authorization === null ? {} : { authorization }) },
    body: JSON.stringify({ query, variables }),
  });
}

async function graphqlData<T>(query: string, variables: Record<string, unknown> = {}): Promise<T> {
  const res = await graphql(query, variables);
  const body = (await res.json()) as { data?: T; errors?: unknown };
  expect(body.errors).toBeUndefined();
  expect(res.status).toBe(200);
  return body.data!;
}

const LINEAGE = `query ($id: BigInt!) { request(id: $id) {
  id accountId contentType sourceId connectionId path createdAt
  rawBody
  parsed { ok event reason }
  sync { id status error attempts crmState updatedAt }
  deliveries { id destinationId status httpStatus replayOfDeliveryId payloadId }
  pendingDeliveries { destinationId attempt dueAt }
  relayExecutions { status messageId attempts sentAt }
  platformEvents { id type data }
} }`;

const AUDIT = '{ auditLog(limit: 1) { staff action arguments result } }';

interface Lineage {
  id: number;
  accountId: number;
  contentType: string | null;
  sourceId: number | null;
  connectionId: number | null;
  path: string;
  createdAt: string;
  rawBody: string;
  parsed: { ok: boolean; event: Record<string, unknown> | null; reason: string | null };
  sync: {
    id: number;
    status: string;
    error: { message?: string } | null;
    attempts: number;
    crmState: Record<string, unknown> | null;
    updatedAt: string;
  } | null;
  deliveries: Array<{ id: number; destinationId: number; status: string; httpStatus: number | null; replayOfDeliveryId: number | null; payloadId: number }>;
  pendingDeliveries: Array<{ destinationId: number; attempt: number; dueAt: string }>;
  relayExecutions: Array<{ status: string; messageId: string; attempts: number; sentAt: string | null }>;
  platformEvents: Array<{ id: string; type: string; data: unknown }>;
}

describe('request(id) lineage for support staff', () => {
  it('shows a reply from its raw body to its CRM sync, both forwarding attempts and the relayed email, and audits the body read', async () => {
    // Setup: the destination answers 500 to the first POST and 200 to the retry.
    receiver.answerNext(1, { status: 500, body: '{"error":"try again"}' }, '/lineage');
    const body = smartleadReplySample(LEAD, '<lineage-reply@prospect.test>');

    // Action: one reply through the ingress; wait for the worker to finish every branch of it.
    const requestId = await ingest(ctx.server.baseUrl, 'lineageReply01', body);
    await eventually(
      async () => {
        const [sync] = await ctx.db.query<{ status: string | null }>('SELECT status::text AS status FROM syncs WHERE request_id = $1', [requestId]);
        const [deliveries] = await ctx.db.query<{ n: number }>('SELECT count(*)::int AS n FROM deliveries WHERE request_id = $1', [requestId]);
        const [relayed] = await ctx.db.query<{ status: string }>('SELECT status FROM relay_executions WHERE request_id = $1', [requestId]);
        return sync?.status === 'success' && deliveries?.n === 2 && relayed?.status === 'sent' ? true : undefined;
      },
      15_000,
      'the sync, both deliveries and the relayed email',
    );
    const { request } = await graphqlData<{ request: Lineage }>(LINEAGE, { id: String(requestId) });
    const { auditLog } = await graphqlData<{ auditLog: Array<{ staff: string; action: string; arguments: { requestIds?: string[] }; result: unknown }> }>(
      AUDIT,
    );

    // Assertions: the request itself.
    expect(request).toMatchObject({
      id: requestId,
      accountId,
      contentType: 'application/json',
      sourceId: replySourceId,
      connectionId,
      path: 'lineageReply01',
      createdAt: expect.any(String),
    });
    expect(request.rawBody).toBe(body);

    // What the parser makes of it: the canonical reply about the lead.
    expect(request.parsed).toMatchObject({
      ok: true,
      reason: null,
      event: {
        platform: 'smartlead',
        eventType: 'EMAIL_REPLY',
        rawEventType: 'EMAIL_REPLY',
        identity: LEAD,
        contact: { email: LEAD },
        message: { direction: 'inbound', text: 'Sounds good, send times' },
      },
    });

    // Its sync: written, with the contact HubSpot holds and the activity it created.
    const contact = [...hubspot.contacts.values()].find((c) => c.properties.email === LEAD);
    expect(contact).toBeDefined();
    expect(request.sync).toMatchObject({ status: 'success', error: null, attempts: 1, crmState: { contactId: contact!.id, activityId: expect.any(String) } });
    const activityId = request.sync!.crmState!.activityId as string;
    expect(hubspot.emails.has(activityId) || hubspot.notes.has(activityId)).toBe(true);

    // Both forwarding attempts, oldest first, and nothing still due.
    expect(request.deliveries).toEqual([
      { id: expect.any(Number), destinationId, status: 'error', httpStatus: 500, replayOfDeliveryId: null, payloadId: requestId },
      { id: expect.any(Number), destinationId, status: 'success', httpStatus: 200, replayOfDeliveryId: null, payloadId: requestId },
    ]);
    expect(request.pendingDeliveries).toEqual([]);
    expect(receiver.on('/lineage')).toHaveLength(2);

    // The relayed email, once.
    expect(request.relayExecutions).toEqual([
      { status: 'sent', messageId: `<relay-${relayId}-${requestId}@pipeline.test>`, attempts: 1, sentAt: expect.any(String) },
    ]);
    expect(smtp.messages.filter((m) => m.envelope.to.includes(REP))).toHaveLength(1);

    // Platform events: a list (a first successful sync on a healthy pipeline causes none).
    expect(Array.isArray(request.platformEvents)).toBe(true);

    // The body read is in the audit log, naming the request.
    expect(auditLog).toHaveLength(1);
    expect(auditLog[0]).toMatchObject({ action: 'read:Request.body', arguments: { requestIds: [String(requestId)] } });
  });

  it('shows why a body gave no event, next to its failed sync', async () => {
    // Setup: an array where Smartlead sends an object; the ingress takes any JSON.
    const requestId = await ingest(ctx.server.baseUrl, 'lineageBroken01', '[1,2]');
    await eventually(async () => {
      const [sync] = await ctx.db.query<{ status: string | null }>('SELECT status::text AS status FROM syncs WHERE request_id = $1', [requestId]);
      return sync?.status ? sync.status : undefined;
    });

    // Action
    const { request } = await graphqlData<{ request: Lineage }>(
      `query ($id: BigInt!) { request(id: $id) { rawBody parsed { ok event reason } sync { status error } deliveries { id } relayExecutions { status } } }`,
      { id: String(requestId) },
    );

    // Assertions: the parser's reason, the same the sync recorded as its error.
    expect(request.rawBody).toBe('[1,2]');
    expect(request.parsed.ok).toBe(false);
    expect(request.parsed.event).toBeNull();
    expect(request.parsed.reason).toEqual(expect.stringMatching(/\S/));
    expect(request.sync).toMatchObject({ status: 'error' });
    expect(request.sync!.error?.message).toContain(request.parsed.reason!);
    expect(request.deliveries).toEqual([]);
    expect(request.relayExecutions).toEqual([]);
  });

  it.each([
    ['no Authorization header', () => null],
    ["the account's own API key", () => `Bearer ${apiKey}`],
  ])('refuses the lineage (raw body included) to %s with a GraphQL-shaped 401, and audits nothing', async (_label, authorization) => {
    // Setup: a request of the reply's source, and the body reads audited so far.
    const [row] = await ctx.db.query<{ id: string }>('SELECT id::text AS id FROM requests WHERE source_id = $1 LIMIT 1', [replySourceId]);
    const bodyReads = async () => (await ctx.db.query<{ n: number }>("SELECT count(*)::int AS n FROM audit_log WHERE action = 'read:Request.body'"))[0]!.n;
    const before = await bodyReads();

    // Action
    const res = await graphql(LINEAGE, { id: row!.id }, authorization());

    // Assertions: refused before anything ran; no body in the answer, no audit row.
    expect(res.status).toBe(401);
    const text = await res.text();
    expect(JSON.parse(text)).toEqual({ errors: [{ message: 'A support staff token is required', extensions: { code: 'UNAUTHENTICATED' } }] });
    expect(text).not.toContain(LEAD);
    expect(await bodyReads()).toBe(before);
  });
});
