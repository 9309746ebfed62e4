/**
 * Deterministic pseudo-random numbers (mulberry32). Every market owns its own stream, derived
 * from the simulator seed and the market's identity, so a market's sequence of events is the
 * same whatever the interleaving with other markets or the wall-clock timing.
 */
const HEX_PAIRS: string[] = Array.from({ length: 256 }, (_, i) => i.toString(16).padStart(2, '0'));

export class Rng {
  private state: number;

  constructor(seed: number) {
    this.state = seed >>> 0;
  }

  /** Uniform in [0, 1). */
  next(): number {
    return this.u32() / 4294967296;
  }

  u32(): number {
    let t = (this.state = (this.state + 0x6d2b79f5) | 0);
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return (t ^ (t >>> 14)) >>> 0;
  }

  /** Integer in [0, n). */
  int(n: number): number {
    return Math.floor(this.next() * n);
  }

  /** Lower-case hex string of `chars` characters (hot: every event carries a hash). */
  hex(chars: number): string {
    let out = '';
    for (let i = 0; i < chars; i += 8) {
      const x = this.u32();
      out += (HEX_PAIRS[x >>> 24] as string) + HEX_PAIRS[(x >>> 16) & 255] + HEX_PAIRS[(x >>> 8) & 255] + HEX_PAIRS[x & 255];
    }
    return out.length === chars ? out : out.slice(0, chars);
  }

  /** Decimal digit string of `digits` characters without a leading zero. */
  digits(digits: number): string {
    let out = String(1 + this.int(9));
    while (out.length < digits) out += this.u32().toString().padStart(10, '0').slice(-9);
    return out.slice(0, digits);
  }
}

/** Mixes a seed with labels into a 32-bit seed (xmur3-style string hash). */
export function deriveSeed(seed: number, ...parts: Array<string | number>): number {
  const s = `${seed}|${parts.join('|')}`;
  let h = 1779033703 ^ s.length;
  for (let i = 0; i < s.length; i++) {
    h = Math.imul(h ^ s.charCodeAt(i), 3432918353);
    h = (h << 13) | (h >>> 19);
  }
  h = Math.imul(h ^ (h >>> 16), 2246822507);
  h = Math.imul(h ^ (h >>> 13), 3266489909);
  return (h ^= h >>> 16) >>> 0;
}
