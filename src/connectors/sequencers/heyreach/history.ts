import { isSince, record, records, type HistoryRound, type SequencerHistory } from '../history.js';

/**
 * HeyReach's conversations of a campaign (docs/vendors/heyreach.md): `POST /api/public/inbox/GetConversationsV2`
 * filtered by the campaign, 100 a page by offset until `totalCount`, each with its whole thread. Only the
 * campaigns the source's webhooks named are read: the inbox also holds conversations no campaign webhook
 * would post. Messages carry no id: a message is keyed by its conversation, direction and time
 * (src/connectors/sequencers/message-key.ts). Connection requests, follows, likes and views have no
 * history. The budget is HeyReach's published 300 requests a minute per key.
 */
export const heyreachHistory: SequencerHistory = {
  endpoint: { env: 'HEYREACH_BASE_URL', default: 'https://api.heyreach.io', description: 'HeyReach API (its backfill)' },
  budget: { requests: 300, windowMs: 60_000, env: 'HEYREACH_REQUESTS_PER_MINUTE', description: 'HeyReach API requests a minute per key (its backfill)' },
  async *read(round) {
    const campaigns = [...new Set(round.leads.map((lead) => lead.campaignId).filter((id): id is string => id !== null))];
    for (const campaign of campaigns) {
      for (let offset = 0, total = 1; offset < total; offset += PAGE) {
        const answer = record(await round.call(conversations(round, campaign, offset)));
        const items = records(answer.items);
        total = items.length === 0 ? 0 : Number(answer.totalCount ?? 0);
        yield items.filter((item) => isSince(item.lastMessageAt, round.since)).flatMap((item) => webhooksOf(campaign, item, round.since));
      }
    }
  },
};

const PAGE = 100;

function conversations(round: HistoryRound, campaign: string, offset: number) {
  const campaignId = /^\d+$/.test(campaign) ? Number(campaign) : campaign;
  return {
    method: 'POST',
    url: `${round.account.baseUrl}/api/public/inbox/GetConversationsV2`,
    headers: { 'x-api-key': round.account.apiKey, accept: 'application/json' },
    json: { filters: { campaignIds: [campaignId] }, offset, limit: PAGE },
  };
}

/** One webhook body a message of the conversation since the round's start: ours a send, the lead's a reply. */
function webhooksOf(campaign: string, item: Record<string, unknown>, since: Date): Record<string, unknown>[] {
  const profile = record(item.correspondentProfile);
  const lead = {
    profile_url: profile.profileUrl,
    first_name: profile.firstName,
    last_name: profile.lastName,
    company_name: profile.companyName,
    email_address: profile.emailAddress ?? undefined,
    enriched_email: profile.enrichedEmailAddress ?? undefined,
  };
  return records(item.messages)
    .filter((message) => isSince(message.createdAt, since))
    .map((message) => {
      const reply = message.sender === 'CORRESPONDENT';
      return {
        event_type: reply ? 'every_message_reply_received' : 'message_sent',
        is_inmail: message.isInMail === true,
        timestamp: message.createdAt,
        // This message alone: the parser takes the newest of the event's direction.
        recent_messages: [{ creation_time: message.createdAt, message: message.body, is_reply: reply }],
        message: message.body,
        conversation_id: item.id,
        campaign: { id: item.campaignId ?? campaign },
        sender: { id: item.linkedInAccountId },
        lead,
      };
    });
}
