import { describe, expect, it } from 'vitest';
import { afterError, afterFetch, afterPause, afterPush, blockValue, resyncRefusal, roundStatus, type BlocklistStatus } from '../../src/domain/blocklist.js';

describe('blockValue', () => {
  it.each([
    [' Ann@Acme.TEST ', 'ann@acme.test'],
    ['mailto:bob@beta.test', 'bob@beta.test'],
    ['not an address', null],
    ['acme.test', null],
    ['', null],
  ])('ADDRESS %j is %j', (raw, expected) => {
    expect(blockValue('ADDRESS', raw)).toBe(expected);
  });

  it.each([
    ['https://www.Acme.test/about', 'acme.test'],
    ['www.beta.test', 'beta.test'],
    ['ceo@mail.gamma.co.uk', 'gamma.co.uk'],
    ['delta.test', 'delta.test'],
    ['localhost', null],
    ['not a domain', null],
  ])('DOMAIN %j is %j', (raw, expected) => {
    expect(blockValue('DOMAIN', raw)).toBe(expected);
  });

  it('reads nothing from values that are not strings', () => {
    expect(blockValue('ADDRESS', 42)).toBeNull();
    expect(blockValue('DOMAIN', null)).toBeNull();
  });
});

describe('the block list status machine', () => {
  const all: BlocklistStatus[] = ['CREATED', 'FETCHING', 'SYNCING', 'SYNCED', 'SYNCING_NEW_CONTACTS'];

  it('runs a first fetch or a resync as FETCHING, then SYNCING, then SYNCED', () => {
    expect(roundStatus('full')).toBe('FETCHING');
    expect(afterFetch({ status: 'FETCHING', isEnabled: true })).toBe('SYNCING');
    expect(afterPush({ status: 'SYNCING', isEnabled: true })).toBe('SYNCED');
  });

  it('runs an incremental round as SYNCING_NEW_CONTACTS, back to SYNCED', () => {
    expect(roundStatus('incremental')).toBe('SYNCING_NEW_CONTACTS');
    expect(afterFetch({ status: 'SYNCING_NEW_CONTACTS', isEnabled: true })).toBe('SYNCING_NEW_CONTACTS');
    expect(afterPush({ status: 'SYNCING_NEW_CONTACTS', isEnabled: true })).toBe('SYNCED');
  });

  it('pauses FETCHING and SYNCING into SYNCING_NEW_CONTACTS, and leaves other statuses and a paused list alone', () => {
    expect(all.map(afterPause)).toEqual(['CREATED', 'SYNCING_NEW_CONTACTS', 'SYNCING_NEW_CONTACTS', 'SYNCED', 'SYNCING_NEW_CONTACTS']);
    for (const status of all) {
      expect(afterFetch({ status, isEnabled: false })).toBe(status);
      expect(afterPush({ status, isEnabled: false })).toBe(status);
    }
  });

  it('puts a failed round back where the list rests: SYNCED once a fetch completed, else CREATED', () => {
    expect(afterError({ status: 'FETCHING', isEnabled: true, lastFetchedAt: null })).toBe('CREATED');
    expect(afterError({ status: 'SYNCING', isEnabled: true, lastFetchedAt: new Date() })).toBe('SYNCED');
    expect(afterError({ status: 'SYNCING_NEW_CONTACTS', isEnabled: true, lastFetchedAt: new Date() })).toBe('SYNCED');
    expect(afterError({ status: 'CREATED', isEnabled: true, lastFetchedAt: null })).toBe('CREATED');
    // Paused (isEnabled false): the status the pause left stays, as after a fetch or a push.
    expect(afterError({ status: 'SYNCING_NEW_CONTACTS', isEnabled: false, lastFetchedAt: null })).toBe('SYNCING_NEW_CONTACTS');
  });

  it('refuses a resync while a round runs or is queued, then without a CRM source', () => {
    const list = (status: BlocklistStatus, more: { hasCrmSource?: boolean; roundQueued?: boolean } = {}) => ({
      status,
      hasCrmSource: more.hasCrmSource ?? true,
      roundQueued: more.roundQueued ?? false,
    });
    expect(all.map((s) => resyncRefusal(list(s)))).toEqual([null, 'in_progress', 'in_progress', null, null]);
    expect(resyncRefusal(list('SYNCED', { roundQueued: true }))).toBe('in_progress');
    expect(resyncRefusal(list('SYNCED', { hasCrmSource: false }))).toBe('no_source');
    expect(resyncRefusal(list('FETCHING', { hasCrmSource: false }))).toBe('in_progress');
  });
});
