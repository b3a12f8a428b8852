import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { FaultPlan, type Fault } from './faults.js';

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
