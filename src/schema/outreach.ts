import { sql, type Sql } from '../db/sql.js';
import { buildOutreach, parseOutreachQuery, type CategorySignal, type OutreachGroup, type OutreachQuery, type OutreachResponse } from '../domain/outreach.js';
import { builder } from './builder.js';
import type { Context } from './context.js';
import { requireStaff, serviceError } from './errors.js';
import { accountArgs, requireReader, type Reader } from './access.js';
import { withQueryLimit } from './history.js';

type Summary = OutreachResponse['summary'];
type Outcomes = OutreachResponse['outcomes'];

const OutreachQueryRef = builder.objectRef<OutreachResponse['query']>('OutreachQuery').implement({
  description: 'The identities looked up, normalised.',
  fields: (t) => ({
    email: t.exposeString('email', { nullable: true, description: 'The email, lowercased (null when only profile URLs were given).' }),
    profileUrls: t.exposeStringList('profileUrls', { description: 'Canonical profile URLs.' }),
  }),
});

const SummaryRef = builder.objectRef<Summary>('OutreachSummary').implement({
  description: 'What happened with the contact, across every matching event.',
  fields: (t) => ({
    everContacted: t.exposeBoolean('everContacted', { description: 'A send, reply, call or outbound social message (not opens, clicks, views or likes).' }),
    everEmailed: t.exposeBoolean('everEmailed', { description: 'An email was sent to or received from the contact.' }),
    everOpened: t.exposeBoolean('everOpened', { description: 'An email was opened or a link clicked.' }),
    everCalled: t.exposeBoolean('everCalled', { description: 'A call was logged.' }),
    everSocialTouched: t.exposeBoolean('everSocialTouched', { description: 'Any professional-network or microblog event.' }),
    totalEvents: t.exposeInt('totalEvents', { description: 'Events, each inbound payload counted once per event type and platform.' }),
    firstTouchAt: t.expose('firstTouchAt', { type: 'DateTime', nullable: true, description: 'Processing time of the first touch.' }),
    lastTouchAt: t.expose('lastTouchAt', { type: 'DateTime', nullable: true, description: 'Processing time of the last touch.' }),
    daysSinceLastTouch: t.exposeInt('daysSinceLastTouch', { nullable: true, description: 'Whole days since the last touch (floor).' }),
    lastEventType: t.exposeString('lastEventType', { nullable: true, description: 'Event type of the last touch.' }),
    lastPlatform: t.exposeString('lastPlatform', { nullable: true, description: 'Platform of the last touch.' }),
  }),
});

const EventTypeCountRef = builder.objectRef<OutreachResponse['eventTypes'][number]>('OutreachEventTypeCount').implement({
  description: 'Events of one type.',
  fields: (t) => ({
    eventType: t.exposeString('eventType', { description: 'Inbound event type.' }),
    count: t.exposeInt('count', { description: 'Events (deduplicated by inbound payload).' }),
    firstAt: t.expose('firstAt', { type: 'DateTime', description: 'First processing time.' }),
    lastAt: t.expose('lastAt', { type: 'DateTime', description: 'Last processing time.' }),
  }),
});

const PlatformCountRef = builder.objectRef<OutreachResponse['platforms'][number]>('OutreachPlatformCount').implement({
  description: 'Events from one sequencer platform.',
  fields: (t) => ({
    platform: t.exposeString('platform', { description: 'Sequencer platform.' }),
    count: t.exposeInt('count', { description: 'Events (deduplicated by inbound payload).' }),
    lastAt: t.expose('lastAt', { type: 'DateTime', description: 'Last processing time.' }),
    lastEventType: t.exposeString('lastEventType', { description: "Type of the platform's last event." }),
  }),
});

const OutcomesRef = builder.objectRef<Outcomes>('OutreachOutcomes').implement({
  description: 'How the contact responded.',
  fields: (t) => ({
    replied: t.exposeBoolean('replied', { description: 'An email or social reply was received.' }),
    lastReplyAt: t.expose('lastReplyAt', { type: 'DateTime', nullable: true, description: 'Processing time of the last reply.' }),
    bounced: t.exposeBoolean('bounced', { description: 'An email bounced.' }),
    unsubscribed: t.exposeBoolean('unsubscribed', { description: 'The lead unsubscribed.' }),
    lastCategoryName: t.exposeString('lastCategoryName', { nullable: true, description: 'The latest lead category a sequencer set.' }),
    lastCategoryAt: t.expose('lastCategoryAt', { type: 'DateTime', nullable: true, description: 'When that category was received.' }),
  }),
});

