import { readFile } from 'node:fs/promises';
import type { Express, Request, Response } from 'express';
import { DEMO_FIXTURE } from '../admin/demo.js';
import { crmKindOf, type CrmKind } from '../connectors/crm/kinds.js';
import { OAuthFailure, type ConnectedAccount } from '../connectors/crm/oauth.js';
import { CRMS } from '../connectors/crm/registry.js';
import type { HttpClient } from '../connectors/http/client.js';
import type { PrismaClient } from '../db/prisma.js';
import { pkceChallenge, pkceVerifier, verifyConnectState, type ConnectState } from '../domain/connect-state.js';
import { sealSecret } from '../domain/secrets.js';
import type { Logger } from '../logger.js';
import { appOf, callbackUrl, connectLink, type ConnectSettings } from './links.js';
import { connectPage, type ConnectOutcome } from './pages.js';

/** How long the code exchange and the account reads may take, each. */
const EXCHANGE_TIMEOUT_MS = 15_000;

export interface ConnectDeps {
  prisma: PrismaClient;
  logger: Logger;
  encryptionKey: Buffer;
  settings: ConnectSettings;
  /** The SSRF-safe outbound client (the sandbox's origin trusted when SANDBOX is on). */
  http: HttpClient;
  /** SANDBOX: also `POST /sandbox/connect/<kind>`, the sandbox page's "connect a sandbox CRM" button. */
  sandbox: boolean;
  now?: () => number;
}

/**
 * The connect link's routes (issue 30). `GET /connect/<kind>/start?state=...` (the link staff hand the
 * customer) sends the browser to the CRM's consent page; `GET /connect/<kind>/callback` is where the CRM
 * sends it back: the code is exchanged, the CRM account read, the credentials sealed and stored, and a
 * plain page says what happened. A forged, expired or used state, a declined consent, a CRM without an
 * app here, or a failed exchange each show their page and change nothing; a state is spent only by the
 * connection it made (connect_states), so a declined or failed attempt can be retried with the same link.
 */
export function installConnect(app: Express, deps: ConnectDeps): void {
  const now = deps.now ?? Date.now;
  app.get('/connect/:kind/start', (req: Request<{ kind: string }>, res, next) => void start(deps, now, req, res).catch(next));
  app.get('/connect/:kind/callback', (req: Request<{ kind: string }>, res, next) => void callback(deps, now, req, res).catch(next));
  if (deps.sandbox) {
    app.post('/sandbox/connect/:kind', (req: Request<{ kind: string }>, res, next) => void sandboxConnect(deps, now, req, res).catch(next));
  }
}

