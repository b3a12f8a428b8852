import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { FaultPlan, pathMatches, type Fault } from './faults.js';

/** When a crash test's action runs at its call: `before` the call is carried out, carried out but `unanswered` (its answer never sent), or `answered`. */
export type InterceptPhase = 'before' | 'unanswered' | 'answered';

/** Which API calls an interception counts: those of this method whose path (without query) contains this string or matches this pattern, as a fault's does; every call when not given. */
export interface CallMatch {
  method?: string;
  path?: string | RegExp;
}

/**
 * One armed interception of an emulator (its `interceptNth`): counts the API calls that match and hands
 * back the `n`th one's phase and action, once.
 */
export class NthCall {
  private armed: { left: number; phase: InterceptPhase; action: () => void; match: CallMatch } | undefined;

  arm(n: number, phase: InterceptPhase, action: () => void, match: CallMatch = {}): void {
    this.armed = { left: n, phase, action, match };
  }

  /** Counts this call when it matches; its phase and action when it is the `n`th. */
  take(method: string, path: string): { phase: InterceptPhase; action: () => void } | undefined {
    const armed = this.armed;
    if (armed === undefined) return undefined;
    const { method: wanted, path: where } = armed.match;
    if (wanted !== undefined && wanted.toUpperCase() !== method.toUpperCase()) return undefined;
    if (!pathMatches(where, path)) return undefined;
    armed.left -= 1;
    if (armed.left > 0) return undefined;
    this.armed = undefined;
    return armed;
  }
}

/**
 * What every vendor emulator is on the outside: one real HTTP server on 127.0.0.1 (a port of its own,
 * `url` once started), its fault plan (faults.ts), and a stop that drops kept-alive sockets. A vendor's
 * emulator extends it and answers in `handle`.
 */
export abstract class LoopbackEmulator {
  url = '';
  protected readonly plan = new FaultPlan();
  private readonly server = http.createServer((req, res) => void this.handle(req, res));

  async start(): Promise<this> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
    return this;
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  /** The next `n` matching requests answer `fault.status` (with Retry-After when given), in the vendor's format. */
  failNext(n: number, fault: Fault): void {
    this.plan.failNext(n, fault);
  }

  /** Delays every answer (or those whose path matches) by `ms`; 0 turns it off. The request is still carried out after the delay, as a server that answers too late does. */
  slow(ms: number, path?: string | RegExp): void {
    this.plan.slow(ms, path);
  }

  protected abstract handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void>;
}