const DoNotContactRef = builder.objectRef<OutreachResponse['doNotContact']>('OutreachDoNotContact').implement({
  description: 'Hard do-not-contact signals only: bounces and unsubscribes.',
  fields: (t) => ({
    value: t.exposeBoolean('value', { description: 'True when any hard signal exists.' }),
    reasons: t.exposeStringList('reasons', { description: '`bounced` and/or `unsubscribed`.' }),
  }),
});

const BlocklistsRef = builder.objectRef<OutreachResponse['blocklists']>('OutreachBlocklists').implement({
  description: 'Reserved: not evaluated. This is not evidence of absence from a block list.',
  fields: (t) => ({
    evaluated: t.exposeBoolean('evaluated', { description: 'Always false.' }),
    matched: t.exposeBoolean('matched', { description: 'Always false.' }),
    matches: t.field({ type: ['String'], description: 'Always empty.', resolve: () => [] }),
  }),
});

const OutreachRef = builder.objectRef<OutreachResponse>('ContactOutreach').implement({
  description: 'Prior outreach to a contact, over every identity given (OR-union).',
  fields: (t) => ({
    email: t.exposeString('email', { nullable: true, deprecationReason: 'Use query.email.', description: 'Alias of query.email.' }),
    query: t.field({ type: OutreachQueryRef, description: 'The identities looked up.', resolve: (o) => o.query }),
    found: t.exposeBoolean('found', { description: 'Log rows and/or a lead category signal exist.' }),
    summary: t.field({ type: SummaryRef, description: 'Summary.', resolve: (o) => o.summary }),
    eventTypes: t.field({ type: [EventTypeCountRef], description: 'Counts by event type.', resolve: (o) => o.eventTypes }),
    platforms: t.field({ type: [PlatformCountRef], description: 'Counts by platform.', resolve: (o) => o.platforms }),
    outcomes: t.field({ type: OutcomesRef, description: 'Replies, bounces, unsubscribes, lead category.', resolve: (o) => o.outcomes }),
    doNotContact: t.field({ type: DoNotContactRef, description: 'Hard signals.', resolve: (o) => o.doNotContact }),
    blocklists: t.field({ type: BlocklistsRef, description: 'Reserved.', resolve: (o) => o.blocklists }),
  }),
});

builder.queryField('contactOutreach', (t) =>
  t.field({
    type: OutreachRef,
    description: "Prior outreach to a contact by email and/or up to 5 profile URLs, within the key's connections.",
    args: {
      ...accountArgs,
      email: t.arg.string({ required: false, description: 'Email address (case-insensitive).' }),
      profileUrls: t.arg.stringList({
        required: false,
        description: 'Professional-network or microblog profile URLs; each may be comma-separated; at most 5 in all.',
      }),
    },
    resolve: async (_root, args, ctx) => {
      const viewer = await requireReader(ctx, args.accountId);
      const parsed = parseOutreachQuery(args.email, args.profileUrls ?? []);
      if (!parsed.ok) throw serviceError('BAD_REQUEST', parsed.problems.length === 1 ? parsed.problems[0]! : parsed.problems);
      const { groups, signal } = await withQueryLimit(ctx, 'Pass fewer identities (email and profileUrl values).', (client) =>
        readOutreach(client, viewer, parsed.query),
      );
      return buildOutreach(parsed.query, groups, signal, new Date());
    },
  }),
);

/** An account that has seen a contact: the connections its events came through, and the account's outreach summary. */
interface ContactSighting {
  accountId: number;
  connectionIds: number[];
  outreach: OutreachResponse;
}

const ContactSightingRef = builder.objectRef<ContactSighting>('ContactSighting').implement({
  description: 'An account that has seen the contact, with its prior outreach there.',
  fields: (t) => ({
    accountId: t.exposeInt('accountId', { description: 'Account.' }),
    connectionIds: t.exposeIntList('connectionIds', { description: 'Connections whose syncs, deliveries or lead categories name the contact.' }),
    outreach: t.field({
      type: OutreachRef,
      description: "The account's outreach summary, as GET /api/v1/contacts/outreach gives it.",
      resolve: (s) => s.outreach,
    }),
  }),
});