/** A request URL fit for a log line: a connect route's `code` and `state` are credentials, masked. */
export function maskConnectQuery(url: string): string {
  return url.startsWith('/connect/') ? url.replace(/([?&](?:code|state)=)[^&#]*/g, '$1[redacted]') : url;
}

type Checked = { kind: CrmKind; state: ConnectState; connection: { id: number; accountId: number } } | { outcome: ConnectOutcome };

/** What every connect route checks first: the CRM, the state, the connection, and that the state has not connected already. */
async function check(deps: ConnectDeps, now: number, kindParam: string, stateParam: unknown): Promise<Checked> {
  const kind = crmKindOf(kindParam);
  if (kind === undefined || kindParam !== kindParam.toLowerCase()) return { outcome: { kind: 'unknown_crm', crm: kindParam } };
  const verified =
    typeof stateParam === 'string' ? verifyConnectState(deps.settings.stateKey, stateParam, kind, now) : ({ ok: false, reason: 'forged' } as const);
  if (!verified.ok) return { outcome: { kind: verified.reason } };
  const { state } = verified;
  const connection = await deps.prisma.connection.findUnique({
    where: { id: state.connectionId },
    select: { id: true, accountId: true, crm: true, deletedAt: true },
  });
  if (!connection || connection.deletedAt !== null || crmKindOf(connection.crm) !== kind) return { outcome: { kind: 'gone' } };
  const used = await deps.prisma.connectState.findUnique({ where: { nonce: state.nonce }, select: { nonce: true } });
  if (used) return { outcome: { kind: 'used', crm: CRMS[kind].name } };
  return { kind, state, connection };
}

async function start(deps: ConnectDeps, now: () => number, req: Request<{ kind: string }>, res: Response): Promise<void> {
  const checked = await check(deps, now(), req.params.kind, req.query.state);
  if ('outcome' in checked) return show(res, checked.outcome);
  const { kind, state } = checked;
  const app = appOf(deps.settings, kind);
  if (!app) return show(res, { kind: 'unavailable', crm: CRMS[kind].name });
  const oauth = CRMS[kind].oauth;
  const authorize = new URL(deps.settings.authorizeUrls[kind]);
  const params: Record<string, string> = {
    ...oauth.authorize.params,
    client_id: app.clientId,
    redirect_uri: callbackUrl(deps.settings, kind),
    scope: oauth.scopes.join(' '),
    state: req.query.state as string,
  };
  if (oauth.pkce) Object.assign(params, { code_challenge: pkceChallenge(pkceVerifier(deps.settings.stateKey, state.nonce)), code_challenge_method: 'S256' });
  for (const [name, value] of Object.entries(params)) authorize.searchParams.set(name, value);
  res.set({ 'cache-control': 'no-store', 'referrer-policy': 'no-referrer' }).redirect(302, authorize.href);
}

async function callback(deps: ConnectDeps, now: () => number, req: Request<{ kind: string }>, res: Response): Promise<void> {
  const checked = await check(deps, now(), req.params.kind, req.query.state);
  if ('outcome' in checked) return show(res, checked.outcome);
  const { kind, state, connection } = checked;
  const crm = CRMS[kind].name;
  const { error, code } = req.query;
  if (error !== undefined) {
    if (error === 'access_denied') return show(res, { kind: 'denied', crm, expiresAt: state.expiresAt });
    const named = typeof error === 'string' && /^[A-Za-z0-9_.-]{1,64}$/.test(error) ? error : 'an error';
    return show(res, { kind: 'crm_error', crm, error: named, expiresAt: state.expiresAt });
  }
  if (typeof code !== 'string' || code === '') return show(res, { kind: 'missing_code', crm });
  const app = appOf(deps.settings, kind);
  if (!app) return show(res, { kind: 'unavailable', crm });

  let account: ConnectedAccount;
  try {
    const oauth = CRMS[kind].oauth;
    account = await oauth.complete(
      {
        code,
        redirectUri: callbackUrl(deps.settings, kind),
        ...(oauth.pkce ? { codeVerifier: pkceVerifier(deps.settings.stateKey, state.nonce) } : {}),
        app,
        apiUrl: deps.settings.apiUrls[kind],
        appUrl: deps.settings.appUrls[kind],
      },
      { http: deps.http, now, timeoutMs: EXCHANGE_TIMEOUT_MS },
    );
    // The connector reads what is stored here with this schema: what it would refuse is not stored.
    if (!CRMS[kind].credentials.safeParse(account.credentials).success) throw new OAuthFailure(`${crm} answered with credentials of an unexpected shape`);
  } catch (failure) {
    if (!(failure instanceof OAuthFailure)) throw failure;
    deps.logger.warn({ connectionId: connection.id, crm: kind, reason: failure.message }, 'connect: the CRM account could not be connected');
    return show(res, { kind: 'exchange_failed', crm, reason: failure.message.replace(/\.$/, ''), expiresAt: state.expiresAt });
  }

  const outcome = await deps.prisma
    .$transaction(async (tx): Promise<ConnectOutcome> => {
      // The state is spent with the connection it makes: a second callback with it finds it here.
      const spent = await tx.$executeRaw`
      INSERT INTO connect_states (nonce, connection_id, expires_at) VALUES (${state.nonce}, ${connection.id}, ${state.expiresAt})
      ON CONFLICT (nonce) DO NOTHING`;
      if (spent === 0) return { kind: 'used', crm };
      // Past its expiry a state is refused by its signature: its row is no longer needed.
      await tx.$executeRaw`DELETE FROM connect_states WHERE expires_at < now() - interval '1 minute'`;
      const updated = await tx.connection.updateMany({
        where: { id: connection.id, deletedAt: null },
        data: {
          credentialsEncrypted: sealSecret(deps.encryptionKey, JSON.stringify(account.credentials)),
          tokenExpiresAt: account.tokenExpiresAt,
          status: 'ready',
          organizationId: account.organizationId,
          organizationDomain: account.organizationDomain,
          // A renewal of the previous credentials in flight finds them replaced and keeps these (src/jobs/credential-renewals.ts).
          credentialsRenewalHolder: null,
          credentialsRenewalUntil: null,
        },
      });
      if (updated.count === 0) throw new ConnectionGone();
      const sources = await tx.source.count({ where: { connectionId: connection.id } });
      return { kind: 'connected', crm, account: account.label, hasSources: sources > 0 };
    })
    .catch((failure: unknown) => {
      if (failure instanceof ConnectionGone) return { kind: 'gone' } as const;
      throw failure;
    });
  if (outcome.kind === 'connected') {
    deps.logger.info(
      { connectionId: connection.id, accountId: connection.accountId, crm: kind, organizationId: account.organizationId },
      'connect: CRM account connected',
    );
  }
  show(res, outcome);
}

/** The connection was deleted while the customer consented: the transaction is rolled back. */
class ConnectionGone extends Error {}

/**
 * The sandbox page's "Connect a sandbox <CRM>" button: the demo account's connection of that CRM left
 * unconnected by an earlier click, or a new one, and its connect link opened (303 to it).
 */
async function sandboxConnect(deps: ConnectDeps, now: () => number, req: Request<{ kind: string }>, res: Response): Promise<void> {
  const kind = crmKindOf(req.params.kind);
  if (kind === undefined) return show(res, { kind: 'unknown_crm', crm: req.params.kind });
  const email = await demoAccountEmail();
  const account = email === undefined ? null : await deps.prisma.account.findFirst({ where: { email }, orderBy: { id: 'asc' }, select: { id: true } });
  if (!account) return show(res, { kind: 'gone' });
  const waiting = await deps.prisma.connection.findFirst({
    where: { accountId: account.id, crm: kind, deletedAt: null, credentialsEncrypted: null },
    orderBy: { id: 'desc' },
    select: { id: true },
  });
  const connection =
    waiting ?? (await deps.prisma.connection.create({ data: { accountId: account.id, crm: kind, status: 'disconnected' }, select: { id: true } }));
  res.set('cache-control', 'no-store').redirect(303, connectLink(deps.settings, connection.id, kind, now()).url);
}

let demoEmail: Promise<string | undefined> | undefined;

/** The demo account's email: the first account of fixtures/demo.json, which the sandbox seeds. */
function demoAccountEmail(): Promise<string | undefined> {
  demoEmail ??= readFile(DEMO_FIXTURE, 'utf8').then((text) => {
    const first = (JSON.parse(text) as { accounts?: Array<{ email?: unknown }> }).accounts?.[0]?.email;
    return typeof first === 'string' ? first : undefined;
  });
  return demoEmail;
}

function show(res: Response, outcome: ConnectOutcome): void {
  const { status, html } = connectPage(outcome);
  res.status(status).set({ 'cache-control': 'no-store', 'referrer-policy': 'no-referrer' }).type('html').send(html);
}
