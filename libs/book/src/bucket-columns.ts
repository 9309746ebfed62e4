import type { BucketPlan, ExactBucket, Ohlc } from './bucketing.ts';
import type { Top } from './observation.ts';
import { MAX_RESOLUTION_SECONDS, MIN_RESOLUTION_SECONDS } from './bucketing.ts';
import { StoredBuckets } from './bucket-codec.ts';
import { compareCanonical } from './fixed-point.ts';
import { VALUES_PER_BUCKET, type BucketColumns, type ColumnSeries } from './column-layout.ts';

const CANONICAL = /^-?(?:0|[1-9]\d*)(?:\.\d*[1-9])?$/;

/** A dictionary entry's double for comparisons (`BucketColumns.num`): NaN unless the text is a canonical decimal. */
export function decimalNumber(text: string): number {
  return CANONICAL.test(text) && text !== '-0' ? Number(text) : NaN;
}

/** A resolution in seconds as ms, or a RangeError naming the allowed range. */
export function checkResolution(seconds: number): number {
  if (!Number.isInteger(seconds) || seconds < MIN_RESOLUTION_SECONDS || seconds > MAX_RESOLUTION_SECONDS) {
    throw new RangeError(`resolution must be an integer from ${MIN_RESOLUTION_SECONDS} to ${MAX_RESOLUTION_SECONDS} seconds, got ${seconds}`);
  }
  return seconds * 1000;
}

/** Growable bucket columns being written (ts, count, VALUES_PER_BUCKET indexes per bucket). */
export class ColumnsOut {
  n = 0;
  ts: Float64Array;
  count: Float64Array;
  v: Int32Array;

  constructor(private cap: number) {
    this.cap = Math.max(16, cap);
    this.ts = new Float64Array(this.cap);
    this.count = new Float64Array(this.cap);
    this.v = new Int32Array(this.cap * VALUES_PER_BUCKET);
  }

  /** Room for one more bucket; returns its index. */
  add(): number {
    if (this.n === this.cap) {
      this.cap *= 2;
      const ts = new Float64Array(this.cap);
      ts.set(this.ts);
      this.ts = ts;
      const count = new Float64Array(this.cap);
      count.set(this.count);
      this.count = count;
      const v = new Int32Array(this.cap * VALUES_PER_BUCKET);
      v.set(this.v);
      this.v = v;
    }
    return this.n++;
  }

  columns(dict: readonly string[], num: Float64Array): BucketColumns {
    const n = this.n;
    return { n, ts: this.ts.subarray(0, n), count: this.count.subarray(0, n), v: this.v.subarray(0, n * VALUES_PER_BUCKET), dict, num };
  }
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
  const out = new ColumnsOut(cap);
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
      const n = out.add();
      const { ts, count, v } = out;
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
    }
  }
  const num = new Float64Array(dict.length);
  for (let k = 0; k < dict.length; k++) num[k] = decimalNumber(dict[k]!);
  return out.columns(dict, num);
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

/** Entry `k` of `dict`, null for −1 (a function of its own: a closure per bucket was a third of `bucketsOfColumns`). */
function textOf(dict: readonly string[], k: number): string | null {
  return k === -1 ? null : dict[k]!;
}

/** An observed bucket from columns: the six closes at `o` of `v` as texts of `dict`, and the OHLCs given. */
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
  return {
    timestamp,
    quote_count: count,
    is_forward_filled: false,
    best_bid: textOf(dict, v[o]!),
    best_bid_size: textOf(dict, v[o + 1]!),
    best_ask: textOf(dict, v[o + 2]!),
    best_ask_size: textOf(dict, v[o + 3]!),
    mid_price: textOf(dict, v[o + 4]!),
    spread: textOf(dict, v[o + 5]!),
    best_bid_ohlc: bid,
    best_ask_ohlc: ask,
    mid_price_ohlc: mid,
    spread_ohlc: spread,
  };
}

/** The merged output's dictionary: texts of several column sets under one index each. */
class MergedDict {
  readonly dict: string[] = [];
  readonly num: number[] = [];
  private readonly ids = new Map<string, number>();
  private maps = new WeakMap<BucketColumns, Int32Array>();

  /** The index map of `c`'s dictionary into this one (−1: not entered yet). */
  mapOf(c: BucketColumns): Int32Array {
    let m = this.maps.get(c);
    if (m === undefined) this.maps.set(c, (m = new Int32Array(c.dict.length).fill(-1)));
    return m;
  }

