import type { ExactBucket, Ohlc } from './bucketing.ts';

/**
 * The summary answer writers as they were before bucket-bytes.ts (commit 042cb8c), kept
 * unchanged as the reference the new writer's bytes are compared with (bucket-bytes.test.ts).
 */
/**
 * Writes text into one growing Buffer, 64 K characters at a time (see put): the whole answer
 * joined as one string first (a template per bucket, then a join) cost ~13 µs per bucket,
 * mostly string building and garbage collection, plus a full copy and scan of the result to
 * send it; this costs ~3 µs and the Buffer goes out as it is. Text beyond ASCII (a caller's
 * market id in the head) is written as UTF-8.
 */
class JsonBytes {
  private buf: Buffer;
  private off = 0;

  constructor(capacity: number) {
    this.buf = Buffer.allocUnsafe(Math.max(64, capacity));
  }

  private room(n: number): void {
    if (this.off + n <= this.buf.length) return;
    const next = Buffer.allocUnsafe(Math.max(Math.ceil(this.buf.length * 1.5), this.off + n));
    this.buf.copy(next, 0, 0, this.off);
    this.buf = next;
  }

  /** Text not written yet: joined as a string and written in large pieces (see put). */
  private pending = '';

  put(text: string): void {
    // Joined, then written natively 64 K characters at a time, not copied by a loop over
    // charCodeAt: a process that loads ioredis (the API) has String.prototype extended (its
    // VerbatimString), which makes charCodeAt about four times slower everywhere; a
    // whole-day answer at R=1 took 0.5 s instead of 0.13 s that way.
    this.pending += text;
    if (this.pending.length >= 65_536) this.flush();
  }

  private flush(): void {
    if (this.pending === '') return;
    this.putUtf8(this.pending);
    this.pending = '';
  }

  private putUtf8(text: string): void {
    const n = Buffer.byteLength(text, 'utf8');
    this.room(n);
    this.off += this.buf.write(text, this.off, 'utf8');
  }

  done(): Buffer {
    this.flush();
    return this.buf.subarray(0, this.off);
  }
}

/**
 * `head` + the JSON text of `buckets.map(toSummaryBucket)` + `tail`, as UTF-8 bytes, written
 * straight from the exact decimals: a canonical decimal is a valid JSON number, and it
 * parses to the same double as `Number(text)`, so a client reads exactly the values
 * `toSummaryBucket` gives (and a decimal-aware client reads the exact decimal).
 */
export function referenceSummaryBucketsJsonBytes(buckets: readonly ExactBucket[], head = '', tail = ''): Buffer {
  // 465–535 bytes for a bucket with every field set (longer sizes take more): one allocation
  // for nearly every answer; a longer one grows by half.
  const w = new JsonBytes(head.length + tail.length + 2 + buckets.length * 560);
  const texts = new BucketTexts();
  w.put(head);
  w.put('[');
  for (let i = 0; i < buckets.length; i++) {
    if (i > 0) w.put(',');
    w.put(texts.of(buckets[i]!));
  }
  w.put(']');
  w.put(tail);
  return w.done();
}

/** The buckets as NDJSON: each bucket's JSON object (as in summaryBucketsJsonBytes) on its own line. */
export function referenceSummaryBucketsNdjsonBytes(buckets: readonly ExactBucket[]): Buffer {
  const w = new JsonBytes(buckets.length * 560);
  const texts = new BucketTexts();
  for (const b of buckets) {
    w.put(texts.of(b));
    w.put('\n');
  }
  return w.done();
}

const ohlcJson = (x: Ohlc | null): string => (x === null ? 'null' : `{"open":${x.open},"high":${x.high},"low":${x.low},"close":${x.close}}`);

/**
 * JSON text of buckets, one template per bucket (a canonical decimal, `null`, a boolean and
 * an integer print in a template as in JSON). Everything after the timestamp is reused while
 * it cannot have changed: a run of forward-filled buckets carries the same closes and shares
 * its OHLC objects (fillSeries), so a quiet asset's day at R=1, mostly such runs, costs one
 * short text per bucket instead of a whole one.
 */
