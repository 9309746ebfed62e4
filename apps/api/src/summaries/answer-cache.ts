/**
 * Settled summary answers kept as the bytes sent, under their stamp (SummaryReader.stamp).
 *
 * A backtest asks for the same finished days again and again, and a whole day at R=1 is
 * 86,400 buckets and about 37 MB of JSON: filling, writing and tagging it again is a few
 * hundred ms of one core each time, taken from every other request of the process
 * (issue 27). A settled answer changes only when a rollup writes its asset again, and that
 * moves the stamp; an entry is used only while the stamp it was made under is the current
 * one, so an answer from here is byte for byte the answer computed now.
 *
 * Bounded by the bytes held (least recently used out first); an answer larger than a
 * quarter of the bound is not kept.
 */
export interface SettledAnswer {
  readonly stamp: string;
  readonly parts: readonly Buffer[];
  readonly bytes: number;
}

export class SettledAnswers {
  private readonly map = new Map<string, SettledAnswer>();
  private held = 0;

  constructor(private readonly maxBytes: number) {}

  /** Whether `id` has an entry (under any stamp): without one there is no stamp worth reading. */
  has(id: string): boolean {
    return this.map.has(id);
  }

  /** The entry of `id` made under `stamp`; an entry under another stamp is dropped. */
  get(id: string, stamp: string): SettledAnswer | undefined {
    const e = this.map.get(id);
    if (e === undefined) return undefined;
    this.map.delete(id);
    if (e.stamp !== stamp) {
      this.held -= e.bytes;
      return undefined;
    }
    this.map.set(id, e);
    return e;
  }

  set(id: string, stamp: string, parts: readonly Buffer[]): void {
    let bytes = 0;
    for (const b of parts) bytes += b.length;
    const old = this.map.get(id);
    if (old !== undefined) {
      this.map.delete(id);
      this.held -= old.bytes;
    }
    if (bytes > this.maxBytes / 4) return;
    this.map.set(id, { stamp, parts, bytes });
    this.held += bytes;
    for (const [k, e] of this.map) {
      if (this.held <= this.maxBytes) break;
      this.map.delete(k);
      this.held -= e.bytes;
    }
  }

  /** Bytes held. */
  get size(): number {
    return this.held;
  }
}
