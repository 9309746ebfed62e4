/**
 * A short-lived in-process cache of answers (availability, market lists). Those answers
 * change at most when a market gains a new UTC date, so reusing one for a second costs
 * nothing a client could notice and keeps hot small queries off ClickHouse. Concurrent
 * identical requests share one pending query. A failed query is not kept.
 */
export class ResultCache {
  private readonly entries = new Map<string, { at: number; value: Promise<unknown> }>();

  constructor(
    private readonly ttlMs: number,
    private readonly maxEntries = 10_000,
  ) {}

  get<T>(key: string, load: () => Promise<T>, now = Date.now()): Promise<T> {
    if (this.ttlMs <= 0) return load();
    const hit = this.entries.get(key);
    if (hit && now - hit.at < this.ttlMs) return hit.value as Promise<T>;
    if (this.entries.size >= this.maxEntries) this.evict(now);
    const value = load();
    this.entries.set(key, { at: now, value });
    value.catch(() => {
      if (this.entries.get(key)?.value === value) this.entries.delete(key);
    });
    return value;
  }

  private evict(now: number): void {
    for (const [k, e] of this.entries) if (now - e.at >= this.ttlMs) this.entries.delete(k);
    // Still full of fresh entries: start over rather than grow without bound.
    if (this.entries.size >= this.maxEntries) this.entries.clear();
  }
}

/** A small map whose entries expire: remembered positions, bounded in size and age. */
export class TtlMap<V> {
  private readonly entries = new Map<string, { at: number; value: V }>();

  constructor(
    private readonly ttlMs: number,
    private readonly maxEntries = 10_000,
  ) {}

  get(key: string, now = Date.now()): V | undefined {
    const e = this.entries.get(key);
    if (!e) return undefined;
    if (now - e.at >= this.ttlMs) {
      this.entries.delete(key);
      return undefined;
    }
    return e.value;
  }

  delete(key: string): void {
    this.entries.delete(key);
  }

  set(key: string, value: V, now = Date.now()): void {
    if (this.ttlMs <= 0) return;
    if (this.entries.size >= this.maxEntries) {
      // Oldest first: Map keeps insertion order.
      const oldest = this.entries.keys().next();
      if (!oldest.done) this.entries.delete(oldest.value);
    }
    this.entries.delete(key);
    this.entries.set(key, { at: now, value });
  }
}
