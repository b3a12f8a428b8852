import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { CrmConfig } from '../../src/connectors/crm/index.js';
import { createHttpClient, type HttpClient } from '../../src/connectors/http/client.js';
import { EVENT_TYPES } from '../../src/domain/event-types.js';
import { startAttioEmulator, type AttioEmulator } from '../../src/emulators/attio.js';
import { ALL_OPTIONS, connector, crmEvent, NO_OPTIONS, recorder, thrown } from '../support/crm-run.js';
import { crmUrls } from '../support/worker.js';

// The Attio connector against the Attio emulator, over real sockets (127.0.0.1, so OUTBOUND_ALLOW_PRIVATE on).

let http: HttpClient;
let attio: AttioEmulator;
let connections = 0;

beforeAll(() => {
  http = createHttpClient({ allowPrivate: true });
});

afterAll(() => {
  http.close();
});

beforeEach(async () => {
  attio = await startAttioEmulator({ tokens: ['attio-token'] });
});

afterEach(async () => {
  await attio.close();
});

/** An Attio connector with its own memory (the connection id keys what it remembers between syncs). */
function attioConnector(extra: Partial<CrmConfig> = {}, credentials: unknown = { accessToken: 'attio-token' }) {
  connections += 1;
  return connector('ATTIO', credentials, {
    urls: crmUrls({ ATTIO: attio.url }),
    outboundAllowPrivate: true,
    http,
    retry: { baseDelayMs: 20, maxDelayMs: 100 },
    timeoutMs: 2_000,
    connection: { id: 8_000 + connections, organizationId: null },
    ...extra,
  });
}

const textValues = (values: Array<Record<string, unknown>> | undefined) => (values ?? []).map((v) => v.value ?? v.full_name ?? v.email_address ?? v.domain);