  /** Index here of entry `k` of `c`'s dictionary (−1 stays −1). */
  id(c: BucketColumns, m: Int32Array, k: number): number {
    if (k === -1) return -1;
    const hit = m[k]!;
    if (hit !== -1) return hit;
    const text = c.dict[k]!;
    let id = this.ids.get(text);
    if (id === undefined) {
      id = this.dict.length;
      this.dict.push(text);
      this.num.push(c.num[k]!);
      this.ids.set(text, id);
    }
    m[k] = id;
    return id;
  }
}

/** One OHLC being merged: indexes into the merged dictionary, and the texts and doubles of high and low (NaN: compare the texts). */
class SeriesAcc {
  open = -1;
  high = -1;
  highS = '';
  highN = NaN;
  low = -1;
  lowS = '';
  lowN = NaN;
  close = -1;

  add(d: MergedDict, c: BucketColumns, m: Int32Array, at: number): void {
    const { dict, num, v } = c;
    const o = v[at]!;
    if (o === -1) return;
    const h = v[at + 1]!;
    const l = v[at + 2]!;
    this.close = d.id(c, m, v[at + 3]!);
    if (this.open === -1) {
      this.open = d.id(c, m, o);
      this.high = d.id(c, m, h);
      this.highS = dict[h]!;
      this.highN = num[h]!;
      this.low = d.id(c, m, l);
      this.lowS = dict[l]!;
      this.lowN = num[l]!;
      return;
    }
    const hs = dict[h]!;
    if (hs !== this.highS) {
      const diff = num[h]! - this.highN;
      if (diff > 0 || (!(diff < 0) && compareCanonical(hs, this.highS) > 0)) {
        this.high = d.id(c, m, h);
        this.highS = hs;
        this.highN = num[h]!;
      }
    }
    const ls = dict[l]!;
    if (ls !== this.lowS) {
      const diff = num[l]! - this.lowN;
      if (diff < 0 || (!(diff > 0) && compareCanonical(ls, this.lowS) < 0)) {
        this.low = d.id(c, m, l);
        this.lowS = ls;
        this.lowN = num[l]!;
      }
    }
  }

