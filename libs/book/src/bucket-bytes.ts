import type { ExactBucket, Ohlc } from './bucketing.ts';

/**
 * The bytes of summary answers (JSON, NDJSON, CSV), written straight into Buffers: no text
 * per bucket, no string joined and then encoded.
 *
 * Every piece of text is turned into bytes once: the fixed parts (`{"timestamp":`,
 * `,"best_bid":` …) when this module loads, each distinct value (a canonical decimal; an
 * answer has a few hundred or thousand distinct ones) the first time a writer meets it, and
 * integers digit by digit. Bytes are copied by a plain loop: a process that loads ioredis has
 * String.prototype extended, which makes every charCodeAt about four times slower, so no text
 * is read character by character here.
 *
 * Output goes into Buffers of `chunkBytes` (1 MiB by default) filled to the end, each kept as
 * one part of the answer: a whole day at R=1 (86,400 buckets, about 37 MB of JSON) is about 37
 * parts and no other allocation of any size. The bytes are those of the earlier writers
 * (`summaryBucketsJsonBytes` …), which the property tests hold them to.
 */

const bytes = (text: string): Buffer => Buffer.from(text, 'utf8');

const NULL = bytes('null');
const TRUE = bytes('true');
const FALSE = bytes('false');
const COMMA = bytes(',');
const NEWLINE = bytes('\n');
const OPEN_BRACKET = bytes('[');
const CLOSE_BRACKET = bytes(']');

const J_TIMESTAMP = bytes('{"timestamp":');
const J_QUOTE_COUNT = bytes(',"quote_count":');
const J_FILLED = bytes(',"is_forward_filled":');
const J_BEST_BID = bytes(',"best_bid":');
const J_BEST_BID_SIZE = bytes(',"best_bid_size":');
const J_BEST_ASK = bytes(',"best_ask":');
const J_BEST_ASK_SIZE = bytes(',"best_ask_size":');
const J_MID = bytes(',"mid_price":');
const J_SPREAD = bytes(',"spread":');
const J_BID_OHLC = bytes(',"best_bid_ohlc":');
const J_ASK_OHLC = bytes(',"best_ask_ohlc":');
const J_MID_OHLC = bytes(',"mid_price_ohlc":');
const J_SPREAD_OHLC = bytes(',"spread_ohlc":');
const J_OPEN = bytes('{"open":');
const J_HIGH = bytes(',"high":');
const J_LOW = bytes(',"low":');
const J_CLOSE = bytes(',"close":');
const J_END = bytes('}');

export const CHUNK_BYTES = 1 << 20;
/** Above this length a piece is copied natively (Buffer.set); below, the call costs more than the loop. */
const NATIVE_COPY = 48;

export type SummaryBytesFormat = 'json' | 'ndjson' | 'csv';

/**
 * Writes one answer: `begin`, then `buckets` as many times as wanted (slices of one series,
 * in order), then `end`, and `parts()` are the answer's bytes in order. The JSON form is
 * `head` `[` buckets joined by `,` `]` `tail`; NDJSON one bucket object and a newline each;
 * CSV the header line (unless left out) and one row per bucket.
 */
export class SummaryBytesWriter {
  private buf: Buffer;
  private off = 0;
  private readonly out: Buffer[] = [];
  private readonly texts = new Map<string, Buffer>();
  private written = 0;
  /** The bucket whose text after its timestamp was written last, and where that text lies in `buf` (-1: not in it). */
  private last: ExactBucket | null = null;
  private restFrom = -1;
  private restTo = -1;
  private lead: Buffer | null = null;

  /**
   * `firstBytes`: the size of the first Buffer (a small answer's expected size makes it one
   * Buffer of about that size); the next ones are `chunkBytes`.
   */
  constructor(
    private readonly format: SummaryBytesFormat,
    firstBytes = CHUNK_BYTES,
    private readonly chunkBytes = CHUNK_BYTES,
  ) {
    this.buf = Buffer.allocUnsafe(Math.max(64, firstBytes));
  }

