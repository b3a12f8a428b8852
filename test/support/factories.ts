import type { PrismaClient } from '../../src/db/prisma.js';
import { randomToken } from '../../src/domain/secrets.js';

/**
 * Creates `n` accounts, each with two connections; each connection with two sources bound to a
 * forwarding destination and a reply relay, and a block list with entries. Returns the account ids.
 */
export async function createAccounts(prisma: PrismaClient, n: number): Promise<number[]> {
  const ids: number[] = [];
  for (let i = 0; i < n; i += 1) {
    const account = await prisma.account.create({ data: { email: `owner${i}@factory.test` } });
    ids.push(account.id);
    for (const crm of ['HUBSPOT', 'SALESFORCE']) {
      const connection = await prisma.connection.create({ data: { accountId: account.id, crm } });
      const destination = await prisma.forwardingDestination.create({ data: { connectionId: connection.id, url: `https://hooks.factory.test/${i}/${crm}` } });
      const relay = await prisma.replyRelay.create({
        data: { connectionId: connection.id, ccEmail: `rep${i}@factory.test`, categoryAllowlist: [{ id: '1', name: 'Interested' }] },
      });
      await prisma.blocklist.create({
        data: {
          connectionId: connection.id,
          listName: 'dnc',
          platform: 'smartlead',
          blockType: 'DOMAIN',
          entries: { create: [{ value: 'a.test', pushedAt: new Date() }, { value: 'b.test' }] },
        },
      });
      for (const platform of ['smartlead', 'instantly']) {
        await prisma.source.create({
          data: {
            connectionId: connection.id,
            platform,
            ingressCode: randomToken('', 24),
            replyRelayId: relay.id,
            destinations: { create: [{ destinationId: destination.id, eventTypes: ['EMAIL_REPLY'] }] },
          },
        });
      }
    }
    await prisma.apiKey.create({ data: { accountId: account.id, name: 'k', keyHash: randomToken('hash_'), keyPrefix: 'svcapi_xxxx' } });
  }
  return ids;
}
