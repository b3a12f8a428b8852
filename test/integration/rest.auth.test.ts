import { describe, expect, it } from 'vitest';
import { hashApiKey } from '../../src/domain/secrets.js';
import { apiFetch } from '../support/openapi.js';
import { seedTestAccounts, type TestAccounts, type TestKeys } from '../support/accounts.js';
import { apiGet } from '../support/rest.js';
import { useTestServer } from '../support/server.js';
import { beforeAll } from 'vitest';

const ctx = useTestServer();
let seeded: TestAccounts;
let keys: TestKeys;
beforeAll(async () => {
  seeded = await seedTestAccounts(ctx.db.prisma);
  keys = seeded.keys;
});

describe('authentication', () => {
  // Headers as thunks: the keys exist only once beforeAll has seeded them.
  it.each([
    ['no header', () => undefined],
    ['another scheme', () => 'Basic abc'],
    ['a malformed key', () => 'Bearer not-a-key'],
    ['an unknown key', () => 'Bearer svcapi_unknownKey000000000000000001'],
    ['a revoked key', () => `Bearer ${keys.acmeRevoked}`],
  ])('answers %s with the one identical 401', async (_case, header) => {
    const authorization = header();
    const res = await apiFetch(`${ctx.server.baseUrl}/api/v1/me`, authorization ? { headers: { authorization } } : {});

    expect(res.status).toBe(401);
    expect(res.body).toEqual({ statusCode: 401, message: 'Invalid API key', error: 'Unauthorized' });
    expect(res.headers.get('www-authenticate')).toBe('Bearer realm="Service API"');
    expect(res.headers.get('link')).toBe('<http://api.test.local/api/v1/openapi.json>; rel="service-desc", <http://api.test.local/docs>; rel="service-doc"');
  });

  it('treats a rotated key like a revoked one', async () => {
    await ctx.db.prisma.apiKey.update({ where: { keyHash: hashApiKey(keys.acmeWrite) }, data: { rotatedAt: new Date() } });
    try {
      const res = await apiGet(ctx.server.baseUrl, '/connections', keys.acmeWrite);
      expect(res.status).toBe(401);
      expect(res.body.message).toBe('Invalid API key');
    } finally {
      await ctx.db.prisma.apiKey.update({ where: { keyHash: hashApiKey(keys.acmeWrite) }, data: { rotatedAt: null } });
    }
  });

  it('answers 403 on every route to a key that reaches no API-enabled connection', async () => {
    // Setup: globex's only connection loses API access
    await ctx.db.prisma.connection.update({ where: { id: seeded.connections['globex-hubspot']! }, data: { apiEnabled: false } });
    try {
      for (const path of ['/me', '/connections', '/sources', `/syncs?from=2026-01-01T00:00:00Z&to=2026-01-02T00:00:00Z`]) {
        const res = await apiGet(ctx.server.baseUrl, path, keys.globexRead);
        expect(res.status).toBe(403);
        expect(res.body).toEqual({ statusCode: 403, message: 'API access is not enabled for this account', error: 'Forbidden' });
        expect(res.headers.get('x-ratelimit-limit')).toBeNull();
      }
    } finally {
      await ctx.db.prisma.connection.update({ where: { id: seeded.connections['globex-hubspot']! }, data: { apiEnabled: true } });
    }
  });

  it('answers 403 when the account may not use the API, and to a key scoped to a deleted connection', async () => {
    await ctx.db.prisma.account.update({ where: { id: seeded.accounts.globex! }, data: { canUseApi: false } });
    try {
      expect((await apiGet(ctx.server.baseUrl, '/me', keys.globexRead)).status).toBe(403);
    } finally {
      await ctx.db.prisma.account.update({ where: { id: seeded.accounts.globex! }, data: { canUseApi: true } });
    }
    await ctx.db.prisma.connection.update({ where: { id: seeded.connections['acme-hubspot']! }, data: { deletedAt: new Date() } });
    try {
      expect((await apiGet(ctx.server.baseUrl, '/me', keys.acmeHubspotOnly)).status).toBe(403);
    } finally {
      await ctx.db.prisma.connection.update({ where: { id: seeded.connections['acme-hubspot']! }, data: { deletedAt: null } });
    }
  });
});

describe('discovery and documentation', () => {
  it('serves the contract as JSON and YAML without a key, cacheable for 5 minutes', async () => {
    const json = await apiFetch(`${ctx.server.baseUrl}/api/v1/openapi.json`);
    expect(json.status).toBe(200);
    expect(json.headers.get('cache-control')).toBe('public, max-age=300');
    expect(json.body.openapi).toMatch(/^3\.1\./);
    expect(json.body.info.version).toBe('1.0.0');

    const yaml = await apiFetch(`${ctx.server.baseUrl}/api/v1/openapi.yaml`);
    expect(yaml.status).toBe(200);
    expect(yaml.headers.get('content-type')).toMatch(/^application\/yaml/);
    expect(yaml.headers.get('cache-control')).toBe('public, max-age=300');
    expect(yaml.text).toContain('openapi: 3.1');
  });

  it('renders the API reference page at /docs from the same document', async () => {
    const res = await fetch(`${ctx.server.baseUrl}/docs/`);
    expect(res.status).toBe(200);
    expect(await res.text()).toContain('swagger-ui');
    const init = await fetch(`${ctx.server.baseUrl}/docs/swagger-ui-init.js`);
    expect(await init.text()).toContain('getMe');
  });

  it.each([
    ['POST', '/api/v1/connections/1/test'],
    ['GET', '/api/v1/blocklists/1/entries'],
    ['DELETE', '/api/v1/blocklists/1/entries'],
    ['POST', '/api/v1/destinations/reply-relays'],
    ['GET', '/api/v1/accounts/outreach'],
    ['GET', '/api/v1/sources/1'],
  ])('%s %s, announced but not callable, is the JSON 404', async (method, path) => {
    const res = await apiFetch(`${ctx.server.baseUrl}${path}`, { method, headers: { authorization: `Bearer ${keys.acmeWrite}` } });
    expect(res.status).toBe(404);
    expect(res.body).toEqual({ statusCode: 404, message: `Cannot ${method} ${path}`, error: 'Not Found' });
    expect(res.headers.get('link')).toContain('rel="service-desc"');
  });

  it('unknown /api paths are JSON 404s with the Link header, key or no key', async () => {
    for (const key of [undefined, keys.acmeRead]) {
      const res = await apiGet(ctx.server.baseUrl, '/connections/1/test', key);
      expect(res.status).toBe(404);
      expect(res.body.message).toBe('Cannot GET /api/v1/connections/1/test');
    }
  });
});
