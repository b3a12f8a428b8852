/**
 * Attio behind the real worker (issue 32), the suite every CRM runs (test/support/crm-pipeline.ts): every
 * sample payload written into the Attio emulator over real HTTP, a refused token failing the pipeline with
 * `sync.failed`, a 429 (its Retry-After an HTTP date) pausing the connection for two worker processes, and a
 * worker killed at a random Attio call of a campaign's round leaving every person, company, note and task once;
 * a refused token in /account/status, a retry of a sync Attio refused, and a sync's lineage naming the
 * person, company, note and task Attio holds.
 */
import { expect } from 'vitest';
import { startAttioEmulator } from '../../src/emulators/attio.js';
import { campaignCompanies } from '../support/campaign.js';
import { crmPipelineSuite } from '../support/crm-pipeline.js';

const TOKEN = 'attio-pipeline-token';

crmPipelineSuite({
  crm: 'ATTIO',
  name: 'Attio',
  baseUrlEnv: 'ATTIO_BASE_URL',
  apiPrefix: '/v2/',
  creates: { method: 'POST', path: /^\/v2\/(notes|tasks)$/ },
  start: () => startAttioEmulator({ tokens: [TOKEN] }),
  credentials: { accessToken: TOKEN },
  refused: { credentials: { accessToken: 'revoked-attio-token' }, secret: 'revoked-attio-token' },
  // An HTTP date has whole seconds: "3 seconds from now" is at least two.
  pausedMs: 1_900,
  checkSample(attio, state, type) {
    expect(attio.records.people.has(String(state.recordId)), type).toBe(true);
    expect(attio.notes.get(String(state.noteId))?.parent_record_id, type).toBe(state.recordId);
    expect(attio.tasks.has(String(state.taskId)), type).toBe(true);
  },
  checkCampaign(attio, campaign, events) {
    const people = [...attio.records.people.values()].filter((p) => String(p.values.email_addresses?.[0]?.email_address).startsWith(`lead-${campaign.tag}-`));
    expect(people).toHaveLength(campaign.leads);
    const companies = [...attio.records.companies.values()].filter((c) => String(c.values.domains?.[0]?.domain).includes(`-${campaign.tag}-`));
    expect(companies).toHaveLength(campaignCompanies(campaign));
    const ours = new Set(people.map((p) => p.id.record_id));
    expect([...attio.notes.values()].filter((n) => ours.has(n.parent_record_id))).toHaveLength(events);
    expect([...attio.tasks.values()].filter((t) => ours.has(t.linked_records[0]?.target_record_id ?? ''))).toHaveLength(events);
  },
  held(attio, email) {
    const people = attio.peopleByEmail(email);
    const recordId = people[0]?.id.record_id;
    const notes = recordId === undefined ? [] : attio.notesOf(recordId);
    const tasks = recordId === undefined ? [] : attio.tasksOf(recordId);
    const company = people[0]?.values.company?.[0]?.target_record_id;
    return {
      people: people.length,
      activities: notes.length,
      tasks: tasks.length,
      ids: { recordId, companyId: typeof company === 'string' ? company : undefined, noteId: notes[0]?.id.note_id, taskId: tasks[0]?.id.task_id },
    };
  },
});
