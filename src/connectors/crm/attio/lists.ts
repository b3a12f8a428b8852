import { z } from 'zod';
import { CrmError } from '../errors.js';
import { asRecord } from '../records.js';
import type { ListRead } from '../types.js';

/** An Attio block list source (the fixture format): an Attio list, by its id (UUID) or its slug. */
export const attioListSource = z
  .object({
    listId: z
      .string({ error: 'must be an Attio list id or slug' })
      .regex(/^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$/, { error: 'must be an Attio list id or slug (letters, digits, - and _)' }),
  })
  .strict();

/** What the list reader needs of an Attio session: an authorised call answering its `data`. */
interface AttioApi {
  data(step: string, request: { method: string; path: string; query?: Record<string, string>; json?: unknown; idempotent: boolean }): Promise<unknown>;
}

/** Entries per page (Attio's default and, here, our page). */
const PAGE = 500;

/**
 * The values of an Attio block list, a page of entries at a time: the entries name their parent records,
 * whose `email_addresses` (a list of people) or `domains` (a list of companies) a second query reads
 * (`record_id` `$in` the page's ids). A DOMAIN list of people takes their addresses' domains.
 */
export async function* readAttioList(api: AttioApi, read: ListRead): AsyncGenerator<string[]> {
  const source = attioListSource.safeParse(read.source);
  if (!source.success) throw new CrmError('rejected', 'The block list has no valid Attio source (crmSource {listId: "<list id or slug>"})');
  const list = encodeURIComponent(source.data.listId);
  for (let offset = 0; ; offset += PAGE) {
    const rows = await api.data('block list', { method: 'POST', path: `/lists/${list}/entries/query`, json: { limit: PAGE, offset }, idempotent: true });
    const entries = Array.isArray(rows) ? rows.map(asRecord) : [];
    const byObject = new Map<string, string[]>();
    for (const entry of entries) {
      if (typeof entry.parent_record_id !== 'string' || typeof entry.parent_object !== 'string') continue;
      byObject.set(entry.parent_object, [...(byObject.get(entry.parent_object) ?? []), entry.parent_record_id]);
    }
    for (const [object, ids] of byObject) {
      if (object !== 'people' && object !== 'companies') continue;
      const records = await api.data('block list', {
        method: 'POST',
        path: `/objects/${object}/records/query`,
        json: { filter: { record_id: { $in: ids } }, limit: PAGE },
        idempotent: true,
      });
      const slug = object === 'people' ? 'email_addresses' : 'domains';
      const field = object === 'people' ? 'email_address' : 'domain';
      yield (Array.isArray(records) ? records.map(asRecord) : []).flatMap((r) => {
        const values = asRecord(r.values)[slug];
        return (Array.isArray(values) ? values.map(asRecord) : []).map((v) => v[field]).filter((v): v is string => typeof v === 'string' && v !== '');
      });
    }
    if (entries.length < PAGE) return;
  }
}
