import { describe, expect, it } from 'vitest';
import { maskIngressCode, sourceUrl } from '../../src/domain/source-url.js';

const INGRESS = 'https://in.example.com';

describe('sourceUrl', () => {
  it.each([
    ['a source with an ingress code', { ingressCode: 'smartleadCode0001', legacyId1: null, legacyId2: null }, `${INGRESS}/webhooks/smartleadCode0001`],
    [
      'a legacy source',
      { ingressCode: 'generatedCode0001', legacyId1: 'legacySourceId', legacyId2: 'heyreach01' },
      `${INGRESS}/webhooks/legacySourceId/heyreach01`,
    ],
    [
      'a source with only the first legacy id',
      { ingressCode: 'generatedCode0001', legacyId1: 'legacySourceId', legacyId2: null },
      `${INGRESS}/webhooks/generatedCode0001`,
    ],
    [
      'a source with only the second legacy id',
      { ingressCode: 'generatedCode0001', legacyId1: null, legacyId2: 'heyreach01' },
      `${INGRESS}/webhooks/generatedCode0001`,
    ],
    [
      'an ingress code with characters that need escaping',
      { ingressCode: 'a/b?c#d e', legacyId1: null, legacyId2: null },
      `${INGRESS}/webhooks/a%2Fb%3Fc%23d%20e`,
    ],
    ['legacy ids with characters that need escaping', { ingressCode: 'code0001', legacyId1: 'x/y', legacyId2: 'p q' }, `${INGRESS}/webhooks/x%2Fy/p%20q`],
  ])('builds the paste URL of %s', (_case, source, expected) => {
    expect(sourceUrl(INGRESS, source)).toBe(expected);
  });

  it('keeps the path of the ingress URL', () => {
    const url = sourceUrl('http://localhost:3000/pipeline', { ingressCode: 'code0001', legacyId1: null, legacyId2: null });

    expect(url).toBe('http://localhost:3000/pipeline/webhooks/code0001');
  });
});

describe('maskIngressCode', () => {
  it.each([
    ['/webhooks/smartleadCode0001', '/webhooks/[redacted]'],
    ['/webhooks/legacySourceId/heyreach01', '/webhooks/[redacted]'],
    ['/WEBHOOKS/smartleadCode0001', '/webhooks/[redacted]'],
    ['//webhooks/smartleadCode0001', '/webhooks/[redacted]'],
    ['/webhooks/smartleadCode0001?debug=1', '/webhooks/[redacted]?debug=1'],
    ['/webhooks/smartleadCode0001#frag', '/webhooks/[redacted]#frag'],
    ['/webhooks/a/b?x=1#y', '/webhooks/[redacted]?x=1#y'],
    ['/webhooks/', '/webhooks/[redacted]'],
  ])('masks %s as %s', (url, expected) => {
    expect(maskIngressCode(url)).toBe(expected);
  });

  it.each(['/health', '/health/ready', '/graphql?query=x', '/api/v1/sources/12', '/webhooks', '/api/webhooks/abc', '/'])('leaves %s unchanged', (url) => {
    expect(maskIngressCode(url)).toBe(url);
  });
});
