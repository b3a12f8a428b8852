/**
 * Close as a block list source (issue 32), the suite every CRM runs (test/support/crm-blocklist.ts): the
 * organization's 5,000 unsubscribed emails, read a hundred at a time, pushed to Smartlead; a Smart View's
 * contacts pushed to Instantly as their domains.
 */
import { startCloseEmulator } from '../../src/emulators/close.js';
import { BLOCKED_ADDRESSES, crmBlocklistSuite } from '../support/crm-blocklist.js';

const KEY = 'close-blocklist-key';

crmBlocklistSuite({
  crm: 'CLOSE',
  name: 'Close',
  async start() {
    const close = await startCloseEmulator({ apiKeys: [KEY] });
    for (let i = 0; i < BLOCKED_ADDRESSES; i++) close.unsubscribed.set(`gone-${i}@unsub${i % 50}.test`, new Date().toISOString());
    // A Smart View of two contacts, one with its address in capitals.
    const contact = (id: string, email: string) => ({
      id,
      lead_id: 'lead_v',
      name: id,
      emails: [{ email, type: 'office', is_unsubscribed: false }],
      urls: [],
      date_created: '',
    });
    close.contacts.set('cont_view1', contact('cont_view1', 'Ann@Customer.TEST'));
    close.contacts.set('cont_view2', contact('cont_view2', 'bob@partner.test'));
    close.smartViews.set('save_customers', { id: 'save_customers', name: 'Customers', contactIds: new Set(['cont_view1', 'cont_view2']) });
    return close;
  },
  credentials: { apiKey: KEY },
  sources: () => ({ addresses: {}, domains: { smartViewId: 'save_customers' } }),
  addressPages: (close) => close.apiRequests().filter((r) => r.path === '/api/v1/unsubscribe/email/').length,
  expectedAddressPages: BLOCKED_ADDRESSES / 100,
});
