import { createConfig, lint } from '@redocly/openapi-core';
import { describe, expect, it } from 'vitest';
import { OPENAPI_FILE } from '../../src/rest/openapi.js';
import { ROUTES } from '../../src/rest/routes.js';
import { openApiDocument } from '../../src/rest/openapi.js';
import { checkResponse } from '../support/openapi.js';

describe('the OpenAPI document', () => {
  it('passes the Redocly linter (recommended rules) with no error', async () => {
    const problems = await lint({ ref: OPENAPI_FILE, config: await createConfig({ extends: ['recommended'] }) });
    const errors = problems.filter((p) => p.severity === 'error').map((p) => `${p.ruleId}: ${p.message} @ ${p.location[0]?.pointer}`);
    expect(errors).toEqual([]);
  });

  it('describes every route of the route table', () => {
    const paths = Object.keys((openApiDocument as { paths: Record<string, unknown> }).paths);
    const routes = ROUTES.map((r) => `/api/v1${r.path.replace(/:(\w+)/g, '{$1}')}`);
    expect(routes.filter((r) => !paths.includes(r))).toEqual([]);
  });
});

describe('the response checker the suite relies on', () => {
  const headers = (extra: Record<string, string> = {}) =>
    new Headers({ link: '<http://x/api/v1/openapi.json>; rel="service-desc", <http://x/docs>; rel="service-doc"', ...extra });

  it('accepts a conforming error and rejects a wrong shape, an undocumented status and a missing header', () => {
    const body = { statusCode: 404, message: 'Sync 9 not found', error: 'Not Found' };
    expect(checkResponse('/api/v1/syncs/9', 'get', 404, headers(), body)).toEqual([]);
    expect(checkResponse('/api/v1/syncs/9', 'get', 404, headers(), { ...body, extra: 1 })).not.toEqual([]);
    expect(checkResponse('/api/v1/syncs/9', 'get', 418, headers(), body)).not.toEqual([]);
    expect(checkResponse('/api/v1/syncs/9', 'get', 404, new Headers(), body)).toContain('missing required header Link');
  });

  it('rejects a sync whose nullable key is missing', () => {
    const sync = {
      id: 1,
      status: 'success',
      connectionId: 1,
      sourceId: 1,
      eventType: 'EMAIL_SENT',
      toEmail: 'a@b.test',
      platform: 'smartlead',
      payloadId: 1,
      error: null,
      createdAt: '2026-11-01T00:00:00.000Z',
    };
    expect(checkResponse('/api/v1/syncs/1', 'get', 200, headers(), sync)).toEqual([]);
    const { error: _omitted, ...withoutError } = sync;
    expect(checkResponse('/api/v1/syncs/1', 'get', 200, headers(), withoutError)).not.toEqual([]);
  });

  it('requires the JSON 404 on undocumented paths', () => {
    expect(checkResponse('/api/v1/nope', 'get', 404, headers(), { statusCode: 404, message: 'Cannot GET /api/v1/nope', error: 'Not Found' })).toEqual([]);
    expect(checkResponse('/api/v1/nope', 'get', 200, headers(), '<html>')).not.toEqual([]);
  });
});
