import { ColumnsOut, checkResolution, decimalNumber } from './bucket-columns.ts';
import { VALUES_PER_BUCKET, type BucketColumns } from './column-layout.ts';
import { compareCanonical } from './fixed-point.ts';
import type { Observation } from './observation.ts';

/**
 * The rollup's observed buckets without an object per bucket or per observation: a whole
 * day at 1 s is 86,400 buckets, and as `ExactBucket`s (five objects each, one more per
 * observation) their collection was about half of a dense day's rollup. Here the buckets
 * are `BucketColumns` (bucket-columns.ts: typed arrays of starts, counts and dictionary
 * indexes), built from observations handed over as their fields (`ObservationSink`), merged
 * to the coarser ladder levels on indexes (`mergeToColumns` of bucket-columns.ts, the reader's merge) and encoded as stored chunks
 * (`encodeColumns`). Each step gives exactly what its object form gives
 * (`aggregateObservations`, `mergeBuckets`, `encodeBuckets`), which the tests hold it to.
 */

/** Takes observations as their fields (no object per observation): `Observation`'s, in its order. */
export interface ObservationSink {
  observe(ts: number, bestBid: string | null, bestBidSize: string | null, bestAsk: string | null, bestAskSize: string | null, mid: string | null, spread: string | null): void;
}

/**
 * `BucketAggregator` into columns: observations in serving order (as fields, `observe`, or
 * objects, `push`), then `finish()` gives the observed buckets as `BucketColumns`, the same
 * buckets `BucketAggregator.finish()` gives (`bucketsOfColumns`). A bucket's values are its
 * texts while it is open (the OHLCs compared as decimals, as there), made dictionary indexes
 * when it closes: one lookup per value per bucket, most of them skipped since the value is
 * the one the bucket before had in that place.
 */
export class ColumnsAggregator implements ObservationSink {
  private readonly r: number;
  private lastTs = -Infinity;
  private out = new ColumnsOut(1024);
  private dict: string[] = [];
  private ids = new Map<string, number>();
  /** Per value place (0–21, as in BucketColumns.v): the text met there last and its index. */
  private readonly seenText: (string | null)[] = new Array<string | null>(VALUES_PER_BUCKET).fill(null);
  private readonly seenId = new Int32Array(VALUES_PER_BUCKET);

  // The open bucket: start, count, closes, and open/high/low/close of bid, ask, mid, spread (open null: none yet).
  private start = 0;
  private count = 0;
  private bid: string | null = null;
  private bidSize: string | null = null;
  private ask: string | null = null;
  private askSize: string | null = null;
  private mid: string | null = null;
  private spread: string | null = null;
  private bO: string | null = null;
  private bH = '';
  private bL = '';
  private bC = '';
  private aO: string | null = null;
  private aH = '';
  private aL = '';
  private aC = '';
  private mO: string | null = null;
  private mH = '';
  private mL = '';
  private mC = '';
  private sO: string | null = null;
  private sH = '';
  private sL = '';
  private sC = '';

  constructor(resolutionSeconds: number) {
    this.r = checkResolution(resolutionSeconds);
  }

  /** `observe` of an observation object. */
  push(o: Observation): void {
    this.observe(o.ts, o.best_bid, o.best_bid_size, o.best_ask, o.best_ask_size, o.mid_price, o.spread);
  }

