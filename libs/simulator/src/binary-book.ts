import type { Rng } from './prng.ts';

/**
 * The simulated book of one binary market, venue-neutral: two bid ladders, YES and NO.
 * A NO bid at p is a YES ask at 1 − p (how both venues relate the outcomes), so exchange A's
 * two token books and exchange B's yes/no bid lists are views of this one structure.
 *
 * Prices are integer thousandths of a dollar, sizes integer hundredths, so every value the
 * simulator writes is an exact decimal. The book never crosses: best YES + best NO < 1000.
 */

export const YES = 0;
export const NO = 1;
export type SideIndex = typeof YES | typeof NO;

export interface LevelChange {
  side: SideIndex;
  price: number;
  oldSize: number;
  newSize: number; // 0 removes the level
}

export interface BookParams {
  /** Price tick in thousandths (10 = $0.01, 1 = $0.001). */
  tick: number;
  /** Fractional sizes (hundredths) allowed; otherwise whole contracts. */
  fractional: boolean;
  /** Typical number of levels per side the random walk hovers around. */
  targetLevels: number;
}

export class Ladder {
  /** Prices with a level, ascending (best last). */
  readonly prices: number[] = [];
  readonly sizes = new Float64Array(1001);

  best(): number {
    return this.prices.length === 0 ? 0 : (this.prices[this.prices.length - 1] as number);
  }

  set(price: number, size: number): void {
    const had = this.sizes[price] !== 0;
    if (size <= 0) {
      if (had) {
        this.sizes[price] = 0;
        const i = this.prices.indexOf(price);
        if (i >= 0) this.prices.splice(i, 1);
      }
      return;
    }
    this.sizes[price] = size;
    if (!had) {
      // Levels cluster near the top, so scan from the end.
      let i = this.prices.length;
      while (i > 0 && (this.prices[i - 1] as number) > price) i--;
      this.prices.splice(i, 0, price);
    }
  }

  size(price: number): number {
    return this.sizes[price] as number;
  }
}

export class BinaryBook {
  readonly sides: [Ladder, Ladder] = [new Ladder(), new Ladder()];

  constructor(
    readonly params: BookParams,
    rng: Rng,
  ) {
    const { tick } = params;
    // Mid somewhere between 0.12 and 0.88, on a whole cent.
    const mid = 10 * (12 + rng.int(77));
    const yesTop = mid - tick * (1 + rng.int(2));
    const noTop = 1000 - mid - tick * rng.int(2);
    this.seedLadder(this.sides[YES], yesTop, rng);
    this.seedLadder(this.sides[NO], noTop, rng);
  }

  private seedLadder(ladder: Ladder, top: number, rng: Rng): void {
    const { tick, targetLevels } = this.params;
    let p = top;
    const n = Math.max(1, targetLevels - 2 + rng.int(5));
    for (let i = 0; i < n && p >= tick; i++) {
      ladder.set(p, this.randomSize(rng));
      p -= tick * (1 + rng.int(3));
    }
  }

  /** Highest price a new level on `side` may take without crossing the other side. */
  maxPrice(side: SideIndex): number {
    const other = this.sides[side === YES ? NO : YES];
    const { tick } = this.params;
    const otherBest = other.best();
    return otherBest === 0 ? 1000 - tick : 1000 - otherBest - tick;
  }

  randomSize(rng: Rng): number {
    // Log-uniform between 1 and 2000 contracts: many small levels, a few large ones.
    let h = Math.floor(Math.exp(rng.next() * 7.6)) * 100;
    if (this.params.fractional && rng.next() < 0.4) h += 1 + rng.int(99);
    return h;
  }

  private snap(h: number): number {
    const step = this.params.fractional ? 1 : 100;
    return Math.max(step, Math.round(h / step) * step);
  }

  /** One random level change, applied to the book and returned. */
  step(rng: Rng): LevelChange {
    let side = rng.int(2) as SideIndex;
    let ladder = this.sides[side];
    let maxP = this.maxPrice(side);
    const { tick, targetLevels } = this.params;
    if (ladder.prices.length === 0 && maxP < tick) {
      // This side is empty and the other reaches the ceiling: thin the other side instead.
      side = (side === YES ? NO : YES) as SideIndex;
      ladder = this.sides[side];
      maxP = this.maxPrice(side);
    }
    const n = ladder.prices.length;
    const addP = n === 0 ? 1 : n < targetLevels / 2 ? 0.5 : n > targetLevels * 1.5 ? 0.1 : 0.25;
    const removeP = n <= 1 ? 0.03 : n > targetLevels * 1.5 ? 0.4 : 0.22;
    const r = rng.next();

    if (r < addP && maxP >= tick) {
      const best = ladder.best();
      let p: number;
      if (n === 0) p = maxP - tick * rng.int(3);
      else if (rng.next() < 0.3) p = best + tick * (1 + rng.int(2));
      else p = best - tick * (1 + rng.int(10));
      if (p > maxP) p = maxP;
      if (p < tick) p = tick;
      const oldSize = ladder.size(p);
      const newSize = oldSize === 0 ? this.randomSize(rng) : this.resize(oldSize, rng);
      ladder.set(p, newSize);
      return { side, price: p, oldSize, newSize };
    }
    if (n === 0) {
      // Nothing to remove or modify and no room to add (cannot happen with maxP >= tick).
      const p = tick;
      const newSize = this.randomSize(rng);
      ladder.set(p, newSize);
      return { side, price: p, oldSize: 0, newSize };
    }
    // Changes cluster at the top of the book.
    const u = rng.next();
    const idx = n - 1 - Math.floor(n * u * u);
    const p = ladder.prices[idx] as number;
    const oldSize = ladder.size(p);
    const newSize = r < addP + removeP ? 0 : this.resize(oldSize, rng);
    ladder.set(p, newSize);
    return { side, price: p, oldSize, newSize };
  }

  private resize(old: number, rng: Rng): number {
    let s = this.snap(old * (0.3 + 1.4 * rng.next()));
    if (s === old) s = old + (this.params.fractional ? 1 : 100);
    return s;
  }

  /** YES best bid (0 = empty) and YES best ask (1000 = empty) in thousandths. */
  yesTop(): [number, number] {
    const noBest = this.sides[NO].best();
    return [this.sides[YES].best(), noBest === 0 ? 1000 : 1000 - noBest];
  }
}
