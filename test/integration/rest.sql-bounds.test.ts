import { describe, expect, it } from 'vitest';
import { createPrisma } from '../../src/db/prisma.js';
import { apiKeyPrefix, hashApiKey, randomToken } from '../../src/domain/secrets.js';
import { createTestDatabase } from '../support/database.js';
import { apiGet } from '../support/rest.js';
import { startTestServer } from '../support/server.js';

describe('SQL statements per request', () => {
  it('/sources and /destinations issue as many statements for 100 sources with bindings as for 1', async () => {
    // Setup: two accounts, one with 1 source and one with 100, each source bound to a destination and a relay
    const db = await createTestDatabase();
    const statements: string[] = [];
    const prisma = createPrisma(db.url, { onQuery: (sql) => statements.push(sql) });
    const server = await startTestServer({ url: db.url, prisma });
    try {
      const keys = { small: await account(db.prisma, 1), large: await account(db.prisma, 100) };
      const count = async (path: string, key: string, expected: number) => {
        await apiGet(server.baseUrl, path, key); // warm: authentication may note last use once
        statements.length = 0;
        const res = await apiGet(server.baseUrl, path, key);
        expect(res.status).toBe(200);
        expect(Object.values(res.body)[0]).toHaveLength(expected);
        return statements.length;
      };
      // Action + Assertions
      for (const [path, small, large] of [
        ['/sources', 1, 100],
        ['/destinations', 1, 100],
        ['/destinations/reply-relays', 1, 1],
      ] as const) {
        const few = await count(path, keys.small, small);
        const many = await count(path, keys.large, large);
        expect({ path, many }).toEqual({ path, many: few });
        // One statement authenticates the key, one loads the list with its relations (joined).
        expect({ path, statements: many }).toEqual({ path, statements: 2 });
      }
    } finally {
      await server.close();
      await prisma.$disconnect();
      await db.drop();
    }
  });
});

async function account(prisma: ReturnType<typeof createPrisma>, sources: number): Promise<string> {
  const acc = await prisma.account.create({ data: {} });
  const connection = await prisma.connection.create({ data: { accountId: acc.id, crm: 'HUBSPOT' } });
  const relay = await prisma.replyRelay.create({ data: { connectionId: connection.id, ccEmail: 'rep@x.test' } });
  for (let i = 0; i < sources; i += 1) {
    const destination = await prisma.forwardingDestination.create({ data: { connectionId: connection.id, url: `https://x.test/${i}` } });
    await prisma.source.create({
      data: {
        connectionId: connection.id,
        platform: 'smartlead',
        ingressCode: randomToken('', 24),
        replyRelayId: relay.id,
        destinations: { create: [{ destinationId: destination.id, eventTypes: ['EMAIL_SENT'] }] },
      },
    });
  }
  const key = randomToken('svcapi_');
  await prisma.apiKey.create({ data: { accountId: acc.id, name: 'k', keyHash: hashApiKey(key), keyPrefix: apiKeyPrefix(key) } });
  return key;
}