  observe(ts: number, bid: string | null, bidSize: string | null, ask: string | null, askSize: string | null, mid: string | null, spread: string | null): void {
    if (!(ts >= this.lastTs)) throw new RangeError(`observations out of order: ${ts} after ${this.lastTs}`);
    this.lastTs = ts;
    if (this.count === 0 || ts >= this.start + this.r) {
      if (this.count > 0) this.close();
      this.start = Math.floor(ts / this.r) * this.r;
      this.count = 0;
      this.bO = this.aO = this.mO = this.sO = null;
    }
    this.count++;
    this.bid = bid;
    this.bidSize = bidSize;
    this.ask = ask;
    this.askSize = askSize;
    this.mid = mid;
    this.spread = spread;
    // OHLCs as OhlcAccumulator.add keeps them (bucketing.ts), one series at a time; a value
    // that is the close already (most events change a size, not the prices) changes nothing,
    // since the close lies between the low and the high.
    if (bid !== null) {
      if (this.bO === null) this.bO = this.bH = this.bL = this.bC = bid;
      else if (bid !== this.bC) {
        this.bC = bid;
        if (bid !== this.bH && compareCanonical(bid, this.bH) > 0) this.bH = bid;
        if (bid !== this.bL && compareCanonical(bid, this.bL) < 0) this.bL = bid;
      }
    }
    if (ask !== null) {
      if (this.aO === null) this.aO = this.aH = this.aL = this.aC = ask;
      else if (ask !== this.aC) {
        this.aC = ask;
        if (ask !== this.aH && compareCanonical(ask, this.aH) > 0) this.aH = ask;
        if (ask !== this.aL && compareCanonical(ask, this.aL) < 0) this.aL = ask;
      }
    }
    if (mid !== null) {
      if (this.mO === null) this.mO = this.mH = this.mL = this.mC = mid;
      else if (mid !== this.mC) {
        this.mC = mid;
        if (mid !== this.mH && compareCanonical(mid, this.mH) > 0) this.mH = mid;
        if (mid !== this.mL && compareCanonical(mid, this.mL) < 0) this.mL = mid;
      }
    }
    if (spread !== null) {
      if (this.sO === null) this.sO = this.sH = this.sL = this.sC = spread;
      else if (spread !== this.sC) {
        this.sC = spread;
        if (spread !== this.sH && compareCanonical(spread, this.sH) > 0) this.sH = spread;
        if (spread !== this.sL && compareCanonical(spread, this.sL) < 0) this.sL = spread;
      }
    }
  }

  /** The dictionary index of `s` met at value place `k` (−1: null). */
  private id(k: number, s: string | null): number {
    if (s === null) return -1;
    if (s === this.seenText[k]) return this.seenId[k]!;
    let i = this.ids.get(s);
    if (i === undefined) {
      i = this.dict.length;
      this.dict.push(s);
      this.ids.set(s, i);
    }
    this.seenText[k] = s;
    this.seenId[k] = i;
    return i;
  }

  private ohlc(at: number, o: string | null, h: string, l: string, c: string): void {
    const v = this.out.v;
    if (o === null) {
      v[at] = v[at + 1] = v[at + 2] = v[at + 3] = -1;
      return;
    }
    v[at] = this.id(at % VALUES_PER_BUCKET, o);
    v[at + 1] = this.id((at + 1) % VALUES_PER_BUCKET, h);
    v[at + 2] = this.id((at + 2) % VALUES_PER_BUCKET, l);
    v[at + 3] = this.id((at + 3) % VALUES_PER_BUCKET, c);
  }

  /** The open bucket, written to the columns. */
  private close(): void {
    const out = this.out;
    const j = out.add();
    out.ts[j] = this.start;
    out.count[j] = this.count;
    const o = j * VALUES_PER_BUCKET;
    const v = out.v;
    v[o] = this.id(0, this.bid);
    v[o + 1] = this.id(1, this.bidSize);
    v[o + 2] = this.id(2, this.ask);
    v[o + 3] = this.id(3, this.askSize);
    v[o + 4] = this.id(4, this.mid);
    v[o + 5] = this.id(5, this.spread);
    this.ohlc(o + 6, this.bO, this.bH, this.bL, this.bC);
    this.ohlc(o + 10, this.aO, this.aH, this.aL, this.aC);
    this.ohlc(o + 14, this.mO, this.mH, this.mL, this.mC);
    this.ohlc(o + 18, this.sO, this.sH, this.sL, this.sC);
  }

  /** Every observed bucket, the open one included; the aggregator is then empty. */
  finish(): BucketColumns {
    if (this.count > 0) this.close();
    this.count = 0;
    const dict = this.dict;
    const num = new Float64Array(dict.length);
    for (let k = 0; k < dict.length; k++) num[k] = decimalNumber(dict[k]!);
    const c = this.out.columns(dict, num);
    this.out = new ColumnsOut(1024);
    this.dict = [];
    this.ids = new Map();
    this.seenText.fill(null);
    return c;
  }
}


const DECIMAL = /^-?\d+(\.\d+)?$/;

/** Per dictionary, whether each entry may be stored (1), may not (2), or is not yet tested (0). */
const STORABLE = new WeakMap<readonly string[], Uint8Array>();

/** Scratch of encodeColumns: the chunk's index of each dictionary entry (−1: not in the chunk), and the bytes of its numbers. */
let localIds = new Int32Array(0);
let numbers = Buffer.allocUnsafe(1 << 16);

/**
 * `encodeBuckets` of buckets `from` to `to` (exclusive) of `c` (bucket-codec.ts): the same
 * text, the same checks. The chunk's dictionary holds the values in order of first use, as
 * there; the numbers are written as bytes.
 */
