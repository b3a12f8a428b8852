import { CrmError } from '../errors.js';
import { SharedCalls, SingleFlight } from '../shared-calls.js';
import type { SalesforceSession } from './session.js';

/** sObject Collections take 200 records a call. */
const RECORDS_PER_CALL = 200;

/**
 * Creates a record: alone, one create; with the round's other syncs creating at once, one sObject
 * Collections call for up to 200 of them (each created or refused on its own). Records of one `dedupe` key
 * (a person's object and email) are one record: two syncs of one new lead never create it twice.
 */
export async function createRecord(api: SalesforceSession, step: string, sobject: string, fields: Record<string, string>, dedupe?: string): Promise<string> {
  const create = async () => {
    const outcome = await CREATES.load(`${api.groupKey()}\n${step}`, api.gatherMs(), { api, step, sobject, fields, dedupe });
    if (outcome instanceof CrmError) throw outcome;
    return outcome;
  };
  // The syncs of one new person create one record, whichever batch their turn falls in.
  // Keyed by the connection, not the token: the round's runs may hold different tokens after a refresh.
  return dedupe === undefined ? create() : CREATING.run(`${api.memoryKey()}\n${sobject}\n${dedupe}`, create);
}

const CREATING = new SingleFlight<string>();

interface GroupedCreate {
  api: SalesforceSession;
  step: string;
  sobject: string;
  fields: Record<string, string>;
  dedupe: string | undefined;
}

const CREATES = new SharedCalls<GroupedCreate, string | CrmError>(createGroup, RECORDS_PER_CALL);

/**
 * Per sync, the new record's id or why it was not created. A call that fails as a whole (an outage, no
 * answer) throws to every sync of the group: their next attempts look for what may have been written.
 */
async function createGroup(items: GroupedCreate[]): Promise<(string | CrmError)[]> {
  const { api, step } = items[0]!;
  const records: GroupedCreate[] = [];
  const recordOf = new Map<string, number>();
  const slots = items.map((item) => {
    const key = item.dedupe === undefined ? undefined : `${item.sobject}\n${item.dedupe}`;
    const seen = key === undefined ? undefined : recordOf.get(key);
    if (seen !== undefined) return seen;
    records.push(item);
    if (key !== undefined) recordOf.set(key, records.length - 1);
    return records.length - 1;
  });
  if (records.length === 1) {
    const id = await api.create(step, records[0]!.sobject, records[0]!.fields);
    return items.map(() => id);
  }
  const results = await api.createMany(
    step,
    records.map((r) => ({ sobject: r.sobject, fields: r.fields })),
  );
  return slots.map((slot) => {
    const result = results[slot]!;
    return 'id' in result ? result.id : result.error;
  });
}
