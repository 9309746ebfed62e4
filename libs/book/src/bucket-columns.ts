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

/**
 * `t % step === 0` for a whole step of 1 ms or more, without the remainder of doubles where
 * |t| is at most 2^53 (every timestamp): the engine computes that remainder by a call into
 * the runtime, a tenth of a day's merge at 1 s. There `floor(t / step) * step` is a whole
 * number below 2^53, computed exactly, so it equals t exactly when t is a multiple of step;
 * a fraction, NaN or an infinity is on the grid neither way. Beyond 2^53 the product may
 * round, so the remainder decides there.
 */
export function onGrid(t: number, step: number): boolean {
  return Math.abs(t) <= Number.MAX_SAFE_INTEGER ? t - Math.floor(t / step) * step === 0 : t % step === 0;
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
  let cap = 0;
  for (const t of texts) cap += t.length >> 4;
  const d = new BucketColumnsDecoder(cap);
  for (const text of texts) d.add(text);
  return d.columns();
}

/**
 * `decodeBucketColumns` a text at a time (`add`), into one set of columns with one
 * dictionary: a caller decoding a day's 24 chunks can let the event loop turn between them
 * and still get the day as one set (whose merge then needs no dictionary of its own).
 */
export class BucketColumnsDecoder {
  private readonly dict: string[] = [];
  private readonly ids = new Map<string, number>();
  private readonly out: ColumnsOut;

  /** `buckets`: how many buckets to make room for at first (it grows as needed). */
  constructor(buckets = 0) {
    this.out = new ColumnsOut(buckets);
  }

  /** The buckets of one stored chunk text, after those added before. */
  add(text: string): this {
    const { dict, ids, out } = this;
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
    return this;
  }

  /** The buckets added so far. */
  columns(): BucketColumns {
    const { dict } = this;
    const num = new Float64Array(dict.length);
    for (let k = 0; k < dict.length; k++) num[k] = decimalNumber(dict[k]!);
    return this.out.columns(dict.slice(), num);
  }
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

/**
 * The merged output's dictionary where the ranges come from several column sets: texts of
 * all of them under one index each. The first set's entries keep their indexes.
 */
class MergedDict {
  readonly dict: string[];
  readonly num: number[];
  private readonly ids = new Map<string, number>();
  private maps = new WeakMap<BucketColumns, Int32Array>();

  constructor(first: BucketColumns) {
    this.dict = first.dict.slice();
    this.num = Array.from(first.num);
    for (let k = 0; k < this.dict.length; k++) this.ids.set(this.dict[k]!, k);
    const m = new Int32Array(first.dict.length);
    for (let k = 0; k < m.length; k++) m[k] = k;
    this.maps.set(first, m);
  }

  /** The index map of `c`'s dictionary into this one (−1: not entered yet). */
  mapOf(c: BucketColumns): Int32Array {
    let m = this.maps.get(c);
    if (m === undefined) this.maps.set(c, (m = new Int32Array(c.dict.length).fill(-1)));
    return m;
  }

