import { crmConnector, CrmError, type CrmConfig, type CrmEvent, type CrmRun, type CrmState, type SourceOptions } from '../../src/connectors/crm/index.js';

/** A connector's run as the tests drive it: events, options and a recorder standing for the job layer. */

export function crmEvent(overrides: Partial<CrmEvent> = {}): CrmEvent {
  const email = overrides.email === undefined ? 'jane.doe@acme.test' : overrides.email;
  return {
    eventType: 'EMAIL_SENT',
    platform: 'smartlead',
    identity: email ?? overrides.profileUrl ?? '',
    email,
    profileUrl: null,
    firstName: 'Jane',
    lastName: 'Doe',
    company: 'Acme',
    companyDomain: 'acme.test',
    subject: 'Quick question',
    text: 'Hi Jane, are you the right person to talk to about pipelines?',
    direction: 'outbound',
    campaignName: 'Q3 outbound',
    senderEmail: 'rep@seller.test',
    occurredAt: new Date('2025-03-04T10:00:00.000Z'),
    ...overrides,
  };
}

export const NO_OPTIONS: SourceOptions = { createOrUpdateCompany: false, createOrUpdateTask: false, assignContactOwner: false, crmObjectType: null };
export const ALL_OPTIONS: SourceOptions = { createOrUpdateCompany: true, createOrUpdateTask: true, assignContactOwner: true, crmObjectType: null };

export interface Recorder {
  run: CrmRun;
  /** Every state saveState received, in order. */
  states: CrmState[];
  /** Whether each save said no step follows it (`last`). */
  lasts: boolean[];
  credentials: unknown[];
  /** The state as persisted now (the last one saved, or the one the run started with). */
  persisted(): CrmState;
}

export function recorder(
  event: CrmEvent,
  options: SourceOptions,
  state: CrmState = {},
  hooks: { onSaveState?: (n: number) => void; onSaveCredentials?: () => void } = {},
): Recorder {
  const states: CrmState[] = [];
  const lasts: boolean[] = [];
  const credentials: unknown[] = [];
  return {
    states,
    lasts,
    credentials,
    persisted: () => states.at(-1) ?? state,
    run: {
      event,
      options,
      state,
      saveState(next, options) {
        states.push(structuredClone(next));
        lasts.push(options?.last === true);
        hooks.onSaveState?.(states.length);
        return Promise.resolve();
      },
      // One run alone: nothing else renews, so the exchange always happens.
      async renewCredentials(_used, exchange) {
        const next = await exchange();
        credentials.push(structuredClone(next));
        hooks.onSaveCredentials?.();
        return next;
      },
    },
  };
}

export async function thrown(promise: Promise<unknown>): Promise<CrmError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  if (!(error instanceof CrmError)) throw new Error(`expected a CrmError, got ${String(error)}`);
  return error;
}

export function connector(crm: string, credentials: unknown, config: CrmConfig) {
  const c = crmConnector(crm, credentials, config);
  if (!c) throw new Error(`no connector for ${crm}`);
  return c;
}
