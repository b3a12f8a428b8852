import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { EVENT_TYPES } from '../../src/domain/event-types.js';
import { htmlToText, websiteDomain, normalizeEmail, parseTime, type InboundEvent, type ParseResult } from '../../src/connectors/sequencers/event.js';
import { EMAILBISON_EVENTS, parseEmailBison } from '../../src/connectors/sequencers/emailbison/parser.js';
import { HEYREACH_EVENTS, parseHeyReach } from '../../src/connectors/sequencers/heyreach/parser.js';
import { INSTANTLY_EVENTS, INSTANTLY_STATUSES, parseInstantly } from '../../src/connectors/sequencers/instantly/parser.js';
import { LEMLIST_CATEGORIES, LEMLIST_EVENTS, parseLemlist } from '../../src/connectors/sequencers/lemlist/parser.js';
import { SMARTLEAD_EVENTS, parseSmartlead } from '../../src/connectors/sequencers/smartlead/parser.js';
import { parseInbound, parserFor } from '../../src/connectors/sequencers/index.js';
import { readSample as sampleText, sampleFiles as samplesOf } from '../../src/connectors/sequencers/samples.js';
import { SEQUENCER_PLATFORMS, type SequencerPlatform } from '../../src/connectors/sequencers/platforms.js';
import { mulberry32 } from '../support/random.js';

// Samples are named `<platform>/<file>`: copies of ../shared/fixtures/sequencer-payloads, each platform's in
// src/connectors/sequencers/<platform>/samples/ (CI clones this repository alone).
const SHARED_SAMPLES = fileURLToPath(new URL('../../../shared/fixtures/sequencer-payloads/', import.meta.url));
// Every registered platform: one added asks for its factory, event field, samples' events and mapping rows.
const PLATFORMS = SEQUENCER_PLATFORMS;
type Platform = SequencerPlatform;

const PARSERS = { smartlead: parseSmartlead, instantly: parseInstantly, heyreach: parseHeyReach, lemlist: parseLemlist, emailbison: parseEmailBison };

/** Our samples, as `<platform>/<file>`. */
function ourSamples(): string[] {
  return PLATFORMS.flatMap((platform) => samplesOf(platform).map((f) => `${platform}/${f}`));
}

/** A sample's raw text by its `<platform>/<file>` name. */
function rawSample(name: string): string {
  const [platform, file] = name.split('/') as [Platform, string];
  return sampleText(platform, file);
}

function sampleFiles(root: string): string[] {
  return PLATFORMS.flatMap((platform) =>
    existsSync(`${root}${platform}`)
      ? readdirSync(`${root}${platform}`)
          .filter((f) => f.endsWith('.json'))
          .map((f) => `${platform}/${f}`)
      : [],
  );
}

function readSample(name: string): Record<string, unknown> {
  return JSON.parse(rawSample(name)) as Record<string, unknown>;
}

function parsed(result: ParseResult): InboundEvent {
  if (!result.ok) throw new Error(`expected ok, got: ${result.reason}`);
  return result.event;
}

// Factories: a minimal valid body per platform, with overrides.
const smartlead = (over: Record<string, unknown> = {}) => ({ event_type: 'EMAIL_SENT', to_email: 'lead@acme.test', from_email: 'rep@northwind.test', ...over });
const instantly = (over: Record<string, unknown> = {}) => ({
  event_type: 'email_sent',
  lead_email: 'lead@acme.test',
  timestamp: '2026-01-02T03:04:05.000Z',
  ...over,
});
const heyreach = (over: Record<string, unknown> = {}) => ({ event_type: 'message_sent', lead: { profile_url: 'https://www.linkedin.com/in/lead' }, ...over });
const lemlist = (over: Record<string, unknown> = {}) => ({ type: 'emailsSent', leadEmail: 'lead@acme.test', ...over });
// EmailBison nests its type (`event.type`): a string given as `event` is the type.
const emailbison = ({ event, ...over }: Record<string, unknown> = {}) => ({
  event: { type: typeof event === 'string' ? event : 'EMAIL_SENT', instance_url: 'https://send.example.test', workspace_id: 1 },
  data: { lead: { email: 'lead@acme.test' } },
  ...over,
});
const FACTORIES = { smartlead, instantly, heyreach, lemlist, emailbison };
const EVENT_FIELD: Record<Platform, string> = {
  smartlead: 'event_type',
  instantly: 'event_type',
  heyreach: 'event_type',
  lemlist: 'type',
  emailbison: 'event',
};

const none = { email: null, profileUrl: null, firstName: null, lastName: null, company: null, companyDomain: null };

// The ids every EmailBison sample of Jane's campaign email carries.
const EB_IDS = { leadId: '5012', scheduledEmailId: '88121', step: '1', emailAccountId: '40', mailbox: 'sam@acme-mail.test', workspaceId: '12' };

