import type http from 'node:http';

/** An injected failure: the next matching requests answer `status` instead of being carried out. */
export interface Fault {
  status: number;
  /** Seconds (or an HTTP date) for a `Retry-After` header. */
  retryAfter?: number | string;
  /** Only requests whose path (without query) contains this string or matches this pattern. */
  path?: string | RegExp;
  /** Overrides the vendor-format body. */
  body?: unknown;
  /** Only requests carrying this bearer token (emulators that pass theirs to `take`): one connection's calls among others'. */
  token?: string;
}

/** The faults and delay an emulator has been told to inject, shared by every emulator. */
export class FaultPlan {
  private readonly faults: Array<Fault & { remaining: number }> = [];
  private delay: { ms: number; path?: string | RegExp } = { ms: 0 };

  /** The next `n` matching requests answer `fault.status` (with Retry-After when given). */
  failNext(n: number, fault: Fault): void {
    this.faults.push({ ...fault, remaining: n });
  }

  /** Delays every answer (or those whose path matches) by `ms`; 0 turns it off. The request is still
   * carried out after the delay, as a server that answers too late does. */
  slow(ms: number, path?: string | RegExp): void {
    this.delay = path === undefined ? { ms } : { ms, path };
  }

  /** Waits as long as the delay says for this path. */
  async wait(path: string): Promise<void> {
    if (this.delay.ms > 0 && pathMatches(this.delay.path, path)) await new Promise((resolve) => setTimeout(resolve, this.delay.ms));
  }

  /** The fault this request meets, if any (one use of it is spent). */
  take(path: string, token?: string): Fault | undefined {
    const index = this.faults.findIndex((f) => pathMatches(f.path, path) && (f.token === undefined || f.token === token));
    const fault = this.faults[index];
    if (!fault) return undefined;
    fault.remaining -= 1;
    if (fault.remaining <= 0) this.faults.splice(index, 1);
    return fault;
  }
}

/** Whether `path` (without query) passes a fault's (or an interception's) path filter: contains the string, matches the pattern, or none is given. */
export function pathMatches(filter: string | RegExp | undefined, path: string): boolean {
  return filter === undefined || (typeof filter === 'string' ? path.includes(filter) : filter.test(path));
}

export function readBody(req: http.IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}
