/**
 * Attio as a block list source (issue 32), the suite every CRM runs (test/support/crm-blocklist.ts): an Attio
 * list of 5,000 people (entries 500 at a time, then their addresses) pushed to Smartlead, a list of companies
 * pushed to Instantly as their domains.
 */
import { startAttioEmulator } from '../../src/emulators/attio.js';
import { BLOCKED_ADDRESSES, crmBlocklistSuite } from '../support/crm-blocklist.js';

const TOKEN = 'attio-blocklist-token';
let peopleList = '';

crmBlocklistSuite({
  crm: 'ATTIO',
  name: 'Attio',
  async start() {
    const attio = await startAttioEmulator({ tokens: [TOKEN] });
    const people = Array.from(
      { length: BLOCKED_ADDRESSES },
      (_, i) => attio.seed('people', { email_addresses: [`Gone-${i}@Unsub${i % 50}.test`] }).id.record_id,
    );
    peopleList = attio.addList({ name: 'Do not contact', slug: 'do-not-contact', parent: 'people', recordIds: people });
    const companies = ['https://www.customer.test', 'partner.test'].map((domain) => attio.seed('companies', { domains: [domain] }).id.record_id);
    attio.addList({ name: 'Customers', slug: 'customers', parent: 'companies', recordIds: companies });
    return attio;
  },
  credentials: { accessToken: TOKEN },
  sources: () => ({ addresses: { listId: peopleList }, domains: { listId: 'customers' } }),
  // Entries 500 at a time (the last page empty), and the companies' one page.
  addressPages: (attio) => attio.apiRequests().filter((r) => r.path.endsWith('/entries/query')).length,
  expectedAddressPages: BLOCKED_ADDRESSES / 500 + 1 + 1,
});
