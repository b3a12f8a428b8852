/**
 * Close behind the real worker (issue 32), the suite every CRM runs (test/support/crm-pipeline.ts): every
 * sample payload written into the Close emulator over real HTTP (and no email Close would send), a refused
 * API key failing the pipeline with `sync.failed`, a 429 pausing the connection for two worker processes
 * until its Retry-After, and a worker killed at a random Close call of a campaign's round leaving every
 * contact, lead, activity and task once; a refused API key in /account/status, a retry of a sync Close
 * refused, and a sync's lineage naming the contact, lead, activity and task Close holds.
 */
import { expect } from 'vitest';
import { startCloseEmulator } from '../../src/emulators/close.js';
import { campaignCompanies } from '../support/campaign.js';
import { crmPipelineSuite } from '../support/crm-pipeline.js';

const KEY = 'close-pipeline-key';

crmPipelineSuite({
  crm: 'CLOSE',
  name: 'Close',
  baseUrlEnv: 'CLOSE_BASE_URL',
  apiPrefix: '/api/v1/',
  creates: { method: 'POST', path: /^\/api\/v1\/(activity\/(email|note)|task)\/$/ },
  start: () =>
    startCloseEmulator({ apiKeys: [KEY], users: [{ id: 'user_rep000000000000000000002', email: 'rep@seller.test', first_name: 'Rita', last_name: 'Rep' }] }),
  credentials: { apiKey: KEY },
  refused: { credentials: { apiKey: 'revoked-close-key' }, secret: 'revoked-close-key' },
  pausedMs: 2_900,
  checkSample(close, state, type) {
    expect(close.contacts.has(String(state.contactId)), type).toBe(true);
    expect(close.activities.get(String(state.activityId))?.contact_id, type).toBe(state.contactId);
    expect(close.tasks.has(String(state.taskId)), type).toBe(true);
    expect(close.mailSent, type).toEqual([]);
  },
  checkCampaign(close, campaign, events) {
    const contacts = [...close.contacts.values()].filter((c) => c.emails[0]?.email.startsWith(`lead-${campaign.tag}-`));
    expect(contacts).toHaveLength(campaign.leads);
    expect(new Set(contacts.map((c) => c.lead_id)).size).toBe(campaignCompanies(campaign));
    const ours = new Set(contacts.map((c) => c.id));
    expect([...close.activities.values()].filter((a) => ours.has(String(a.contact_id)))).toHaveLength(events);
    expect([...close.tasks.values()].filter((t) => ours.has(String(t.contact_id)))).toHaveLength(events);
    expect(close.mailSent).toEqual([]);
  },
  held(close, email) {
    const contacts = close.contactsByEmail(email);
    const contact = contacts[0];
    const activities = [...close.activities.values()].filter((a) => contact !== undefined && a.contact_id === contact.id);
    const tasks = [...close.tasks.values()].filter((t) => contact !== undefined && t.contact_id === contact.id);
    return {
      people: contacts.length,
      activities: activities.length,
      tasks: tasks.length,
      ids: { contactId: contact?.id, leadId: contact?.lead_id, activityId: activities[0]?.id, taskId: tasks[0]?.id },
    };
  },
});