describe('Attio connector', () => {
  it('asserts the person by email alone, fills in the name it lacks, and logs the event as a backdated markdown note', async () => {
    const rec = recorder(crmEvent(), NO_OPTIONS);

    const outcome = await attioConnector().write(rec.run);

    expect(outcome.status).toBe('success');
    const [person] = attio.peopleByEmail('jane.doe@acme.test');
    expect(textValues(person?.values.name)).toEqual(['Jane Doe']);
    const assert = attio.apiRequests().find((r) => r.method === 'PUT');
    expect(assert?.body).toEqual({ data: { values: { email_addresses: ['jane.doe@acme.test'] } } });
    const [note] = attio.notesOf(person!.id.record_id);
    expect(note).toMatchObject({ parent_object: 'people', title: '[smartlead] Email sent: Quick question', created_at: '2025-03-04T10:00:00.000Z' });
    expect(note?.content_markdown).toContain('**Campaign:** Q3 outbound');
    expect(outcome.result).toMatchObject({ crm: 'ATTIO', recordId: person!.id.record_id, personCreated: true, noteId: note!.id.note_id });
    expect(rec.lasts.at(-1)).toBe(true);
  });

  it('writes every canonical event type as a note on the person, with its task', async () => {
    const writer = attioConnector();
    for (const eventType of Object.keys(EVENT_TYPES)) {
      const direction = EVENT_TYPES[eventType as keyof typeof EVENT_TYPES].reply ? 'inbound' : 'outbound';
      const outcome = await writer.write(recorder(crmEvent({ eventType, direction }), { ...NO_OPTIONS, createOrUpdateTask: true }).run);
      expect(outcome.status, eventType).toBe('success');
    }

    expect(attio.records.people.size).toBe(1);
    expect(attio.notes.size).toBe(Object.keys(EVENT_TYPES).length);
    expect(attio.tasks.size).toBe(Object.keys(EVENT_TYPES).length);
    expect([...attio.notes.values()].map((n) => n.title)).toContain('[smartlead] Email reply: Quick question');
  });

  it("never overwrites what a rep wrote: an existing person's name and other addresses stay", async () => {
    const seeded = attio.seed('people', {
      email_addresses: ['other@acme.test', 'jane.doe@acme.test'],
      name: { first_name: 'Janet', last_name: 'D.', full_name: 'Janet D.' },
    });
    seeded.created_at = '2024-01-01T00:00:00.000Z';

    const outcome = await attioConnector().write(recorder(crmEvent(), NO_OPTIONS).run);

    const [person] = attio.peopleByEmail('jane.doe@acme.test');
    expect(outcome.result).toMatchObject({ recordId: person!.id.record_id, personCreated: false });
    expect(textValues(person?.values.name)).toEqual(['Janet D.']);
    expect(textValues(person?.values.email_addresses)).toEqual(['other@acme.test', 'jane.doe@acme.test']);
    expect(attio.apiRequests().filter((r) => r.method === 'PATCH')).toEqual([]);
  });

  it('asserts the company by domain, names it, links the person to it, and assigns the task to the sender', async () => {
    const outcome = await attioConnector().write(recorder(crmEvent(), ALL_OPTIONS).run);

    expect(outcome.status).toBe('success');
    const [company] = [...attio.records.companies.values()];
    expect(textValues(company?.values.domains)).toEqual(['acme.test']);
    expect(textValues(company?.values.name)).toEqual(['Acme']);
    const [person] = attio.peopleByEmail('jane.doe@acme.test');
    expect(person?.values.company?.[0]).toMatchObject({ target_record_id: company!.id.record_id });
    const [task] = attio.tasksOf(person!.id.record_id);
    expect(task).toMatchObject({
      is_completed: false,
      deadline_at: '2025-03-05T10:00:00.000Z',
      assignees: [{ referenced_actor_id: 'a0000000-0000-4000-8000-000000000002' }],
    });
    expect(outcome.result).toMatchObject({ companyId: company!.id.record_id, taskId: task!.id.task_id });
  });

  it('warns and leaves the task unassigned when the sender is no active member', async () => {
    const outcome = await attioConnector().write(
      recorder(crmEvent({ senderEmail: 'gone@seller.test' }), { ...NO_OPTIONS, assignContactOwner: true, createOrUpdateTask: true }).run,
    );

    expect(outcome.status).toBe('warning');
    expect(outcome.result.warnings).toEqual([{ step: 'owner', message: 'Attio assignee not set: no active workspace member has the sender email' }]);
    expect([...attio.tasks.values()][0]?.assignees).toEqual([]);
  });

  it('creates a social-only person with the LinkedIn URL and finds them again by another variant of it', async () => {
    const social = (profileUrl: string) => crmEvent({ eventType: 'MESSAGE_SENT', email: null, profileUrl, identity: profileUrl, subject: null });
    const writer = attioConnector();

    const first = await writer.write(recorder(social('https://www.linkedin.com/in/jane-doe/'), NO_OPTIONS).run);
    const second = await writer.write(recorder(social('linkedin.com/in/Jane-Doe'), NO_OPTIONS).run);

    expect(attio.records.people.size).toBe(1);
    const [person] = [...attio.records.people.values()];
    expect(textValues(person?.values.linkedin)).toEqual(['https://www.linkedin.com/in/jane-doe']);
    expect(second.result).toMatchObject({ recordId: first.result.recordId, personCreated: false });
    expect(attio.notes.size).toBe(2);
  });

  it('asserts one person for the syncs of one email writing at once', async () => {
    const writer = attioConnector();
    await Promise.all([1, 2, 3].map((i) => writer.write(recorder(crmEvent({ subject: `Step ${i}` }), NO_OPTIONS).run)));

    expect(attio.apiRequests().filter((r) => r.method === 'PUT')).toHaveLength(1);
    expect(attio.records.people.size).toBe(1);
    expect(attio.notes.size).toBe(3);
  });

  it('writes no duplicate note when the answer to its create was lost', async () => {
    attio.slow(400, '/v2/notes');
    const writer = attioConnector({ timeoutMs: 150 });
    const first = recorder(crmEvent(), NO_OPTIONS);
    expect((await thrown(writer.write(first.run))).kind).toBe('unavailable');
    await new Promise((resolve) => setTimeout(resolve, 400));
    expect(attio.notes.size).toBe(1);

    attio.slow(0);
    const outcome = await writer.write(recorder(crmEvent(), NO_OPTIONS, first.persisted()).run);

    expect(outcome.status).toBe('success');
    expect(attio.notes.size).toBe(1);
    expect(outcome.result.noteId).toBe([...attio.notes.keys()][0]);
  });

  it.each([
    ['after the note was written ahead', 2],
    ['after the note was saved', 3],
    ['after the task was written ahead', 4],
  ])('writes no duplicate note or task when a run crashes %s and is re-run', async (_case, crashAt) => {
    const options = { ...NO_OPTIONS, createOrUpdateTask: true };
    const crashing = recorder(
      crmEvent(),
      options,
      {},
      {
        onSaveState: (n) => {
          if (n === crashAt) throw new Error('worker crashed');
        },
      },
    );
    const writer = attioConnector();
    await expect(writer.write(crashing.run)).rejects.toThrow('worker crashed');

    const outcome = await writer.write(recorder(crmEvent(), options, crashing.persisted()).run);

    expect(outcome.status).toBe('success');
    expect(attio.notes.size).toBe(1);
    expect(attio.tasks.size).toBe(1);
  });

  it('waits until the HTTP date of a 429 Retry-After, then writes', async () => {
    attio.failNext(1, { status: 429, retryAfter: 1, path: '/v2/objects/people/records' });

    const started = performance.now();
    const outcome = await attioConnector().write(recorder(crmEvent(), NO_OPTIONS).run);

    expect(outcome.status).toBe('success');
    // An HTTP date has whole seconds: the wait is up to a second.
    expect(performance.now() - started).toBeGreaterThanOrEqual(1);
    expect(attio.apiRequests()[0]?.status).toBe(429);
  });

  it('is an auth error naming no secret for a refused token, which no refresh can renew', async () => {
    const error = await thrown(attioConnector({}, { accessToken: 'revoked-attio-token' }).write(recorder(crmEvent(), NO_OPTIONS).run));

    expect(error).toMatchObject({ kind: 'auth', httpStatus: 401 });
    expect(JSON.stringify({ message: error.message, payload: error.payload })).not.toContain('revoked-attio-token');
  });

  it('reads the email addresses of a list of people page by page, and the domains of a list of companies', async () => {
    const people = Array.from({ length: 600 }, (_, i) => attio.seed('people', { email_addresses: [`p${i}@list.test`] }).id.record_id);
    const companies = ['acme.test', 'globex.test'].map((domain) => attio.seed('companies', { domains: [domain] }).id.record_id);
    const peopleList = attio.addList({ name: 'Do not contact', slug: 'do-not-contact', parent: 'people', recordIds: people });
    attio.addList({ name: 'Customers', slug: 'customers', parent: 'companies', recordIds: companies });
    const writer = attioConnector();
    const { run } = recorder(crmEvent(), NO_OPTIONS);
    const read = (source: unknown, blockType: 'ADDRESS' | 'DOMAIN') => ({
      source,
      blockType,
      renewCredentials: (used: { accessToken: string }, exchange: () => Promise<unknown>) => run.renewCredentials(used, exchange),
    });

    const pages: string[][] = [];
    for await (const page of writer.readList(read({ listId: peopleList }, 'ADDRESS'))) pages.push(page);
    const domains: string[] = [];
    for await (const page of writer.readList(read({ listId: 'customers' }, 'DOMAIN'))) domains.push(...page);

    expect(pages.map((p) => p.length)).toEqual([500, 100]);
    expect(pages.flat()).toContain('p599@list.test');
    expect(domains.sort()).toEqual(['acme.test', 'globex.test']);
  });
});