const EXPECTED: Record<string, InboundEvent> = {
  'smartlead/EMAIL_SENT.json': {
    platform: 'smartlead',
    eventType: 'EMAIL_SENT',
    rawEventType: 'EMAIL_SENT',
    contact: { ...none, email: 'lead@example.test', firstName: 'John', lastName: 'Doe' },
    identity: 'lead@example.test',
    campaign: { id: '123', name: 'Q1 Outreach' },
    message: { subject: 'Quick question about Acme Corp', text: 'Email body content...', direction: 'outbound' },
    leadCategory: null,
    inboxUrl: null,
    sequencerIds: { messageId: 'abc123def456', step: '1', mailbox: 'sender@northwind.test' },
    occurredAt: new Date('2025-01-15T09:00:00Z'),
  },
  'smartlead/EMAIL_OPEN.json': {
    platform: 'smartlead',
    eventType: 'EMAIL_OPEN',
    rawEventType: 'EMAIL_OPEN',
    contact: { ...none, email: 'lead@example.test', firstName: 'John', lastName: 'Doe' },
    identity: 'lead@example.test',
    campaign: { id: '123', name: 'Q1 Outreach' },
    message: { subject: null, text: null, direction: null },
    leadCategory: null,
    inboxUrl: null,
    sequencerIds: { step: '1', mailbox: 'sender@northwind.test' },
    occurredAt: new Date('2025-01-15T10:30:00Z'),
  },
  'smartlead/EMAIL_LINK_CLICK.json': {
    platform: 'smartlead',
    eventType: 'EMAIL_LINK_CLICK',
    rawEventType: 'EMAIL_LINK_CLICK',
    contact: { ...none, email: 'lead@example.test', firstName: 'John', lastName: 'Doe' },
    identity: 'lead@example.test',
    campaign: { id: '123', name: 'Q1 Outreach' },
    message: { subject: null, text: null, direction: null },
    leadCategory: null,
    inboxUrl: null,
    sequencerIds: { step: '1', mailbox: 'sender@northwind.test' },
    occurredAt: new Date('2025-01-15T10:45:00Z'),
  },
  'smartlead/EMAIL_REPLY.json': {
    platform: 'smartlead',
    eventType: 'EMAIL_REPLY',
    rawEventType: 'EMAIL_REPLY',
    contact: { ...none, email: 'jane@acme.test', firstName: 'Jane', lastName: 'Doe' },
    identity: 'jane@acme.test',
    campaign: { id: '9181', name: 'Q1 Outreach' },
    message: { subject: 'Re: Quick question', text: 'Sounds good, send times', direction: 'inbound' },
    leadCategory: null,
    inboxUrl: 'https://app.smartlead.example/app/master-inbox?leadMap=1438627',
    sequencerIds: {
      leadId: '1482956',
      leadMapId: '1438627',
      statsId: 'a891fe37-c45d-21e8-67ba-fcd44e9c33a8',
      threadId: 'thread_id',
      messageId: '<c@acme.test>',
      inReplyToMessageId: '<a@northwind.test>',
      step: '1',
      mailbox: 'tom@northwind.test',
      webhookId: '12345',
    },
    occurredAt: new Date('2025-03-28T09:35:01Z'),
  },
  'smartlead/LEAD_CATEGORY_UPDATED.json': {
    platform: 'smartlead',
    eventType: 'LEAD_CATEGORY_UPDATED',
    rawEventType: 'LEAD_CATEGORY_UPDATED',
    contact: {
      email: 'jane@acme.test',
      profileUrl: 'https://www.linkedin.com/in/janedoe',
      firstName: 'Jane',
      lastName: 'Doe',
      company: 'Acme',
      companyDomain: 'acme.test',
    },
    identity: 'jane@acme.test',
    campaign: { id: '9181', name: 'Q1 Outreach' },
    message: { subject: null, text: null, direction: null },
    leadCategory: { id: '1', name: 'Interested' },
    inboxUrl: 'https://app.smartlead.example/app/master-inbox?leadMap=1438627',
    sequencerIds: { leadId: '987654', mailbox: 'tom@northwind.test', webhookId: '12345' },
    occurredAt: new Date('2025-03-28T10:00:00Z'),
  },
  'instantly/email_sent.json': {
    platform: 'instantly',
    eventType: 'EMAIL_SENT',
    rawEventType: 'email_sent',
    contact: { ...none, email: 'jane@acme.test' },
    identity: 'jane@acme.test',
    campaign: { id: '7f3e9a10-aaaa-bbbb-cccc-ddddeeeeffff', name: 'Finance hiring signal' },
    message: { subject: 'Quick question about your finance hire', text: 'Hi Jane', direction: 'outbound' },
    leadCategory: null,
    inboxUrl: null,
    sequencerIds: {
      emailId: '0199a7f0-0000-7000-8000-000000000000',
      step: '1',
      variant: '1',
      mailbox: 'tom@northwind.test',
      workspaceId: '0a1b2c3d-1111-2222-3333-444455556666',
    },
    occurredAt: new Date('2026-09-23T08:00:00.000Z'),
  },
  'instantly/reply_received.json': {
    platform: 'instantly',
    eventType: 'EMAIL_REPLY',
    rawEventType: 'reply_received',
    contact: { ...none, email: 'jane@acme.test', firstName: 'Jane', company: 'Acme' },
    identity: 'jane@acme.test',
    campaign: { id: '7f3e9a10-aaaa-bbbb-cccc-ddddeeeeffff', name: 'Finance hiring signal' },
    message: {
      subject: 'Re: Quick question about your finance hire',
      text: 'Sounds good, send me some times.\n\nOn Wed, Sep 23, 2026 Tom wrote:\n> Hi Jane',
      direction: 'inbound',
    },
    leadCategory: null,
    inboxUrl: 'https://app.instantly.example/app/unibox?thread_search=jane',
    sequencerIds: {
      emailId: '0199a7f0-0000-7000-8000-000000000001',
      step: '1',
      variant: '1',
      mailbox: 'tom@northwind.test',
      workspaceId: '0a1b2c3d-1111-2222-3333-444455556666',
    },
    occurredAt: new Date('2026-09-24T10:15:00.000Z'),
  },
  'heyreach/every_message_reply_received.json': {
    platform: 'heyreach',
    eventType: 'MESSAGE_REPLY_RECEIVED',
    rawEventType: 'every_message_reply_received',
    contact: {
      email: 'john@testco.test',
      profileUrl: 'https://www.linkedin.com/in/johndoe',
      firstName: 'John',
      lastName: 'Doe',
      company: 'Test Company',
      companyDomain: null,
    },
    identity: 'john@testco.test',
    campaign: { id: '123', name: 'Test Campaign' },
    message: { subject: null, text: 'Hi there', direction: 'inbound' },
    leadCategory: null,
    inboxUrl: null,
    sequencerIds: { leadId: 'TestId', conversationId: '2-ODYwNmVkNDI=', senderId: '123' },
    occurredAt: new Date('2026-01-28T16:28:01Z'),
  },
  'heyreach/message_sent_no_email.json': {
    platform: 'heyreach',
    eventType: 'MESSAGE_SENT',
    rawEventType: 'message_sent',
    contact: { ...none, profileUrl: 'https://www.linkedin.com/in/ana-lima-42', firstName: 'Ana', lastName: 'Lima', company: 'Lima Labs' },
    identity: 'https://www.linkedin.com/in/ana-lima-42',
    campaign: { id: '456', name: 'LinkedIn Q1' },
    message: { subject: null, text: 'Hi Ana, quick question', direction: 'outbound' },
    leadCategory: null,
    inboxUrl: null,
    sequencerIds: { leadId: 'L-9', conversationId: '2-QWJjZGVm', senderId: '77' },
    occurredAt: new Date('2026-01-27T10:00:00Z'),
  },
  'lemlist/emailsSent.json': {
    platform: 'lemlist',
    eventType: 'EMAIL_SENT',
    rawEventType: 'emailsSent',
    contact: { ...none, email: 'john@acme.test', firstName: 'John', lastName: 'Doe' },
    identity: 'john@acme.test',
    campaign: { id: 'cam_abc123', name: 'GTM Engineering Copy' },
    message: { subject: null, text: null, direction: 'outbound' },
    leadCategory: null,
    inboxUrl: null,
    sequencerIds: { activityId: 'act_yyy', leadId: 'lea_123', sequenceId: 'seq_1', stepId: 'stp_0', step: '1' },
    occurredAt: new Date('2026-03-24T09:00:00.000Z'),
  },
  'lemlist/emailsReplied.json': {
    platform: 'lemlist',
    eventType: 'EMAIL_REPLY',
    rawEventType: 'emailsReplied',
    contact: { ...none, email: 'john@acme.test', firstName: 'John', lastName: 'Doe' },
    identity: 'john@acme.test',
    campaign: { id: 'cam_abc123', name: 'GTM Engineering Copy' },
    message: { subject: null, text: 'Hey, sounds interesting!', direction: 'inbound' },
    leadCategory: null,
    inboxUrl: null,
    sequencerIds: { activityId: 'act_xxx', leadId: 'lea_123', sequenceId: 'seq_1', stepId: 'stp_1', step: '2' },
    occurredAt: new Date('2026-03-25T20:55:49.877Z'),
  },
  'emailbison/EMAIL_SENT.json': {
    platform: 'emailbison',
    eventType: 'EMAIL_SENT',
    rawEventType: 'EMAIL_SENT',
    contact: { ...none, email: 'jane@acme.test', firstName: 'Jane', lastName: 'Doe', company: 'Acme' },
    identity: 'jane@acme.test',
    campaign: { id: '77', name: 'Q1 VP Sales' },
    message: { subject: 'Quick question, Jane', text: 'Hi Jane,\nAre you the right person to talk to about outbound?', direction: 'outbound' },
    leadCategory: null,
    inboxUrl: null,
    sequencerIds: { ...EB_IDS, messageId: '<a1b2c3d4@send.example-agency.com>', campaignEventId: '991', variant: '1' },
    occurredAt: new Date('2026-03-02T14:14:07Z'),
  },
  'emailbison/EMAIL_OPENED.json': {
    platform: 'emailbison',
    eventType: 'EMAIL_OPEN',
    rawEventType: 'EMAIL_OPENED',
    contact: { ...none, email: 'jane@acme.test', firstName: 'Jane', lastName: 'Doe' },
    identity: 'jane@acme.test',
    campaign: { id: '77', name: 'Q1 VP Sales' },
    message: { subject: null, text: null, direction: null },
    leadCategory: null,
    inboxUrl: null,
    sequencerIds: { ...EB_IDS, campaignEventId: '1002' },
    occurredAt: new Date('2026-03-02T16:40:11Z'),
  },
  'emailbison/LEAD_REPLIED.json': {
    platform: 'emailbison',
    eventType: 'EMAIL_REPLY',
    rawEventType: 'LEAD_REPLIED',
    contact: { ...none, email: 'jane@acme.test', firstName: 'Jane', lastName: 'Doe', company: 'Acme' },
    identity: 'jane@acme.test',
    campaign: { id: '77', name: 'Q1 VP Sales' },
    message: { subject: 'Re: Quick question, Jane', text: 'Sounds good, call me Thursday.', direction: 'inbound' },
    leadCategory: null,
    inboxUrl: 'https://send.example-agency.com/inbox/replies/9b7e1c52-0f4a-4d0e-9a51-2f1d7e3c8a10',
    sequencerIds: {
      ...EB_IDS,
      messageId: '<CAF=jane.123@mail.acme.test>',
      inReplyToMessageId: '<a1b2c3d4@send.example-agency.com>',
      replyId: '33017',
      campaignEventId: '1010',
    },
    occurredAt: new Date('2026-03-03T08:02:55Z'),
  },
  'emailbison/LEAD_INTERESTED.json': {
    platform: 'emailbison',
    eventType: 'LEAD_CATEGORY_UPDATED',
    rawEventType: 'LEAD_INTERESTED',
    contact: { ...none, email: 'jane@acme.test', firstName: 'Jane', lastName: 'Doe', company: 'Acme' },
    identity: 'jane@acme.test',
    campaign: { id: '77', name: 'Q1 VP Sales' },
    message: { subject: null, text: null, direction: null },
    leadCategory: { id: null, name: 'Interested' },
    inboxUrl: 'https://send.example-agency.com/inbox/replies/9b7e1c52-0f4a-4d0e-9a51-2f1d7e3c8a10',
    sequencerIds: { ...EB_IDS, replyId: '33017', campaignEventId: '1011' },
    occurredAt: new Date('2026-03-03T08:30:00Z'),
  },
  'emailbison/UNTRACKED_REPLY_RECEIVED.json': {
    platform: 'emailbison',
    eventType: 'EMAIL_REPLY',
    rawEventType: 'UNTRACKED_REPLY_RECEIVED',
    contact: { ...none, email: 'bob@acme.test', firstName: 'Bob', lastName: 'Roe' },
    identity: 'bob@acme.test',
    campaign: { id: null, name: null },
    message: { subject: 'Intro', text: 'Hi Sam, Jane passed me your address.', direction: 'inbound' },
    leadCategory: null,
    inboxUrl: 'https://send.example-agency.com/inbox/replies/c0d5a1e2-7b7e-4c1a-9f00-1a2b3c4d5e6f',
    sequencerIds: { messageId: '<bob.77@mail.acme.test>', replyId: '33020', emailAccountId: '40', mailbox: 'sam@acme-mail.test', workspaceId: '12' },
    occurredAt: new Date('2026-03-03T09:00:00Z'),
  },
  'emailbison/EMAIL_BOUNCED.json': {
    platform: 'emailbison',
    eventType: 'EMAIL_BOUNCE',
    rawEventType: 'EMAIL_BOUNCED',
    contact: { ...none, email: 'jim@acme.test', firstName: 'Jim' },
    identity: 'jim@acme.test',
    campaign: { id: '77', name: 'Q1 VP Sales' },
    message: { subject: null, text: null, direction: null },
    leadCategory: null,
    inboxUrl: 'https://send.example-agency.com/inbox/replies/0e9d8c7b-6a5f-4e3d-2c1b-0a9f8e7d6c5b',
    sequencerIds: { ...EB_IDS, leadId: '5013', replyId: '33031', scheduledEmailId: '88122' },
    occurredAt: new Date('2026-03-02T14:15:01Z'),
  },
  'emailbison/LEAD_UNSUBSCRIBED.json': {
    platform: 'emailbison',
    eventType: 'LEAD_UNSUBSCRIBED',
    rawEventType: 'LEAD_UNSUBSCRIBED',
    contact: { ...none, email: 'jane@acme.test', firstName: 'Jane', lastName: 'Doe' },
    identity: 'jane@acme.test',
    campaign: { id: '77', name: 'Q1 VP Sales' },
    message: { subject: null, text: null, direction: null },
    leadCategory: null,
    inboxUrl: null,
    sequencerIds: { ...EB_IDS, campaignEventId: '1050' },
    occurredAt: new Date('2026-03-04T11:20:00Z'),
  },
  'emailbison/MANUAL_EMAIL_SENT.json': {
    platform: 'emailbison',
    eventType: 'EMAIL_SENT',
    rawEventType: 'MANUAL_EMAIL_SENT',
    contact: { ...none, email: 'jane@acme.test', firstName: 'Jane', lastName: 'Doe' },
    identity: 'jane@acme.test',
    campaign: { id: '77', name: 'Q1 VP Sales' },
    message: { subject: 'Re: Quick question, Jane', text: 'Thursday 10am works, invite sent.', direction: 'outbound' },
    leadCategory: null,
    inboxUrl: 'https://send.example-agency.com/inbox/replies/5f4e3d2c-1b0a-4f9e-8d7c-6b5a4f3e2d1c',
    sequencerIds: { ...EB_IDS, messageId: '<sam.991@acme-mail.test>', replyId: '33040' },
    occurredAt: new Date('2026-03-03T09:30:00Z'),
  },
};

