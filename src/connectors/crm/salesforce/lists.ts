import { z } from 'zod';
import { CrmError } from '../errors.js';
import type { ListRead } from '../types.js';

/**
 * A Salesforce block list source (the fixture format): records of `object` whose checkbox `field` is
 * true, `HasOptedOutOfEmail` by default for Contact and Lead (Account names its own).
 */
export const salesforceListSource = z
  .object({
    object: z.enum(['Contact', 'Lead', 'Account'], { error: 'must be Contact, Lead or Account' }),
    // Named in SOQL later, where it cannot be a bind variable: only an API name can get through.
    field: z
      .string({ error: 'must be the API name of a checkbox field' })
      .regex(/^[A-Za-z][A-Za-z0-9_]{0,79}$/, { error: 'must be the API name of a checkbox field (letters, digits and _)' })
      .optional(),
  })
  .strict();

/** What the list reader needs of a Salesforce session: a query read to its end, with refresh, retries and the budget. */
interface SalesforceApi {
  queryAll(step: string, soql: string): AsyncGenerator<Record<string, unknown>[]>;
}

/**
 * The values of a Salesforce block list, a query batch at a time (`nextRecordsUrl` paging): Contact and
 * Lead give `Email` (for either block type: a DOMAIN list takes the address's domain), Account gives its
 * `Website` (DOMAIN only). The field is a checkbox name checked by pattern, never text from elsewhere.
 */
export async function* readSalesforceList(api: SalesforceApi, read: ListRead): AsyncGenerator<string[]> {
  const source = salesforceListSource.safeParse(read.source);
  if (!source.success) throw new CrmError('rejected', 'The block list has no Salesforce source (crmSource {object: Contact, Lead or Account, field?})');
  const { object } = source.data;
  if (object === 'Account' && read.blockType === 'ADDRESS') {
    throw new CrmError('rejected', 'Salesforce Accounts have no email address: an ADDRESS block list reads Contact or Lead');
  }
  const field = source.data.field ?? (object === 'Account' ? undefined : 'HasOptedOutOfEmail');
  if (field === undefined) throw new CrmError('rejected', 'A Salesforce Account block list names its checkbox field (crmSource {object, field})');
  const column = object === 'Account' ? 'Website' : 'Email';
  for await (const records of api.queryAll('block list', `SELECT Id, ${column} FROM ${object} WHERE ${field} = true`)) {
    yield records.map((r) => r[column]).filter((v): v is string => typeof v === 'string' && v !== '');
  }
}
