import type { EndpointVariable } from '../../config.js';
import type { HttpRequest } from '../http/client.js';
import type { ApiAccount } from './definition.js';

/**
 * What differs per sequencer when the backfill (src/jobs/backfills__run.ts) asks it for the messages its
 * webhooks may have missed: where, within which limit, and how its history reads. Each folder's
 * `history.ts` exports one; the definition names it. The rest (the budget shared by every process, 429s,
 * keys kept out of messages, what is new, the requests it becomes) is the job's.
 */
export interface SequencerHistory {
  /**
   * Its API's base URL: the variable that sets it, with its default (the block-list push's own where it
   * has one); absent for a sequencer of white-labelled instances, whose account names its `baseUrl`.
   */
  endpoint?: EndpointVariable;
  /** Its documented limit per account: `requests` per `windowMs`, the count overridable by `env` (README table). */
  budget: { requests: number; windowMs: number; env: string; description: string };
  /**
   * The messages of `leads` since `since`, a page at a time, each as the body its webhook would have
   * posted (so the platform's own parser reads it and finds the same message id a received one has).
   */
  read(round: HistoryRound): AsyncIterable<Record<string, unknown>[]>;
}

/** One round of one source: its account, its leads, from when, and the call that spends its budget. */
export interface HistoryRound {
  account: ApiAccount;
  /** The leads (and campaigns) the source has seen within the lookback, most recently seen first. */
  leads: readonly HistoryLead[];
  /** Messages older than this are not asked for (or are skipped). */
  since: Date;
  call: HistoryCall;
}

/** A lead a source has seen: its campaign, the sequencer's lead id, and its email or profile URL. */
export interface HistoryLead {
  campaignId: string | null;
  leadId: string | null;
  contact: string;
}

/**
 * One API call within the account's budget (a slot taken first; a 429 waited out and asked again). A 2xx
 * answer's JSON, or, for a lead or campaign the sequencer no longer has, `null` (404); any other answer
 * fails the round with a message that never carries the key.
 */
export type HistoryCall = (request: HttpRequest) => Promise<unknown>;

/** `value` when it is a plain object, else an empty one (answers are outside data). */
export function record(value: unknown): Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : {};
}

/** The objects of `value` when it is an array, else none. */
export function records(value: unknown): Record<string, unknown>[] {
  return Array.isArray(value) ? value.filter((item): item is Record<string, unknown> => typeof item === 'object' && item !== null && !Array.isArray(item)) : [];
}

/** Whether a message's time (an ISO string or epoch) is at or after `since`; a message without one counts. */
export function isSince(value: unknown, since: Date): boolean {
  const ms = typeof value === 'number' ? value : typeof value === 'string' ? Date.parse(value) : NaN;
  return Number.isNaN(ms) || ms >= since.getTime();
}