describe('sequencer samples', () => {
  const files = ourSamples();

  it('has an expected event for every sample file, and a sample for every expectation', () => {
    expect(files.sort()).toEqual(Object.keys(EXPECTED).sort());
  });

  it.skipIf(!existsSync(SHARED_SAMPLES))('keeps byte-identical copies of every shared sample', () => {
    // Setup
    const shared = sampleFiles(SHARED_SAMPLES);
    // Assertions: the platforms the shared folder has samples of (EmailBison's are ours alone).
    expect(shared.sort()).toEqual(files.filter((name) => existsSync(`${SHARED_SAMPLES}${name.split('/')[0]}`)).sort());
    for (const name of shared) expect(rawSample(name), name).toBe(readFileSync(`${SHARED_SAMPLES}${name}`, 'utf8'));
  });

  it.each(Object.keys(EXPECTED))('%s parses to its exact event', (name) => {
    // Setup
    const platform = name.split('/')[0]!;
    const raw = rawSample(name);
    // Action
    const result = parseInbound(platform, raw);
    // Assertions
    expect(result).toEqual({ ok: true, event: EXPECTED[name] });
    expect(parserFor(platform)!(JSON.parse(raw))).toEqual(result);
  });
});

// Every row of docs/event-types.md: platform event → canonical type (and category name for labels).
const MAPPING: [Platform, string, string, string | null][] = [
  ['smartlead', 'EMAIL_SENT', 'EMAIL_SENT', null],
  ['smartlead', 'FIRST_EMAIL_SENT', 'EMAIL_SENT', null],
  ['smartlead', 'EMAIL_OPEN', 'EMAIL_OPEN', null],
  ['smartlead', 'EMAIL_OPENED', 'EMAIL_OPEN', null],
  ['smartlead', 'EMAIL_LINK_CLICK', 'EMAIL_LINK_CLICK', null],
  ['smartlead', 'EMAIL_CLICKED', 'EMAIL_LINK_CLICK', null],
  ['smartlead', 'EMAIL_REPLY', 'EMAIL_REPLY', null],
  ['smartlead', 'EMAIL_REPLIED', 'EMAIL_REPLY', null],
  ['smartlead', 'EMAIL_BOUNCE', 'EMAIL_BOUNCE', null],
  ['smartlead', 'EMAIL_BOUNCED', 'EMAIL_BOUNCE', null],
  ['smartlead', 'LEAD_UNSUBSCRIBED', 'LEAD_UNSUBSCRIBED', null],
  ['smartlead', 'LEAD_CATEGORY_UPDATED', 'LEAD_CATEGORY_UPDATED', null],
  ['smartlead', 'MANUAL_STEP_REACHED', 'UNKNOWN', null],
  ['instantly', 'email_sent', 'EMAIL_SENT', null],
  ['instantly', 'email_opened', 'EMAIL_OPEN', null],
  ['instantly', 'link_clicked', 'EMAIL_LINK_CLICK', null],
  ['instantly', 'email_link_clicked', 'EMAIL_LINK_CLICK', null],
  ['instantly', 'reply_received', 'EMAIL_REPLY', null],
  ['instantly', 'auto_reply_received', 'EMAIL_AUTO_REPLY', null],
  ['instantly', 'email_bounced', 'EMAIL_BOUNCE', null],
  ['instantly', 'lead_unsubscribed', 'LEAD_UNSUBSCRIBED', null],
  ['instantly', 'campaign_completed', 'CAMPAIGN_COMPLETED', null],
  ['instantly', 'account_error', 'UNKNOWN', null],
  ['instantly', 'supersearch_enrichment_completed', 'UNKNOWN', null],
  ['instantly', 'lead_interested', 'LEAD_CATEGORY_UPDATED', 'Interested'],
  ['instantly', 'lead_not_interested', 'LEAD_CATEGORY_UPDATED', 'Not Interested'],
  ['instantly', 'lead_neutral', 'LEAD_CATEGORY_UPDATED', 'Neutral'],
  ['instantly', 'lead_meeting_booked', 'LEAD_CATEGORY_UPDATED', 'Meeting Booked'],
  ['instantly', 'lead_meeting_completed', 'LEAD_CATEGORY_UPDATED', 'Meeting Completed'],
  ['instantly', 'lead_closed', 'LEAD_CATEGORY_UPDATED', 'Closed'],
  ['instantly', 'lead_out_of_office', 'LEAD_CATEGORY_UPDATED', 'Out of Office'],
  ['instantly', 'lead_wrong_person', 'LEAD_CATEGORY_UPDATED', 'Wrong Person'],
  ['instantly', 'lead_no_show', 'LEAD_CATEGORY_UPDATED', 'No Show'],
  ['instantly', 'Hot Lead', 'LEAD_CATEGORY_UPDATED', 'Hot Lead'],
  ['instantly', 'Asked for pricing', 'LEAD_CATEGORY_UPDATED', 'Asked for pricing'],
  ['heyreach', 'connection_request_sent', 'CONNECTION_REQUEST_SENT', null],
  ['heyreach', 'connection_request_accepted', 'CONNECTION_REQUEST_ACCEPTED', null],
  ['heyreach', 'message_sent', 'MESSAGE_SENT', null],
  ['heyreach', 'message_reply_received', 'MESSAGE_REPLY_RECEIVED', null],
  ['heyreach', 'every_message_reply_received', 'MESSAGE_REPLY_RECEIVED', null],
  ['heyreach', 'inmail_sent', 'INMAIL_SENT', null],
  ['heyreach', 'inmail_reply_received', 'INMAIL_REPLY_RECEIVED', null],
  ['heyreach', 'follow_sent', 'FOLLOW_SENT', null],
  ['heyreach', 'liked_post', 'POST_LIKED', null],
  ['heyreach', 'viewed_profile', 'PROFILE_VIEWED', null],
  ['heyreach', 'campaign_completed', 'CAMPAIGN_COMPLETED', null],
  ['heyreach', 'lead_tag_updated', 'LEAD_CATEGORY_UPDATED', null],
  ['heyreach', 'endorsed_skill', 'UNKNOWN', null],
  ['heyreach', 'constructor', 'UNKNOWN', null],
  ['lemlist', 'emailsSent', 'EMAIL_SENT', null],
  ['lemlist', 'emailsOpened', 'EMAIL_OPEN', null],
  ['lemlist', 'emailsClicked', 'EMAIL_LINK_CLICK', null],
  ['lemlist', 'emailsReplied', 'EMAIL_REPLY', null],
  ['lemlist', 'emailsBounced', 'EMAIL_BOUNCE', null],
  ['lemlist', 'emailsUnsubscribed', 'LEAD_UNSUBSCRIBED', null],
  ['lemlist', 'linkedinSent', 'MESSAGE_SENT', null],
  ['lemlist', 'linkedinReplied', 'MESSAGE_REPLY_RECEIVED', null],
  ['lemlist', 'linkedinInviteDone', 'CONNECTION_REQUEST_SENT', null],
  ['lemlist', 'linkedinInviteAccepted', 'CONNECTION_REQUEST_ACCEPTED', null],
  ['lemlist', 'linkedinVisitDone', 'PROFILE_VIEWED', null],
  ['lemlist', 'linkedinFollowDone', 'FOLLOW_SENT', null],
  ['lemlist', 'aircallEnded', 'CALL_COMPLETED', null],
  ['lemlist', 'interested', 'LEAD_CATEGORY_UPDATED', 'Interested'],
  ['lemlist', 'emailsInterested', 'LEAD_CATEGORY_UPDATED', 'Interested'],
  ['lemlist', 'linkedinInterested', 'LEAD_CATEGORY_UPDATED', 'Interested'],
  ['lemlist', 'aircallInterested', 'LEAD_CATEGORY_UPDATED', 'Interested'],
  ['lemlist', 'apiInterested', 'LEAD_CATEGORY_UPDATED', 'Interested'],
  ['lemlist', 'manualInterested', 'LEAD_CATEGORY_UPDATED', 'Interested'],
  ['lemlist', 'notInterested', 'LEAD_CATEGORY_UPDATED', 'Not Interested'],
  ['lemlist', 'emailsNotInterested', 'LEAD_CATEGORY_UPDATED', 'Not Interested'],
  ['lemlist', 'linkedinNotInterested', 'LEAD_CATEGORY_UPDATED', 'Not Interested'],
  ['lemlist', 'aircallNotInterested', 'LEAD_CATEGORY_UPDATED', 'Not Interested'],
  ['lemlist', 'apiNotInterested', 'LEAD_CATEGORY_UPDATED', 'Not Interested'],
  ['lemlist', 'manualNotInterested', 'LEAD_CATEGORY_UPDATED', 'Not Interested'],
  ['lemlist', 'emailsFailed', 'UNKNOWN', null],
  ['lemlist', 'aircallDone', 'UNKNOWN', null],
  ['lemlist', 'contacted', 'UNKNOWN', null],
  ['emailbison', 'EMAIL_SENT', 'EMAIL_SENT', null],
  ['emailbison', 'MANUAL_EMAIL_SENT', 'EMAIL_SENT', null],
  ['emailbison', 'EMAIL_OPENED', 'EMAIL_OPEN', null],
  ['emailbison', 'LEAD_REPLIED', 'EMAIL_REPLY', null],
  ['emailbison', 'UNTRACKED_REPLY_RECEIVED', 'EMAIL_REPLY', null],
  ['emailbison', 'LEAD_INTERESTED', 'LEAD_CATEGORY_UPDATED', 'Interested'],
  ['emailbison', 'EMAIL_BOUNCED', 'EMAIL_BOUNCE', null],
  ['emailbison', 'LEAD_UNSUBSCRIBED', 'LEAD_UNSUBSCRIBED', null],
  ['emailbison', 'LEAD_FIRST_CONTACTED', 'UNKNOWN', null],
  ['emailbison', 'TAG_ATTACHED', 'UNKNOWN', null],
  ['emailbison', 'TAG_REMOVED', 'UNKNOWN', null],
  ['emailbison', 'EMAIL_ACCOUNT_ADDED', 'UNKNOWN', null],
  ['emailbison', 'EMAIL_ACCOUNT_REMOVED', 'UNKNOWN', null],
  ['emailbison', 'EMAIL_ACCOUNT_DISCONNECTED', 'UNKNOWN', null],
  ['emailbison', 'EMAIL_ACCOUNT_RECONNECTED', 'UNKNOWN', null],
  ['emailbison', 'WARMUP_DISABLED_RECEIVING_BOUNCES', 'UNKNOWN', null],
  ['emailbison', 'WARMUP_DISABLED_CAUSING_BOUNCES', 'UNKNOWN', null],
  ['emailbison', 'email_sent', 'EMAIL_SENT', null],
  ['emailbison', 'SEQUENCE_STEP_PAUSED', 'UNKNOWN', null],
];

