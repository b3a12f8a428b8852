import type { PrismaClient } from '../db/prisma.js';
import { newWebhookSecret } from '../domain/webhook-signature.js';
import { apiKeyPrefix, hashApiKey, PREFIX, randomToken, sealSecret } from '../domain/secrets.js';
import { type Prisma } from '../generated/prisma/client.js';
import { ingressInUse, jsonColumn, newIngressCode, sealedSequencer, sequencerColumns } from './entities.js';
import { type Fixture, type FixtureConnection, type FixtureSource, FixtureError, formatPath, parseFixture, type RefMap } from './fixture.js';

/** What seeding printed: the ref map, plus every secret it generated (shown this once, never stored). */
export interface SeedResult extends RefMap {
  /** Generated API keys and webhook secrets, keyed by the object's ref (or its path when it has none). */
  generatedSecrets: Record<string, string>;
}

type Tx = Prisma.TransactionClient;

/** Serialises first-start seeding across processes. */
const SEED_LOCK_KEY = 7_302_114_520;

/**
 * Validates `input` as a fixture and writes all of it in one transaction: either everything is
 * written or nothing is.
 * @throws FixtureError for an invalid fixture or one whose ingress codes or keys already exist.
 */
export async function seedFixture(prisma: PrismaClient, input: unknown, encryptionKey: Buffer): Promise<SeedResult>;
/** With `onlyIfEmpty`, seeds only a database that has no account yet (safe when processes race) and returns null otherwise. */
export async function seedFixture(prisma: PrismaClient, input: unknown, encryptionKey: Buffer, options: { onlyIfEmpty: true }): Promise<SeedResult | null>;
export async function seedFixture(prisma: PrismaClient, input: unknown, encryptionKey: Buffer, options?: { onlyIfEmpty: true }): Promise<SeedResult | null> {
  const fixture = parseFixture(input);
  return prisma.$transaction(
    async (tx) => {
      if (options?.onlyIfEmpty) {
        await tx.$executeRaw`SELECT pg_advisory_xact_lock(${SEED_LOCK_KEY})`;
        if ((await tx.account.count()) > 0) return null;
      }
      await refuseExistingSecrets(tx, fixture);
      const result: SeedResult = {
        accounts: {},
        connections: {},
        sources: {},
        destinations: {},
        replyRelays: {},
        blocklists: {},
        apiKeys: {},
        webhookEndpoints: {},
        generatedSecrets: {},
      };
      for (const [a, account] of fixture.accounts.entries()) {
        await writeAccount(tx, account, `accounts[${a}]`, result, encryptionKey);
      }
      return result;
    },
    // Fixtures with history can be large; the default 5 s would cut them off half-way (and roll back).
    { timeout: 600_000, maxWait: 30_000 },
  );
}

async function writeAccount(tx: Tx, account: Fixture['accounts'][number], at: string, result: SeedResult, key: Buffer): Promise<void> {
  const created = await tx.account.create({ data: { email: account.email, ...account.capabilities } });
  remember(result.accounts, account.ref, created.id);
  const connectionIds = new Map<string, number>();
  for (const connection of account.connections) {
    const id = await writeConnection(tx, created.id, connection, result, key);
    if (connection.ref) connectionIds.set(connection.ref, id);
  }
  for (const [k, apiKey] of account.apiKeys.entries()) {
    const secret = apiKey.key ?? randomToken(PREFIX.apiKey);
    if (!apiKey.key) result.generatedSecrets[apiKey.ref ?? `${at}.apiKeys[${k}]`] = secret;
    const row = await tx.apiKey.create({
      data: {
        accountId: created.id,
        name: apiKey.name,
        keyHash: hashApiKey(secret),
        keyPrefix: apiKeyPrefix(secret),
        scopes: apiKey.scopes,
        connectionScope: apiKey.connectionScope,
        connectionId: apiKey.connection === undefined ? null : (connectionIds.get(apiKey.connection) ?? null),
        revokedAt: apiKey.revoked ? new Date() : null,
      },
    });
    remember(result.apiKeys, apiKey.ref, row.id);
  }
  for (const [w, endpoint] of account.webhookEndpoints.entries()) {
    const secret = endpoint.secret ?? newWebhookSecret();
    if (!endpoint.secret) result.generatedSecrets[endpoint.ref ?? `${at}.webhookEndpoints[${w}]`] = secret;
    const row = await tx.webhookEndpoint.create({
      data: {
        publicId: randomToken(PREFIX.webhookEndpoint, 24),
        accountId: created.id,
        url: endpoint.url,
        description: endpoint.description,
        enabledEvents: endpoint.enabledEvents,
        isActive: endpoint.isActive,
        secretEncrypted: sealSecret(key, secret),
      },
    });
    if (endpoint.ref) result.webhookEndpoints[endpoint.ref] = row.publicId;
  }
}

