import { SingleFlight } from '@booktape/domain';

/**
 * Values read of an asset's summaries, reused while the asset's summaries version (the
 * counter the rollup worker bumps around every write) stands still. A read without a version
 * is never kept. At most `max` entries, the oldest first out. Concurrent misses of one entry
 * at one version share one load (a key's many connections asking at once cost the store one
 * read, not one each).
 *
 * How long an entry holds depends on the state its version was read in:
 * - at rest (`RollupState.atRest`: nobody held the asset's lock or claims, read atomically
 *   with the version): while the version stands still. A writer holds the lock from before
 *   its first bump to after its last, so any write the load may have missed bumps the
 *   version after that read, and the entry is never asked for again once one lands (even
 *   where the writer dies before its last bump). `restTtlMs` bounds it only against a
 *   writer that both lost its lock while alive and died between its write and its last bump.
 * - not at rest: at most `ttlMs`, and only for readers that are not at rest either. A writer
 *   may have bumped already and written after the load; had it died before its last bump,
 *   the version would stand still over a stale entry. A reader at rest then reads again.
 */
export class VersionedCache<T> {
  private readonly entries = new Map<string, { version: string; at: number; value: T; atRest: boolean }>();
  private readonly loads = new SingleFlight<string, T>();

  constructor(
    private readonly ttlMs: number,
    private readonly max: number,
    private readonly restTtlMs = ttlMs,
  ) {}

  async get(id: string, version: string | null, load: () => Promise<T>, atRest = false): Promise<T> {
    if (version === null) return load();
    const hit = this.entries.get(id);
    if (hit !== undefined && hit.version === version && (hit.atRest || !atRest) && Date.now() - hit.at < (hit.atRest ? this.restTtlMs : this.ttlMs)) return hit.value;
    // Loads started in another state are not shared: an entry's state is its own load's.
    const value = await this.loads.run(`${version}|${atRest ? 'r' : 'w'}|${id}`, load);
    this.entries.delete(id);
    this.entries.set(id, { version, at: Date.now(), value, atRest });
    if (this.entries.size > this.max) this.entries.delete(this.entries.keys().next().value!);
    return value;
  }
}