describe('event type mapping', () => {
  it.each(MAPPING)('%s %s → %s', (platform, raw, eventType, category) => {
    // Action
    const event = parsed(PARSERS[platform](FACTORIES[platform]({ [EVENT_FIELD[platform]]: raw })));
    // Assertions
    expect(event.eventType).toBe(eventType);
    expect(event.rawEventType).toBe(raw);
    if (category !== null) expect(event.leadCategory).toEqual({ id: null, name: category });
  });

  it('covers every row of every platform table in the test table', () => {
    const tested = (platform: Platform) => new Set(MAPPING.filter(([p]) => p === platform).map(([, raw]) => raw.toLowerCase()));
    const keys = (table: Readonly<Record<string, string>>) => Object.keys(table).map((k) => k.toLowerCase());
    expect(keys(SMARTLEAD_EVENTS).filter((k) => !tested('smartlead').has(k))).toEqual([]);
    expect([...keys(INSTANTLY_EVENTS), ...keys(INSTANTLY_STATUSES)].filter((k) => !tested('instantly').has(k))).toEqual([]);
    expect(keys(HEYREACH_EVENTS).filter((k) => !tested('heyreach').has(k))).toEqual([]);
    expect([...keys(LEMLIST_EVENTS), ...keys(LEMLIST_CATEGORIES)].filter((k) => !tested('lemlist').has(k))).toEqual([]);
    expect(keys(EMAILBISON_EVENTS).filter((k) => !tested('emailbison').has(k))).toEqual([]);
  });

  it('maps only onto canonical types of src/domain/event-types.ts (or UNKNOWN)', () => {
    const targets = [SMARTLEAD_EVENTS, INSTANTLY_EVENTS, HEYREACH_EVENTS, LEMLIST_EVENTS, EMAILBISON_EVENTS].flatMap((t) => Object.values(t));
    expect(targets.filter((t) => t !== 'UNKNOWN' && !Object.hasOwn(EVENT_TYPES, t))).toEqual([]);
  });

  it('documents every platform event in docs/event-types.md', () => {
    const doc = readFileSync(fileURLToPath(new URL('../../docs/event-types.md', import.meta.url)), 'utf8').toLowerCase();
    const tables = [SMARTLEAD_EVENTS, INSTANTLY_EVENTS, INSTANTLY_STATUSES, HEYREACH_EVENTS, LEMLIST_EVENTS, LEMLIST_CATEGORIES, EMAILBISON_EVENTS];
    const missing = tables.flatMap((t) => Object.keys(t)).filter((raw) => !doc.includes(`\`${raw.toLowerCase()}\``));
    expect(missing).toEqual([]);
    for (const type of Object.keys(EVENT_TYPES)) expect(doc, type).toContain(`\`${type.toLowerCase()}\``);
  });

  it('matches event names whatever their case', () => {
    expect(parsed(parseSmartlead(smartlead({ event_type: 'email_reply' }))).eventType).toBe('EMAIL_REPLY');
    expect(parsed(parseHeyReach(heyreach({ event_type: 'MESSAGE_REPLY_RECEIVED' }))).eventType).toBe('MESSAGE_REPLY_RECEIVED');
    expect(parsed(parseLemlist(lemlist({ type: 'EmailsOpened' }))).eventType).toBe('EMAIL_OPEN');
    expect(parsed(parseInstantly(instantly({ event_type: 'Lead_Interested' }))).leadCategory).toEqual({ id: null, name: 'Interested' });
  });

  it('turns HeyReach message events with is_inmail into their InMail counterparts', () => {
    expect(parsed(parseHeyReach(heyreach({ event_type: 'every_message_reply_received', is_inmail: true }))).eventType).toBe('INMAIL_REPLY_RECEIVED');
    expect(parsed(parseHeyReach(heyreach({ event_type: 'message_sent', is_inmail: true }))).eventType).toBe('INMAIL_SENT');
    expect(parsed(parseHeyReach(heyreach({ event_type: 'liked_post', is_inmail: true }))).eventType).toBe('POST_LIKED');
  });

  it('keeps the unmapped platform event in rawEventType', () => {
    const event = parsed(parseSmartlead(smartlead({ event_type: 'EMAIL_SCHEDULED' })));
    expect(event).toMatchObject({ eventType: 'UNKNOWN', rawEventType: 'EMAIL_SCHEDULED', message: { direction: null } });
  });
});

