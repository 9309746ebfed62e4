import type { Logger } from '@booktape/config';
import { asVenue } from '@booktape/venues';
import { VENUE_STORAGE, partitionsWithImports, supersedeImported, type ClickHouse } from '@booktape/storage';

/** Records of the venue may have been imported (docs/rules/imports.md): only then is there a copy to supersede. */
const importable = (venue: string): boolean => {
  const v = asVenue(venue);
  return v !== null && VENUE_STORAGE[v].imports;
};

export interface StoredPart {
  venue: string;
  market: string;
  asset: string;
  date: string;
}

/** How long a partition found without imported records is not asked again. */
export const QUIET_MS = 60_000;
const MAX_REMEMBERED = 50_000;

/**
 * Capture after import at the sink (docs/rules/imports.md#which-copy-wins): before the rollup
 * hears of partitions just stored, the imported copies of their captured events are removed.
 * Finding whether a partition holds imported records reads its `source` column, and the sink
 * stores the same busy partitions batch after batch, almost never with imports: a partition
 * found without them is not asked again for QUIET_MS. An import landing meanwhile is covered
 * twice over: the import itself skips events already captured, and the rollup supersedes
 * before it reads a day (so raw reads may show both copies for at most that long).
 */
export class SupersedeGate {
  private readonly quietUntil = new Map<string, number>();

  constructor(
    private readonly ch: ClickHouse,
    private readonly log: Logger,
    private readonly now: () => number = Date.now,
  ) {}

  /** Removes imported copies among `parts`; never throws (a failure is logged: the rollup does it again). Returns how many were removed. */
  async run(parts: readonly StoredPart[]): Promise<number> {
    const t = this.now();
    const key = (p: { market: string; asset: string; date: string }) => `${p.market}|${p.asset}|${p.date}`;
    const ask = parts.filter((p) => importable(p.venue) && (this.quietUntil.get(key(p)) ?? 0) <= t);
    if (ask.length === 0) return 0;
    try {
      const withImports = await partitionsWithImports(this.ch, ask);
      const busy = new Set(withImports.map(key));
      if (this.quietUntil.size > MAX_REMEMBERED) for (const [k, until] of this.quietUntil) if (until <= t) this.quietUntil.delete(k);
      for (const p of ask) if (!busy.has(key(p))) this.quietUntil.set(key(p), t + QUIET_MS);
      let removed = 0;
      for (const p of withImports) removed += await supersedeImported(this.ch, p);
      return removed;
    } catch (e) {
      this.log.warn({ err: (e as Error).message }, 'replacing imported copies of captured events failed; the rollup will');
      return 0;
    }
  }
}
