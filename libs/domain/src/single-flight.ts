/**
 * One call per key at a time: callers that ask for a key while its call is running share
 * that call's promise (result or rejection) instead of starting their own. A cache miss
 * asked by many requests at once (a key's 200 connections after its cache entry expired)
 * then costs the backing store one query, not 200 queued in front of everyone else's.
 * Nothing is kept once the call settles: caching the result is the caller's business.
 */
export class SingleFlight<K, V> {
  private readonly running = new Map<K, Promise<V>>();

  run(key: K, fn: () => Promise<V>): Promise<V> {
    const pending = this.running.get(key);
    if (pending !== undefined) return pending;
    // Started on the next microtask, so that a synchronous throw of fn is a rejection too
    // and the entry is in the map before fn can settle.
    const p = Promise.resolve()
      .then(fn)
      .finally(() => this.running.delete(key));
    this.running.set(key, p);
    return p;
  }

  /** Calls running now. */
  get size(): number {
    return this.running.size;
  }
}
