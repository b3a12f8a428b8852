/**
 * A campaign's traffic as a sequencer sends it: every lead gets five events (sent, a follow-up sent,
 * opened, a reply, its category changed), sent in waves (every lead's first event, then every lead's
 * second, ...), so each lead comes back several times within a burst, as Smartlead's webhooks do. Tests
 * and bench:ingress (d) send the same campaigns.
 */
export interface Campaign {
  /** Distinct leads; each gets {@link EVENTS_PER_LEAD} events. */
  leads: number;
  /** Leads per company (their email domain is their company's). */
  leadsPerCompany: number;
  /** Makes this campaign's leads and companies its own (`lead-<tag>-<n>@co-<tag>-<m>.test`). */
  tag: string;
  /** The sending mailbox: the HubSpot or Salesforce user who owns the leads. */
  sender: string;
}

export const EVENTS_PER_LEAD = 5;

/** The campaign's Smartlead payloads, in the order the sequencer sends them. */
export function campaignBodies(campaign: Campaign): string[] {
  const bodies: string[] = [];
  for (let step = 0; step < EVENTS_PER_LEAD; step += 1)
    for (let lead = 0; lead < campaign.leads; lead += 1) bodies.push(JSON.stringify(leadEvent(campaign, lead, step)));
  return bodies;
}

/** The distinct company domains of a campaign. */
export function campaignCompanies(campaign: Campaign): number {
  return Math.ceil(campaign.leads / campaign.leadsPerCompany);
}

function leadEvent(campaign: Campaign, lead: number, step: number): Record<string, unknown> {
  const company = Math.floor(lead / campaign.leadsPerCompany);
  const domain = `co-${campaign.tag}-${company}.test`;
  const email = `lead-${campaign.tag}-${lead}@${domain}`;
  const common = {
    from_email: campaign.sender,
    to_email: email,
    to_name: `Lead ${lead}`,
    campaign_name: `Campaign ${campaign.tag}`,
    campaign_id: 4200,
  };
  switch (step) {
    case 0:
    case 1:
      return {
        event_type: 'EMAIL_SENT',
        ...common,
        sequence_number: step + 1,
        custom_subject: step === 0 ? `Quick question for Company ${company}` : `Re: Quick question for Company ${company}`,
        custom_email_message: `<p>Hello Lead ${lead}, step ${step + 1}.</p>`,
        message_id: `<${campaign.tag}-${lead}-${step}@sender.test>`,
      };
    case 2:
      return { event_type: 'EMAIL_OPEN', ...common, sequence_number: 2, time_opened: new Date().toISOString() };
    case 3:
      return {
        event_type: 'EMAIL_REPLY',
        ...common,
        sl_lead_email: email,
        subject: `Re: Quick question for Company ${company}`,
        sequence_number: 2,
        reply_message: { message_id: `<reply-${campaign.tag}-${lead}@${domain}>`, text: 'Sounds good, send times', time: new Date().toISOString() },
      };
    default:
      return {
        event_type: 'LEAD_CATEGORY_UPDATED',
        ...common,
        lead_category: { old_id: null, old_name: null, new_id: 1, new_name: 'Interested' },
        lead_data: { email, first_name: 'Lead', last_name: String(lead), company_name: `Company ${company}`, website: domain },
      };
  }
}

/** A source's every CRM option on (company by domain, the sender as owner, a follow-up task), as Prisma writes it. */
export const EVERY_OPTION = { createOrUpdateCompany: true, createOrUpdateTask: true, assignContactOwner: true } as const;