describe('contact identity', () => {
  it('lowercases and trims emails, and reads `Name <address>`', () => {
    expect(parsed(parseSmartlead(smartlead({ to_email: '  Jane.Doe@ACME.Test ' }))).identity).toBe('jane.doe@acme.test');
    expect(parsed(parseInstantly(instantly({ lead_email: 'Jane Doe <JANE@acme.test>' }))).identity).toBe('jane@acme.test');
  });

  it('never takes Smartlead from_email (the customer mailbox) for the contact', () => {
    // Setup
    const body = { event_type: 'EMAIL_SENT', from_email: 'rep@northwind.test' };
    // Action
    const result = parseSmartlead(body);
    // Assertions
    expect(result.ok).toBe(false);
    expect(parsed(parseSmartlead({ ...body, sl_lead_email: 'lead@acme.test' })).sequencerIds.mailbox).toBe('rep@northwind.test');
  });

  it('prefers sl_lead_email, the lead, over a colleague who replied', () => {
    const event = parsed(
      parseSmartlead(
        smartlead({
          event_type: 'EMAIL_REPLY',
          sl_lead_email: 'jane@acme.test',
          to_email: 'jane@acme.test',
          leadCorrespondence: { targetLeadEmail: 'jane@acme.test', replyReceivedFrom: 'boss@acme.test' },
        }),
      ),
    );
    expect(event.identity).toBe('jane@acme.test');
  });

  it('falls back to the canonical profile URL when there is no valid email', () => {
    // Setup
    const body = heyreach({ lead: { email_address: 'not-an-email', profile_url: 'linkedin.com/in/Ana-Lima/?trk=x' } });
    // Action
    const event = parsed(parseHeyReach(body));
    // Assertions
    expect(event.contact).toMatchObject({ email: null, profileUrl: 'https://www.linkedin.com/in/ana-lima' });
    expect(event.identity).toBe('https://www.linkedin.com/in/ana-lima');
  });

  it.each([
    ['smartlead', { lead_data: { linkedin_profile: 'https://uk.linkedin.com/in/jane/' } }, 'https://www.linkedin.com/in/jane'],
    ['instantly', { linkedIn: 'twitter.com/JaneD' }, 'https://x.com/janed'],
    ['lemlist', { linkedinUrl: 'http://www.linkedin.com/in/jane-doe' }, 'https://www.linkedin.com/in/jane-doe'],
    ['heyreach', { lead: { linkedin_url: 'https://linkedin.com/in/jane-doe' } }, 'https://www.linkedin.com/in/jane-doe'],
  ] as const)('%s reads the profile URL from %j', (platform, extra, profileUrl) => {
    const body: Record<string, unknown> = {
      ...FACTORIES[platform](),
      to_email: undefined,
      lead_email: undefined,
      leadEmail: undefined,
      lead: undefined,
      ...extra,
    };
    expect(parsed(PARSERS[platform](body)).identity).toBe(profileUrl);
  });

  it.each([
    [
      'smartlead',
      { event_type: 'EMAIL_OPEN', to_email: 'nobody' },
      'smartlead EMAIL_OPEN: no contact identity: no valid email in sl_lead_email, to_email, lead_email, to, lead_data.email, lead.email, leadCorrespondence.targetLeadEmail and no profile URL in lead_data.linkedin_profile, lead.linkedin_profile (to_email "nobody" is neither)',
    ],
    [
      'instantly',
      { event_type: 'campaign_completed', campaign_id: 'c1' },
      'instantly campaign_completed: no contact identity: no valid email in lead_email, email and no profile URL in linkedin_url, linkedinUrl, linkedIn',
    ],
    [
      'heyreach',
      { event_type: 'message_sent', lead: { profile_url: 'https://acme.test/about' } },
      'heyreach message_sent: no contact identity: no valid email in lead.email_address, lead.email, lead.enriched_email and no profile URL in lead.profile_url, lead.linkedin_url (lead.profile_url "https://acme.test/about" is neither)',
    ],
    [
      'emailbison',
      { event: { type: 'EMAIL_OPENED' }, data: { lead: { email: 'nobody' }, sender_email: { email: 'sam@acme-mail.test' } } },
      'emailbison EMAIL_OPENED: no contact identity: no valid email in data.lead.email (data.lead.email "nobody" is neither)',
    ],
    [
      'lemlist',
      { type: 'emailsSent', leadEmail: 42 },
      'lemlist emailsSent: no contact identity: no valid email in leadEmail, email and no profile URL in leadLinkedinUrl, linkedinUrl',
    ],
  ] as const)('%s without a usable identity is refused, naming the fields looked at', (platform, body, reason) => {
    expect(PARSERS[platform](body)).toEqual({ ok: false, reason });
  });

  it('builds names from first/last fields, else from the full name', () => {
    expect(parsed(parseSmartlead(smartlead({ to_name: 'Jane van der Berg' }))).contact).toMatchObject({ firstName: 'Jane', lastName: 'van der Berg' });
    expect(parsed(parseSmartlead(smartlead({ to_name: 'Cher' }))).contact).toMatchObject({ firstName: 'Cher', lastName: null });
    expect(parsed(parseHeyReach(heyreach({ lead: { profile_url: 'linkedin.com/in/x', first_name: 'Ana', full_name: 'Ana Lima' } }))).contact).toMatchObject({
      firstName: 'Ana',
      lastName: null,
    });
  });
});

