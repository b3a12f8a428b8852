import { CrmError } from './errors.js';
import type { CrmWarning } from './types.js';

/**
 * Runs a side step (company, association, owner, follow-up task): a rejection becomes a warning and
 * the write goes on; auth, rate-limit and outage errors still stop the write, to be retried.
 */
export async function sideStep(warnings: CrmWarning[], step: string, action: () => Promise<void>): Promise<void> {
  try {
    await action();
  } catch (error) {
    if (!(error instanceof CrmError) || error.kind !== 'rejected') throw error;
    warnings.push({
      step,
      message: error.message,
      ...(error.httpStatus !== undefined ? { httpStatus: error.httpStatus } : {}),
      ...(error.payload !== undefined ? { payload: error.payload } : {}),
    });
  }
}
