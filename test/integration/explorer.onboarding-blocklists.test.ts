/**
 * Onboarding in the explorer (issue 30), block lists: staff create a block list (its CRM list checked
 * with the CRM registry's schema, its sequencer account with the sequencer registry's, stored sealed),
 * change and delete it. The answer is what GET /api/v1/blocklists shows; the sequencer's key is in no
 * answer and no audit row, whether the input was accepted or refused; a new CRM source reloads a resting
 * list and waits for a running one.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { seedFixture, type SeedResult } from '../../src/admin/seed.js';
import { openSecret } from '../../src/domain/secrets.js';
import { TEST_ENCRYPTION_KEY } from '../support/database.js';
import { auditRows, explorer, refusal } from '../support/onboarding.js';
import { apiGet } from '../support/rest.js';
import { useTestServer } from '../support/server.js';

const ctx = useTestServer();
const staff = (query: string, variables?: Record<string, unknown>) => explorer(ctx.server.baseUrl, query, variables);
let seeded: SeedResult;
let key: string;

const SECRET = 'onboardingSmartleadKeySECRET01';
const ROTATED = 'onboardingSmartleadKeySECRET02';
const LIST =
  'id connectionId listName crm platform blockType status isEnabled clientId syncedCount pendingCount lastFetchedAt lastError lastAttemptedAt createdAt';
const CREATE = `mutation ($input: CreateBlocklistInput!) { createBlocklist(input: $input) { ${LIST} hasSequencerAccount } }`;
const UPDATE = `mutation ($id: Int!, $input: UpdateBlocklistInput!) { updateBlocklist(id: $id, input: $input) { ${LIST} hasSequencerAccount } }`;

beforeAll(async () => {
  seeded = await seedFixture(
    ctx.db.prisma,
    {
      accounts: [
        {
          ref: 'acme',
          connections: [
            {
              ref: 'hub',
              crm: 'HUBSPOT',
              blocklists: [
                {
                  ref: 'synced',
                  listName: 'Customers',
                  platform: 'smartlead',
                  blockType: 'DOMAIN',
                  status: 'SYNCED',
                  crmSource: { listId: '101' },
                  sequencer: { apiKey: 'seededSmartleadKey0001', clientId: '77' },
                  entries: ['globex.test'],
                },
                { ref: 'fetching', listName: 'Do not contact', platform: 'instantly', blockType: 'ADDRESS', status: 'FETCHING', crmSource: { listId: '102' } },
              ],
            },
            { ref: 'sf', crm: 'SALESFORCE' },
          ],
          apiKeys: [{ ref: 'read', name: 'Read key' }],
        },
      ],
    },
    TEST_ENCRYPTION_KEY,
  );
  key = seeded.generatedSecrets.read!;
});

async function restList(id: number) {
  return ((await apiGet(ctx.server.baseUrl, '/blocklists', key)).body.blocklists as Array<{ id: number }>).find((b) => b.id === id);
}

/** Every stored audit row as text. */
async function auditText() {
  return JSON.stringify(await ctx.db.query('SELECT arguments, result FROM audit_log'));
}

