import type { Express, Response } from 'express';
import { healthHttpStatus, HEALTH_SCHEMA_VERSION, rollUpHealth, type CheckStatus } from '../domain/health.js';
import type { PrismaClient } from '../db/prisma.js';

/**
 * GET /health/live, /health/ready and /health (spec: Platform health). No key; never cached.
 * Local deployments report only `sources` (inbound ingestion, which needs the database).
 */
export function installHealth(app: Express, deps: { prisma: PrismaClient }): void {
  app.get('/health/live', (_req, res) => {
    noStore(res).json({ schema_version: HEALTH_SCHEMA_VERSION, status: 'operational' });
  });
  const ready = async (_req: unknown, res: Response) => {
    const report = rollUpHealth({ sources: await databaseCheck(deps.prisma) });
    noStore(res).status(healthHttpStatus(report)).json(report);
  };
  app.get('/health/ready', ready);
  app.get('/health', ready);
}

async function databaseCheck(prisma: PrismaClient): Promise<CheckStatus> {
  try {
    await withTimeout(prisma.$queryRaw`SELECT 1`, 2_000);
    return 'operational';
  } catch {
    return 'outage';
  }
}

function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error('timed out')), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

function noStore(res: Response): Response {
  return res.set('Cache-Control', 'no-store');
}