export function encodeColumns(c: BucketColumns, from = 0, to = c.n): string {
  const { dict, v, ts, count } = c;
  if (localIds.length < dict.length) localIds = new Int32Array(Math.max(dict.length, localIds.length * 2)).fill(-1);
  let storable = STORABLE.get(dict);
  if (storable === undefined || storable.length < dict.length) {
    const s = new Uint8Array(dict.length);
    if (storable !== undefined) s.set(storable);
    STORABLE.set(dict, (storable = s));
  }
  const used: number[] = [];
  let buf = numbers;
  let off = 0;
  const room = (n: number): void => {
    if (off + n > buf.length) {
      const b = Buffer.allocUnsafe(Math.max(buf.length * 2, off + n));
      buf.copy(b, 0, 0, off);
      numbers = buf = b;
    }
  };
  // A non-negative safe integer as its digits, a separator before it unless first; others (−1) as their text.
  const int = (x: number, sep: boolean): void => {
    room(24);
    if (sep) buf[off++] = 44; // ','
    // Most numbers are short: a second since the bucket before, a count, a chunk's dictionary index.
    if (x >= 0 && x < 100 && (x | 0) === x) {
      if (x < 10) buf[off++] = 48 + x;
      else {
        const q = (x / 10) | 0;
        buf[off++] = 48 + q;
        buf[off++] = 48 + x - q * 10;
      }
      return;
    }
    if (x === -1) {
      buf[off++] = 45; // '-'
      buf[off++] = 49; // '1'
      return;
    }
    if (!(x >= 0 && x <= Number.MAX_SAFE_INTEGER && Math.floor(x) === x)) {
      const t = String(x);
      room(t.length);
      off += buf.write(t, off, 'latin1');
      return;
    }
    let len = 1;
    for (let t = x; t >= 10; len++) t = Math.floor(t / 10);
    let p = off + len;
    off = p;
    do {
      const q = Math.floor(x / 10);
      buf[--p] = 48 + (x - q * 10);
      x = q;
    } while (x > 0);
  };
  const idx = (k: number): number => {
    if (k === -1) return -1;
    let i = localIds[k]!;
    if (i === -1) {
      let ok = storable[k]!;
      if (ok === 0) storable[k] = ok = DECIMAL.test(dict[k]!) ? 1 : 2;
      if (ok === 2) throw new RangeError(`not a decimal: ${JSON.stringify(dict[k])}`);
      i = used.length;
      used.push(k);
      localIds[k] = i;
    }
    return i;
  };
  try {
    let prev = 0;
    for (let j = from; j < to; j++) {
      const t = ts[j]!;
      const q = count[j]!;
      if (q < 1 || t % 1000 !== 0 || t <= prev) {
        throw new RangeError(`bucket ${t} (quote_count ${q}) cannot be stored: observed buckets on whole seconds in time order only`);
      }
      const o = j * VALUES_PER_BUCKET;
      int((t - prev) / 1000, j > from);
      int(q, true);
      for (let k = 0; k < 6; k++) int(idx(v[o + k]!), true);
      prev = t;
      if (q > 1) {
        for (let at = o + 6; at < o + VALUES_PER_BUCKET; at += 4) {
          if (v[at] === -1) int(-1, true);
          else {
            int(idx(v[at]!), true);
            int(idx(v[at + 1]!), true);
            int(idx(v[at + 2]!), true);
            int(idx(v[at + 3]!), true);
          }
        }
      }
    }
    let head = '';
    for (let i = 0; i < used.length; i++) head += i === 0 ? dict[used[i]!]! : `,${dict[used[i]!]!}`;
    return `${head}|${buf.toString('latin1', 0, off)}`;
  } finally {
    for (const k of used) localIds[k] = -1;
  }
}

/** The buckets of `c` by the UTC hour their start lies in, hours ascending: each hour's start and index range. */
export function hourRanges(c: BucketColumns, hourMs: number): Array<{ hour: number; from: number; to: number }> {
  const out: Array<{ hour: number; from: number; to: number }> = [];
  const { ts } = c;
  let j = 0;
  while (j < c.n) {
    const hour = Math.floor(ts[j]! / hourMs) * hourMs;
    const from = j;
    do j++;
    while (j < c.n && ts[j]! >= hour && ts[j]! < hour + hourMs);
    out.push({ hour, from, to: j });
  }
  return out;
}
