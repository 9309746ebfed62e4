import type { ExactBucket, Ohlc } from './bucketing.ts';
import { MAX_RESOLUTION_SECONDS, MIN_RESOLUTION_SECONDS } from './bucketing.ts';
import { StoredBuckets } from './bucket-codec.ts';
import { compareCanonical } from './fixed-point.ts';

/**
 * Stored observed buckets as columns: what the summary reader keeps of a day and merges to a
 * coarser resolution without making an object per stored bucket. A whole day at 1 s is
 * 86,400 buckets; as objects (`decodeBuckets`) each is five allocations, and merging them to
 * R=7 compared decimal texts character by character. Here a value is an index into the
 * day's dictionary of distinct decimal texts, and a decimal is compared by its double first
 * (see `BucketColumns.num`), by its text only where the doubles do not decide.
 */
export interface BucketColumns {
  readonly n: number;
  /** Bucket starts, Unix ms. */
  readonly ts: Float64Array;
  readonly count: Float64Array;
  /**
   * VALUES_PER_BUCKET dictionary indexes per bucket (−1: null): the six closes (best_bid,
   * best_bid_size, best_ask, best_ask_size, mid_price, spread), then open, high, low, close of
   * the bid, ask, mid and spread OHLCs (an OHLC that is null: open −1).
   */
  readonly v: Int32Array;
  /** Distinct value texts. */
  readonly dict: readonly string[];
  /**
   * Per dictionary entry, its value as a double where the text is a canonical decimal, else
   * NaN. A correctly rounded parse never reverses an order, so where two doubles differ the
   * decimals differ the same way; where they are equal (or NaN) the texts are compared.
   */
  readonly num: Float64Array;
}

export const VALUES_PER_BUCKET = 22;
const CANONICAL = /^-?(?:0|[1-9]\d*)(?:\.\d*[1-9])?$/;

function numOf(text: string): number {
  return CANONICAL.test(text) && text !== '-0' ? Number(text) : NaN;
}

/**
 * The buckets of stored chunk texts (bucket-codec.ts), one after the other, as columns: the
 * same buckets `decodeBuckets` gives for each text in turn, with the same checks (RangeError
 * on anything malformed).
 */
export function decodeBucketColumns(texts: readonly string[]): BucketColumns {
  const dict: string[] = [];
  const ids = new Map<string, number>();
  let cap = 0;
  for (const t of texts) cap += t.length >> 4;
  cap = Math.max(16, cap);
  let ts = new Float64Array(cap);
  let count = new Float64Array(cap);
  let v = new Int32Array(cap * VALUES_PER_BUCKET);
  let n = 0;
  for (const text of texts) {
    const r = new StoredBuckets(text);
    const local = r.dict;
    const map: number[] = new Array<number>(local.length);
    for (let k = 0; k < local.length; k++) {
      const s = local[k]!;
      let id = ids.get(s);
      if (id === undefined) {
        id = dict.length;
        dict.push(s);
        ids.set(s, id);
      }
      map[k] = id;
    }
    const a = r.nums;
    const val = (k: number): number => (r.index(k) === -1 ? -1 : map[k]!);
    while (r.next()) {
      if (n === cap) {
        cap *= 2;
        const ts2 = new Float64Array(cap);
        ts2.set(ts);
        ts = ts2;
        const c2 = new Float64Array(cap);
        c2.set(count);
        count = c2;
        const v2 = new Int32Array(cap * VALUES_PER_BUCKET);
        v2.set(v);
        v = v2;
      }
      const c = r.count;
      ts[n] = r.ts;
      count[n] = c;
      const o = n * VALUES_PER_BUCKET;
      let i = r.at;
      const bid = val(a[i]!);
      const ask = val(a[i + 2]!);
      const mid = val(a[i + 4]!);
      const spread = val(a[i + 5]!);
      v[o] = bid;
      v[o + 1] = val(a[i + 1]!);
      v[o + 2] = ask;
      v[o + 3] = val(a[i + 3]!);
      v[o + 4] = mid;
      v[o + 5] = spread;
      i += 6;
      if (c > 1) {
        for (let s = 0; s < 4; s++) {
          const at = o + 6 + s * 4;
          const first = a[i++]!;
          if (first === -1) {
            v[at] = v[at + 1] = v[at + 2] = v[at + 3] = -1;
            continue;
          }
          v[at] = val(first);
          v[at + 1] = val(a[i]!);
          v[at + 2] = val(a[i + 1]!);
          v[at + 3] = val(a[i + 2]!);
          i += 3;
        }
        r.at = i;
        r.ohlcEnd();
      } else {
        r.at = i;
        // One observation: each OHLC flat at it (null where the value is).
        v[o + 6] = v[o + 7] = v[o + 8] = v[o + 9] = bid;
        v[o + 10] = v[o + 11] = v[o + 12] = v[o + 13] = ask;
        v[o + 14] = v[o + 15] = v[o + 16] = v[o + 17] = mid;
        v[o + 18] = v[o + 19] = v[o + 20] = v[o + 21] = spread;
      }
      n++;
    }
  }
  const num = new Float64Array(dict.length);
  for (let k = 0; k < dict.length; k++) num[k] = numOf(dict[k]!);
  return { n, ts: ts.subarray(0, n), count: count.subarray(0, n), v: v.subarray(0, n * VALUES_PER_BUCKET), dict, num };
}