class BucketTexts {
  private last: ExactBucket | null = null;
  private rest = '';

  of(b: ExactBucket): string {
    if (this.last === null || !sameAfterTimestamp(this.last, b)) {
      this.last = b;
      this.rest =
        `,"quote_count":${b.quote_count},"is_forward_filled":${b.is_forward_filled},"best_bid":${b.best_bid},"best_bid_size":${b.best_bid_size},` +
        `"best_ask":${b.best_ask},"best_ask_size":${b.best_ask_size},"mid_price":${b.mid_price},"spread":${b.spread},` +
        `"best_bid_ohlc":${ohlcJson(b.best_bid_ohlc)},"best_ask_ohlc":${ohlcJson(b.best_ask_ohlc)},"mid_price_ohlc":${ohlcJson(b.mid_price_ohlc)},"spread_ohlc":${ohlcJson(b.spread_ohlc)}}`;
    }
    return `{"timestamp":${b.timestamp}${this.rest}`;
  }
}

/** True when `a` and `b` write the same text after their timestamps (OHLCs compared as the same objects). */
function sameAfterTimestamp(a: ExactBucket, b: ExactBucket): boolean {
  return (
    a.quote_count === b.quote_count &&
    a.is_forward_filled === b.is_forward_filled &&
    a.best_bid === b.best_bid &&
    a.best_bid_size === b.best_bid_size &&
    a.best_ask === b.best_ask &&
    a.best_ask_size === b.best_ask_size &&
    a.mid_price === b.mid_price &&
    a.spread === b.spread &&
    a.best_bid_ohlc === b.best_bid_ohlc &&
    a.best_ask_ohlc === b.best_ask_ohlc &&
    a.mid_price_ohlc === b.mid_price_ohlc &&
    a.spread_ohlc === b.spread_ohlc
  );
}

const OHLC_SERIES = ['best_bid', 'best_ask', 'mid_price', 'spread'] as const;

/**
 * The CSV columns of a summary bucket: the JSON fields in order, each OHLC object flattened
 * into four columns (`best_bid_open` … `spread_close`). Null is an empty field.
 */
const SUMMARY_CSV_COLUMNS: readonly string[] = [
  'timestamp',
  'quote_count',
  'is_forward_filled',
  'best_bid',
  'best_bid_size',
  'best_ask',
  'best_ask_size',
  'mid_price',
  'spread',
  ...OHLC_SERIES.flatMap((s) => ['open', 'high', 'low', 'close'].map((p) => `${s}_${p}`)),
];

/**
 * The buckets as CSV, header first unless `header` is false; every value is a decimal, an
 * integer or true/false, so nothing needs quoting. `lead`: columns written first on every
 * row (an export's asset id), their values CSV-safe as given.
 */
export function referenceSummaryBucketsCsvBytes(buckets: readonly ExactBucket[], header = true, lead: { names: readonly string[]; values: readonly string[] } | null = null): Buffer {
  const w = new JsonBytes(SUMMARY_CSV_COLUMNS.length * 16 + buckets.length * 340);
  if (header) {
    w.put([...(lead?.names ?? []), ...SUMMARY_CSV_COLUMNS].join(','));
    w.put('\n');
  }
  const leadText = lead && lead.values.length > 0 ? `${lead.values.join(',')},` : '';
  const cell = (v: string | null) => {
    w.put(',');
    if (v !== null) w.put(v);
  };
  const ohlc = (x: Ohlc | null) => {
    cell(x && x.open);
    cell(x && x.high);
    cell(x && x.low);
    cell(x && x.close);
  };
  for (const b of buckets) {
    w.put(leadText);
    w.put(String(b.timestamp));
    cell(String(b.quote_count));
    cell(b.is_forward_filled ? 'true' : 'false');
    cell(b.best_bid);
    cell(b.best_bid_size);
    cell(b.best_ask);
    cell(b.best_ask_size);
    cell(b.mid_price);
    cell(b.spread);
    ohlc(b.best_bid_ohlc);
    ohlc(b.best_ask_ohlc);
    ohlc(b.mid_price_ohlc);
    ohlc(b.spread_ohlc);
    w.put('\n');
  }
  return w.done();
}
