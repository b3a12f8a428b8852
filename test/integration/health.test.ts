import { describe, expect, it } from 'vitest';
import { createPrisma } from '../../src/db/prisma.js';
import { apiFetch } from '../support/openapi.js';
import { startTestServer, useTestServer } from '../support/server.js';

const ctx = useTestServer();

describe('GET /health/live', () => {
  it('answers operational with no-store and no downstream checks', async () => {
    const res = await apiFetch(`${ctx.server.baseUrl}/health/live`);
    expect(res.status).toBe(200);
    expect(res.headers.get('cache-control')).toBe('no-store');
    expect(res.body).toEqual({ schema_version: 3, status: 'operational' });
  });
});

describe.each(['/health/ready', '/health'])('GET %s', (path) => {
  it('reports only the sources check in a local deployment', async () => {
    const res = await apiFetch(`${ctx.server.baseUrl}${path}`);
    expect(res.status).toBe(200);
    expect(res.headers.get('cache-control')).toBe('no-store');
    expect(res.headers.get('content-type')).toMatch(/^application\/json/);
    expect(res.body).toEqual({ schema_version: 3, status: 'operational', checks: { sources: 'operational' } });
  });

  it('answers 503 major_outage when the database is unreachable', async () => {
    // Setup: an app whose database does not answer (nothing listens on port 1)
    const deadPrisma = createPrisma('postgres://nobody:nothing@127.0.0.1:1/none', { max: 1 });
    const dead = await startTestServer({ url: 'postgres://nobody:nothing@127.0.0.1:1/none', prisma: deadPrisma });
    try {
      // Action
      const res = await apiFetch(`${dead.baseUrl}${path}`);
      // Assertions
      expect(res.status).toBe(503);
      expect(res.body).toEqual({ schema_version: 3, status: 'major_outage', checks: { sources: 'outage' } });
    } finally {
      await dead.close();
      await deadPrisma.$disconnect();
    }
  });
});