describe('createBlocklist', () => {
  it('stores the CRM list and the sealed sequencer account, answers what REST shows, and keeps the key out of the answer and the audit', async () => {
    const created = await staff(CREATE, {
      input: {
        connectionId: seeded.connections.hub,
        listName: 'Partners',
        platform: 'smartlead',
        blockType: 'DOMAIN',
        crmSource: { listId: 42 },
        sequencer: { apiKey: SECRET, clientId: '1234' },
      },
    });

    expect(created.body.errors).toBeUndefined();
    const { hasSequencerAccount, ...list } = created.body.data!.createBlocklist;
    expect(hasSequencerAccount).toBe(true);
    expect(list).toMatchObject({ listName: 'Partners', crm: 'HUBSPOT', status: 'CREATED', isEnabled: true, clientId: '1234', syncedCount: 0 });
    expect(await restList(list.id)).toEqual(list);
    const [row] = await ctx.db.query<{ crm_source: unknown; sealed: string }>(
      'SELECT crm_source, sequencer_credentials_encrypted AS sealed FROM blocklists WHERE id = $1',
      [list.id],
    );
    expect(row!.crm_source).toEqual({ listId: '42' });
    expect(JSON.parse(openSecret(TEST_ENCRYPTION_KEY, row!.sealed))).toEqual({ apiKey: SECRET });

    expect(JSON.stringify(created.body)).not.toContain(SECRET);
    const [audit] = await auditRows(ctx.db, 'createBlocklist');
    expect(audit!.result).toEqual({ data: { createBlocklist: expect.objectContaining({ id: list.id, clientId: '1234' }) } });
    expect(JSON.stringify(audit)).not.toContain(SECRET);
  });

  it('names each bad field with the registries’ rules, and records no key even from a refused or inline input', async () => {
    const base = { connectionId: seeded.connections.sf, listName: 'Opt-outs', platform: 'smartlead' };
    const account = await staff(CREATE, { input: { ...base, blockType: 'ADDRESS', crmSource: { object: 'Account', field: 'Blocked__c' } } });
    expect(refusal(account)).toEqual({
      message: 'input.crmSource.object: an ADDRESS list reads Email, which Account does not have (use Contact or Lead)',
      code: 'BAD_REQUEST',
    });
    const shape = await staff(CREATE, { input: { ...base, connectionId: seeded.connections.hub, blockType: 'DOMAIN', crmSource: { object: 'Contact' } } });
    expect(refusal(shape).message).toBe('input.crmSource: a HUBSPOT connection takes {listId}, not {object}');
    const missing = await staff(CREATE, { input: { ...base, blockType: 'EMAIL' } });
    expect(missing.body.errors?.[0]?.extensions?.messages).toEqual([expect.stringMatching(/^input\.blockType: /)]);
    const lemlist = await staff(CREATE, { input: { ...base, platform: 'lemlist', blockType: 'ADDRESS', hasCrmSource: false, sequencer: { apiKey: SECRET } } });
    expect(refusal(lemlist).message).toBe('input.sequencer: block lists are pushed only to smartlead, instantly, and emailbison, not lemlist');
    const spaced = await staff(CREATE, { input: { ...base, blockType: 'ADDRESS', crmSource: { object: 'Lead' }, sequencer: { apiKey: `${SECRET} x` } } });
    expect(refusal(spaced).message).toBe('input.sequencer.apiKey: must not contain spaces');
    // Written in the document rather than as a variable.
    const inline = await staff(
      `mutation { createBlocklist(input: { connectionId: ${seeded.connections.sf}, listName: "x", platform: "instantly", blockType: "ADDRESS",
         crmSource: { object: "Lead" }, sequencer: { apiKey: "${SECRET}", clientId: "1" } }) { id } }`,
    );
    expect(refusal(inline).message).toBe('input.sequencer: the instantly sequencer takes {apiKey}, not {clientId}');
    // Refused by GraphQL itself before any resolver runs (a wrong type elsewhere in the input), as a variable and inline.
    const mistyped = await staff(CREATE, { input: { ...base, connectionId: 'one', blockType: 'ADDRESS', sequencer: { apiKey: SECRET } } });
    expect(mistyped.body.errors?.length).toBeGreaterThan(0);
    const mistypedInline = await staff(
      `mutation { createBlocklist(input: { connectionId: "one", listName: "x", platform: "smartlead", blockType: ADDRESS, sequencer: { apiKey: "${SECRET}" } }) { id } }`,
    );
    expect(mistypedInline.body.errors?.length).toBeGreaterThan(0);

    expect((await auditRows(ctx.db, 'createBlocklist')).length).toBeGreaterThanOrEqual(7);
    expect(await auditText()).not.toContain(SECRET);
  });
});

