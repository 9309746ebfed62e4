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

export function decodeBuckets(text: string): ExactBucket[] {
  const bar = text.indexOf('|');
  if (bar < 0) throw new RangeError('stored buckets: no dictionary separator');
  const dict = bar === 0 ? [] : text.slice(0, bar).split(',');
  let nums: unknown;
  try {
    nums = JSON.parse(`[${text.slice(bar + 1)}]`);
  } catch {
    throw new RangeError('stored buckets: malformed number list');
  }
  const a = nums as number[];
  const out: ExactBucket[] = [];
  const n = a.length;
  let i = 0;
  let ts = 0;
  const val = (k: number): string | null => {
    if (k === -1) return null;
    const v = dict[k];
    if (v === undefined) throw new RangeError(`stored buckets: index ${k} outside the dictionary`);
    return v;
  };
  const ohlc = (): Ohlc | null => {
    const o = a[i++]!;
    if (o === -1) return null;
    const r = { open: val(o)!, high: val(a[i]!)!, low: val(a[i + 1]!)!, close: val(a[i + 2]!)! };
    i += 3;
    return r;
  };
  const flat = (v: string | null): Ohlc | null => (v === null ? null : { open: v, high: v, low: v, close: v });
  while (i < n) {
    if (i + 8 > n) throw new RangeError('stored buckets: truncated bucket');
    ts += a[i]! * 1000;
    const count = a[i + 1]!;
    if (!Number.isSafeInteger(ts) || !Number.isInteger(count) || count < 1) throw new RangeError('stored buckets: bad bucket header');
    const best_bid = val(a[i + 2]!);
    const best_bid_size = val(a[i + 3]!);
    const best_ask = val(a[i + 4]!);
    const best_ask_size = val(a[i + 5]!);
    const mid_price = val(a[i + 6]!);
    const spread = val(a[i + 7]!);
    i += 8;
    let bidO: Ohlc | null, askO: Ohlc | null, midO: Ohlc | null, sprO: Ohlc | null;
    if (count > 1) {
      bidO = ohlc();
      askO = ohlc();
      midO = ohlc();
      sprO = ohlc();
      if (i > n) throw new RangeError('stored buckets: truncated OHLC');
    } else {
      bidO = flat(best_bid);
      askO = flat(best_ask);
      midO = flat(mid_price);
      sprO = flat(spread);
    }
    out.push({
      timestamp: ts,
      quote_count: count,
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