  /**
   * JSON: `head` and the opening bracket. CSV: the header line (when `header`), the `lead`
   * column names before the bucket columns; `lead.values` are written first on every row
   * (CSV-safe as given). NDJSON: nothing.
   */
  begin(head = '', options: { header?: boolean; lead?: { names: readonly string[]; values: readonly string[] } | null } = {}): this {
    if (this.format === 'json') {
      this.putText(head);
      this.put(OPEN_BRACKET);
    } else if (this.format === 'csv') {
      const lead = options.lead ?? null;
      if (options.header ?? true) {
        this.putText([...(lead?.names ?? []), ...SUMMARY_CSV_COLUMNS].join(','));
        this.put(NEWLINE);
      }
      if (lead !== null && lead.values.length > 0) this.lead = bytes(`${lead.values.join(',')},`);
    }
    return this;
  }

  /** Buckets `from` (inclusive) to `to` (exclusive) of `buckets`, after those written before. */
  buckets(buckets: readonly ExactBucket[], from = 0, to = buckets.length): this {
    if (this.format === 'csv') {
      for (let i = from; i < to; i++) this.csvRow(buckets[i]!);
    } else if (this.format === 'json') {
      for (let i = from; i < to; i++) {
        if (this.written++ > 0) this.put(COMMA);
        this.jsonBucket(buckets[i]!);
      }
    } else {
      for (let i = from; i < to; i++) {
        this.jsonBucket(buckets[i]!);
        this.put(NEWLINE);
      }
    }
    return this;
  }

  /** JSON: the closing bracket and `tail`. */
  end(tail = ''): this {
    if (this.format === 'json') {
      this.put(CLOSE_BRACKET);
      this.putText(tail);
    }
    return this;
  }

  /** The bytes written, in order (no empty part unless nothing was written: then one empty Buffer). */
  parts(): Buffer[] {
    if (this.off > 0 || this.out.length === 0) this.out.push(this.buf.subarray(0, this.off));
    this.buf = Buffer.alloc(0);
    this.off = 0;
    this.restFrom = -1;
    return this.out;
  }

  /** Everything written as one Buffer (a copy only when it took more than one). */
  whole(): Buffer {
    const parts = this.parts();
    return parts.length === 1 ? parts[0]! : Buffer.concat(parts);
  }

  private jsonBucket(b: ExactBucket): void {
    this.put(J_TIMESTAMP);
    this.int(b.timestamp);
    const last = this.last;
    if (last !== null && this.restFrom >= 0 && sameAfterTimestamp(last, b)) {
      // A run of forward-filled buckets: the same text after the timestamp, copied from the last one.
      const n = this.restTo - this.restFrom;
      if (this.off + n <= this.buf.length) {
        this.buf.copyWithin(this.off, this.restFrom, this.restTo);
        this.restFrom = this.off;
        this.off += n;
        this.restTo = this.off;
        return;
      }
    }
    const from = this.off;
    const at = this.out.length;
    this.put(J_QUOTE_COUNT);
    this.int(b.quote_count);
    this.put(J_FILLED);
    this.put(b.is_forward_filled ? TRUE : FALSE);
    this.put(J_BEST_BID);
    this.value(b.best_bid);
    this.put(J_BEST_BID_SIZE);
    this.value(b.best_bid_size);
    this.put(J_BEST_ASK);
    this.value(b.best_ask);
    this.put(J_BEST_ASK_SIZE);
    this.value(b.best_ask_size);
    this.put(J_MID);
    this.value(b.mid_price);
    this.put(J_SPREAD);
    this.value(b.spread);
    this.put(J_BID_OHLC);
    this.ohlc(b.best_bid_ohlc);
    this.put(J_ASK_OHLC);
    this.ohlc(b.best_ask_ohlc);
    this.put(J_MID_OHLC);
    this.ohlc(b.mid_price_ohlc);
    this.put(J_SPREAD_OHLC);
    this.ohlc(b.spread_ohlc);
    this.put(J_END);
    this.last = b;
    // Reusable only when it lies whole in the current Buffer.
    this.restFrom = this.out.length === at ? from : -1;
    this.restTo = this.off;
  }

