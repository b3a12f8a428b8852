import { escapeHtml } from '../domain/html.js';
import { FAULT_KINDS } from './journal.js';
import type { MailAddresses, SandboxRow, SandboxView } from './view.js';

/** Seconds between the page's own refreshes. */
const REFRESH_SECONDS = 3;

const FAULT_SYSTEMS = ['hubspot', 'salesforce', 'close', 'attio', 'smartlead', 'instantly', 'forwarding', 'webhooks'];

/**
 * The sandbox page: server-rendered HTML, no script, no build step, no CDN; it reloads itself every few
 * seconds. Every value is escaped; emails are shown in sandboxed frames (no script, no same origin). Pure.
 */
export function renderSandboxPage(view: SandboxView): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="refresh" content="${REFRESH_SECONDS}">
<title>SANDBOX · Pipeline Sync Service</title>
<style>
  body { font: 14px/1.4 system-ui, sans-serif; margin: 0; color: #1d2733; background: #f5f6f8; }
  .banner { background: #b3261e; color: #fff; padding: 10px 20px; font-weight: 600; letter-spacing: .02em; position: sticky; top: 0; }
  main { padding: 12px 20px; display: grid; grid-template-columns: repeat(auto-fill, minmax(440px, 1fr)); gap: 16px; }
  section { background: #fff; border: 1px solid #d7dbe0; border-radius: 6px; padding: 10px 14px; overflow: hidden; }
  h2 { font-size: 15px; margin: 4px 0 8px; } h3 { font-size: 13px; margin: 10px 0 4px; color: #4a5563; }
  table { width: 100%; border-collapse: collapse; } td { border-top: 1px solid #eef0f3; padding: 4px 4px; vertical-align: top; }
  td.at { white-space: nowrap; color: #6b7480; font-size: 12px; } .detail { color: #4a5563; font-size: 12px; word-break: break-word; }
  .ok { color: #1e7a34; } .bad { color: #b3261e; } .empty { color: #8a929c; font-style: italic; }
  iframe { width: 100%; height: 140px; border: 1px solid #eef0f3; background: #fff; }
  form { display: flex; gap: 6px; flex-wrap: wrap; align-items: center; }
  dl.addresses { display: grid; grid-template-columns: max-content 1fr; gap: 0 8px; margin: 0 0 4px; font-size: 12px; }
  dl.addresses dt { color: #6b7480; } dl.addresses dd { margin: 0; word-break: break-word; }
</style>
</head>
<body>
<div class="banner">${escapeHtml(view.notice)}</div>
<main>
${section(
  'Make a system fail',
  `<form method="post" action="/sandbox/faults">
  <label>System <select name="system">${FAULT_SYSTEMS.map((s) => `<option>${s}</option>`).join('')}</select></label>
  <label>answers <select name="kind">${FAULT_KINDS.map((k) => `<option value="${k}">${k === 'hang' ? 'nothing (hang)' : k}</option>`).join('')}</select></label>
  <label>for the next <input name="count" type="number" min="0" max="1000" value="3" style="width:5em"> calls</label>
  <button>Apply</button>
</form>
${view.faults.length === 0 ? '<p class="empty">No failure forced.</p>' : `<ul>${view.faults.map((f) => `<li>${escapeHtml(f.system)}: ${escapeHtml(f.kind)} for ${f.remaining} more call(s)</li>`).join('')}</ul>`}`,
)}
${section('Connect a CRM', connectButtons())}
${section('HubSpot', `<h3>Contacts</h3>${rows(view.hubspot.contacts)}<h3>Activities</h3>${rows(view.hubspot.activities)}`)}
${section('Salesforce', `<h3>Contacts and leads</h3>${rows(view.salesforce.contacts)}<h3>Tasks</h3>${rows(view.salesforce.activities)}`)}
${section('Close', `<h3>Contacts</h3>${rows(view.close.contacts)}<h3>Activities and tasks</h3>${rows(view.close.activities)}`)}
${section('Attio', `<h3>People</h3>${rows(view.attio.contacts)}<h3>Notes and tasks</h3>${rows(view.attio.activities)}`)}
${section('Forwarding receiver', rows(view.forwarding))}
${section('Webhook receiver', rows(view.webhooks))}
${section('Inbox', inbox(view.inbox))}
${section('Sequencer block lists', `<h3>Smartlead</h3>${values(view.blocklists.smartlead)}<h3>Instantly</h3>${values(view.blocklists.instantly)}`)}
</main>
</body>
</html>
`;
}

/**
 * Onboarding as a customer does it (issue 30): each button makes (or reuses) an unconnected connection of
 * the demo account and opens its connect link, through the sandbox CRM's consent page to the page the
 * customer sees (src/connect/). Browser tests: `#connect-sandbox-hubspot`, `#connect-sandbox-salesforce`.
 */
function connectButtons(): string {
  const button = (kind: string, name: string) =>
    `<form method="post" action="/sandbox/connect/${kind}"><button id="connect-sandbox-${kind}" data-testid="connect-sandbox-${kind}">Connect a sandbox ${name}</button></form>`;
  return `<p class="detail">The demo account's customer connects their CRM: a new connection, its connect link, the CRM's consent page, and the page they see.</p>
${button('hubspot', 'HubSpot')}
${button('salesforce', 'Salesforce')}`;
}

function section(title: string, body: string): string {
  return `<section><h2>${escapeHtml(title)}</h2>${body}</section>`;
}

function rows(list: SandboxRow[]): string {
  if (list.length === 0) return '<p class="empty">Nothing yet.</p>';
  return `<table>${list
    .map(
      (row) =>
        `<tr><td class="at">${escapeHtml(time(row.at))}</td><td>${escapeHtml(row.title)}${outcome(row)}${link(row)}<div class="detail">${escapeHtml(row.detail)}</div></td></tr>`,
    )
    .join('')}</table>`;
}

function inbox(list: SandboxRow[]): string {
  if (list.length === 0) return '<p class="empty">No email yet.</p>';
  return list
    .map(
      (mail) =>
        `<h3>${escapeHtml(time(mail.at))} · ${escapeHtml(mail.title)}${link(mail)}</h3>` +
        addresses(mail.addresses) +
        (mail.html
          ? `<iframe sandbox title="${escapeHtml(mail.title)}" srcdoc="${escapeHtml(mail.detail)}"></iframe>`
          : `<pre class="detail">${escapeHtml(mail.detail)}</pre>`),
    )
    .join('');
}

/** Who an email went to, who it says it is from, and where a reply goes. */
function addresses(mail: MailAddresses | undefined): string {
  if (!mail) return '';
  const line = (name: string, value: string | null) => `<dt>${name}</dt><dd>${value === null ? '<span class="empty">none</span>' : escapeHtml(value)}</dd>`;
  return `<dl class="addresses">${line('To', mail.to)}${line('From', mail.from)}${line('Reply-To', mail.replyTo)}</dl>`;
}

function values(list: string[]): string {
  return list.length === 0 ? '<p class="empty">Empty.</p>' : `<p class="detail">${list.map(escapeHtml).join(', ')}</p>`;
}

function outcome(row: SandboxRow): string {
  const parts: string[] = [];
  if (row.status !== undefined)
    parts.push(
      `<span class="${row.status >= 200 && row.status < 300 ? 'ok' : 'bad'}">${row.status === 0 ? 'no answer' : row.status}${row.forced ? ' (forced)' : ''}</span>`,
    );
  if (row.verified === true) parts.push('<span class="ok">signature verified</span>');
  if (row.verified === false) parts.push('<span class="bad">signature did not verify</span>');
  return parts.length > 0 ? ` · ${parts.join(' · ')}` : '';
}

/** A link into the support explorer: the request's lineage, or the platform event. */
function link(row: SandboxRow): string {
  const query = row.requestId
    ? `{ request(id: ${row.requestId}) { id createdAt parsed { ok reason } sync { status error crmState } deliveries { destinationUrl status httpStatus createdAt } relayExecutions { status sentAt } platformEvents { type summary } } }`
    : row.eventId
      ? `{ event(id: "${row.eventId}") { id type created summary data } }`
      : null;
  if (!query) return '';
  return ` · <a href="/graphql?query=${encodeURIComponent(query)}">${row.requestId ? `request ${escapeHtml(row.requestId)}` : 'event'} in the explorer</a>`;
}

function time(iso: string): string {
  return iso.replace('T', ' ').replace(/\.\d+Z$/, 'Z');
}
