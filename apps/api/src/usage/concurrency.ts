/**
 * Requests in progress per API key, counted in this API process: a key at its plan's cap
 * gets 429 `too_many_concurrent_requests` until one of its requests ends.
 *
 * In-process rather than in Redis, on purpose. What the cap protects is per process: its
 * event loop, its memory and its pool of stream sessions (libs/storage stream.ts), all of
 * which one key with many connections could otherwise take. A Redis counter would add a
 * round trip to every request, leave counts behind for requests of a process that died
 * (needing leases), and fail exactly when the process is overloaded and Redis answers
 * late. The price: behind a load balancer with N API processes a key may have up to N ×
 * its cap in progress in total, which each process still bounds for itself.
 */
export class ConcurrencyLimiter {
  private readonly inProgress = new Map<string, number>();

  /**
   * Takes a slot of `key` when fewer than `cap` are taken (null: no cap), and returns the
   * function that gives it back (idempotent); null when the key is at its cap.
   */
  tryAcquire(key: string, cap: number | null): (() => void) | null {
    const n = this.inProgress.get(key) ?? 0;
    if (cap !== null && n >= cap) return null;
    this.inProgress.set(key, n + 1);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const left = (this.inProgress.get(key) ?? 1) - 1;
      if (left <= 0) this.inProgress.delete(key);
      else this.inProgress.set(key, left);
    };
  }

  /** Requests of `key` in progress now. */
  count(key: string): number {
    return this.inProgress.get(key) ?? 0;
  }

  /** Keys with a request in progress (what the map holds: bounded by the requests in progress). */
  get keys(): number {
    return this.inProgress.size;
  }
}
