import { isSince, record, records, type HistoryLead, type HistoryRound, type SequencerHistory } from '../history.js';
import { smartleadPush } from './blocklist-push.js';

/**
 * Smartlead's history of a campaign lead (docs/vendors/smartlead.md):
 * `GET /api/v1/campaigns/{campaign_id}/leads/{lead_id}/message-history`, one call a lead (no pages): its
 * SENT emails and its REPLYs, each with its RFC Message-ID, the id its webhooks carry. A lead known by
 * email only (older webhooks name no lead id) is looked up once (`GET /api/v1/leads/?email=`). A bounce
 * comes back as a REPLY from a mailer daemon: not a reply of the lead's, not synthesised. The budget is
 * the binding one of Smartlead's published limits, 60 requests a minute per key.
 */
export const smartleadHistory: SequencerHistory = {
  endpoint: smartleadPush.endpoint,
  budget: { requests: 60, windowMs: 60_000, env: 'SMARTLEAD_REQUESTS_PER_MINUTE', description: 'Smartlead API requests a minute per key (its backfill)' },
  async *read(round) {
    for (const lead of round.leads) {
      if (lead.campaignId === null) continue;
      const leadId = lead.leadId ?? (await leadIdOf(round, lead.contact));
      if (leadId === null) continue;
      const answer = await round.call(
        get(round, `/api/v1/campaigns/${encodeURIComponent(lead.campaignId)}/leads/${encodeURIComponent(leadId)}/message-history`),
      );
      const history = records(record(answer).history);
      const sent = new Map(history.filter((item) => item.type === 'SENT').map((item) => [item.stats_id, item]));
      yield history
        .filter((item) => isSince(item.time, round.since) && (item.type === 'SENT' || (item.type === 'REPLY' && !fromMailer(item))))
        .map((item) => webhookOf(lead, leadId, item, sent.get(item.stats_id)));
    }
  },
};

/** The lead's id by its email, or null when Smartlead has no such lead. */
async function leadIdOf(round: HistoryRound, email: string): Promise<string | null> {
  if (!email.includes('@')) return null;
  const answer = record(await round.call(get(round, `/api/v1/leads/?email=${encodeURIComponent(email)}`)));
  const id = answer.id;
  return typeof id === 'number' || (typeof id === 'string' && id !== '') ? String(id) : null;
}

function get(round: HistoryRound, path: string) {
  const separator = path.includes('?') ? '&' : '?';
  return { method: 'GET', url: `${round.account.baseUrl}${path}${separator}api_key=${encodeURIComponent(round.account.apiKey)}` };
}

function fromMailer(item: Record<string, unknown>): boolean {
  return typeof item.from === 'string' && /mailer-daemon|postmaster/i.test(item.from);
}

/** The EMAIL_SENT or EMAIL_REPLY webhook Smartlead would have posted for a history item. */
function webhookOf(lead: HistoryLead, leadId: string, item: Record<string, unknown>, sentItem: Record<string, unknown> | undefined): Record<string, unknown> {
  const message = { message_id: item.message_id, html: item.email_body, time: item.time };
  const common = {
    campaign_id: lead.campaignId,
    sl_email_lead_id: leadId,
    sl_lead_email: lead.contact,
    to_email: lead.contact,
    stats_id: item.stats_id,
    sequence_number: item.email_seq_number,
    event_timestamp: item.time,
  };
  if (item.type === 'SENT')
    return {
      event_type: 'EMAIL_SENT',
      ...common,
      from_email: item.from,
      subject: item.subject,
      sent_message: { ...message, subject: item.subject },
      time_sent: item.time,
    };
  return {
    event_type: 'EMAIL_REPLY',
    ...common,
    // A reply comes from the lead to the customer's mailbox.
    from_email: item.to,
    subject: sentItem?.subject,
    reply_message: message,
    ...(sentItem ? { sent_message: { message_id: sentItem.message_id, html: sentItem.email_body, time: sentItem.time } } : {}),
  };
}
