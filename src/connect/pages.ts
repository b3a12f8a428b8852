import { escapeHtml } from '../domain/html.js';

/**
 * The plain pages a customer sees at the end of a connect link (issue 30), one per outcome, each with
 * its HTTP status. No script, no outside asset; every value escaped. The outcome is also in
 * `<main data-connect-outcome="...">` and the title in `<h1 id="connect-title">`, for browser tests.
 */

export type ConnectOutcome =
  | { kind: 'connected'; crm: string; account: string; hasSources: boolean }
  | { kind: 'denied'; crm: string; expiresAt: Date }
  | { kind: 'crm_error'; crm: string; error: string; expiresAt: Date }
  | { kind: 'missing_code'; crm: string }
  | { kind: 'forged' }
  | { kind: 'expired' }
  | { kind: 'used'; crm: string }
  | { kind: 'gone' }
  | { kind: 'unknown_crm'; crm: string }
  | { kind: 'unavailable'; crm: string }
  | { kind: 'exchange_failed'; crm: string; reason: string; expiresAt: Date };

/** What to do when a link cannot be used again: as a sentence, and as the end of one. */
const ASK = 'Ask the person who sent you the link for a new one.';
const OR_ASK = 'or ask the person who sent you the link for a new one.';

/** The page of an outcome and its status. */
export function connectPage(outcome: ConnectOutcome): { status: number; html: string } {
  switch (outcome.kind) {
    case 'connected':
      return page(200, outcome.kind, `${outcome.crm} is connected`, [
        `${outcome.account} is now connected to Pipeline Sync Service.`,
        outcome.hasSources
          ? `Next: nothing more to do here. Events your sequencer sends to this connection's sources are now written to ${outcome.crm}. You can close this page.`
          : `Next: your contact at Pipeline Sync Service adds a source for your sequencer and sends you its ingress URL, to paste into the sequencer's webhook settings. You can close this page.`,
      ]);
    case 'denied':
      return page(403, outcome.kind, `${outcome.crm} was not connected`, [
        `Access was declined on ${outcome.crm}'s page, so nothing was changed.`,
        `To connect it, open the same link again before ${time(outcome.expiresAt)} and choose Allow.`,
      ]);
    case 'crm_error':
      return page(400, outcome.kind, `${outcome.crm} was not connected`, [
        `${outcome.crm} did not authorize the connection (${outcome.error}), so nothing was changed.`,
        `Open the same link again before ${time(outcome.expiresAt)} to retry, ${OR_ASK}`,
      ]);
    case 'missing_code':
      return page(400, outcome.kind, `${outcome.crm} was not connected`, [
        `${outcome.crm} sent you back without an authorization, so nothing was changed.`,
        'Open the connect link again to retry.',
      ]);
    case 'forged':
      return page(400, outcome.kind, 'This connect link is not valid', ['The link is incomplete or was altered, so nothing was changed.', ASK]);
    case 'expired':
      return page(410, outcome.kind, 'This connect link has expired', ['Connect links are valid for 15 minutes; nothing was changed.', ASK]);
    case 'used':
      return page(409, outcome.kind, 'This connect link was already used', [
        `It already connected ${outcome.crm}, and a link connects once, so nothing was changed.`,
        `To connect another ${outcome.crm} account, ask the person who sent you the link for a new one.`,
      ]);
    case 'gone':
      return page(404, outcome.kind, 'This connection no longer exists', ['Nothing was changed.', ASK]);
    case 'unknown_crm':
      return page(404, outcome.kind, 'Unknown CRM', [`This service does not connect "${outcome.crm}".`]);
    case 'unavailable':
      return page(503, outcome.kind, `${outcome.crm} cannot be connected here`, [
        `This service has no ${outcome.crm} app set up, so ${outcome.crm} accounts cannot be connected to it yet. Nothing was changed.`,
        'Tell the person who sent you the link: they will send a new link once it is set up.',
      ]);
    case 'exchange_failed':
      return page(502, outcome.kind, `${outcome.crm} was not connected`, [
        `The connection could not be completed: ${outcome.reason}. Nothing was changed.`,
        `Open the same link again before ${time(outcome.expiresAt)} to retry, ${OR_ASK}`,
      ]);
  }
}

function page(status: number, outcome: string, title: string, paragraphs: string[]): { status: number; html: string } {
  const html = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<title>${escapeHtml(title)} · Pipeline Sync Service</title>
<style>
  body { font: 16px/1.5 system-ui, sans-serif; margin: 0; color: #1d2733; background: #f5f6f8; }
  main { max-width: 36rem; margin: 4rem auto; background: #fff; border: 1px solid #d7dbe0; border-radius: 6px; padding: 1.5rem 2rem; }
  h1 { font-size: 1.3rem; margin-top: 0; }
</style>
</head>
<body>
<main data-connect-outcome="${escapeHtml(outcome)}">
<h1 id="connect-title">${escapeHtml(title)}</h1>
${paragraphs.map((p) => `<p>${escapeHtml(p)}</p>`).join('\n')}
</main>
</body>
</html>
`;
  return { status, html };
}

/** A time the customer can read: `2026-11-28 09:15 UTC`. */
function time(at: Date): string {
  return `${at.toISOString().slice(0, 16).replace('T', ' ')} UTC`;
}
