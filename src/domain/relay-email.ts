/**
 * The email a reply relay sends its sales rep: who replied, the campaign, the reply, a link to the
 * sequencer's inbox, from the relay's templates or the default body. Pure: the job sends what this builds.
 *
 * Templates are Mustache (logic-less): `{{lead.email}}`, `{{campaign.name}}`, ... A placeholder that names
 * nothing renders empty and is reported. The text part is the rendered text as is; the HTML part is that
 * text HTML-escaped as a whole (template text and values alike), so nothing in a payload becomes markup.
 */
import Mustache from 'mustache';
import { z } from 'zod';
import { escapeHtml } from './html.js';

/** What a relay email is made of (the parsed reply, its relay and source). */
export interface RelayEmailInput {
  lead: { email: string | null; profileUrl: string | null; firstName: string | null; lastName: string | null; company: string | null };
  campaign: { id: string | null; name: string | null };
  reply: { subject: string | null; text: string | null };
  inboxUrl: string | null;
  /** The source, and its sequencer's name in messages (`Smartlead`: its definition's `name`, src/connectors/sequencers/<platform>/). */
  source: { id: number; platformName: string };
  relay: { id: number; description: string; bodyTemplates: readonly string[] };
}

export interface RelayEmail {
  subject: string;
  text: string;
  html: string;
  /** The prospect's address when it is one: the rep's answer goes straight to them. */
  replyTo: string | null;
  /** Placeholders of the templates that named nothing, sorted. */
  unknownPlaceholders: string[];
}

/** The placeholders a template may use, with what each holds (the README lists the same). */
export const TEMPLATE_PLACEHOLDERS = [
  'lead.email',
  'lead.firstName',
  'lead.lastName',
  'lead.name',
  'lead.company',
  'lead.profileUrl',
  'campaign.id',
  'campaign.name',
  'reply.text',
  'reply.subject',
  'source.id',
  'source.platform',
  'inbox.url',
  'relay.id',
  'relay.description',
] as const;

export function relayEmail(input: RelayEmailInput): RelayEmail {
  const view = templateView(input);
  const unknown = new Set<string>();
  const text =
    input.relay.bodyTemplates.length > 0
      ? input.relay.bodyTemplates
          .map((template) => {
            for (const name of unknownNames(template, view)) unknown.add(name);
            return Mustache.render(template, view, {}, { escape: (value: unknown) => String(value) });
          })
          .join('\n\n')
      : defaultBody(input, view);
  return {
    subject: subjectOf(input, view),
    text,
    html: htmlOf(text),
    replyTo: input.lead.email && z.email().safeParse(input.lead.email).success ? input.lead.email : null,
    unknownPlaceholders: [...unknown].sort(),
  };
}

type View = ReturnType<typeof templateView>;

function templateView(input: RelayEmailInput) {
  const { lead } = input;
  const name = [lead.firstName, lead.lastName].filter(Boolean).join(' ');
  return {
    lead: {
      email: lead.email ?? '',
      firstName: lead.firstName ?? '',
      lastName: lead.lastName ?? '',
      name,
      company: lead.company ?? '',
      profileUrl: lead.profileUrl ?? '',
    },
    campaign: { id: input.campaign.id ?? '', name: input.campaign.name ?? '' },
    reply: { text: input.reply.text ?? '', subject: input.reply.subject ?? '' },
    source: { id: String(input.source.id), platform: input.source.platformName },
    inbox: { url: input.inboxUrl ?? '' },
    relay: { id: String(input.relay.id), description: input.relay.description },
  };
}

// `Re: <the reply's subject>`, on one line: a line break in a payload must never start a header of its own.
function subjectOf(input: RelayEmailInput, view: View): string {
  const original = oneLine(input.reply.subject ?? '');
  if (original !== '') return (/^re:/i.test(original) ? original : `Re: ${original}`).slice(0, 250);
  return oneLine(`Re: reply from ${who(view)}${view.campaign.name ? ` (${view.campaign.name})` : ''}`).slice(0, 250);
}

function defaultBody(input: RelayEmailInput, view: View): string {
  const platform = view.source.platform;
  const lines = [
    `${who(view)} replied${view.campaign.name ? ` to the campaign ${view.campaign.name}` : ''} (${platform}).`,
    '',
    view.reply.text || '(The reply has no text.)',
    '',
    '--',
    `Lead: ${[view.lead.name, view.lead.email ? `<${view.lead.email}>` : ''].filter(Boolean).join(' ') || view.lead.profileUrl}`,
    ...(view.lead.profileUrl && view.lead.email ? [`Profile: ${view.lead.profileUrl}`] : []),
    ...(view.lead.company ? [`Company: ${view.lead.company}`] : []),
    ...(view.campaign.name ? [`Campaign: ${view.campaign.name}`] : []),
    ...(view.reply.subject ? [`Subject: ${oneLine(view.reply.subject)}`] : []),
    ...(view.inbox.url ? [`Open in ${platform}: ${view.inbox.url}`] : []),
    '',
    `Relayed by Pipeline Sync (reply relay ${input.relay.id}${input.relay.description ? `: ${input.relay.description}` : ''}).`,
  ];
  return lines.join('\n');
}

function who(view: View): string {
  return view.lead.name || view.lead.email || view.lead.profileUrl || 'A lead';
}

// Every character of the text escaped, line breaks kept; links stay text (a mail client links them itself).
function htmlOf(text: string): string {
  const body = text
    .split(/\r?\n/)
    .map((line) => escapeHtml(line))
    .join('<br>\n');
  return `<!doctype html>\n<html><body><div style="font-family: sans-serif; white-space: pre-wrap">${body}</div></body></html>\n`;
}

function oneLine(value: string): string {
  // eslint-disable-next-line no-control-regex -- control characters are what this removes
  return value.replace(/[\u0000-\u001f\u007f\u2028\u2029]+/g, ' ').trim();
}

/**
 * The names a template uses that the view does not hold: `{{name}}`, `{{{name}}}`, `{{&name}}`, sections,
 * and partials (there are none). Inside a section over an object, a name may also be one of its keys.
 */
function unknownNames(template: string, view: View): string[] {
  let tokens: unknown[];
  try {
    tokens = Mustache.parse(template);
  } catch {
    return []; // Mustache.render reports nothing either: an unclosed tag renders as text
  }
  const unknown: string[] = [];
  const walk = (list: unknown[], scopes: unknown[]) => {
    for (const token of list as Array<[string, string, number, number, unknown[]?]>) {
      const [type, name, , , children] = token;
      if (type === '>') unknown.push(`>${name}`);
      if (type !== 'name' && type !== '&' && type !== '#' && type !== '^') continue;
      const found = scopes.map((scope) => lookup(scope, name)).find((value) => value !== undefined);
      if (found === undefined && name !== '.') unknown.push(name);
      if ((type === '#' || type === '^') && Array.isArray(children))
        walk(children, found !== undefined && typeof found === 'object' ? [found, ...scopes] : scopes);
    }
  };
  walk(tokens, [view]);
  return unknown;
}

function lookup(scope: unknown, name: string): unknown {
  let value: unknown = scope;
  for (const part of name.split('.')) {
    if (value === null || typeof value !== 'object' || !Object.hasOwn(value, part)) return undefined;
    value = (value as Record<string, unknown>)[part];
  }
  return value;
}