describe('deprecated field names', () => {
  it('Smartlead oldest format: `event`, nested lead{}, reply{} and timestamp', () => {
    // Setup
    const body = {
      event: 'EMAIL_REPLIED',
      timestamp: '2025-01-15T14:32:00Z',
      campaign_id: 12345,
      campaign_name: 'Q1 SaaS Outreach',
      lead: { id: 67890, email: 'Alex@AcmeCorp.test', first_name: 'Alex', last_name: 'Smith', company_name: 'Acme Corp' },
      reply: { subject: 'Re: Quick question', body: '<p>Thanks &amp; yes</p>' },
    };
    // Action
    const event = parsed(parseSmartlead(body));
    // Assertions
    expect(event).toEqual({
      platform: 'smartlead',
      eventType: 'EMAIL_REPLY',
      rawEventType: 'EMAIL_REPLIED',
      contact: { ...none, email: 'alex@acmecorp.test', firstName: 'Alex', lastName: 'Smith', company: 'Acme Corp' },
      identity: 'alex@acmecorp.test',
      campaign: { id: '12345', name: 'Q1 SaaS Outreach' },
      message: { subject: 'Re: Quick question', text: 'Thanks & yes', direction: 'inbound' },
      leadCategory: null,
      inboxUrl: null,
      sequencerIds: { leadId: '67890' },
      occurredAt: new Date('2025-01-15T14:32:00Z'),
    });
  });

  it('Smartlead reply without reply_message: time_replied, reply_body, preview_text, message_id', () => {
    const event = parsed(
      parseSmartlead(
        smartlead({
          event_type: 'EMAIL_REPLY',
          time_replied: '2025-03-28T09:35:01+00:00',
          message_id: '<c@acme.test>',
          reply_body: '<div>Works for me<br>Jane</div>',
          preview_text: 'Works for me',
        }),
      ),
    );
    expect(event.message).toEqual({ subject: null, text: 'Works for me\nJane', direction: 'inbound' });
    expect(event.sequencerIds.messageId).toBe('<c@acme.test>');
    expect(event.occurredAt).toEqual(new Date('2025-03-28T09:35:01Z'));
    expect(parsed(parseSmartlead(smartlead({ event_type: 'EMAIL_REPLY', preview_text: 'Works for me' }))).message.text).toBe('Works for me');
  });

  it('Smartlead send with sent_message_body only', () => {
    const event = parsed(parseSmartlead(smartlead({ sent_message_body: '<p>Hi&nbsp;Jane,</p><p>quick one</p>' })));
    expect(event.message).toEqual({ subject: null, text: 'Hi Jane,\nquick one', direction: 'outbound' });
  });

  it('Smartlead category update with from, to, lead_email, lead_name, category and lead_category_id', () => {
    // Setup
    const body = {
      event_type: 'LEAD_CATEGORY_UPDATED',
      from: 'tom@northwind.test',
      to: 'jane@acme.test',
      lead_email: 'jane@acme.test',
      lead_name: 'Jane Doe',
      category: 'Meeting Request',
      lead_category_id: 3,
      lastReply: { email_body: '<div>Sure</div>' },
      created_at: '2025-03-28T10:00:00Z',
    };
    // Action
    const event = parsed(parseSmartlead(body));
    // Assertions
    expect(event).toMatchObject({
      eventType: 'LEAD_CATEGORY_UPDATED',
      identity: 'jane@acme.test',
      contact: { firstName: 'Jane', lastName: 'Doe' },
      leadCategory: { id: '3', name: 'Meeting Request' },
      sequencerIds: { mailbox: 'tom@northwind.test' },
      occurredAt: new Date('2025-03-28T10:00:00Z'),
    });
    expect(parsed(parseSmartlead({ ...body, to: undefined, lead_email: undefined, lead_data: { email: 'jane@acme.test' } })).identity).toBe('jane@acme.test');
  });

  it('a cleared Smartlead category is an update without a category signal', () => {
    const event = parsed(
      parseSmartlead(smartlead({ event_type: 'LEAD_CATEGORY_UPDATED', lead_category: { old_id: 1, old_name: 'Interested', new_id: null, new_name: null } })),
    );
    expect(event).toMatchObject({ eventType: 'LEAD_CATEGORY_UPDATED', leadCategory: null });
  });
});

