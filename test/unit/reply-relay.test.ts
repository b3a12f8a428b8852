import { describe, expect, it } from 'vitest';
import { relayEmail, TEMPLATE_PLACEHOLDERS, type RelayEmailInput } from '../../src/domain/relay-email.js';
import { allowlistDecision, currentCategory, isRelayedReply } from '../../src/domain/reply-relay.js';
import { classifySmtpFailure } from '../../src/domain/smtp-failure.js';

describe('isRelayedReply', () => {
  it.each(['EMAIL_REPLY', 'MESSAGE_REPLY_RECEIVED', 'INMAIL_REPLY_RECEIVED'])('relays %s', (type) => expect(isRelayedReply(type)).toBe(true));
  it.each(['EMAIL_AUTO_REPLY', 'EMAIL_SENT', 'EMAIL_OPEN', 'EMAIL_LINK_CLICK', 'MESSAGE_SENT', 'LEAD_CATEGORY_UPDATED', 'UNKNOWN'])(
    'does not relay %s',
    (type) => expect(isRelayedReply(type)).toBe(false),
  );
});

describe('allowlistDecision', () => {
  const allowlist = [
    { id: '7', name: 'Interested' },
    { id: '9', name: 'Meeting Booked' },
  ];

  it('relays every reply with an empty allowlist, category or not', () => {
    expect(allowlistDecision([], null)).toEqual({ proceed: true });
    expect(allowlistDecision([], { id: '1', name: 'Not Interested' })).toEqual({ proceed: true });
  });

  it('matches by id, whatever the name says', () => expect(allowlistDecision(allowlist, { id: '7', name: 'Renamed' })).toEqual({ proceed: true }));

  it('matches by name ignoring case and spaces when the ids differ or are missing', () => {
    expect(allowlistDecision(allowlist, { id: null, name: '  meeting booked ' })).toEqual({ proceed: true });
    expect(allowlistDecision(allowlist, { id: '99', name: 'INTERESTED' })).toEqual({ proceed: true });
  });

  it('skips another category, naming it', () =>
    expect(allowlistDecision(allowlist, { id: '3', name: 'Not Interested' })).toEqual({
      proceed: false,
      reason: 'lead category Not Interested is not in the allowlist',
    }));

  it('skips a lead without a category, naming the allowlist (cut after five)', () => {
    expect(allowlistDecision(allowlist, null)).toEqual({
      proceed: false,
      reason: 'the lead has no category, and the allowlist names Interested, Meeting Booked',
    });
    const long = Array.from({ length: 7 }, (_, i) => ({ id: String(i), name: `C${i}` }));
    expect(allowlistDecision(long, null)).toEqual({
      proceed: false,
      reason: 'the lead has no category, and the allowlist names C0, C1, C2, C3, C4 and 2 more',
    });
  });
});

describe('currentCategory', () => {
  const at = (iso: string) => new Date(iso);
  const interested = { id: '7', name: 'Interested' };
  const notInterested = { id: '3', name: 'Not Interested' };

  it('takes a stored signal newer than the reply', () =>
    expect(currentCategory({ category: notInterested, at: at('2026-01-02') }, { category: interested, at: at('2026-01-01') })).toEqual(notInterested));

  it("takes the reply's own category when no stored signal is newer", () => {
    expect(currentCategory({ category: notInterested, at: at('2026-01-01') }, { category: interested, at: at('2026-01-02') })).toEqual(interested);
    expect(currentCategory(null, { category: interested, at: at('2026-01-02') })).toEqual(interested);
  });

  it('keeps the stored one when the reply carries none, and null without either', () => {
    expect(currentCategory({ category: notInterested, at: at('2026-01-01') }, { category: null, at: at('2026-01-02') })).toEqual(notInterested);
    expect(currentCategory(null, { category: null, at: at('2026-01-02') })).toBeNull();
  });
});

describe('classifySmtpFailure', () => {
  it.each([421, 450, 451, 452])('retries a %i reply', (code) => expect(classifySmtpFailure({ responseCode: code, message: 'x' })).toBe('transient'));
  it.each([550, 552, 553, 554, 535])('gives up on a %i reply', (code) => expect(classifySmtpFailure({ responseCode: code, message: 'x' })).toBe('permanent'));
  it('retries when no reply came (refused, timeout, not configured)', () =>
    expect(classifySmtpFailure({ message: 'ECONNECTION: connect ECONNREFUSED' })).toBe('transient'));
});

