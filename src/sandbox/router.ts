import express, { type Express, type Request, type Response } from 'express';
import { openSecret } from '../domain/secrets.js';
import { verifySignature } from '../domain/webhook-signature.js';
import { FAULT_KINDS, type FaultKind } from './journal.js';
import { renderSandboxPage } from './page.js';
import { JOURNALED_HEADERS, type Sandbox } from './sandbox.js';
import { SANDBOX_SYSTEMS, type SandboxSystem } from './system-table.js';
import { sandboxView } from './view.js';

/** Bodies the sandbox's systems take (a block list push of 1,000 values is far below). */
const MAX_BODY_BYTES = 10 * 1024 * 1024;
/** A call forced to hang is let go after this long (the caller has given up by then). */
const HANG_MS = 120_000;
/** Where the sandbox is served: every system's path is below it. */
const MOUNT = '/sandbox';

/** Which page control a system answers to: Salesforce's login and instance fail together, as do Close's and Attio's API and app host. */
function faultGroup(system: SandboxSystem): string {
  if (system.startsWith('salesforce')) return 'salesforce';
  return system === 'close-app' ? 'close' : system === 'attio-app' ? 'attio' : system;
}

/**
 * `/sandbox`: the page (HTML, refreshing on its own), its JSON twin `/sandbox/state`, the failure
 * controls (`POST /sandbox/faults`), and each system under `/sandbox/<system>/...`. Mounted only when
 * SANDBOX is on; without it every /sandbox path is the app's JSON 404. No API key: it is a demo's stand-in
 * for the outside world, served where the service listens.
 */
export function installSandbox(app: Express, sandbox: Sandbox): void {
  const router = express.Router();
  router.get('/', async (_req, res) => {
    res
      .type('html')
      .set('cache-control', 'no-store')
      .send(renderSandboxPage(await sandboxView(sandbox)));
  });
  router.get('/state', async (_req, res) => {
    res.set('cache-control', 'no-store').json(await sandboxView(sandbox));
  });
  router.post('/faults', express.urlencoded({ extended: false, limit: '4kb' }), express.json({ limit: '4kb' }), async (req, res) => {
    const { system, kind, count } = (req.body ?? {}) as Record<string, unknown>;
    const groups = [...new Set(SANDBOX_SYSTEMS.map((row) => faultGroup(row.system)))];
    const remaining = Number(count ?? 1);
    const problems = [
      ...(typeof system === 'string' && groups.includes(system) ? [] : [`system must be one of ${groups.join(', ')}`]),
      ...(typeof kind === 'string' && (FAULT_KINDS as readonly string[]).includes(kind) ? [] : [`kind must be one of ${FAULT_KINDS.join(', ')}`]),
      ...(Number.isInteger(remaining) && remaining >= 0 && remaining <= 1000 ? [] : ['count must be a whole number from 0 to 1000']),
    ];
    if (problems.length > 0) {
      res.status(400).json({ statusCode: 400, message: problems.join('; '), error: 'Bad Request' });
      return;
    }
    await sandbox.journal.setFault({ system: system as string, kind: kind as FaultKind, remaining });
    if (req.is('application/json')) res.json({ system, kind, remaining });
    else res.redirect(303, '/sandbox');
  });
  // Each system at its row's path (src/sandbox/system-table.ts): the path the configuration's defaults name.
  router.use('/:system', (req: Request<{ system: string }>, res, next) => {
    const row = SANDBOX_SYSTEMS.find((candidate) => candidate.path === `${MOUNT}/${req.params.system}`);
    if (!row) return next();
    serveSystem(sandbox, row.system, req, res).catch(next);
  });
  app.use(MOUNT, router);
}

async function serveSystem(sandbox: Sandbox, system: SandboxSystem, req: Request, res: Response): Promise<void> {
  const body = await readBody(req);
  const headers = Object.fromEntries(
    JOURNALED_HEADERS.filter((name) => typeof req.headers[name] === 'string').map((name) => [name, req.headers[name] as string]),
  );
  const request = { method: req.method, path: req.url, headers, body };
  const fault = await sandbox.journal.takeFault(faultGroup(system));
  if (fault) {
    await sandbox.journal.append({
      system,
      method: req.method,
      path: req.url,
      headers,
      body: body.toString('utf8'),
      status: FAULT_STATUS[fault],
      forced: true,
    });
    answerFault(res, fault);
    return;
  }
  const verified = system === 'webhooks' ? await signatureVerifies(sandbox, req.url, headers, body) : null;
  const answer = await sandbox.handle(system, request, { verified });
  res.status(answer.status).set(answer.headers).send(answer.body);
}

const FAULT_STATUS: Record<FaultKind, number> = { '429': 429, '500': 500, '401': 401, '410': 410, hang: 0 };

function answerFault(res: Response, fault: FaultKind): void {
  const message = `Sandbox: failure forced from the sandbox page (${fault})`;
  if (fault === 'hang') {
    // Nothing is answered: the caller's timeout decides, as with a server that stopped answering.
    setTimeout(() => res.socket?.destroy(), HANG_MS).unref();
    return;
  }
  if (fault === '429') res.set('retry-after', '2');
  res.status(FAULT_STATUS[fault]).json({ status: 'error', category: fault === '401' ? 'INVALID_AUTHENTICATION' : 'SANDBOX_FAULT', message });
}

/** Whether the request carries a valid signature of the webhook endpoint whose URL it was sent to. */
async function signatureVerifies(sandbox: Sandbox, path: string, headers: Record<string, string>, body: Buffer): Promise<boolean> {
  const signature = headers['service-signature'];
  if (!signature) return false;
  const url = `${sandbox.url}/webhooks${path}`;
  const endpoints = await sandbox.prisma.webhookEndpoint.findMany({
    where: { url, deletedAt: null },
    select: { secretEncrypted: true, previousSecretEncrypted: true, previousSecretExpiresAt: true },
  });
  const secrets = endpoints.flatMap((e) => [
    e.secretEncrypted,
    ...(e.previousSecretEncrypted && e.previousSecretExpiresAt && e.previousSecretExpiresAt > new Date() ? [e.previousSecretEncrypted] : []),
  ]);
  const opened = secrets.map((sealed) => openSecret(sandbox.encryptionKey, sealed));
  return verifySignature(signature, body.toString('utf8'), opened, Math.floor(Date.now() / 1000));
}

function readBody(req: Request): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > MAX_BODY_BYTES) {
        reject(new Error('sandbox: body too large'));
        req.destroy();
      } else chunks.push(chunk);
    });
    req.on('end', () => resolve(Buffer.concat(chunks)));
    req.on('error', reject);
  });
}
