import { isSince, record, records, type HistoryLead, type HistoryRound, type SequencerHistory } from '../history.js';

/**
 * EmailBison's history of a lead (docs/vendors/emailbison.md): `GET /api/leads/{id}/sent-emails` (its
 * campaign emails) and `GET /api/leads/{id}/replies?folder=all` (its replies, and the reps' own emails
 * from the master inbox), `?page=` pages until `meta.last_page`. Every page is read (the order is not
 * documented); what is older than the round's start is skipped. Bounces and spam carry no message of the
 * lead's: not synthesised. The budget is a fifth of the 3,000 requests a minute public clients name
 * (EmailBison publishes none).
 */
export const emailbisonHistory: SequencerHistory = {
  budget: {
    requests: 600,
    windowMs: 60_000,
    env: 'EMAILBISON_REQUESTS_PER_MINUTE',
    description: 'EmailBison API requests a minute per account (its backfill)',
  },
  async *read(round) {
    for (const lead of round.leads) {
      for await (const sent of pages(round, lead, 'sent-emails'))
        yield sent.filter((s) => isSince(s.sent_at, round.since)).map((s) => sentBody(round, lead, s));
      for await (const replies of pages(round, lead, 'replies'))
        yield replies
          .filter((r) => isSince(r.date_received, round.since) && (r.folder === 'inbox' || r.folder === 'sent'))
          .map((r) => replyBody(round, lead, r));
    }
  },
};

/** Every page of one of a lead's lists; none when EmailBison has no such lead (404). */
async function* pages(round: HistoryRound, lead: HistoryLead, list: 'sent-emails' | 'replies'): AsyncIterable<Record<string, unknown>[]> {
  const id = encodeURIComponent(lead.leadId ?? lead.contact);
  for (let page = 1; ; page++) {
    const query = list === 'replies' ? `folder=all&page=${page}` : `page=${page}`;
    const answer = await round.call({
      method: 'GET',
      url: `${round.account.baseUrl}/api/leads/${id}/${list}?${query}`,
      headers: { authorization: `Bearer ${round.account.apiKey}`, accept: 'application/json' },
    });
    if (answer === null) return;
    const body = record(answer);
    yield records(body.data);
    const lastPage = Number(record(body.meta).last_page ?? 1);
    if (!Number.isFinite(lastPage) || page >= lastPage) return;
  }
}

/** The EMAIL_SENT webhook a sent campaign email would have posted. */
function sentBody(round: HistoryRound, lead: HistoryLead, sent: Record<string, unknown>): Record<string, unknown> {
  return {
    event: { type: 'EMAIL_SENT', name: 'Email Sent', instance_url: round.account.baseUrl },
    data: { scheduled_email: sent, lead: leadOf(lead), campaign: { id: sent.campaign_id ?? lead.campaignId } },
  };
}

/** The LEAD_REPLIED (or, for a rep's own email, MANUAL_EMAIL_SENT) webhook a master-inbox message would have posted. */
function replyBody(round: HistoryRound, lead: HistoryLead, reply: Record<string, unknown>): Record<string, unknown> {
  const manual = reply.folder === 'sent';
  // The API names the subject `subject`; the webhook, `email_subject`.
  const message = { ...reply, email_subject: reply.email_subject ?? reply.subject };
  return {
    event: { type: manual ? 'MANUAL_EMAIL_SENT' : 'LEAD_REPLIED', name: manual ? 'Manual Email Sent' : 'Contact Replied', instance_url: round.account.baseUrl },
    data: {
      reply: message,
      ...(reply.scheduled_email_id != null ? { scheduled_email: { id: reply.scheduled_email_id } } : {}),
      lead: leadOf(lead),
      campaign: { id: reply.campaign_id ?? lead.campaignId },
    },
  };
}

function leadOf(lead: HistoryLead): Record<string, unknown> {
  return { id: lead.leadId, email: lead.contact };
}