/** The first index in [0, n] whose bucket starts at or after `ms`. */
export function columnsIndexAt(c: BucketColumns, ms: number): number {
  let lo = 0;
  let hi = c.n;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (c.ts[mid]! < ms) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** Buckets `from` to `to` (exclusive) as objects, as `decodeBuckets` makes them. */
export function bucketsOfColumns(c: BucketColumns, from = 0, to = c.n): ExactBucket[] {
  const { dict, v } = c;
  const ohlc = (at: number): Ohlc | null => (v[at] === -1 ? null : { open: dict[v[at]!]!, high: dict[v[at + 1]!]!, low: dict[v[at + 2]!]!, close: dict[v[at + 3]!]! });
  const out: ExactBucket[] = new Array<ExactBucket>(Math.max(0, to - from));
  for (let j = from; j < to; j++) {
    const o = j * VALUES_PER_BUCKET;
    out[j - from] = observedBucket(c.ts[j]!, c.count[j]!, dict, v, o, ohlc(o + 6), ohlc(o + 10), ohlc(o + 14), ohlc(o + 18));
  }
  return out;
}

/**
 * The one builder of an observed bucket from columns (stored, `bucketsOfColumns`, or merged,
 * `mergeColumns`): the six closes at `o` of `v` as texts of `dict`, and the OHLCs given.
 */
function observedBucket(
  timestamp: number,
  count: number,
  dict: readonly string[],
  v: Int32Array,
  o: number,
  bid: Ohlc | null,
  ask: Ohlc | null,
  mid: Ohlc | null,
  spread: Ohlc | null,
): ExactBucket {
  const s = (k: number): string | null => (k === -1 ? null : dict[k]!);
  return {
    timestamp,
    quote_count: count,
    is_forward_filled: false,
    best_bid: s(v[o]!),
    best_bid_size: s(v[o + 1]!),
    best_ask: s(v[o + 2]!),
    best_ask_size: s(v[o + 3]!),
    mid_price: s(v[o + 4]!),
    spread: s(v[o + 5]!),
    best_bid_ohlc: bid,
    best_ask_ohlc: ask,
    mid_price_ohlc: mid,
    spread_ohlc: spread,
  };
}

/** One OHLC being merged: texts, and the doubles of high and low (NaN: compare the texts). */
class SeriesAcc {
  open: string | null = null;
  high = '';
  highN = NaN;
  low = '';
  lowN = NaN;
  close = '';

  add(dict: readonly string[], num: Float64Array, v: Int32Array, at: number): void {
    const o = v[at]!;
    if (o === -1) return;
    const h = v[at + 1]!;
    const l = v[at + 2]!;
    if (this.open === null) {
      this.open = dict[o]!;
      this.high = dict[h]!;
      this.highN = num[h]!;
      this.low = dict[l]!;
      this.lowN = num[l]!;
      this.close = dict[v[at + 3]!]!;
      return;
    }
    this.close = dict[v[at + 3]!]!;
    const hs = dict[h]!;
    if (hs !== this.high) {
      const d = num[h]! - this.highN;
      if (d > 0 || (!(d < 0) && compareCanonical(hs, this.high) > 0)) {
        this.high = hs;
        this.highN = num[h]!;
      }
    }
    const ls = dict[l]!;
    if (ls !== this.low) {
      const d = num[l]! - this.lowN;
      if (d < 0 || (!(d > 0) && compareCanonical(ls, this.low) < 0)) {
        this.low = ls;
        this.lowN = num[l]!;
      }
    }
  }

  result(): Ohlc | null {
    const r = this.open === null ? null : { open: this.open, high: this.high, low: this.low, close: this.close };
    this.open = null;
    return r;
  }
}

/** A stretch of stored buckets: indexes `from` to `to` (exclusive) of `columns`. */
export interface ColumnsRange {
  columns: BucketColumns;
  from: number;
  to: number;
}

/**
 * `mergeBuckets(ranges' buckets in order, fine, resolution)` straight from columns: the same
 * buckets (tested), with the merged OHLCs' high and low compared as doubles where those decide.
 */
export function mergeColumns(ranges: readonly ColumnsRange[], fineResolutionSeconds: number, resolutionSeconds: number): ExactBucket[] {
  for (const s of [fineResolutionSeconds, resolutionSeconds]) {
    if (!Number.isInteger(s) || s < MIN_RESOLUTION_SECONDS || s > MAX_RESOLUTION_SECONDS) {
      throw new RangeError(`resolution must be an integer from ${MIN_RESOLUTION_SECONDS} to ${MAX_RESOLUTION_SECONDS} seconds, got ${s}`);
    }
  }
  const fine = fineResolutionSeconds * 1000;
  const r = resolutionSeconds * 1000;
  if (r % fine !== 0) throw new RangeError(`resolution ${resolutionSeconds} s is not a multiple of ${fineResolutionSeconds} s`);
  const out: ExactBucket[] = [];
  const acc = [new SeriesAcc(), new SeriesAcc(), new SeriesAcc(), new SeriesAcc()] as const;
  // Plain locals, no closure over them: a double kept in a closure's context is a new heap
  // number on every write, which was most of the time of this loop.
  let start = 0;
  let count = 0;
  // The bucket whose closes the merged one takes: the last one merged.
  let lastDict: readonly string[] = [];
  let lastV: Int32Array = new Int32Array(0);
  let lastAt = 0;
  let last = -Infinity;
  for (const { columns: c, from, to } of ranges) {
    const { dict, num, v, ts } = c;
    const counts = c.count;
    for (let j = from; j < to; j++) {
      const q = counts[j]!;
      if (q === 0) continue;
      const t = ts[j]!;
      if (t % fine !== 0 || !(t > last)) throw new RangeError(`bucket ${t} is not a ${fineResolutionSeconds} s bucket in time order`);
      last = t;
      if (count === 0 || t >= start + r) {
        if (count > 0) out.push(merged(start, count, lastDict, lastV, lastAt, acc));
        start = Math.floor(t / r) * r;
        count = 0;
      }
      count += q;
      const o = j * VALUES_PER_BUCKET;
      lastDict = dict;
      lastV = v;
      lastAt = o;
      acc[0].add(dict, num, v, o + 6);
      acc[1].add(dict, num, v, o + 10);
      acc[2].add(dict, num, v, o + 14);
      acc[3].add(dict, num, v, o + 18);
    }
  }
  if (count > 0) out.push(merged(start, count, lastDict, lastV, lastAt, acc));
  return out;
}

/** The merged bucket: the closes of the last bucket merged (at `o` of `v`), the OHLCs of the accumulators (which are then empty). */
function merged(start: number, count: number, dict: readonly string[], v: Int32Array, o: number, acc: readonly [SeriesAcc, SeriesAcc, SeriesAcc, SeriesAcc]): ExactBucket {
  return observedBucket(start, count, dict, v, o, acc[0].result(), acc[1].result(), acc[2].result(), acc[3].result());
}