  private ohlc(o: Ohlc | null): void {
    if (o === null) {
      this.put(NULL);
      return;
    }
    this.put(J_OPEN);
    this.value(o.open);
    this.put(J_HIGH);
    this.value(o.high);
    this.put(J_LOW);
    this.value(o.low);
    this.put(J_CLOSE);
    this.value(o.close);
    this.put(J_END);
  }

  private csvRow(b: ExactBucket): void {
    if (this.lead !== null) this.put(this.lead);
    this.int(b.timestamp);
    this.put(COMMA);
    this.int(b.quote_count);
    this.put(COMMA);
    this.put(b.is_forward_filled ? TRUE : FALSE);
    this.cell(b.best_bid);
    this.cell(b.best_bid_size);
    this.cell(b.best_ask);
    this.cell(b.best_ask_size);
    this.cell(b.mid_price);
    this.cell(b.spread);
    this.csvOhlc(b.best_bid_ohlc);
    this.csvOhlc(b.best_ask_ohlc);
    this.csvOhlc(b.mid_price_ohlc);
    this.csvOhlc(b.spread_ohlc);
    this.put(NEWLINE);
  }

  private cell(v: string | null): void {
    this.put(COMMA);
    if (v !== null) this.put(this.text(v));
  }

  private csvOhlc(o: Ohlc | null): void {
    if (o === null) {
      this.put(COMMA);
      this.put(COMMA);
      this.put(COMMA);
      this.put(COMMA);
      return;
    }
    this.cell(o.open);
    this.cell(o.high);
    this.cell(o.low);
    this.cell(o.close);
  }

  /** A decimal text as it stands (a JSON number), or null. */
  private value(v: string | null): void {
    this.put(v === null ? NULL : this.text(v));
  }

  /** The UTF-8 bytes of a text, made once per writer. */
  private text(v: string): Buffer {
    let b = this.texts.get(v);
    if (b === undefined) {
      b = bytes(v);
      this.texts.set(v, b);
    }
    return b;
  }

  private putText(text: string): void {
    if (text !== '') this.put(bytes(text));
  }

  /** A number as `${n}` writes it: digits for a non-negative safe integer, else its text. */
  private int(n: number): void {
    if (!(n >= 0 && n <= Number.MAX_SAFE_INTEGER && Math.floor(n) === n)) {
      this.put(bytes(String(n)));
      return;
    }
    let len = 1;
    for (let t = n; t >= 10; len++) t = Math.floor(t / 10);
    if (this.off + len > this.buf.length) this.next(len);
    const buf = this.buf;
    let o = this.off + len;
    this.off = o;
    do {
      const q = Math.floor(n / 10);
      buf[--o] = 48 + (n - q * 10);
      n = q;
    } while (n > 0);
  }

  private put(src: Buffer): void {
    const n = src.length;
    if (this.off + n > this.buf.length) this.next(n);
    const buf = this.buf;
    const o = this.off;
    if (n > NATIVE_COPY) buf.set(src, o);
    else for (let i = 0; i < n; i++) buf[o + i] = src[i]!;
    this.off = o + n;
  }

  /** The current Buffer is full: kept as a part, and a new one of at least `n` bytes started. */
  private next(n: number): void {
    if (this.off > 0) this.out.push(this.buf.subarray(0, this.off));
    this.buf = Buffer.allocUnsafe(Math.max(this.chunkBytes, n));
    this.off = 0;
    this.restFrom = -1;
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
export const SUMMARY_CSV_COLUMNS: readonly string[] = [
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

/** Bytes per bucket to expect: 465–535 for a JSON bucket with every field set, ~340 for a CSV row. */
export const JSON_BUCKET_BYTES = 560;
export const CSV_BUCKET_BYTES = 340;
