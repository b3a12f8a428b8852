import { record, records, type HistoryRound, type SequencerHistory } from '../history.js';
import { instantlyPush } from './blocklist-push.js';

/**
 * Instantly's emails of a campaign and time window (docs/vendors/instantly.md): `GET /api/v2/emails`
 * with `campaign_id` and `min_timestamp_created`, 100 a page behind the `starting_after` cursor. One
 * listing covers every lead of the campaign, those whose webhooks all went missing too. An email's `id` is
 * the `email_id` its webhook carries. Campaign sends and the reps' own emails (`ue_type` 1 and 3) are
 * sends, received ones (2) replies or auto replies; scheduled ones (4) have not happened. The budget is
 * the email list's own limit, 20 requests a minute.
 */
export const instantlyHistory: SequencerHistory = {
  endpoint: instantlyPush.endpoint,
  budget: {
    requests: 20,
    windowMs: 60_000,
    env: 'INSTANTLY_EMAILS_REQUESTS_PER_MINUTE',
    description: "Instantly email-list requests a minute per key (its backfill; Instantly's limit)",
  },
  async *read(round) {
    const campaigns = [...new Set(round.leads.map((lead) => lead.campaignId).filter((id): id is string => id !== null))];
    for (const campaign of campaigns) {
      for (let cursor: string | null = null, first = true; first || cursor !== null; first = false) {
        const answer = record(await round.call(listing(round, campaign, cursor)));
        yield records(answer.items).flatMap((email) => webhookOf(campaign, email));
        cursor = typeof answer.next_starting_after === 'string' && answer.next_starting_after !== '' ? answer.next_starting_after : null;
      }
    }
  },
};

function listing(round: HistoryRound, campaign: string, cursor: string | null) {
  const query = new URLSearchParams({ campaign_id: campaign, min_timestamp_created: round.since.toISOString(), limit: '100' });
  if (cursor !== null) query.set('starting_after', cursor);
  return { method: 'GET', url: `${round.account.baseUrl}/api/v2/emails?${query.toString()}`, headers: { authorization: `Bearer ${round.account.apiKey}` } };
}

/** The webhook Instantly would have posted for an email: none for one only scheduled. */
function webhookOf(campaign: string, email: Record<string, unknown>): Record<string, unknown>[] {
  const body = record(email.body);
  const common = {
    timestamp: email.timestamp_email ?? email.timestamp_created,
    campaign_id: email.campaign_id ?? campaign,
    lead_email: email.lead,
    email_account: email.eaccount,
    email_id: email.id,
    step: email.step,
  };
  if (email.ue_type === 1 || email.ue_type === 3)
    return [{ event_type: 'email_sent', ...common, email_subject: email.subject, email_text: body.text, email_html: body.html }];
  if (email.ue_type === 2) {
    const auto = email.is_auto_reply === true || email.is_auto_reply === 1;
    return [
      { event_type: auto ? 'auto_reply_received' : 'reply_received', ...common, reply_subject: email.subject, reply_text: body.text, reply_html: body.html },
    ];
  }
  return [];
}
