import { record, records, type HistoryRound, type SequencerHistory } from '../history.js';

/**
 * lemlist's activities of a campaign (docs/vendors/lemlist.md): `GET /api/activities?version=v2` by
 * `campaignId` and `minDate`, 100 a page by offset until a page comes short. A webhook body is an activity,
 * so an activity is posted back to the parser as it is, the fields v2 nests lifted to where webhooks
 * carry them; its `_id` is the key a received one has too. Every activity our parser maps is recoverable
 * (sends, opens, clicks, replies, LinkedIn steps, interest marks). The budget is lemlist's 20 requests
 * every 2 seconds per key.
 */
export const lemlistHistory: SequencerHistory = {
  endpoint: { env: 'LEMLIST_BASE_URL', default: 'https://api.lemlist.com', description: 'lemlist API (its backfill)' },
  budget: { requests: 20, windowMs: 2_000, env: 'LEMLIST_REQUESTS_PER_2S', description: 'lemlist API requests every 2 seconds per key (its backfill)' },
  async *read(round) {
    const campaigns = [...new Set(round.leads.map((lead) => lead.campaignId).filter((id): id is string => id !== null))];
    for (const campaign of campaigns) {
      for (let offset = 0, full = true; full; offset += PAGE) {
        const activities = records(await round.call(activitiesOf(round, campaign, offset)));
        full = activities.length === PAGE;
        yield activities.map(webhookOf);
      }
    }
  },
};

const PAGE = 100;

function activitiesOf(round: HistoryRound, campaign: string, offset: number) {
  const query = new URLSearchParams({ version: 'v2', campaignId: campaign, minDate: round.since.toISOString(), limit: String(PAGE), offset: String(offset) });
  return {
    method: 'GET',
    url: `${round.account.baseUrl}/api/activities?${query.toString()}`,
    // HTTP Basic: no user, the key as the password.
    headers: { authorization: `Basic ${Buffer.from(`:${round.account.apiKey}`).toString('base64')}`, accept: 'application/json' },
  };
}

/** The activity as its webhook carries it: the lead's variables v2 nests, lifted. */
function webhookOf(activity: Record<string, unknown>): Record<string, unknown> {
  const variables = record(record(activity.lead).variables);
  return {
    ...activity,
    campaignName: activity.campaignName ?? activity.name,
    leadEmail: activity.leadEmail ?? variables.email,
    leadFirstName: activity.leadFirstName ?? variables.firstName,
    leadLastName: activity.leadLastName ?? variables.lastName,
    leadCompanyName: activity.leadCompanyName ?? variables.companyName,
    linkedinUrl: activity.linkedinUrl ?? variables.linkedinUrl,
    companyDomain: activity.companyDomain ?? variables.companyDomain,
  };
}
