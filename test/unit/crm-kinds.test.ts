import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { CRM_KINDS, crmKindOf, type CrmKind } from '../../src/connectors/crm/kinds.js';
import { CRMS, crmDefinition } from '../../src/connectors/crm/registry.js';
import { unreachable } from '../../src/domain/unreachable.js';

/**
 * The CRM kinds are a closed union: the `@ts-expect-error` lines below are type-level tests (`npm test`
 * typechecks this file first), each failing the build the day a kind is added and the compiler stops
 * asking for it.
 */
describe('CrmKind', () => {
  it('asks every map over the kinds for each of them', () => {
    // @ts-expect-error a registry without SALESFORCE does not compile
    const partial: { readonly [K in CrmKind]: string } = { HUBSPOT: 'HubSpot' };
    expect(Object.keys(partial)).toEqual(['HUBSPOT']);
  });

  it('asks every switch over the kinds for each of them', () => {
    function nameOf(kind: CrmKind): string {
      switch (kind) {
        case 'HUBSPOT':
          return 'HubSpot';
        default:
          // @ts-expect-error SALESFORCE reaches unreachable(), which takes only `never`
          return unreachable(kind);
      }
    }
    expect(nameOf('HUBSPOT')).toBe('HubSpot');
    expect(() => nameOf('SALESFORCE')).toThrow('unhandled case: SALESFORCE');
  });

  it('names only the CRMs the registry holds', () => {
    // @ts-expect-error PIPEDRIVE is not a kind
    const other: CrmKind = 'PIPEDRIVE';
    expect(crmKindOf(other)).toBeUndefined();
    expect(Object.keys(CRMS).sort()).toEqual([...CRM_KINDS].sort());
  });
});

describe('the CRM registry', () => {
  it.each(CRM_KINDS)('holds %s under its own kind', (kind) => {
    expect(CRMS[kind].kind).toBe(kind);
    expect(crmDefinition(kind)).toBe(CRMS[kind]);
    expect(crmDefinition(kind.toLowerCase())).toBe(CRMS[kind]);
  });

  it('has no definition for a CRM the service does not write into', () => {
    expect(crmDefinition('PIPEDRIVE')).toBeUndefined();
  });

  it.each(CRM_KINDS)("reads %s's budget from the environment variable its definition names, with its default", (kind) => {
    const { budget } = CRMS[kind];
    expect(loadConfig({}, '/srv').crmBudgets[kind]).toBe(budget.default);
    expect(loadConfig({ [budget.env]: '7' }, '/srv').crmBudgets[kind]).toBe(7);
    expect(loadConfig({ [budget.env]: String(budget.max) }, '/srv').crmBudgets[kind]).toBe(budget.max);
    expect(() => loadConfig({ [budget.env]: String(budget.max + 1) }, '/srv')).toThrow(`${budget.env}: must be at most ${budget.max}`);
  });

  it.each(CRM_KINDS)("reads %s's API from the environment variable its definition names, with its default", (kind) => {
    const { env, default: fallback } = CRMS[kind].endpoint;
    expect(loadConfig({ SANDBOX: 'false' }, '/srv').crmUrls[kind]).toBe(fallback);
    expect(loadConfig({ SANDBOX: 'false', [env]: 'https://crm.example.test/' }, '/srv').crmUrls[kind]).toBe('https://crm.example.test');
    expect(() => loadConfig({ [env]: 'crm.example.test' }, '/srv')).toThrow(`${env}: must be an http:// or https:// URL`);
  });

  it.each(CRM_KINDS)('takes the keys %s names in its messages, and no other', (kind) => {
    const { rateLimit, crmSource } = CRMS[kind];
    expect(rateLimit.keys).toContain(CRMS[kind].budget.overrideKey);
    for (const rules of [rateLimit, crmSource]) {
      const foreign = rules.schema.safeParse({ unknownKey: 1 });
      expect(foreign.success).toBe(false);
    }
  });
});
