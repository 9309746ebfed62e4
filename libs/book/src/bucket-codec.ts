import type { ExactBucket, Ohlc } from './bucketing.ts';

/**
 * A compact text form of observed buckets (quote_count > 0) for storage, built so that
 * reading a day back is one `JSON.parse` of a number array per chunk:
 *
 *   `<dictionary>|<numbers>`
 *
 * - dictionary: the distinct decimal strings of the chunk, comma-separated (canonical
 *   decimals hold neither `,` nor `|`);
 * - numbers, per bucket: seconds since the previous bucket's start (the first: since the
 *   epoch), quote_count, the six close fields as dictionary indexes (−1 = null), and, only
 *   when quote_count > 1, the four OHLC objects as −1 (null) or four indexes each. A bucket
 *   of one observation needs no OHLC: each is flat at that observation's value (rule 6).
 *
 * Text with no quotes or backslashes also travels through the store's JSON output
 * unescaped. Decoding checks the shape and throws RangeError on anything malformed.
 */

const CLOSES = ['best_bid', 'best_bid_size', 'best_ask', 'best_ask_size', 'mid_price', 'spread'] as const;
const OHLCS = ['best_bid_ohlc', 'best_ask_ohlc', 'mid_price_ohlc', 'spread_ohlc'] as const;
const DECIMAL = /^-?\d+(\.\d+)?$/;

export function encodeBuckets(buckets: readonly ExactBucket[]): string {
  const dict = new Map<string, number>();
  const idx = (v: string | null): number => {
    if (v === null) return -1;
    let i = dict.get(v);
    if (i === undefined) {
      if (!DECIMAL.test(v)) throw new RangeError(`not a decimal: ${JSON.stringify(v)}`);
      i = dict.size;
      dict.set(v, i);
    }
    return i;
  };
  const ohlc = (o: Ohlc | null): string => (o === null ? ',-1' : `,${idx(o.open)},${idx(o.high)},${idx(o.low)},${idx(o.close)}`);
  // The fields by name, not through a list of names: a keyed read with a changing name is a
  // dictionary lookup each time, and this runs for every bucket of every rollup.
  let out = '';
  let prev = 0;
  for (let k = 0; k < buckets.length; k++) {
    const b = buckets[k]!;
    if (b.quote_count < 1 || b.timestamp % 1000 !== 0 || b.timestamp <= prev) {
      throw new RangeError(`bucket ${b.timestamp} (quote_count ${b.quote_count}) cannot be stored: observed buckets on whole seconds in time order only`);
    }
    out += `${k === 0 ? '' : ','}${(b.timestamp - prev) / 1000},${b.quote_count},${idx(b.best_bid)},${idx(b.best_bid_size)},${idx(b.best_ask)},${idx(b.best_ask_size)},${idx(b.mid_price)},${idx(b.spread)}`;
    prev = b.timestamp;
    if (b.quote_count > 1) out += ohlc(b.best_bid_ohlc) + ohlc(b.best_ask_ohlc) + ohlc(b.mid_price_ohlc) + ohlc(b.spread_ohlc);
  }
  return `${[...dict.keys()].join(',')}|${out}`;
}

/**
 * Reads a stored text bucket by bucket, with the checks both decoders make (RangeError on
 * anything malformed): `decodeBuckets` here, `decodeBucketColumns` (bucket-columns.ts).
 * `next()` moves to the next bucket's header (false at the end); then `ts` and `count` are
 * its start and quote_count, `at` the index of its first close in `nums`, and after
 * `closes()` (the six indexes read) `at` is past the closes, where the OHLCs follow when
 * count > 1 (`ohlcEnd()` checks they were all there).
 */
export class StoredBuckets {
  /** The chunk's distinct decimal texts. */
  readonly dict: readonly string[];
  readonly nums: readonly number[];
  ts = 0;
  count = 0;
  at = 0;

  constructor(text: string) {
    const bar = text.indexOf('|');
    if (bar < 0) throw new RangeError('stored buckets: no dictionary separator');
    this.dict = bar === 0 ? [] : text.slice(0, bar).split(',');
    let nums: unknown;
    try {
      nums = JSON.parse(`[${text.slice(bar + 1)}]`);
    } catch {
      throw new RangeError('stored buckets: malformed number list');
    }
    this.nums = nums as number[];
  }

  next(): boolean {
    const a = this.nums;
    const i = this.at;
    if (i >= a.length) return false;
    if (i + 8 > a.length) throw new RangeError('stored buckets: truncated bucket');
    this.ts += a[i]! * 1000;
    this.count = a[i + 1]!;
    if (!Number.isSafeInteger(this.ts) || !Number.isInteger(this.count) || this.count < 1) throw new RangeError('stored buckets: bad bucket header');
    this.at = i + 2;
    return true;
  }

  /** Dictionary index `k` checked: −1 (null) or an entry of the dictionary. */
  index(k: number): number {
    if (k !== -1 && (k < 0 || k >= this.dict.length || !Number.isInteger(k))) throw new RangeError(`stored buckets: index ${k} outside the dictionary`);
    return k;
  }

  /** Throws when the bucket's OHLCs ran past the end of the numbers. */
  ohlcEnd(): void {
    if (this.at > this.nums.length) throw new RangeError('stored buckets: truncated OHLC');
  }
}

export function decodeBuckets(text: string): ExactBucket[] {
  const r = new StoredBuckets(text);
  const { dict, nums: a } = r;
  const out: ExactBucket[] = [];
  const val = (k: number): string | null => (r.index(k) === -1 ? null : dict[k]!);
  const ohlc = (): Ohlc | null => {
    const i = r.at;
    const o = a[i]!;
    if (o === -1) {
      r.at = i + 1;
      return null;
    }
    r.at = i + 4;
    return { open: val(o)!, high: val(a[i + 1]!)!, low: val(a[i + 2]!)!, close: val(a[i + 3]!)! };
  };
  const flat = (v: string | null): Ohlc | null => (v === null ? null : { open: v, high: v, low: v, close: v });
  while (r.next()) {
    const i = r.at;
    const best_bid = val(a[i]!);
    const best_bid_size = val(a[i + 1]!);
    const best_ask = val(a[i + 2]!);
    const best_ask_size = val(a[i + 3]!);
    const mid_price = val(a[i + 4]!);
    const spread = val(a[i + 5]!);
    r.at = i + 6;
    let bidO: Ohlc | null, askO: Ohlc | null, midO: Ohlc | null, sprO: Ohlc | null;
    if (r.count > 1) {
      bidO = ohlc();
      askO = ohlc();
      midO = ohlc();
      sprO = ohlc();
      r.ohlcEnd();
    } else {
      bidO = flat(best_bid);
      askO = flat(best_ask);
      midO = flat(mid_price);
      sprO = flat(spread);
    }
    out.push({
      timestamp: r.ts,
      quote_count: r.count,
      is_forward_filled: false,
      best_bid,
      best_bid_size,
      best_ask,
      best_ask_size,
      mid_price,
      spread,
      best_bid_ohlc: bidO,
      best_ask_ohlc: askO,
      mid_price_ohlc: midO,
      spread_ohlc: sprO,
    });
  }
  return out;
}
