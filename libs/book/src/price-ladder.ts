/**
 * One side of a book as a dense ladder: prices live in [0, 1] on a fixed tick, so a level is
 * an index into an array of `10^scale + 1` slots and the best level is the highest occupied
 * index. Occupancy is a two-level bitmap (32 slots per word, 32 words per summary word), so
 * finding the next best level after the best one is removed takes a couple of
 * count-leading-zeros steps instead of a scan, even on a sparse 0.0001 ladder.
 *
 * Both venues use only "best = highest index": a bid ladder is indexed by price, and the ask
 * side by its complement 1 − price (exchange A asks are stored mirrored, exchange B's NO bids
 * are exactly that), so the best ask is always `1 − best index`.
 */
export class PriceLadder {
  /** Size text of the level at each index; undefined = no level. */
  readonly sizes: (string | undefined)[];
  /** Highest occupied index, -1 when the side is empty. */
  best = -1;
  count = 0;
  private readonly words: Uint32Array;
  private readonly summary: Uint32Array;

  constructor(readonly length: number) {
    this.sizes = new Array<string | undefined>(length).fill(undefined);
    this.words = new Uint32Array((length + 31) >>> 5);
    this.summary = new Uint32Array((this.words.length + 31) >>> 5);
  }

  /** Sets the level at `i` to a positive size. */
  set(i: number, size: string): void {
    if (this.sizes[i] === undefined) {
      const w = i >>> 5;
      if (this.words[w] === 0) this.summary[w >>> 5]! |= 1 << (w & 31);
      this.words[w]! |= 1 << (i & 31);
      this.count++;
      if (i > this.best) this.best = i;
    }
    this.sizes[i] = size;
  }

  delete(i: number): void {
    if (this.sizes[i] === undefined) return;
    this.sizes[i] = undefined;
    const w = i >>> 5;
    const word = this.words[w]! & ~(1 << (i & 31));
    this.words[w] = word;
    if (word === 0) this.summary[w >>> 5]! &= ~(1 << (w & 31));
    this.count--;
    if (i === this.best) this.best = this.below(i);
  }

  clear(): void {
    for (let i = this.best; i >= 0; i = this.below(i)) this.sizes[i] = undefined;
    this.words.fill(0);
    this.summary.fill(0);
    this.best = -1;
    this.count = 0;
  }

  /** Highest occupied index below `i`, or -1. */
  below(i: number): number {
    if (i <= 0) return -1;
    const j = i - 1;
    let w = j >>> 5;
    const bits = this.words[w]! & (0xffffffff >>> (31 - (j & 31)));
    if (bits !== 0) return (w << 5) + 31 - Math.clz32(bits);
    if (w === 0) return -1;
    const sw = w - 1;
    let s = sw >>> 5;
    let sbits = this.summary[s]! & (0xffffffff >>> (31 - (sw & 31)));
    while (sbits === 0) {
      if (s === 0) return -1;
      s--;
      sbits = this.summary[s]!;
    }
    w = (s << 5) + 31 - Math.clz32(sbits);
    return (w << 5) + 31 - Math.clz32(this.words[w]!);
  }
}
