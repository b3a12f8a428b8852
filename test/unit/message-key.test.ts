import { describe, expect, it } from 'vitest';
import type { InboundEvent } from '../../src/connectors/sequencers/event.js';
import { leadOf, messageKeyOf } from '../../src/connectors/sequencers/message-key.js';

const event = (over: Partial<InboundEvent> = {}): InboundEvent => ({
  platform: 'emailbison',
  eventType: 'EMAIL_REPLY',
  rawEventType: 'LEAD_REPLIED',
  contact: { email: 'jane@acme.test', profileUrl: null, firstName: null, lastName: null, company: null, companyDomain: null },
  identity: 'jane@acme.test',
  campaign: { id: '77', name: null },
  message: { subject: null, text: 'hi', direction: 'inbound' },
  leadCategory: null,
  inboxUrl: null,
  sequencerIds: {},
  occurredAt: new Date('2026-03-03T08:02:55.123Z'),
  ...over,
});

describe('messageKeyOf', () => {
  it("is a message's direction and the sequencer's message id, else its email id", () => {
    expect(messageKeyOf(event({ sequencerIds: { messageId: '<a@b>', emailId: 'e1' } }))).toBe('inbound:<a@b>');
    expect(messageKeyOf(event({ sequencerIds: { emailId: 'e1' } }))).toBe('inbound:e1');
    // A send and the reply to it never share a key, even where a sequencer gives both one id.
    expect(messageKeyOf(event({ message: { subject: null, text: null, direction: 'outbound' }, sequencerIds: { emailId: 'e1' } }))).toBe('outbound:e1');
  });

  it("is the event's own id where the sequencer gives every event one (lemlist's activities), whatever the event", () => {
    expect(messageKeyOf(event({ message: { subject: null, text: null, direction: null }, sequencerIds: { activityId: 'act_1', emailId: 'e1' } }))).toBe(
      'activity:act_1',
    );
  });

  it('is type, conversation (else contact) and time to the second for a message without an id (LinkedIn)', () => {
    const linkedin = event({ eventType: 'MESSAGE_REPLY_RECEIVED', identity: 'https://www.linkedin.com/in/jane' });
    expect(messageKeyOf(linkedin)).toBe('inbound:MESSAGE_REPLY_RECEIVED:https://www.linkedin.com/in/jane:2026-03-03T08:02:55');
    // A webhook naming the lead by email and the history by profile are one message of one conversation.
    expect(messageKeyOf({ ...linkedin, identity: 'jane@acme.test', sequencerIds: { conversationId: '2-QWJj' } })).toBe(
      'inbound:MESSAGE_REPLY_RECEIVED:2-QWJj:2026-03-03T08:02:55',
    );
    expect(messageKeyOf({ ...linkedin, occurredAt: null })).toBeNull();
  });

  it('is null for an event that is no message and has no id of its own', () => {
    expect(
      messageKeyOf(event({ eventType: 'EMAIL_OPEN', message: { subject: null, text: null, direction: null }, sequencerIds: { messageId: '<a@b>' } })),
    ).toBeNull();
  });
});

describe('leadOf', () => {
  it('names a lead by campaign and lead id, else by its contact', () => {
    expect(leadOf(event({ sequencerIds: { leadId: '5012' } }))).toEqual({ key: '77:5012', campaignId: '77', leadId: '5012', contact: 'jane@acme.test' });
    expect(leadOf(event({ campaign: { id: null, name: null } }))).toEqual({
      key: ':jane@acme.test',
      campaignId: null,
      leadId: null,
      contact: 'jane@acme.test',
    });
  });
});
