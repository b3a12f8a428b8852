import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import type { Config } from '../config.js';
import type { PrismaClient } from '../db/prisma.js';
import { hashApiKey } from '../domain/secrets.js';
import { sourceUrl } from '../domain/source-url.js';
import { parseFixture } from './fixture.js';
import { seedFixture, type SeedResult } from './seed.js';
import { demoReplyCommand, sandboxFixture } from '../sandbox/demo.js';

export const DEMO_FIXTURE = fileURLToPath(new URL('../../fixtures/demo.json', import.meta.url));

/**
 * Loads fixtures/demo.json into an empty database, its outside systems pointed at the sandbox at
 * `sandboxUrl` when given; does nothing (returns null) once any account exists.
 */
export async function seedDemoIfEmpty(prisma: PrismaClient, encryptionKey: Buffer, sandboxUrl?: string): Promise<SeedResult | null> {
  const fixture: unknown = JSON.parse(await readFile(DEMO_FIXTURE, 'utf8'));
  return seedFixture(prisma, sandboxUrl ? sandboxFixture(fixture, sandboxUrl) : fixture, encryptionKey, { onlyIfEmpty: true });
}

/**
 * The lines `npm start` prints for a newcomer: the demo key, the demo source's ingress URL and
 * commands to paste. The demo key is public demo data (it is in fixtures/demo.json), so it can be
 * printed on every start, as long as it still exists and is not revoked.
 */
export async function demoBanner(prisma: PrismaClient, config: Config): Promise<string[]> {
  const fixture = parseFixture(JSON.parse(await readFile(DEMO_FIXTURE, 'utf8')));
  const key = fixture.accounts[0]?.apiKeys.find((k) => k.key && !k.revoked)?.key;
  const code = fixture.accounts[0]?.connections[0]?.sources[0]?.ingressCode;
  const [apiKey, source] = await Promise.all([
    key ? prisma.apiKey.findUnique({ where: { keyHash: hashApiKey(key) }, select: { revokedAt: true, rotatedAt: true } }) : null,
    code ? prisma.source.findUnique({ where: { ingressCode: code } }) : null,
  ]);
  const base = config.baseUrl;
  const lines = [`Pipeline Sync Service is listening on ${base}`];
  if (key && apiKey && !apiKey.revokedAt && !apiKey.rotatedAt) lines.push(`Demo API key:        ${key}`);
  if (source) lines.push(`Demo ingress URL:    ${sourceUrl(config.ingressUrl, source)}`);
  if (config.sandbox) lines.push(`Sandbox:             ${base}/sandbox (the demo's CRMs, destinations, inbox and webhook receiver; nothing there is real)`);
  if (config.sandbox && source) {
    lines.push(
      '',
      'Send a reply, then watch it reach the sandbox CRM, the forwarding receiver and the inbox:',
      `  ${demoReplyCommand(sourceUrl(config.ingressUrl, source))}`,
    );
  }
  lines.push('', 'Try:', `  curl -s ${base}/health`);
  if (key && apiKey && !apiKey.revokedAt && !apiKey.rotatedAt) {
    const auth = `-H "Authorization: Bearer ${key}"`;
    lines.push(
      `  curl -s ${base}/api/v1/me ${auth}`,
      `  curl -s ${base}/api/v1/account/status ${auth}`,
      `  curl -s ${base}/api/v1/sources ${auth}`,
      `  curl -s "${base}/api/v1/syncs?from=$(date -u -d '-7 days' +%FT%TZ)&to=$(date -u +%FT%TZ)" ${auth}`,
    );
  }
  lines.push(`  open ${config.docsUrl} for the API reference (${base}/api/v1/openapi.json for the contract)`);
  if (config.supportTokens.length > 0) {
    lines.push(
      `  curl -s ${base}/graphql -H "Authorization: Bearer $SUPPORT_TOKENS" -H 'Content-Type: application/json' \\`,
      `       -d '{"query":"{ accounts { id email connections { id crm status sources { platform url } } } }"}'`,
      `  open ${base}/graphql in a browser for the support explorer (paste one of your SUPPORT_TOKENS into its headers)`,
    );
  } else {
    lines.push('  (set SUPPORT_TOKENS=<a token of 16+ characters> to open the support explorer at /graphql)');
  }
  return lines;
}
