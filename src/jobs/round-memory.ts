/**
 * The request bodies a worker process's sync rounds hold at once, at most `limit` bytes across its
 * drains: a round waits for room before it loads its syncs (bodies reach 1 MB, a round takes up to a
 * thousand, and a process runs a drain per connection). A round bigger than the limit still runs, alone.
 */
export class RoundMemory {
  private used = 0;
  private readonly waiting: Array<{ bytes: number; admit: () => void }> = [];

  constructor(private readonly limit: number) {}

  /** Resolves once `bytes` fit; pair with {@link release}. */
  acquire(bytes: number): Promise<void> {
    if (this.waiting.length === 0 && this.fits(bytes)) {
      this.used += bytes;
      return Promise.resolve();
    }
    return new Promise((admit) => this.waiting.push({ bytes, admit }));
  }

  release(bytes: number): void {
    this.used -= bytes;
    // First come, first served: a big round is not passed over by small ones forever.
    while (this.waiting.length > 0 && this.fits(this.waiting[0]!.bytes)) {
      const next = this.waiting.shift()!;
      this.used += next.bytes;
      next.admit();
    }
  }

  private fits(bytes: number): boolean {
    return this.used === 0 || this.used + bytes <= this.limit;
  }
}
