/**
 * Closed asset-days this process rolled lately, so that a closed day that keeps receiving
 * data (a replay of a past day, an archive import) is rebuilt a bounded number of times
 * instead of once per claim (issue 23). Each roll of a closed day that stored events it had
 * not applied is a full rebuild (`Roller.plan`'s closed-day count); a claim of the same
 * asset-day within its settle window (`windowMs`: three times that rebuild's duration,
 * between `minMs` and `maxMs`) is deferred to the window's end instead (see `runAssetJob`).
 * Under a steady feed an asset-day is then rebuilt at most once per window, at most a
 * quarter of the time. In memory only, at most `maxEntries` (oldest forgotten first): a
 * forgotten or never-seen asset-day, as in a new process, is rolled as before.
 */
export class ClosedDaySettle {
  private readonly rolled = new Map<string, { until: number; deferred: boolean }>();

  constructor(
    readonly opts: { minMs: number; maxMs: number; maxEntries: number } = { minMs: 1000, maxMs: 15_000, maxEntries: 10_000 },
  ) {}

  /** The settle window after a rebuild that took `tookMs`. */
  windowMs(tookMs: number): number {
    return Math.min(this.opts.maxMs, Math.max(this.opts.minMs, 3 * Math.max(0, tookMs)));
  }

  /** A rebuild of the asset-day ended at `at` after `tookMs`. */
  rebuilt(k: string, at: number, tookMs: number): void {
    this.rolled.delete(k);
    this.rolled.set(k, { until: at + this.windowMs(tookMs), deferred: false });
    while (this.rolled.size > this.opts.maxEntries) this.rolled.delete(this.rolled.keys().next().value!);
  }

  /**
   * When a claim of the asset-day at `now` should be rolled instead (the end of its window),
   * or null to roll it now. `hinted`: the claim came with a known late-data hint (data fresh
   * from the sink); a claim without one (a sweep's mark, a failed run's dates) is deferred
   * only once a hinted claim of the window was (its dates come back without their hint).
   */
  deferUntil(k: string, now: number, hinted: boolean): number | null {
    const e = this.rolled.get(k);
    if (e === undefined) return null;
    if (now >= e.until) {
      this.rolled.delete(k);
      return null;
    }
    if (!hinted && !e.deferred) return null;
    e.deferred = true;
    return e.until;
  }

  get size(): number {
    return this.rolled.size;
  }
}
