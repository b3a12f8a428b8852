import type { PrismaClient } from '../db/prisma.js';
import { sql } from '../db/sql.js';

/**
 * What the sandbox's systems received, in PostgreSQL (`sandbox_requests`) beside the rest: the state of
 * its emulators is replayed from it on start and by other API processes (so it survives restarts and is
 * shared), and the sandbox page shows the receivers and the inbox from it. Forced failures
 * (`sandbox_faults`) live here too, so every API process answers them.
 */

export interface JournalEntry {
  id: bigint;
  system: string;
  method: string;
  path: string;
  headers: Record<string, string>;
  body: string;
  status: number;
  forced: boolean;
  verified: boolean | null;
  createdAt: Date;
}

export type NewEntry = Omit<JournalEntry, 'id' | 'createdAt' | 'verified' | 'forced'> & { verified?: boolean | null; forced?: boolean };

/** A failure the page forces on a system: its next `remaining` calls answer `kind`. */
export interface Fault {
  system: string;
  kind: FaultKind;
  remaining: number;
}

/** 410 is what makes a webhook endpoint disable itself at once (the page's way to watch auto-disable). */
export const FAULT_KINDS = ['429', '500', '401', '410', 'hang'] as const;
export type FaultKind = (typeof FAULT_KINDS)[number];

const COLUMNS = sql`id, system, method, path, headers, body, status, forced, verified, created_at AS "createdAt"`;

export class SandboxJournal {
  constructor(private readonly prisma: PrismaClient) {}

  async append(entry: NewEntry): Promise<bigint> {
    const [row] = await this.prisma.$queryRaw<{ id: bigint }[]>`
      INSERT INTO sandbox_requests (system, method, path, headers, body, status, forced, verified)
      VALUES (${entry.system}, ${entry.method}, ${entry.path}, ${JSON.stringify(entry.headers)}::jsonb, ${entry.body}, ${entry.status},
              ${entry.forced ?? false}, ${entry.verified ?? null})
      RETURNING id`;
    return row!.id;
  }

  /** The requests of `systems` after `afterId` that changed state (not forced, not reads), oldest first: what a replay sends again. */
  replayable(systems: readonly string[], afterId: bigint): Promise<JournalEntry[]> {
    return this.prisma.$queryRaw<JournalEntry[]>`
      SELECT ${COLUMNS} FROM sandbox_requests
       WHERE system = ANY(${systems}::text[]) AND id > ${afterId} AND NOT forced AND method <> 'GET'
       ORDER BY id`;
  }

  /** The newest entries of `system`, newest first. */
  recent(system: string, limit: number): Promise<JournalEntry[]> {
    return this.prisma.$queryRaw<JournalEntry[]>`SELECT ${COLUMNS} FROM sandbox_requests WHERE system = ${system} ORDER BY id DESC LIMIT ${limit}`;
  }

  /** The failure forced on `system`'s next call, if any, counted down in the same statement. */
  async takeFault(system: string): Promise<FaultKind | null> {
    const [row] = await this.prisma.$queryRaw<{ kind: FaultKind }[]>`
      UPDATE sandbox_faults SET remaining = remaining - 1, updated_at = now() WHERE system = ${system} AND remaining > 0 RETURNING kind`;
    return row?.kind ?? null;
  }

  /** Forces `kind` on `system`'s next `count` calls (0 clears it). */
  async setFault(fault: Fault): Promise<void> {
    await this.prisma.$executeRaw`
      INSERT INTO sandbox_faults (system, kind, remaining) VALUES (${fault.system}, ${fault.kind}, ${fault.remaining})
      ON CONFLICT (system) DO UPDATE SET kind = EXCLUDED.kind, remaining = EXCLUDED.remaining, updated_at = now()`;
  }

  faults(): Promise<Fault[]> {
    return this.prisma.$queryRaw<Fault[]>`SELECT system, kind, remaining FROM sandbox_faults WHERE remaining > 0 ORDER BY system`;
  }
}
