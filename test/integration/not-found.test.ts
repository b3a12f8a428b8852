import { describe, expect, it } from 'vitest';
import { apiFetch } from '../support/openapi.js';
import { useTestServer } from '../support/server.js';

const ctx = useTestServer();

describe('unknown paths', () => {
  it.each([
    ['/api', '/api'],
    ['/api/v1/nothing-here', '/api/v1/nothing-here'],
    ['/api/v1/accounts/outreach?email=a@b.test', '/api/v1/accounts/outreach'],
    ['/health/deep', '/health/deep'],
    ['/health/live/extra?x=1', '/health/live/extra'],
    ['/webhooks', '/webhooks'],
    ['/webhooks/unknown-code', '/webhooks/unknown-code'],
    ['/', '/'],
  ])('GET %s is a JSON 404 naming the path without its query', async (url, path) => {
    const res = await apiFetch(`${ctx.server.baseUrl}${url}`, { headers: { accept: 'text/html' } });
    expect(res.status).toBe(404);
    expect(res.headers.get('content-type')).toMatch(/^application\/json/);
    expect(res.body).toEqual({ statusCode: 404, message: `Cannot GET ${path}`, error: 'Not Found' });
  });

  it.each(['POST', 'PUT', 'DELETE', 'PATCH'])('%s on an unknown path is a JSON 404 too, never HTML', async (method) => {
    const res = await apiFetch(`${ctx.server.baseUrl}/api/v1/nothing`, { method, headers: { accept: 'text/html' } });
    expect(res.status).toBe(404);
    expect(res.headers.get('content-type')).toMatch(/^application\/json/);
    expect(res.body).toEqual({ statusCode: 404, message: `Cannot ${method} /api/v1/nothing`, error: 'Not Found' });
  });

  it('answers a HEAD on an unknown path with a 404 and no body', async () => {
    const res = await fetch(`${ctx.server.baseUrl}/api/v1/nothing`, { method: 'HEAD' });
    expect(res.status).toBe(404);
    expect(await res.text()).toBe('');
  });
});
