import { SingleFlight } from '@booktape/domain';

/**
 * Values read of an asset's summaries, reused while the asset's summaries version (the
 * counter the rollup worker bumps around every write) stands still, for at most `ttlMs` (a
 * worker that died between its write and its bump cannot keep a stale entry for long). A
 * read without a version is never kept. At most `max` entries, the oldest first out.
 * Concurrent misses of one entry at one version share one load (a key's many connections
 * asking at once cost the store one read, not one each).
 */
export class VersionedCache<T> {
  private readonly entries = new Map<string, { version: string; at: number; value: T }>();
  private readonly loads = new SingleFlight<string, T>();

  constructor(
    private readonly ttlMs: number,
    private readonly max: number,
  ) {}

  async get(id: string, version: string | null, load: () => Promise<T>): Promise<T> {
    const hit = this.entries.get(id);
    if (version !== null && hit !== undefined && hit.version === version && Date.now() - hit.at < this.ttlMs) return hit.value;
    if (version === null) return load();
    const value = await this.loads.run(`${version}|${id}`, load);
    this.entries.delete(id);
    this.entries.set(id, { version, at: Date.now(), value });
    if (this.entries.size > this.max) this.entries.delete(this.entries.keys().next().value!);
    return value;
  }
}
