/**
 * The one interface a sync drain calls to write an event into a customer's CRM. Each CRM kind
 * implements {@link CrmConnector}; `crmConnector()` in ./index.ts picks one. Types only: what the
 * connectors share in behaviour lives beside this file (errors, session, state-book, side-step, text).
 */

/** One received event, as a sync drain hands it to a connector. */
export interface CrmEvent {
  /** Canonical type (`EMAIL_SENT`, `MESSAGE_SENT`, ...; see src/domain/event-types.ts). */
  eventType: string;
  /** Sequencer platform, lowercase. */
  platform: string;
  /** The email, or for social-only events the profile URL: what the sync row stores as `toEmail`. */
  identity: string;
  email: string | null;
  profileUrl: string | null;
  firstName: string | null;
  lastName: string | null;
  company: string | null;
  companyDomain: string | null;
  subject: string | null;
  text: string | null;
  direction: 'outbound' | 'inbound' | null;
  campaignName: string | null;
  /** The sending mailbox or sequencer user, when the payload names it: the owner `assignContactOwner` looks up. */
  senderEmail: string | null;
  /** Processing time; stable across retries of one sync, so activities carry one timestamp. */
  occurredAt: Date;
}

/** A source's CRM flags (prisma Source). */
export interface SourceOptions {
  createOrUpdateCompany: boolean;
  createOrUpdateTask: boolean;
  assignContactOwner: boolean;
  /** Salesforce: the object created when no Contact or Lead matches (`Lead` or `Contact`); default Lead. */
  crmObjectType: string | null;
}

/** What each step already created, persisted in syncs.crm_state after every step so a retry resumes, never duplicates. */
export type CrmState = Record<string, unknown>;

export interface CrmRun {
  event: CrmEvent;
  options: SourceOptions;
  /** The sync's crm_state: `{}` on a first attempt. */
  state: CrmState;
  /**
   * Persists the state; called after every step that created something, and before a create is sent.
   * `last`: no step follows, so the job may store it together with the outcome, which comes next.
   */
  saveState(state: CrmState, options?: { last?: boolean }): Promise<void>;
  /**
   * Replaces expired OAuth credentials, once for all runs of one connection that find them expired (a
   * refresh-token rotation voids the old refresh token, so a second exchange with it would fail): under
   * the connection's renewal lease (src/jobs/credential-renewals.ts; no lock is held while `exchange`
   * runs), the credentials stored now are returned as they are when their access token is no longer
   * `used`'s (another run refreshed them, or the customer reconnected); otherwise `exchange` gets new
   * ones, persisted before this resolves.
   */
  renewCredentials(used: { accessToken: string }, exchange: () => Promise<unknown>): Promise<unknown>;
  /**
   * Waits until the other runs of this run's round (the syncs a connection's drain writes together) reach
   * the same step, so that their calls leave together and share batch calls (src/connectors/crm/lockstep.ts).
   * A connector takes the same steps in the same order on every path; absent, a run is alone.
   */
  step?(): Promise<void>;
}

/** A written event: `warning` when the main write succeeded but a side step failed (result.warnings). */
export type CrmOutcome = { status: 'success' | 'warning'; result: Record<string, unknown> };

/** One side step that failed while the event itself was written. */
export interface CrmWarning {
  step: string;
  message: string;
  httpStatus?: number;
  /** The CRM's error body. */
  payload?: unknown;
}

/** A block list's read from the CRM (issue 16): where the list is, and what its entries are. */
export interface ListRead {
  /** The block list's `crmSource`: HubSpot `{listId}`, Salesforce `{object, field?}`. */
  source: unknown;
  /** `ADDRESS` reads email addresses; `DOMAIN` reads company domains or websites (or emails, for their domain). */
  blockType: 'ADDRESS' | 'DOMAIN';
  /** As {@link CrmRun.renewCredentials}. */
  renewCredentials: CrmRun['renewCredentials'];
}

/**
 * One connection's CRM. `write` resolves with the outcome or rejects with a `CrmError` (./errors.ts);
 * `readList` yields a list's raw values page by page (the caller normalises them), or throws a CrmError.
 */
export interface CrmConnector {
  write(run: CrmRun): Promise<CrmOutcome>;
  readList(read: ListRead): AsyncGenerator<string[]>;
}