describe('platform specifics', () => {
  it('Instantly auto replies are EMAIL_AUTO_REPLY with the inbound message', () => {
    const event = parsed(parseInstantly(instantly({ event_type: 'auto_reply_received', reply_subject: 'Out of office', reply_html: '<p>Back on Monday</p>' })));
    expect(event).toMatchObject({
      eventType: 'EMAIL_AUTO_REPLY',
      message: { subject: 'Out of office', text: 'Back on Monday', direction: 'inbound' },
      leadCategory: null,
    });
    expect(EVENT_TYPES.EMAIL_AUTO_REPLY).toMatchObject({ reply: false, contact: false, channel: 'email' });
  });

  it('Instantly custom labels keep their name as-is', () => {
    const event = parsed(parseInstantly(instantly({ event_type: '  VIP – call back ' })));
    expect(event).toMatchObject({
      eventType: 'LEAD_CATEGORY_UPDATED',
      rawEventType: 'VIP – call back',
      leadCategory: { id: null, name: 'VIP – call back' },
      message: { direction: null },
    });
  });

  it.each([
    [{ tag: 'Interested' }, { id: null, name: 'Interested' }],
    [{ tags: ['Warm', 'Interested'] }, { id: null, name: 'Interested' }],
    [{ tags: [{ id: 7, name: 'Hot' }, 5, null] }, { id: '7', name: 'Hot' }],
    [{ lead: { profile_url: 'linkedin.com/in/lead', tags: ['Demo booked'] } }, { id: null, name: 'Demo booked' }],
    [{ new_tag: { id: 'tg1', name: 'Champion' } }, { id: 'tg1', name: 'Champion' }],
    [{ tags: [] }, null],
  ])('HeyReach lead_tag_updated %j → category %j', (extra, category) => {
    expect(parsed(parseHeyReach(heyreach({ event_type: 'lead_tag_updated', ...extra }))).leadCategory).toEqual(category);
  });

  it('HeyReach takes the newest message of the event direction', () => {
    // Setup
    const body = heyreach({
      event_type: 'message_reply_received',
      timestamp: null,
      recent_messages: [
        { creation_time: '2026-01-01T10:00:00Z', message: 'Hi Ana', is_reply: false },
        { creation_time: '2026-01-02T10:00:00Z', message: 'Second reply', is_reply: true },
        { creation_time: '2026-01-01T12:00:00Z', message: 'First reply', is_reply: true },
        'garbage',
      ],
    });
    // Action
    const event = parsed(parseHeyReach(body));
    // Assertions
    expect(event.message).toEqual({ subject: null, text: 'Second reply', direction: 'inbound' });
    expect(event.occurredAt).toEqual(new Date('2026-01-02T10:00:00Z'));
    expect(parsed(parseHeyReach({ ...body, event_type: 'viewed_profile' })).message).toEqual({ subject: null, text: null, direction: null });
  });

  it('lemlist LinkedIn activities identify by profile and carry the message', () => {
    const event = parsed(
      parseLemlist({
        type: 'linkedinReplied',
        linkedinUrl: 'https://www.linkedin.com/in/john-doe/',
        text: 'Sure, happy to chat',
        createdAt: '2026-03-25T20:55:49.877Z',
        sendUserEmail: 'Jai@Northwind.test',
      }),
    );
    expect(event).toMatchObject({
      eventType: 'MESSAGE_REPLY_RECEIVED',
      identity: 'https://www.linkedin.com/in/john-doe',
      message: { text: 'Sure, happy to chat', direction: 'inbound' },
      sequencerIds: { mailbox: 'jai@northwind.test' },
    });
  });
});

