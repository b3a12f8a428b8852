import { z } from 'zod';
import { CrmError } from '../errors.js';
import { asRecord } from '../records.js';
import type { ListRead } from '../types.js';
import { searchPages } from './lookups.js';

/**
 * A Close block list source (the fixture format): `{}` reads the organisation's unsubscribed emails;
 * `{smartViewId}` reads the email addresses of the contacts of that Smart View (a saved search, `save_...`).
 */
export const closeListSource = z
  .object({
    smartViewId: z
      .string({ error: 'must be a Smart View id (save_...)' })
      .regex(/^save_[A-Za-z0-9]{1,64}$/, { error: 'must be a Smart View id (save_...)' })
      .optional(),
  })
  .strict();

/** What the list reader needs of a Close session: an authorised JSON call, with refresh, retries and the budget. */
interface CloseApi {
  json(
    step: string,
    request: { method: string; path: string; query?: Record<string, string>; json?: unknown; idempotent: boolean },
  ): Promise<Record<string, unknown>>;
}

const PAGE = 100;

/**
 * The addresses of a Close block list, a page at a time: the unsubscribed emails (`GET /unsubscribe/email/`,
 * `_skip`/`_limit`), or a Smart View's contacts through Advanced Filtering (`saved_search`, cursor paging).
 * Either block type reads addresses: a DOMAIN list takes their domains.
 */
export async function* readCloseList(api: CloseApi, read: ListRead): AsyncGenerator<string[]> {
  const source = closeListSource.safeParse(read.source ?? {});
  if (!source.success) throw new CrmError('rejected', 'The block list has no valid Close source (crmSource {} or {smartViewId: "save_..."})');
  const view = source.data.smartViewId;
  if (view === undefined) {
    for (let skip = 0; ; skip += PAGE) {
      const page = await api.json('block list', {
        method: 'GET',
        path: '/unsubscribe/email/',
        query: { _skip: String(skip), _limit: String(PAGE) },
        idempotent: true,
      });
      yield rows(page)
        .map((r) => r.email)
        .filter((e): e is string => typeof e === 'string' && e !== '');
      if (page.has_more !== true) return;
    }
  }
  const query = {
    type: 'and',
    queries: [
      { type: 'object_type', object_type: 'contact' },
      { type: 'saved_search', saved_search_id: view },
    ],
  };
  for await (const contacts of searchPages(api, 'block list', 'contact', query, ['id', 'emails'])) {
    yield contacts
      .flatMap((contact) => (Array.isArray(contact.emails) ? contact.emails.map(asRecord).map((e) => e.email) : []))
      .filter((e): e is string => typeof e === 'string' && e !== '');
  }
}

function rows(page: Record<string, unknown>): Record<string, unknown>[] {
  return Array.isArray(page.data) ? page.data.map(asRecord) : [];
}