describe('updateBlocklist', () => {
  it('reloads a resting list from its new CRM source, rotates the key without showing it, and answers what REST shows', async () => {
    const synced = seeded.blocklists.synced!;
    const renamed = await staff(UPDATE, {
      id: synced,
      input: { listName: 'Customers (all)', crmSource: { listId: '555' }, sequencer: { apiKey: ROTATED, clientId: '77' } },
    });

    expect(renamed.body.errors).toBeUndefined();
    const { hasSequencerAccount, ...list } = renamed.body.data!.updateBlocklist;
    // A new source: a full fetch within a minute (the schedule takes CREATED lists); the entry already pushed stays pushed.
    expect(list).toMatchObject({ listName: 'Customers (all)', status: 'CREATED', lastAttemptedAt: null, clientId: '77', syncedCount: 1 });
    expect(hasSequencerAccount).toBe(true);
    expect(await restList(synced)).toEqual(list);
    const [row] = await ctx.db.query<{ crm_source: unknown; sealed: string }>(
      'SELECT crm_source, sequencer_credentials_encrypted AS sealed FROM blocklists WHERE id = $1',
      [synced],
    );
    expect(row!.crm_source).toEqual({ listId: '555' });
    expect(JSON.parse(openSecret(TEST_ENCRYPTION_KEY, row!.sealed))).toEqual({ apiKey: ROTATED });
    expect(JSON.stringify(renamed.body)).not.toContain(ROTATED);
    expect(await auditText()).not.toContain(ROTATED);

    // Only the name: the source and the status stay.
    const named = await staff(UPDATE, { id: synced, input: { listName: 'Customers' } });
    expect(named.body.data!.updateBlocklist).toMatchObject({ listName: 'Customers', status: 'CREATED' });
  });

  it('refuses another client for pushed entries, a new source during a round, and nothing to change', async () => {
    const client = await staff(UPDATE, { id: seeded.blocklists.synced, input: { sequencer: { apiKey: ROTATED, clientId: '88' } } });
    expect(refusal(client)).toEqual({
      message: 'input.sequencer.clientId: the list has pushed 1 entries to client 77: a list for another client is a new block list',
      code: 'BAD_REQUEST',
    });
    const running = await staff(UPDATE, { id: seeded.blocklists.fetching, input: { crmSource: { listId: '9' } } });
    expect(refusal(running)).toEqual({ message: expect.stringMatching(/^Blocklist round in progress/), code: 'CONFLICT' });
    const dropped = await staff(UPDATE, { id: seeded.blocklists.fetching, input: { crmSource: null } });
    expect(refusal(dropped).message).toBe('input.crmSource: is required when hasCrmSource is true (a HUBSPOT connection takes {listId})');
    expect(refusal(await staff(UPDATE, { id: seeded.blocklists.fetching, input: {} })).message).toBe(
      'input: give a listName, a CRM source or a sequencer to change',
    );
    expect(refusal(await staff(UPDATE, { id: 987654, input: { listName: 'x' } }))).toEqual({ message: 'Blocklist 987654 not found', code: 'NOT_FOUND' });
    expect(await auditText()).not.toContain(ROTATED);
  });

  it('drops the CRM source when it is turned off', async () => {
    const input = { connectionId: seeded.connections.hub, listName: 'Manual', platform: 'instantly', blockType: 'ADDRESS', crmSource: { listId: '7' } };
    const { id } = (await staff(CREATE, { input })).body.data!.createBlocklist;
    const answer = await staff(UPDATE, { id, input: { hasCrmSource: false } });
    expect(answer.body.errors).toBeUndefined();
    expect(await ctx.db.query('SELECT has_crm_source, crm_source FROM blocklists WHERE id = $1', [id])).toEqual([{ has_crm_source: false, crm_source: null }]);
  });

  it('removes the sequencer account: the list is pushed nowhere', async () => {
    const answer = await staff(UPDATE, { id: seeded.blocklists.synced, input: { sequencer: null } });
    expect(answer.body.data!.updateBlocklist).toMatchObject({ hasSequencerAccount: false, clientId: null });
  });
});

describe('deleteBlocklist', () => {
  it('deletes the list and its entries, audited', async () => {
    const synced = seeded.blocklists.synced!;
    const answer = await staff('mutation ($id: Int!) { deleteBlocklist(id: $id) { id deleted } }', { id: synced });
    expect(answer.body.data).toEqual({ deleteBlocklist: { id: synced, deleted: true } });
    expect(await restList(synced)).toBeUndefined();
    expect(await ctx.db.query('SELECT id FROM blocklist_entries WHERE blocklist_id = $1', [synced])).toEqual([]);
    expect((await auditRows(ctx.db, 'deleteBlocklist')).map((row) => row.result)).toEqual([{ data: { deleteBlocklist: { id: synced, deleted: true } } }]);
  });
});