describe('unparseable payloads', () => {
  it.each([
    ['', 'smartlead: body is empty'],
    ['   ', 'smartlead: body is empty'],
    ['null', 'smartlead: body must be a JSON object, got null'],
    ['[]', 'smartlead: body must be a JSON object, got an array'],
    ['42', 'smartlead: body must be a JSON object, got a number'],
    ['"EMAIL_SENT"', 'smartlead: body must be a JSON object, got a string'],
    ['{}', 'smartlead: no event type: event_type (or the older event) is missing or not a string'],
    ['{"event_type": 7, "to_email": "a@b.test"}', 'smartlead: no event type: event_type (or the older event) is missing or not a string'],
  ])('parseInbound(smartlead, %j) is refused', (raw, reason) => {
    expect(parseInbound('smartlead', raw)).toEqual({ ok: false, reason });
  });

  it('refuses invalid JSON with a short reason', () => {
    const result = parseInbound('lemlist', `{"type": "emailsSent", "text": "${'x'.repeat(5000)}`);
    expect(result.ok).toBe(false);
    expect(!result.ok && result.reason).toMatch(/^lemlist: body is not valid JSON \(/);
    expect(!result.ok && result.reason.length).toBeLessThanOrEqual(160);
  });

  it('refuses an unknown platform', () => {
    expect(parseInbound('outreachly', '{}')).toEqual({ ok: false, reason: 'no parser for platform "outreachly"' });
    expect(parserFor('toString')).toBeUndefined();
    expect(parserFor('__proto__')).toBeUndefined();
  });

  it.each(PLATFORMS)('%s refuses a missing event type', (platform) => {
    const body: Record<string, unknown> = FACTORIES[platform]();
    delete body[EVENT_FIELD[platform]];
    const result = PARSERS[platform](body);
    expect(result.ok).toBe(false);
    expect(!result.ok && result.reason).toMatch(new RegExp(`^${platform}: no event type: ${EVENT_FIELD[platform]}`));
  });

  it('never echoes more than ~100 characters of payload content', () => {
    // Setup
    const long = `${'a'.repeat(5000)}@${'b'.repeat(5000)}`;
    const label = 'L'.repeat(5000);
    // Action
    const results = [
      parseSmartlead({ event_type: label, to_email: long }),
      parseInstantly({ event_type: label, lead_email: long }),
      parseHeyReach({ event_type: label, lead: { profile_url: long } }),
      parseLemlist({ type: label, leadEmail: long }),
    ];
    // Assertions
    for (const result of results) {
      expect(result.ok).toBe(false);
      if (result.ok) continue;
      expect(result.reason).not.toMatch(/a{61}|b{61}|L{41}/);
      const echoed = (result.reason.match(/a{2,}|b{2,}|L{2,}/g) ?? []).join('');
      expect(echoed.length).toBeLessThanOrEqual(100);
    }
  });
});

describe('tolerance', () => {
  it('ignores wrong types in optional fields instead of failing', () => {
    // Setup
    const body = {
      ...readSample('smartlead/EMAIL_REPLY.json'),
      campaign_id: { nested: true },
      campaign_name: ['x'],
      sent_message: 'nope',
      reply_message: 7,
      to_name: false,
      sequence_number: null,
    };
    // Action
    const event = parsed(parseSmartlead(body));
    // Assertions
    expect(event).toMatchObject({
      identity: 'jane@acme.test',
      campaign: { id: null, name: null },
      contact: { firstName: null, lastName: null },
      message: { text: 'Sounds good, send times' },
    });
    expect(event.sequencerIds.step).toBeUndefined();
  });

  it('accepts unknown fields, including __proto__ and constructor keys', () => {
    const raw = '{"event_type":"email_sent","lead_email":"a@acme.test","__proto__":{"polluted":true},"constructor":{"prototype":1},"extra":[1,2]}';
    const event = parsed(parseInbound('instantly', raw));
    expect(event.identity).toBe('a@acme.test');
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });

  it('reads epoch times and ignores impossible ones', () => {
    expect(parseTime(1_700_000_000)).toEqual(new Date(1_700_000_000_000));
    expect(parseTime('1700000000000')).toEqual(new Date(1_700_000_000_000));
    expect(parseTime('2025-01-15T09:00:00Z')).toEqual(new Date('2025-01-15T09:00:00Z'));
    expect(parseTime('yesterday')).toBeNull();
    expect(parseTime(-5)).toBeNull();
    expect(parseTime(Number.MAX_VALUE)).toBeNull();
    expect(parsed(parseInstantly(instantly({ timestamp: 'soon' }))).occurredAt).toBeNull();
  });

  it('normalises emails and company domains', () => {
    expect(normalizeEmail(' mailto:Jane@Acme.TEST ')).toBe('jane@acme.test');
    expect(normalizeEmail('jane@')).toBeNull();
    expect(normalizeEmail('jane doe@acme.test')).toBeNull();
    expect(websiteDomain('https://www.Acme.test/about?x=1')).toBe('acme.test');
    expect(websiteDomain('acme.test:8080')).toBe('acme.test');
    expect(websiteDomain('https://app.eu.acme.co.uk/login')).toBe('acme.co.uk');
    expect(websiteDomain('linkedin.com/company/acme')).toBeNull();
    expect(websiteDomain('https://www.linkedin.com/company/acme')).toBeNull();
    expect(websiteDomain('https://x.com/acme')).toBeNull();
    expect(websiteDomain('twitter.com/acme')).toBeNull();
    expect(websiteDomain('not a domain')).toBeNull();
    expect(parsed(parseInstantly(instantly({ website: 'https://blog.acme.test/post' }))).contact.companyDomain).toBe('acme.test');
  });

  it('turns email HTML into text', () => {
    expect(
      htmlToText(
        '<html><head><title>t</title><style>p{color:red}</style></head><body><p>Hi &lt;Jane&gt;,</p><p>See&#32;you &#x1F44B;</p><script>alert(1)</script></body></html>',
      ),
    ).toBe('Hi <Jane>,\nSee you 👋');
    expect(htmlToText('<style>unclosed')).toBeNull();
    // An unknown name stays as written; code point 0 is U+FFFD, as the HTML standard decodes it.
    expect(htmlToText('a &bogus; b &#0; c')).toBe('a &bogus; b \uFFFD c');
    expect(htmlToText(undefined)).toBeNull();
    expect(htmlToText('<p> &nbsp; </p><br>')).toBeNull();
  });

  it('decodes every named and numeric entity', () => {
    expect(htmlToText('Caf&eacute; &mdash; wait&hellip; &copy;&nbsp;2026 &euro;5 &Uuml;ber')).toBe('Café — wait… © 2026 €5 Über');
    expect(htmlToText('&#8364; &#x20ac; &#X20AC; &#128075; &amp;amp;')).toBe('€ € € 👋 &amp;');
  });

  it('keeps the lines a reader sees', () => {
    expect(htmlToText('<div><div><p>Nested</p><div>deep <b>bold</b></div></div></div>after')).toBe('Nested\ndeep bold\nafter');
    expect(htmlToText('Line 1<br>Line 2<br/><br />Line 4')).toBe('Line 1\nLine 2\n\nLine 4');
    // Gmail's blank line is an empty div holding a <br>; runs of blank lines become one.
    expect(htmlToText('<div>Hi Jane,</div><div><br></div><div>Thanks!</div><p>&nbsp;</p><p>&nbsp;</p><br><br><div>Tom</div>')).toBe(
      'Hi Jane,\n\nThanks!\n\nTom',
    );
    // Line breaks in the HTML source are spaces, as a browser shows them (Outlook wraps its source).
    expect(htmlToText('<p>Thanks for\r\nthe   note</p>')).toBe('Thanks for the note');
    expect(htmlToText('<h2>Agenda</h2><ul><li>Intro</li><li>Demo</li></ul><ol><li>one</li></ol>')).toBe('Agenda\n\n* Intro\n* Demo\n\n1. one');
    expect(htmlToText('<table><tr><th>Name</th><th>Role</th></tr><tr><td>Jane</td><td>CEO</td></tr></table>')).toBe('Name   Role\nJane   CEO');
    expect(htmlToText('<blockquote>Hi Jane,<br>quick question</blockquote>')).toBe('> Hi Jane,\n> quick question');
  });

  it('leaves out what is not message text', () => {
    expect(htmlToText('<a href="https://t.test/click?id=1">Book a call</a> or <img src="https://t.test/open.gif" alt="pixel">reply')).toBe(
      'Book a call or reply',
    );
    expect(htmlToText('<head><title>Newsletter</title><style>p{}</style></head>Hello<script>track()</script> <noscript></noscript>world')).toBe('Hello world');
  });

  it('bounds the work on hostile HTML', () => {
    const deep = '<table><tr><td>'.repeat(60_000) + 'x';
    const started = Date.now();
    expect(htmlToText(deep)).not.toBeNull();
    expect(Date.now() - started).toBeLessThan(2_000);
    expect(htmlToText(`${'<div>'.repeat(300)}deep${'</div>'.repeat(300)}<p>after</p>`)).toContain('after');
  });
});

describe('robustness', () => {
  const WEIRD: unknown[] = [null, 0, -1, 1e308, true, '', ' ', 'x', '<>', [], [null], [{}], {}, { a: { b: [1, { c: null }] } }, 'constructor', '__proto__'];

  it.each(PLATFORMS)('%s never throws on non-object bodies', (platform) => {
    for (const value of [undefined, ...WEIRD, () => 1, Symbol('s'), 10n]) {
      const result = PARSERS[platform](value);
      expect(typeof result.ok).toBe('boolean');
      if (!isRecordLike(value)) expect(result.ok).toBe(false);
    }
  });

  it.each(Object.keys(EXPECTED))('%s survives every field replaced by every wrong type', (name) => {
    // Setup
    const platform = name.split('/')[0] as Platform;
    const sample = readSample(name);
    // Action and assertions
    for (const path of paths(sample)) {
      for (const value of WEIRD) {
        const result = PARSERS[platform](replaceAt(sample, path, value));
        expectWellFormed(result, platform);
      }
    }
  });

  it.each(PLATFORMS)('%s survives random mutations (seeded)', (platform) => {
    const random = mulberry32(platform.length * 7919);
    const bases = Object.keys(EXPECTED)
      .filter((n) => n.startsWith(`${platform}/`))
      .map(readSample);
    for (let i = 0; i < 300; i++) {
      let body: unknown = structuredClone(bases[Math.floor(random() * bases.length)]!);
      for (let m = 0; m < 1 + Math.floor(random() * 6); m++) body = mutate(body, random);
      expectWellFormed(PARSERS[platform](body), platform);
      expectWellFormed(parseInbound(platform, JSON.stringify(body) ?? 'undefined'), platform);
    }
  });

  it('parseInbound never throws on arbitrary strings', () => {
    const random = mulberry32(42);
    const alphabet = '{}[]":,0123456789abcxyz@.\\ \n\u0000tfn-e';
    for (let i = 0; i < 500; i++) {
      let raw = '';
      for (let c = 0; c < Math.floor(random() * 40); c++) raw += alphabet[Math.floor(random() * alphabet.length)];
      const result = parseInbound(PLATFORMS[i % PLATFORMS.length]!, raw);
      expect(typeof result.ok).toBe('boolean');
    }
  });
});

function isRecordLike(value: unknown): boolean {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function expectWellFormed(result: ParseResult, platform: string): void {
  if (!result.ok) {
    expect(typeof result.reason).toBe('string');
    expect(result.reason.length).toBeGreaterThan(0);
    return;
  }
  const e = result.event;
  expect(e.platform).toBe(platform);
  expect(e.identity).toBe(e.contact.email ?? e.contact.profileUrl);
  expect(e.eventType === 'UNKNOWN' || Object.hasOwn(EVENT_TYPES, e.eventType)).toBe(true);
  expect(typeof e.rawEventType).toBe('string');
  for (const value of Object.values(e.sequencerIds)) expect(typeof value).toBe('string');
  expect(e.occurredAt === null || !Number.isNaN(e.occurredAt.getTime())).toBe(true);
  expect(e.leadCategory === null || (typeof e.leadCategory.name === 'string' && e.leadCategory.name !== '')).toBe(true);
}

/** Every key path of a JSON value (objects and arrays), depth first. */
function paths(value: unknown, prefix: (string | number)[] = []): (string | number)[][] {
  if (Array.isArray(value)) return value.flatMap((v, i) => [[...prefix, i], ...paths(v, [...prefix, i])]);
  if (isRecordLike(value)) return Object.entries(value as Record<string, unknown>).flatMap(([k, v]) => [[...prefix, k], ...paths(v, [...prefix, k])]);
  return [];
}

function replaceAt(root: unknown, path: (string | number)[], value: unknown): unknown {
  const copy = structuredClone(root) as Record<string | number, unknown>;
  let node = copy;
  for (const key of path.slice(0, -1)) node = node[key] as Record<string | number, unknown>;
  node[path.at(-1)!] = value;
  return copy;
}

function mutate(body: unknown, random: () => number): unknown {
  const all = paths(body);
  if (all.length === 0) return random() < 0.5 ? {} : body;
  const path = all[Math.floor(random() * all.length)]!;
  const choices: unknown[] = [null, random() * 1e12, 'ZZ', [], {}, true, '\u0000', 'a@b', 'linkedin.com/in/x', -0, '2025-13-45'];
  return replaceAt(body, path, choices[Math.floor(random() * choices.length)]);
}