async function writeConnection(tx: Tx, accountId: number, connection: FixtureConnection, result: SeedResult, key: Buffer): Promise<number> {
  const row = await tx.connection.create({
    data: {
      accountId,
      crm: connection.crm,
      status: connection.status,
      organizationId: connection.organizationId,
      organizationDomain: connection.organizationDomain,
      apiEnabled: connection.apiEnabled,
      syncEnabled: connection.syncEnabled,
      deletedAt: connection.deleted ? new Date() : null,
      credentialsEncrypted: connection.credentials ? sealSecret(key, JSON.stringify(connection.credentials)) : null,
      crmRateLimit: jsonColumn(connection.crmRateLimit),
      ...(connection.createdAt ? { createdAt: connection.createdAt } : {}),
    },
  });
  remember(result.connections, connection.ref, row.id);

  const destinations = new Map<string, { id: number; url: string }>();
  for (const destination of connection.destinations) {
    const created = await tx.forwardingDestination.create({
      data: {
        connectionId: row.id,
        url: destination.url,
        description: destination.description,
        ...(destination.createdAt ? { createdAt: destination.createdAt } : {}),
      },
    });
    remember(result.destinations, destination.ref, created.id);
    if (destination.ref) destinations.set(destination.ref, { id: created.id, url: created.url });
  }
  const relays = new Map<string, number>();
  for (const relay of connection.replyRelays) {
    const created = await tx.replyRelay.create({
      data: {
        connectionId: row.id,
        description: relay.description,
        ccEmail: relay.ccEmail,
        delayMinutes: relay.delayMinutes,
        bodyTemplates: relay.bodyTemplates,
        categoryAllowlist: relay.categoryAllowlist,
        ...(relay.createdAt ? { createdAt: relay.createdAt } : {}),
      },
    });
    remember(result.replyRelays, relay.ref, created.id);
    if (relay.ref) relays.set(relay.ref, created.id);
  }
  for (const source of connection.sources) {
    await writeSource(tx, { accountId, connectionId: row.id, key }, source, destinations, relays, result);
  }
  for (const blocklist of connection.blocklists) {
    const values = [...new Set(blocklist.entries)];
    const synced = blocklist.status === 'SYNCED';
    const created = await tx.blocklist.create({
      data: {
        connectionId: row.id,
        listName: blocklist.listName,
        platform: blocklist.platform,
        blockType: blocklist.blockType,
        status: blocklist.status,
        isEnabled: blocklist.isEnabled,
        hasCrmSource: blocklist.hasCrmSource,
        crmSource: jsonColumn(blocklist.crmSource),
        ...sequencerColumns(key, blocklist.sequencer),
        lastFetchedAt: blocklist.entries.length > 0 ? new Date() : null,
        ...(blocklist.createdAt ? { createdAt: blocklist.createdAt } : {}),
        // A SYNCED list has pushed every entry it holds to the sequencer; any other state has pushed none yet.
        entries: { createMany: { data: values.map((value) => ({ value, pushedAt: synced ? new Date() : null })) } },
        syncedCount: synced ? values.length : 0,
        pendingCount: synced ? 0 : values.length,
      },
    });
    remember(result.blocklists, blocklist.ref, created.id);
  }
  return row.id;
}

