import type { HttpClient } from './client.js';

/**
 * An HTTP client per target (a forwarding destination, a webhook endpoint), so each has connections of
 * its own: sockets are pooled per origin, and two targets on one host (two hooks of one automation
 * platform) must not share a pool that one of them, hanging, fills. A client idle for a minute is closed.
 */
export class ClientsByTarget {
  private readonly clients = new Map<number, { client: HttpClient; users: number; idle?: NodeJS.Timeout }>();

  constructor(private readonly make: () => HttpClient) {}

  acquire(targetId: number): HttpClient {
    let entry = this.clients.get(targetId);
    if (!entry) {
      entry = { client: this.make(), users: 0 };
      this.clients.set(targetId, entry);
    }
    clearTimeout(entry.idle);
    entry.users += 1;
    return entry.client;
  }

  release(targetId: number): void {
    const entry = this.clients.get(targetId);
    if (!entry) return;
    entry.users -= 1;
    if (entry.users > 0) return;
    entry.idle = setTimeout(() => {
      entry.client.close();
      this.clients.delete(targetId);
    }, CLIENT_IDLE_MS);
    entry.idle.unref();
  }
}

const CLIENT_IDLE_MS = 60_000;