  /** Writes the OHLC at `at` of `v` (open −1 when none) and empties the accumulator. */
  take(v: Int32Array, at: number): void {
    if (this.open === -1) {
      v[at] = v[at + 1] = v[at + 2] = v[at + 3] = -1;
      return;
    }
    v[at] = this.open;
    v[at + 1] = this.high;
    v[at + 2] = this.low;
    v[at + 3] = this.close;
    this.open = -1;
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
  return bucketsOfColumns(mergeToColumns(ranges, fineResolutionSeconds, resolutionSeconds));
}

/**
 * `mergeColumns` with the merged buckets left as columns (one dictionary for all the
 * ranges'): no object per bucket, for an answer written straight from them (`fillColumns`).
 */
export function mergeToColumns(ranges: readonly ColumnsRange[], fineResolutionSeconds: number, resolutionSeconds: number): BucketColumns {
  const fine = checkResolution(fineResolutionSeconds);
  const r = checkResolution(resolutionSeconds);
  if (r % fine !== 0) throw new RangeError(`resolution ${resolutionSeconds} s is not a multiple of ${fineResolutionSeconds} s`);
  let cap = 16;
  for (const { from, to } of ranges) cap += Math.max(0, to - from);
  cap = Math.min(cap, 16 + Math.ceil((cap * fine) / r) + ranges.length);
  const out = new ColumnsOut(cap);
  const d = new MergedDict();
  const acc = [new SeriesAcc(), new SeriesAcc(), new SeriesAcc(), new SeriesAcc()] as const;
  // Plain locals, no closure over them: a double kept in a closure's context is a new heap
  // number on every write, which was most of the time of this loop.
  let start = 0;
  let count = 0;
  // The bucket whose closes the merged one takes: the last one merged.
  let lastC: BucketColumns | null = null;
  let lastM: Int32Array = new Int32Array(0);
  let lastAt = 0;
  let last = -Infinity;
  const emit = (): void => {
    const n = out.add();
    const outV = out.v;
    out.ts[n] = start;
    out.count[n] = count;
    const o = n * VALUES_PER_BUCKET;
    const src = lastC!.v;
    for (let k = 0; k < 6; k++) outV[o + k] = d.id(lastC!, lastM, src[lastAt + k]!);
    acc[0].take(outV, o + 6);
    acc[1].take(outV, o + 10);
    acc[2].take(outV, o + 14);
    acc[3].take(outV, o + 18);
  };
  for (const { columns: c, from, to } of ranges) {
    const { ts } = c;
    const counts = c.count;
    const m = d.mapOf(c);
    for (let j = from; j < to; j++) {
      const q = counts[j]!;
      if (q === 0) continue;
      const t = ts[j]!;
      if (t % fine !== 0 || !(t > last)) throw new RangeError(`bucket ${t} is not a ${fineResolutionSeconds} s bucket in time order`);
      last = t;
      if (count === 0 || t >= start + r) {
        if (count > 0) emit();
        start = Math.floor(t / r) * r;
        count = 0;
      }
      count += q;
      const o = j * VALUES_PER_BUCKET;
      lastC = c;
      lastM = m;
      lastAt = o;
      acc[0].add(d, c, m, o + 6);
      acc[1].add(d, c, m, o + 10);
      acc[2].add(d, c, m, o + 14);
      acc[3].add(d, c, m, o + 18);
    }
  }
  if (count > 0) emit();
  return out.columns(d.dict, Float64Array.from(d.num));
}

/** `fillSeries(bucketsOfColumns(c), plan, carried)` as a ColumnSeries (tested equal, `seriesBuckets`). */
export function fillColumns(c: BucketColumns, plan: BucketPlan, carried: Top | null): ColumnSeries {
  const r = plan.resolutionMs;
  const carriedTexts = carried === null ? [] : [carried.best_bid, carried.best_bid_size, carried.best_ask, carried.best_ask_size, carried.mid_price, carried.spread];
  const rows = new Int32Array(Math.max(0, plan.count));
  const filled = new Uint8Array(Math.max(0, plan.count));
  // The row whose closes a filled bucket carries: −1 the carried state, −2 none yet.
  let cur = carried === null ? -2 : -1;
  let k = 0;
  let first = NaN;
  let j = 0;
  let prev = -Infinity;
  const { ts, count } = c;
  for (let s = plan.firstStart; s <= plan.lastStart; s += r) {
    let at = -1;
    while (j < c.n && ts[j]! <= s) {
      const t = ts[j]!;
      if (t % r !== 0 || !(t > prev)) throw new RangeError(`bucket ${t} is not a ${r / 1000} s bucket in time order`);
      prev = t;
      if (count[j]! > 0) {
        cur = j;
        if (t === s) at = j;
      } else if (t === s && cur !== -2) {
        at = -3;
      }
      j++;
    }
    if (at >= 0) {
      rows[k] = at;
      filled[k] = 0;
    } else if (cur !== -2) {
      rows[k] = cur;
      filled[k] = 1;
    } else continue;
    if (k === 0) first = s;
    k++;
  }
  return { columns: c, n: k, firstStart: k === 0 ? plan.firstStart : first, resolutionMs: r, rows: rows.subarray(0, k), filled: filled.subarray(0, k), carried: carriedTexts };
}

/** The buckets of a ColumnSeries as objects (what fillSeries gives). */
export function seriesBuckets(s: ColumnSeries, from = 0, to = s.n): ExactBucket[] {
  const { dict, v, count } = s.columns;
  const out: ExactBucket[] = [];
  const text = (k: number): string | null => (k === -1 ? null : dict[k]!);
  const flat = (x: string | null): Ohlc | null => (x === null ? null : { open: x, high: x, low: x, close: x });
  const ohlc = (at: number): Ohlc | null => (v[at] === -1 ? null : { open: dict[v[at]!]!, high: dict[v[at + 1]!]!, low: dict[v[at + 2]!]!, close: dict[v[at + 3]!]! });
  for (let k = from; k < to; k++) {
    const row = s.rows[k]!;
    const t = s.firstStart + k * s.resolutionMs;
    if (s.filled[k]) {
      const c = row === -1 ? s.carried : [0, 1, 2, 3, 4, 5].map((i) => text(v[row * VALUES_PER_BUCKET + i]!));
      out.push({
        timestamp: t,
        quote_count: 0,
        is_forward_filled: true,
        best_bid: c[0]!,
        best_bid_size: c[1]!,
        best_ask: c[2]!,
        best_ask_size: c[3]!,
        mid_price: c[4]!,
        spread: c[5]!,
        best_bid_ohlc: flat(c[0]!),
        best_ask_ohlc: flat(c[2]!),
        mid_price_ohlc: flat(c[4]!),
        spread_ohlc: flat(c[5]!),
      });
    } else {
      const o = row * VALUES_PER_BUCKET;
      out.push(observedBucket(t, count[row]!, dict, v, o, ohlc(o + 6), ohlc(o + 10), ohlc(o + 14), ohlc(o + 18)));
    }
  }
  return out;
}
