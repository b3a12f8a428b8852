/**
 * Onboarding in the explorer (issue 30), forwarding and reply relays: staff create, change and delete
 * forwarding destinations, bind them to sources (event types, delayed), and manage reply relays, each
 * answer what the REST API shows, each mutation audited, bad input a 400 naming the field. A destination
 * that forwarded something and a relay that relayed a reply are kept (their history would go with them).
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { seedFixture, type SeedResult } from '../../src/admin/seed.js';
import { TEST_ENCRYPTION_KEY } from '../support/database.js';
import { auditRows, explorer, refusal } from '../support/onboarding.js';
import { apiGet } from '../support/rest.js';
import { useTestServer } from '../support/server.js';

const ctx = useTestServer();
const staff = (query: string, variables?: Record<string, unknown>) => explorer(ctx.server.baseUrl, query, variables);
let seeded: SeedResult;
let key: string;

const DESTINATION = 'id url description connectionId eventTypes isDelayed sourceIds createdAt';
const RELAY = 'id connectionId description ccEmail delayMinutes bodyTemplates categoryAllowlist { id name } sourceIds createdAt';
const CREATE_DESTINATION = `mutation ($input: CreateDestinationInput!) { createDestination(input: $input) { ${DESTINATION} } }`;
const BIND = `mutation ($input: DestinationBindingInput!) { createDestinationBinding(input: $input) { eventTypes isDelayed source { id } destination { id } } }`;
const CREATE_RELAY = `mutation ($input: CreateReplyRelayInput!) { createReplyRelay(input: $input) { ${RELAY} } }`;

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
              destinations: [{ ref: 'mirror', url: 'https://hooks.acme.test/mirror' }],
              replyRelays: [{ ref: 'used', ccEmail: 'dana@acme.test' }],
              sources: [
                { ref: 'fresh', platform: 'smartlead' },
                {
                  ref: 'busy',
                  platform: 'smartlead',
                  destinations: [{ destination: 'mirror' }],
                  replyRelay: 'used',
                  requests: [
                    {
                      body: { event_type: 'EMAIL_REPLY' },
                      sync: { status: 'success', eventType: 'EMAIL_REPLY', toEmail: 'a@b.test' },
                      deliveries: [{ destination: 'mirror', status: 'success', httpStatus: 200 }],
                    },
                  ],
                },
              ],
            },
            { ref: 'sf', crm: 'SALESFORCE', destinations: [{ ref: 'sf-hook', url: 'https://hooks.acme.test/sf' }] },
          ],
          apiKeys: [{ ref: 'read', name: 'Read key' }],
        },
      ],
    },
    TEST_ENCRYPTION_KEY,
  );
  key = seeded.generatedSecrets.read!;
  // The seeded relay has relayed a reply.
  await ctx.db.query(
    `INSERT INTO relay_executions (relay_id, request_id, account_id, connection_id, status, message_id, run_at)
     SELECT $1, r.id, r.account_id, r.connection_id, 'sent', '<x@relay.test>', now() FROM requests r WHERE r.source_id = $2`,
    [seeded.replyRelays.used, seeded.sources.busy],
  );
});

describe('forwarding destinations and their bindings', () => {
  it('creates a destination, binds it, changes and unbinds it, each answer what REST shows, each audited', async () => {
    const hub = seeded.connections.hub!;
    const fresh = seeded.sources.fresh!;

    // Create: the REST destination, bound to nothing yet.
    const created = await staff(CREATE_DESTINATION, { input: { connectionId: hub, url: 'https://hooks.acme.test/new', description: 'Warehouse' } });
    expect(created.body.errors).toBeUndefined();
    const destination = created.body.data!.createDestination;
    expect(destination).toMatchObject({ url: 'https://hooks.acme.test/new', description: 'Warehouse', connectionId: hub, eventTypes: [], sourceIds: [] });
    expect((await apiGet(ctx.server.baseUrl, `/destinations/${destination.id}`, key)).body).toEqual(destination);

    // Bind: the source forwards replies, after the sync.
    const bound = await staff(BIND, { input: { sourceId: fresh, destinationId: destination.id, eventTypes: ['EMAIL_REPLY'], isDelayed: true } });
    expect(bound.body.data!.createDestinationBinding).toEqual({
      eventTypes: ['EMAIL_REPLY'],
      isDelayed: true,
      source: { id: fresh },
      destination: { id: destination.id },
    });
    expect((await apiGet(ctx.server.baseUrl, `/destinations/${destination.id}`, key)).body).toMatchObject({
      eventTypes: ['EMAIL_REPLY'],
      isDelayed: true,
      sourceIds: [fresh],
    });
    const sources = (await apiGet(ctx.server.baseUrl, '/sources', key)).body.sources as Array<{ id: number; destinations: unknown[] }>;
    expect(sources.find((s) => s.id === fresh)!.destinations).toEqual([
      { url: 'https://hooks.acme.test/new', description: 'Warehouse', eventTypes: ['EMAIL_REPLY'], isDelayed: true },
    ]);

    // Update the binding (an empty list forwards all), then the destination.
    const updated = await staff('mutation ($input: DestinationBindingInput!) { updateDestinationBinding(input: $input) { eventTypes isDelayed } }', {
      input: { sourceId: fresh, destinationId: destination.id, eventTypes: [] },
    });
    expect(updated.body.data!.updateDestinationBinding).toEqual({ eventTypes: [], isDelayed: true });
    const renamed = await staff(`mutation ($id: Int!) { updateDestination(id: $id, input: { url: "https://hooks.acme.test/v2" }) { ${DESTINATION} } }`, {
      id: destination.id,
    });
    expect(renamed.body.data!.updateDestination).toMatchObject({ url: 'https://hooks.acme.test/v2', description: 'Warehouse', sourceIds: [fresh] });
    expect((await apiGet(ctx.server.baseUrl, `/destinations/${destination.id}`, key)).body).toEqual(renamed.body.data!.updateDestination);

    // Unbind, then delete the destination, which never forwarded anything.
    const unbound = await staff(
      'mutation ($s: Int!, $d: Int!) { deleteDestinationBinding(sourceId: $s, destinationId: $d) { sourceId destinationId deleted } }',
      {
        s: fresh,
        d: destination.id,
      },
    );
    expect(unbound.body.data!.deleteDestinationBinding).toEqual({ sourceId: fresh, destinationId: destination.id, deleted: true });
    const deleted = await staff('mutation ($id: Int!) { deleteDestination(id: $id) { id deleted } }', { id: destination.id });
    expect(deleted.body.data).toEqual({ deleteDestination: { id: destination.id, deleted: true } });
    expect((await apiGet(ctx.server.baseUrl, `/destinations/${destination.id}`, key)).status).toBe(404);

    for (const action of [
      'createDestination',
      'createDestinationBinding',
      'updateDestinationBinding',
      'updateDestination',
      'deleteDestinationBinding',
      'deleteDestination',
    ]) {
      const rows = await auditRows(ctx.db, action);
      expect({ action, result: Object.keys(rows[0]?.result ?? {}) }).toEqual({ action, result: ['data'] });
    }
  });

  it('names the bad field: a URL, a binding across connections or twice, an unknown source', async () => {
    const url = await staff(CREATE_DESTINATION, { input: { connectionId: seeded.connections.hub, url: 'ftp://hooks.acme.test' } });
    expect(refusal(url)).toEqual({ message: 'input.url: must be an http:// or https:// URL', code: 'BAD_REQUEST' });
    const across = await staff(BIND, { input: { sourceId: seeded.sources.fresh, destinationId: seeded.destinations['sf-hook'] } });
    expect(refusal(across).message).toBe(`input.destinationId: ${seeded.destinations['sf-hook']} is not a destination of this source's connection`);
    const twice = await staff(BIND, { input: { sourceId: seeded.sources.busy, destinationId: seeded.destinations.mirror } });
    expect(refusal(twice).message).toBe('input.destinationId: is already bound to this source (updateDestinationBinding changes it)');
    const events = await staff(BIND, { input: { sourceId: 987654, destinationId: seeded.destinations.mirror, eventTypes: [''] } });
    expect(events.body.errors?.[0]?.extensions?.messages).toEqual([expect.stringMatching(/^input\.eventTypes\[0\]: /), 'input.sourceId: no source 987654']);
    expect(refusal(await staff(CREATE_DESTINATION, { input: { connectionId: 987654, url: 'https://x.test' } })).message).toBe(
      'input.connectionId: no connection 987654',
    );
  });

  it('keeps a destination that forwarded something: unbinding is the way to stop it', async () => {
    const mirror = seeded.destinations.mirror!;
    const answer = await staff('mutation ($id: Int!) { deleteDestination(id: $id) { id } }', { id: mirror });
    expect(refusal(answer)).toEqual({
      message: expect.stringMatching(new RegExp(`^Destination ${mirror} has deliveries .*deleteDestinationBinding`)),
      code: 'CONFLICT',
    });
    expect(await ctx.db.query('SELECT id FROM deliveries WHERE destination_id = $1', [mirror])).toHaveLength(1);
  });
});

describe('reply relays', () => {
  it('creates, binds, changes and deletes a relay, each answer what REST shows, each audited', async () => {
    const hub = seeded.connections.hub!;
    const fresh = seeded.sources.fresh!;
    const categories = [{ id: '1', name: 'Interested' }];
    const created = await staff(CREATE_RELAY, {
      input: {
        connectionId: hub,
        ccEmail: 'rep@acme.test',
        description: 'Copy the rep',
        delayMinutes: 10,
        bodyTemplates: ['{{reply_text}}'],
        categoryAllowlist: categories,
      },
    });
    expect(created.body.errors).toBeUndefined();
    const relay = created.body.data!.createReplyRelay;
    expect(relay).toMatchObject({ connectionId: hub, ccEmail: 'rep@acme.test', delayMinutes: 10, categoryAllowlist: categories, sourceIds: [] });
    const restRelay = async (id: number) =>
      ((await apiGet(ctx.server.baseUrl, '/destinations/reply-relays', key)).body.replyRelays as Array<{ id: number }>).find((r) => r.id === id);
    expect(await restRelay(relay.id)).toEqual(relay);

    // Bound through the source; then changed.
    const bound = await staff('mutation ($id: Int!, $r: Int) { updateSource(id: $id, input: { replyRelayId: $r }) { replyRelaySummary { id } } }', {
      id: fresh,
      r: relay.id,
    });
    expect(bound.body.data!.updateSource.replyRelaySummary).toEqual({ id: relay.id });
    const changed = await staff(`mutation ($id: Int!) { updateReplyRelay(id: $id, input: { delayMinutes: 0, categoryAllowlist: [] }) { ${RELAY} } }`, {
      id: relay.id,
    });
    expect(changed.body.data!.updateReplyRelay).toMatchObject({ delayMinutes: 0, categoryAllowlist: [], ccEmail: 'rep@acme.test', sourceIds: [fresh] });
    expect(await restRelay(relay.id)).toEqual(changed.body.data!.updateReplyRelay);

    // Deleted (it never relayed a reply): its source is unbound.
    const deleted = await staff('mutation ($id: Int!) { deleteReplyRelay(id: $id) { id deleted } }', { id: relay.id });
    expect(deleted.body.data).toEqual({ deleteReplyRelay: { id: relay.id, deleted: true } });
    expect(await ctx.db.query('SELECT reply_relay_id FROM sources WHERE id = $1', [fresh])).toEqual([{ reply_relay_id: null }]);
    for (const action of ['createReplyRelay', 'updateReplyRelay', 'deleteReplyRelay']) {
      expect((await auditRows(ctx.db, action)).map((row) => Object.keys(row.result))).toEqual([['data']]);
    }
  });

  it('names each bad field, and keeps a relay that relayed a reply', async () => {
    const many = Array.from({ length: 51 }, (_, i) => ({ id: String(i), name: `Category ${i}` }));
    const bad = await staff(CREATE_RELAY, {
      input: { connectionId: seeded.connections.hub, ccEmail: 'not-an-address', delayMinutes: -1, categoryAllowlist: many },
    });
    expect(bad.body.errors?.[0]?.extensions?.messages).toEqual([
      'input.ccEmail: must be an email address',
      expect.stringMatching(/^input\.delayMinutes: /),
      'input.categoryAllowlist: has at most 50 entries',
    ]);
    const update = await staff('mutation ($id: Int!) { updateReplyRelay(id: $id, input: { ccEmail: "nope" }) { id } }', { id: seeded.replyRelays.used });
    expect(refusal(update)).toEqual({ message: 'input.ccEmail: must be an email address', code: 'BAD_REQUEST' });

    const used = seeded.replyRelays.used!;
    const kept = await staff('mutation ($id: Int!) { deleteReplyRelay(id: $id) { id } }', { id: used });
    expect(refusal(kept)).toEqual({
      message: expect.stringMatching(new RegExp(`^Reply relay ${used} has relayed replies .*replyRelayId: null`)),
      code: 'CONFLICT',
    });
    expect(await ctx.db.query('SELECT id FROM reply_relays WHERE id = $1', [used])).toHaveLength(1);
  });
});