async function writeSource(
  tx: Tx,
  { accountId, connectionId, key }: { accountId: number; connectionId: number; key: Buffer },
  source: FixtureSource,
  destinations: Map<string, { id: number; url: string }>,
  relays: Map<string, number>,
  result: SeedResult,
): Promise<void> {
  const ingressCode = source.ingressCode ?? newIngressCode();
  const created = await tx.source.create({
    data: {
      connectionId,
      platform: source.platform,
      ingressCode,
      legacyId1: source.legacyIds?.[0] ?? null,
      legacyId2: source.legacyIds?.[1] ?? null,
      ...source.config,
      replyRelayId: source.replyRelay === undefined ? null : (relays.get(source.replyRelay) ?? null),
      sequencerCredentialsEncrypted: sealedSequencer(key, source.sequencer),
      ...(source.createdAt ? { createdAt: source.createdAt } : {}),
      destinations: {
        createMany: {
          data: source.destinations.map((binding) => ({
            destinationId: (destinations.get(binding.destination) as { id: number }).id,
            eventTypes: binding.eventTypes,
            isDelayed: binding.isDelayed,
          })),
        },
      },
    },
  });
  remember(result.sources, source.ref, created.id);

  for (const request of source.requests) {
    const createdAt = request.createdAt ?? new Date();
    const row = await tx.request.create({ data: { accountId, sourceId: created.id, connectionId, path: ingressCode, createdAt } });
    await tx.requestBody.create({ data: { requestId: row.id, createdAt: row.createdAt, body: JSON.stringify(request.body) } });
    const sync = request.sync;
    if (sync) {
      await tx.sync.create({
        data: {
          accountId,
          connectionId,
          sourceId: created.id,
          requestId: row.id,
          platform: source.platform,
          status: sync.status,
          eventType: sync.eventType,
          toEmail: sync.toEmail.toLowerCase(),
          error: jsonColumn(sync.error),
          attempts: sync.status === null ? 0 : 1,
          createdAt: sync.createdAt ?? createdAt,
        },
      });
    }
    for (const delivery of request.deliveries) {
      const destination = destinations.get(delivery.destination) as { id: number; url: string };
      await tx.delivery.create({
        data: {
          accountId,
          destinationId: destination.id,
          destinationUrl: destination.url,
          connectionId,
          sourceId: created.id,
          requestId: row.id,
          eventType: sync?.eventType ?? '',
          toEmail: sync?.toEmail.toLowerCase() ?? '',
          status: delivery.status,
          httpStatus: delivery.httpStatus,
          error: jsonColumn(delivery.error),
          createdAt: delivery.createdAt ?? createdAt,
        },
      });
    }
  }
}

/** Fails with the paths of ingress codes, legacy ids and keys that another fixture already wrote. */
async function refuseExistingSecrets(tx: Tx, fixture: Fixture): Promise<void> {
  const problems: string[] = [];
  for (const [a, account] of fixture.accounts.entries()) {
    for (const [c, connection] of account.connections.entries()) {
      for (const [s, source] of connection.sources.entries()) {
        const at = `accounts[${a}].connections[${c}].sources[${s}]`;
        for (const { path, message } of await ingressInUse(tx, source)) problems.push(`${formatPath([at, ...path])}: ${message}`);
      }
    }
    for (const [k, apiKey] of account.apiKeys.entries()) {
      if (apiKey.key && (await tx.apiKey.findUnique({ where: { keyHash: hashApiKey(apiKey.key) }, select: { id: true } }))) {
        problems.push(`accounts[${a}].apiKeys[${k}].key: already in use`);
      }
    }
  }
  if (problems.length > 0) throw new FixtureError(problems);
}

function remember(map: Record<string, number>, ref: string | undefined, id: number): void {
  if (ref !== undefined) map[ref] = id;
}