builder.queryField('contact', (t) =>
  t.field({
    type: [ContactSightingRef],
    description: 'Support staff only: every account and connection that has seen a contact (by email and/or profile URL), by ascending account id.',
    args: {
      email: t.arg.string({ required: false, description: 'Email address (case-insensitive).' }),
      profileUrl: t.arg.string({ required: false, description: 'Professional-network or microblog profile URL.' }),
    },
    resolve: async (_root, args, ctx) => {
      requireStaff(ctx);
      const parsed = parseOutreachQuery(args.email, args.profileUrl == null ? [] : [args.profileUrl]);
      if (!parsed.ok) throw serviceError('BAD_REQUEST', parsed.problems.length === 1 ? parsed.problems[0]! : parsed.problems);
      const { query } = parsed;
      return withQueryLimit(ctx, 'Look up one identity at a time.', async (client) => {
        const seen = await client.$queryRaw<{ accountId: number; connectionIds: number[] }[]>(sightingsStatement(query.identities));
        const now = new Date();
        return Promise.all(
          seen.map(async (scope) => {
            const { groups, signal } = await readOutreach(client, scope, query);
            return { ...scope, outreach: buildOutreach(query, groups, signal, now) };
          }),
        );
      });
    },
  }),
);

/** The accounts and connections whose rows name one of `identities`: each account's (account_id, contact) indexes probed once. */
function sightingsStatement(identities: string[]): Sql {
  const contacts = sql`${identities}::text[]`;
  return sql`
    SELECT a.id AS "accountId", array_agg(DISTINCT seen.connection_id ORDER BY seen.connection_id) AS "connectionIds"
      FROM accounts a
      CROSS JOIN LATERAL (
        SELECT connection_id FROM syncs WHERE account_id = a.id AND to_email = ANY(${contacts})
        UNION SELECT connection_id FROM deliveries WHERE account_id = a.id AND to_email = ANY(${contacts})
        UNION SELECT connection_id FROM lead_category_signals WHERE account_id = a.id AND contact = ANY(${contacts})
      ) seen
     WHERE seen.connection_id IS NOT NULL
     GROUP BY a.id
     ORDER BY a.id`;
}

/** What {@link outreachStatement} returns: one row. */
export interface OutreachRow {
  groups: { eventType: string; platform: string; count: number; firstAt: string; lastAt: string }[];
  signal: { name: string; at: string } | null;
}

async function readOutreach(
  client: Context['heavy'],
  viewer: Pick<Reader, 'accountId' | 'connectionIds'>,
  query: OutreachQuery,
): Promise<{ groups: OutreachGroup[]; signal: CategorySignal | null }> {
  const [row] = await client.$queryRaw<OutreachRow[]>(outreachStatement(viewer.accountId, viewer.connectionIds, query.identities));
  const groups = (row?.groups ?? []).map((g) => ({ ...g, firstAt: new Date(g.firstAt), lastAt: new Date(g.lastAt) }));
  const signal = row?.signal ? { name: row.signal.name, at: new Date(row.signal.at) } : null;
  return { groups, signal };
}

/**
 * One statement: the matching sync and delivery rows (both carry the inbound payload's request id, so a
 * payload counts once per event type and platform however many logs it reached, timed by its first
 * processing: a replayed or delayed delivery is not a new touch), grouped; and the newest lead
 * category signal. Each table is probed through its (account_id, to_email|contact) index.
 * Exported for bench/outreach.ts, which times it directly.
 */
export function outreachStatement(accountId: number, connectionIds: number[], identities: string[]): Sql {
  const ids = sql`${connectionIds}::int[]`;
  const contacts = sql`${identities}::text[]`;
  return sql`
    WITH events AS (
      SELECT s.event_type, s.platform, s.request_id, s.created_at
        FROM syncs s
       WHERE s.account_id = ${accountId} AND s.to_email = ANY(${contacts}) AND s.connection_id = ANY(${ids})
      UNION ALL
      SELECT d.event_type, src.platform, d.request_id, d.created_at
        FROM deliveries d JOIN sources src ON src.id = d.source_id
       WHERE d.account_id = ${accountId} AND d.to_email = ANY(${contacts}) AND d.connection_id = ANY(${ids})
    ),
    payloads AS (
      SELECT event_type, platform, request_id, min(created_at) AS at FROM events GROUP BY event_type, platform, request_id
    ),
    groups AS (
      SELECT event_type AS "eventType", platform, count(*)::int AS count, min(at) AS "firstAt", max(at) AS "lastAt"
        FROM payloads GROUP BY event_type, platform
    )
    SELECT (SELECT COALESCE(json_agg(groups), '[]'::json) FROM groups) AS groups,
           (SELECT json_build_object('name', category_name, 'at', created_at)
              FROM lead_category_signals
             WHERE account_id = ${accountId} AND contact = ANY(${contacts}) AND connection_id = ANY(${ids})
             ORDER BY created_at DESC, id DESC LIMIT 1) AS signal`;
}