  /** Index here of entry `k` of `c`'s dictionary, not entered yet (`m[k]` −1). */
  enter(c: BucketColumns, m: Int32Array, k: number): number {
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

/** Entry `k` of a range's dictionary as an index of the merged one: itself where there is one set (`m` null), −1 staying −1. */
function idIn(d: MergedDict | null, c: BucketColumns, m: Int32Array | null, k: number): number {
  if (m === null || k === -1) return k;
  const hit = m[k]!;
  return hit !== -1 ? hit : d!.enter(c, m, k);
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
 * `mergeColumns` with the merged buckets left as columns: no object per bucket, for an answer
 * written straight from them (`fillColumns`).
 */
export function mergeToColumns(ranges: readonly ColumnsRange[], fineResolutionSeconds: number, resolutionSeconds: number): BucketColumns {
  let n = 0;
  for (const { from, to } of ranges) n += Math.max(0, to - from);
  const m = new ColumnsMerge(fineResolutionSeconds, resolutionSeconds, n);
  for (const { columns, from, to } of ranges) m.add(columns, from, to);
  return m.finish();
}

/**
 * `mergeToColumns` a stretch at a time: `add` the ranges' buckets in time order, in as many
 * pieces as wanted (a caller lets the event loop turn between pieces of a day at 1 s), then
 * `finish`. Where every piece comes from one set of columns, the merged buckets use that
 * set's dictionary as it is (a day read from storage is one set); from several, one
 * dictionary of all their texts is made as they are met.
 */
export class ColumnsMerge {
  private readonly fine: number;
  private readonly r: number;
  private readonly out: ColumnsOut;
  /** The one set merged so far, or (after a second one came) null and the merged dictionary. */
  private only: BucketColumns | null = null;
  private d: MergedDict | null = null;
  // The open merged bucket: start, quote count, and the fine bucket whose closes it takes (the last one merged).
  private start = 0;
  private count = 0;
  private last = -Infinity;
  private lastC: BucketColumns | null = null;
  private lastAt = 0;
  // Per OHLC (bid, ask, mid, spread): open, high, low, close as merged indexes (open −1: none
  // yet), and the high's and low's doubles (NaN: compare the texts).
  private readonly open = new Int32Array(4).fill(-1);
  private readonly high = new Int32Array(4);
  private readonly low = new Int32Array(4);
  private readonly close = new Int32Array(4);
  private readonly highN = new Float64Array(4);
  private readonly lowN = new Float64Array(4);

  /** `buckets`: how many fine buckets will be added, for the room made at first (a hint). */
  constructor(fineResolutionSeconds: number, resolutionSeconds: number, buckets = 0) {
    this.fine = checkResolution(fineResolutionSeconds);
    this.r = checkResolution(resolutionSeconds);
    if (this.r % this.fine !== 0) throw new RangeError(`resolution ${resolutionSeconds} s is not a multiple of ${fineResolutionSeconds} s`);
    this.out = new ColumnsOut(16 + Math.min(buckets, Math.ceil((buckets * this.fine) / this.r) + 1));
  }

  /** Buckets `from` to `to` (exclusive) of `c`, after every bucket added before. */
  add(c: BucketColumns, from: number, to: number): this {
    if (from >= to) return this;
    let m: Int32Array | null = null;
    if (this.d === null && (this.only === null || this.only === c)) this.only = c;
    else {
      if (this.d === null) this.d = new MergedDict(this.only!);
      m = this.d.mapOf(c);
    }
    const d = this.d;
    const { ts, v, dict, num } = c;
    const counts = c.count;
    const { fine, r, open, high, low, close, highN, lowN } = this;
    // The texts of the merged indexes (for the rare comparison the doubles do not decide).
    const texts = d === null ? dict : d.dict;
    // Plain locals in the loop: a field written per bucket costs more.
    let start = this.start;
    let count = this.count;
    let last = this.last;
    for (let j = from; j < to; j++) {
      const q = counts[j]!;
      if (q === 0) continue;
      const t = ts[j]!;
      if (!onGrid(t, fine) || !(t > last)) throw new RangeError(`bucket ${t} is not a ${fine / 1000} s bucket in time order`);
      last = t;
      if (count === 0 || t >= start + r) {
        if (count > 0) this.emit(start, count);
        start = Math.floor(t / r) * r;
        count = 0;
      }
      count += q;
      const o = j * VALUES_PER_BUCKET;
      this.lastC = c;
      this.lastAt = o;
      for (let s = 0; s < 4; s++) {
        const at = o + 6 + 4 * s;
        const ov = v[at]!;
        if (ov === -1) continue;
        const h = v[at + 1]!;
        const l = v[at + 2]!;
        close[s] = idIn(d, c, m, v[at + 3]!);
        if (open[s] === -1) {
          open[s] = idIn(d, c, m, ov);
          high[s] = idIn(d, c, m, h);
          highN[s] = num[h]!;
          low[s] = idIn(d, c, m, l);
          lowN[s] = num[l]!;
          continue;
        }
        // Compared by index first (one dictionary holds no text twice; −1: not in the merged one yet, so new).
        const hi = m === null ? h : m[h]!;
        if (hi !== high[s]) {
          const diff = num[h]! - highN[s]!;
          if (diff > 0 || (!(diff < 0) && compareCanonical(dict[h]!, texts[high[s]!]!) > 0)) {
            high[s] = hi === -1 ? d!.enter(c, m!, h) : hi;
            highN[s] = num[h]!;
          }
        }
        const li = m === null ? l : m[l]!;
        if (li !== low[s]) {
          const diff = num[l]! - lowN[s]!;
          if (diff < 0 || (!(diff > 0) && compareCanonical(dict[l]!, texts[low[s]!]!) < 0)) {
            low[s] = li === -1 ? d!.enter(c, m!, l) : li;
            lowN[s] = num[l]!;
          }
        }
      }
    }
    this.start = start;
    this.count = count;
    this.last = last;
    return this;
  }

  /** The merged buckets (the open one closed); nothing is to be added after. */
  finish(): BucketColumns {
    if (this.count > 0) this.emit(this.start, this.count);
    this.count = 0;
    if (this.d !== null) return this.out.columns(this.d.dict, Float64Array.from(this.d.num));
    if (this.only !== null) return this.out.columns(this.only.dict, this.only.num);
    return this.out.columns([], new Float64Array(0));
  }

  /** The open bucket written out: the last fine bucket's closes, the OHLCs merged (each emptied). */
  private emit(start: number, count: number): void {
    const out = this.out;
    const n = out.add();
    const outV = out.v;
    out.ts[n] = start;
    out.count[n] = count;
    const o = n * VALUES_PER_BUCKET;
    const c = this.lastC!;
    const src = c.v;
    const m = this.d === null ? null : this.d.mapOf(c);
    for (let k = 0; k < 6; k++) outV[o + k] = idIn(this.d, c, m, src[this.lastAt + k]!);
    const { open, high, low, close } = this;
    for (let s = 0; s < 4; s++) {
      const at = o + 6 + 4 * s;
      if (open[s] === -1) {
        outV[at] = outV[at + 1] = outV[at + 2] = outV[at + 3] = -1;
        continue;
      }
      outV[at] = open[s]!;
      outV[at + 1] = high[s]!;
      outV[at + 2] = low[s]!;
      outV[at + 3] = close[s]!;
      open[s] = -1;
    }
  }
}

/** `fillSeries(bucketsOfColumns(c), plan, carried)` as a ColumnSeries (tested equal, `seriesBuckets`). */
export function fillColumns(c: BucketColumns, plan: BucketPlan, carried: Top | null): ColumnSeries {
  const f = new ColumnsFill(c, plan, carried);
  f.step(Infinity);
  return f.series();
}

/**
 * `fillColumns` over buckets `from` to `to` (exclusive) of `c`, a part at a time: `step(k)`
 * fills up to k more of the plan's buckets and says whether the plan is done (a caller lets
 * the event loop turn between parts of a day at 1 s); then `series()`.
 */
export class ColumnsFill {
  private readonly r: number;
  private readonly carriedTexts: (string | null)[];
  private readonly rows: Int32Array;
  private readonly filled: Uint8Array;
  /** The row whose closes a filled bucket carries: −1 the carried state, −2 none yet. */
  private cur: number;
  private k = 0;
  private first = NaN;
  private j: number;
  private prev = -Infinity;
  /** The next bucket start of the plan to fill. */
  private s: number;

  constructor(
    private readonly c: BucketColumns,
    private readonly plan: BucketPlan,
    carried: Top | null,
    from = 0,
    private readonly to = c.n,
  ) {
    this.r = plan.resolutionMs;
    this.carriedTexts = carried === null ? [] : [carried.best_bid, carried.best_bid_size, carried.best_ask, carried.best_ask_size, carried.mid_price, carried.spread];
    this.rows = new Int32Array(Math.max(0, plan.count));
    this.filled = new Uint8Array(Math.max(0, plan.count));
    this.cur = carried === null ? -2 : -1;
    this.j = from;
    this.s = plan.firstStart;
  }

  /** Fills up to `buckets` more of the plan's bucket starts; true when none is left. */
  step(buckets: number): boolean {
    const { r, rows, filled, to } = this;
    const { ts, count } = this.c;
    const lastStart = this.plan.lastStart;
    let { cur, k, first, j, prev, s } = this;
    for (let left = buckets; s <= lastStart && left > 0; s += r, left--) {
      let at = -1;
      while (j < to && ts[j]! <= s) {
        const t = ts[j]!;
        if (!onGrid(t, r) || !(t > prev)) throw new RangeError(`bucket ${t} is not a ${r / 1000} s bucket in time order`);
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
    this.cur = cur;
    this.k = k;
    this.first = first;
    this.j = j;
    this.prev = prev;
    this.s = s;
    return s > lastStart;
  }

  /** The series filled (the whole plan once `step` said so). */
  series(): ColumnSeries {
    const { k, first } = this;
    return { columns: this.c, n: k, firstStart: k === 0 ? this.plan.firstStart : first, resolutionMs: this.r, rows: this.rows.subarray(0, k), filled: this.filled.subarray(0, k), carried: this.carriedTexts };
  }
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
