import { z } from 'zod';
import { numericId } from '../schema-fields.js';
import { CrmError } from '../errors.js';
import { asRecord } from '../records.js';
import type { ListRead } from '../types.js';
import { hubspotPaths } from './paths.js';

/** A HubSpot block list source (the fixture format): the list's id. */
export const hubspotListSource = z.object({ listId: numericId('must be a HubSpot list id (digits)') }).strict();

/** HubSpot's documented page size for memberships, and its batch read's limit. */
const MEMBERSHIPS_PER_PAGE = 250;
const READS_PER_CALL = 100;

/** What the list reader needs of a HubSpot session: authorised JSON calls with refresh, retries and the budget. */
interface HubspotApi {
  json(step: string, request: { method: string; path: string; query?: Record<string, string>; json?: unknown; idempotent: boolean }): Promise<unknown>;
}

/**
 * The values of a HubSpot list, a page of memberships at a time: the list's object type first (contacts
 * give their `email`, companies their `domain`), then its members (250 per page, `paging.next.after`
 * until a page has none), each page's records read in batch reads of 100. Raw values: the caller
 * normalises them. A companies list cannot give addresses.
 */
export async function* readHubspotList(api: HubspotApi, read: ListRead): AsyncGenerator<string[]> {
  const source = hubspotListSource.safeParse(read.source);
  if (!source.success) throw new CrmError('rejected', 'The block list has no HubSpot list id (crmSource {listId})');
  const listId = String(source.data.listId);
  const list = asRecord(asRecord(await api.json('block list', { method: 'GET', path: hubspotPaths.list(listId), idempotent: true })).list);
  const objectType = list.objectTypeId === '0-2' ? 'companies' : list.objectTypeId === '0-1' ? 'contacts' : null;
  if (objectType === null)
    throw new CrmError('rejected', `HubSpot list ${listId} holds neither contacts nor companies (objectTypeId ${String(list.objectTypeId)})`);
  if (objectType === 'companies' && read.blockType === 'ADDRESS') {
    throw new CrmError('rejected', `HubSpot list ${listId} holds companies, which have no email address: an ADDRESS block list needs a contacts list`);
  }
  const property = objectType === 'companies' ? 'domain' : 'email';
  let after: string | undefined;
  do {
    const query: Record<string, string> = { limit: String(MEMBERSHIPS_PER_PAGE), ...(after ? { after } : {}) };
    const page = asRecord(await api.json('block list', { method: 'GET', path: hubspotPaths.listMemberships(listId), query, idempotent: true }));
    const ids = (Array.isArray(page.results) ? page.results : [])
      .map((m) => asRecord(m).recordId)
      .filter((id) => typeof id === 'string' || typeof id === 'number');
    const values: string[] = [];
    for (let i = 0; i < ids.length; i += READS_PER_CALL) {
      const inputs = ids.slice(i, i + READS_PER_CALL).map((id) => ({ id: String(id) }));
      const answer = asRecord(
        await api.json('block list', {
          method: 'POST',
          path: hubspotPaths.batch(objectType, 'read'),
          json: { inputs, properties: [property] },
          idempotent: true,
        }),
      );
      for (const row of Array.isArray(answer.results) ? answer.results : []) {
        const value = asRecord(asRecord(row).properties)[property];
        if (typeof value === 'string' && value !== '') values.push(value);
      }
    }
    yield values;
    const next = asRecord(asRecord(page.paging).next).after;
    after = typeof next === 'string' && next !== '' ? next : undefined;
  } while (after !== undefined);
}