describe('relayEmail', () => {
  const input = (over: Partial<RelayEmailInput> = {}): RelayEmailInput => ({
    lead: { email: 'jane@acme.test', profileUrl: null, firstName: 'Jane', lastName: 'Doe', company: 'Acme' },
    campaign: { id: '9181', name: 'Q1 Outreach' },
    reply: { subject: 'Quick question', text: 'Sounds good, send times' },
    inboxUrl: 'https://app.smartlead.example/app/master-inbox?leadMap=1',
    source: { id: 12, platformName: 'Smartlead' },
    relay: { id: 3, description: 'AE copy', bodyTemplates: [] },
    ...over,
  });

  it('writes the default body: who replied, the campaign, the reply, the inbox link; Reply-To is the prospect', () => {
    const email = relayEmail(input());
    expect(email.subject).toBe('Re: Quick question');
    expect(email.replyTo).toBe('jane@acme.test');
    expect(email.text).toContain('Jane Doe replied to the campaign Q1 Outreach (Smartlead).');
    expect(email.text).toContain('Sounds good, send times');
    expect(email.text).toContain('Lead: Jane Doe <jane@acme.test>');
    expect(email.text).toContain('Open in Smartlead: https://app.smartlead.example/app/master-inbox?leadMap=1');
    expect(email.html).toContain('Jane Doe &lt;jane@acme.test&gt;');
    expect(email.unknownPlaceholders).toEqual([]);
  });

  it('keeps a subject that already starts with Re:, and names the lead when there is none', () => {
    expect(relayEmail(input({ reply: { subject: 'RE: Quick question', text: 'x' } })).subject).toBe('RE: Quick question');
    expect(relayEmail(input({ reply: { subject: null, text: 'x' } })).subject).toBe('Re: reply from Jane Doe (Q1 Outreach)');
  });

  it('names a social lead by profile URL, without Reply-To', () => {
    const email = relayEmail(
      input({ lead: { email: null, profileUrl: 'https://www.linkedin.com/in/jane', firstName: null, lastName: null, company: null }, inboxUrl: null }),
    );
    expect(email.replyTo).toBeNull();
    expect(email.text).toContain('https://www.linkedin.com/in/jane replied');
    expect(email.text).not.toContain('Open in');
  });

  it('keeps hostile values out of headers and markup', () => {
    const email = relayEmail(
      input({
        lead: { email: 'jane@acme.test\r\nBcc: all@evil.test', profileUrl: null, firstName: '<script>alert(1)</script>', lastName: null, company: '"&\'' },
        reply: { subject: 'Hello\r\nBcc: all@evil.test\u0000', text: '<img src=x onerror=alert(1)>' },
      }),
    );
    expect(email.subject).toBe('Re: Hello Bcc: all@evil.test');
    expect(email.replyTo).toBeNull();
    expect(email.html).not.toMatch(/<script|<img/);
    expect(email.html).toContain('&lt;script&gt;alert(1)&lt;/script&gt;');
    expect(email.html).toContain('&quot;&amp;&#39;');
  });

  it('renders templates joined by blank lines, values raw in text and escaped in HTML, unknown placeholders listed', () => {
    const email = relayEmail(
      input({
        lead: { email: 'jane@acme.test', profileUrl: null, firstName: '<b>Jane</b>', lastName: null, company: null },
        relay: {
          id: 3,
          description: '',
          bodyTemplates: ['Hi {{lead.firstName}} ({{{lead.email}}})', '{{reply.text}} {{nope.x}}{{#lead}}{{company}}{{missing}}{{/lead}}'],
        },
      }),
    );
    expect(email.text).toBe('Hi <b>Jane</b> (jane@acme.test)\n\nSounds good, send times ');
    expect(email.html).toContain('Hi &lt;b&gt;Jane&lt;/b&gt; (jane@acme.test)<br>\n<br>\nSounds good');
    expect(email.unknownPlaceholders).toEqual(['missing', 'nope.x']);
  });

  it('knows every documented placeholder', () => {
    const template = TEMPLATE_PLACEHOLDERS.map((name) => `{{${name}}}`).join('|');
    const email = relayEmail(input({ relay: { id: 3, description: 'AE copy', bodyTemplates: [template] } }));
    expect(email.unknownPlaceholders).toEqual([]);
    expect(email.text).toBe(
      'jane@acme.test|Jane|Doe|Jane Doe|Acme||9181|Q1 Outreach|Sounds good, send times|Quick question|12|Smartlead|https://app.smartlead.example/app/master-inbox?leadMap=1|3|AE copy',
    );
  });
});
