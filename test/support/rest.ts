import { readFile } from 'node:fs/promises';
import { DEMO_FIXTURE } from '../../src/admin/demo.js';
import { seedFixture, type SeedResult } from '../../src/admin/seed.js';
import type { PrismaClient } from '../../src/db/prisma.js';
import { apiFetch } from './openapi.js';
import { TEST_ENCRYPTION_KEY } from './database.js';

/** The demo fixture's keys (fixtures/demo.json): two accounts that must never see each other. */
export const KEYS = {
  acmeRead: 'svcapi_demoReadKeyAcme0000000000000001',
  acmeWrite: 'svcapi_demoWriteKeyAcme000000000000001',
  acmeHubspotOnly: 'svcapi_demoScopedKeyAcme00000000000001',
  acmeRevoked: 'svcapi_demoRevokedKeyAcme0000000000001',
  globexRead: 'svcapi_demoReadKeyGlobex000000000000001',
} as const;

export async function seedDemo(prisma: PrismaClient): Promise<SeedResult> {
  return seedFixture(prisma, JSON.parse(await readFile(DEMO_FIXTURE, 'utf8')), TEST_ENCRYPTION_KEY);
}

/** GET an /api/v1 path with a key; the response is checked against the OpenAPI document. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- bodies are schema-checked
export function apiGet<T = any>(baseUrl: string, path: string, key?: string) {
  return apiFetch<T>(`${baseUrl}/api/v1${path}`, key ? { headers: { authorization: `Bearer ${key}` } } : {});
}

/** A from/to window around now, as query parameters. */
export function around(now = new Date(), daysBefore = 1, daysAfter = 1): string {
  const from = new Date(now.getTime() - daysBefore * 86_400_000).toISOString();
  const to = new Date(now.getTime() + daysAfter * 86_400_000).toISOString();
  return `from=${encodeURIComponent(from)}&to=${encodeURIComponent(to)}`;
}
