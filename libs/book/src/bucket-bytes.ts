import { VALUES_PER_BUCKET, type ColumnSeries } from './column-layout.ts';
import type { ExactBucket, Ohlc } from './bucketing.ts';

/**
 * The bytes of summary answers (JSON, NDJSON, CSV), written straight into Buffers: no text
 * per bucket, no string joined and then encoded.
 *
 * Every piece of text is turned into bytes once: the fixed parts (`{"timestamp":`,
 * `,"best_bid":` …) when this module loads, each distinct value (a canonical decimal; an
 * answer has a few hundred or thousand distinct ones) the first time a writer meets it, and
 * integers digit by digit. Short pieces are copied by a plain loop (a series' value segments
 * four bytes at a time, `wordCopy`), long ones natively: a process that loads ioredis has
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

/** A bucket after its timestamp: quote_count, is_forward_filled, six closes, four OHLCs of four values. */
const BUCKET_SEGMENTS = 24;
/** The six closes' keys, and the four OHLCs' (in a bucket's order). */
const CLOSE_KEYS = [J_BEST_BID, J_BEST_BID_SIZE, J_BEST_ASK, J_BEST_ASK_SIZE, J_MID, J_SPREAD];
const OHLC_KEYS = [J_BID_OHLC, J_ASK_OHLC, J_MID_OHLC, J_SPREAD_OHLC];
/** Per OHLC, the close (0–5) whose value a forward-filled bucket's OHLC is flat at. */
const CLOSE_OF_OHLC = [0, 2, 4, 5];
/** A JSON bucket's bytes other than its values and integers, with its separator (comma or newline). */
const SERIES_FIXED_BYTES =
  2 +
  J_TIMESTAMP.length +
  J_QUOTE_COUNT.length +
  J_FILLED.length +
  FALSE.length +
  CLOSE_KEYS.reduce((a, b) => a + b.length, 0) +
  OHLC_KEYS.reduce((a, b) => a + b.length, 0) +
  4 * (J_OPEN.length + J_HIGH.length + J_LOW.length + J_CLOSE.length + 1) +
  J_END.length;

export const CHUNK_BYTES = 1 << 20;
/** A JSON bucket after its timestamp: quote_count, is_forward_filled, six closes, four OHLC objects of four values. */
const SEGMENTS = 26;
/**
 * JSON buckets are written a block at a time, segment by segment (copying what repeats from
 * the bucket before) while at least COPIED_SHARE of the segments were copied in the block
 * before, else as text (textBlock), trying segments again every RETRY_BLOCKS text blocks.
 */
const BLOCK_BUCKETS = 256;
const COPIED_SHARE = 0.7;
const RETRY_BLOCKS = 8;
/** The value of the segments of an absent OHLC object. */
const ABSENT = Symbol('absent');
/**
 * The bytes of the value texts met, shared by every writer: a day's answer holds a few
 * thousand distinct decimals (2,279 at R=60 for a busy asset, one every 0.6 buckets), and
 * encoding each anew (Buffer.from, a native call and an allocation) cost as much as writing
 * the whole answer at R=60. Prices repeat across answers; emptied when it reaches MAX_TEXTS.
 */
const TEXTS = new Map<string, Buffer>();
const MAX_TEXTS = 100_000;
/**
 * The value segments (see `series`) of each dictionary of columns written (bucket-columns.ts),
 * made as they are first met and kept as long as the dictionary is: the summary reader keeps
 * a day's columns and answers from them again and again (at every resolution merged from
 * them, which share the dictionary), so each entry's segments are made once, not looked up
 * in TEXTS and written key and value apart in every answer (together 1.1-1.2x the writer at
 * R = 60, 7 and 1 on the busiest asset's day).
 */
const DICT_SEGMENTS = new WeakMap<readonly string[], DictSegments>();

/**
 * A value segment's kind: segments 2-7 (the closes) are kinds 0-5, the first segment of OHLC
 * q (its key, `{"open":` and the open) kind 6 + q, an OHLC's high, low and close (with the
 * closing brace) kinds 10-12.
 */
const SEGMENT_KINDS = 13;
/** Per kind, the bytes before the value. */
const SEGMENT_PREFIX: readonly Buffer[] = [...CLOSE_KEYS, ...OHLC_KEYS.map((k) => Buffer.concat([k, J_OPEN])), J_HIGH, J_LOW, J_CLOSE];
/** Per kind, the bytes of the segment other than the value's. */
const SEGMENT_FIXED = Int32Array.from(SEGMENT_PREFIX, (b, kind) => b.length + (kind === SEGMENT_KINDS - 1 ? 1 : 0));
/** Per segment (2-23; −1 for the two before), its kind. */
const SEGMENT_KIND = Int8Array.from({ length: BUCKET_SEGMENTS }, (_, g) => (g < 2 ? -1 : g < 8 ? g - 2 : (g - 8) % 4 === 0 ? 6 + ((g - 8) >> 2) : 9 + ((g - 8) % 4)));
/** Per segment, its bytes where its value is null: a close's key and `null`, an OHLC's key and `null` in its first segment and nothing in the others. */
const NULL_SEGMENT: readonly Buffer[] = Array.from({ length: BUCKET_SEGMENTS }, (_, g) =>
  g >= 2 && g < 8 ? Buffer.concat([CLOSE_KEYS[g - 2]!, NULL]) : g >= 8 && (g - 8) % 4 === 0 ? Buffer.concat([OHLC_KEYS[(g - 8) >> 2]!, NULL]) : Buffer.alloc(0),
);

/** The value segments of one dictionary's entries, one after the other in `slab`. */
class DictSegments {
  /** Per entry and kind (entry * SEGMENT_KINDS + kind): where the segment starts in `slab`, −1 until made. */
  readonly at: Int32Array;
  /** Per entry, its text's UTF-8 length (set with its first segment). */
  readonly bytes: Int32Array;
  slab = Buffer.allocUnsafe(4096);
  view = new DataView(this.slab.buffer, this.slab.byteOffset, this.slab.length);
  private used = 0;

  constructor(
    readonly entries: number,
    /** The longest entry, in UTF-16 units. */
    readonly longest: number,
  ) {
    this.at = new Int32Array(entries * SEGMENT_KINDS).fill(-1);
    this.bytes = new Int32Array(entries);
  }

  /** Makes the segment of entry `key` (whose text's bytes are `value`) of kind `kind`; returns its start in `slab`. */
  make(key: number, kind: number, value: Buffer): number {
    const n = SEGMENT_FIXED[kind]! + value.length;
    if (this.used + n > this.slab.length) {
      const bigger = Buffer.allocUnsafe(Math.max(2 * this.slab.length, this.used + n));
      this.slab.copy(bigger, 0, 0, this.used);
      this.slab = bigger;
      this.view = new DataView(bigger.buffer, bigger.byteOffset, bigger.length);
    }
    const start = this.used;
    let o = copyInto(this.slab, start, SEGMENT_PREFIX[kind]!);
    o = copyInto(this.slab, o, value);
    if (kind === SEGMENT_KINDS - 1) this.slab[o++] = 0x7d;
    this.used = o;
    this.bytes[key] = value.length;
    this.at[key * SEGMENT_KINDS + kind] = start;
    return start;
  }
}

/**
 * Buffers of answers already sent, given back (`releaseSummaryParts`) and written again: a
 * fresh MiB is 256 pages the kernel must fault in on first write, and on a virtual machine
 * that cost more than writing the answer into it (a day at R=1, 37 parts: about 150 ms of
 * faults against 3 ms to fill warm pages). At most FREE_CHUNKS kept.
 */
const FREE: Buffer[] = [];
const FREE_CHUNKS = 48;
/** The Buffers the writers took at CHUNK_BYTES, by their memory: only these are taken back. */
const POOLED = new WeakMap<ArrayBufferLike, Buffer>();

function takeChunk(): Buffer {
  const free = FREE.pop();
  if (free !== undefined) return free;
  const b = Buffer.allocUnsafeSlow(CHUNK_BYTES);
  POOLED.set(b.buffer, b);
  return b;
}

/**
 * Gives the Buffers behind `parts` (a writer's `parts()`) back for later answers. Only once
 * nothing reads them any more: the answer was sent whole or abandoned, and no one keeps it.
 * Parts not made by a writer at the default Buffer size are left alone.
 */
export function releaseSummaryParts(parts: readonly Buffer[]): void {
  for (const p of parts) {
    const b = POOLED.get(p.buffer);
    if (b !== undefined && FREE.length < FREE_CHUNKS && !FREE.includes(b)) FREE.push(b);
  }
}

/** Pooled Buffers given back and not taken again yet (what tests observe of the pool). */
export function summaryChunksFree(): number {
  return FREE.length;
}

/** Above this length a piece is copied natively (Buffer.set); below, the call costs more than the loop. */
const NATIVE_COPY = 48;

/** `src` into `buf` at `off` (room made by the caller); returns the offset after it. */
function copyInto(buf: Buffer, off: number, src: Buffer): number {
  const n = src.length;
  if (n > NATIVE_COPY) buf.set(src, off);
  else for (let i = 0; i < n; i++) buf[off + i] = src[i]!;
  return off + n;
}

/** A number as `${n}` writes it, into `buf` at `off` (room made by the caller); returns the offset after it. */
function intInto(buf: Buffer, off: number, n: number): number {
  if (n >= 0 && n <= 0x7fffffff && (n | 0) === n) return smallIntInto(buf, off, n);
  if (!(n >= 0 && n <= Number.MAX_SAFE_INTEGER && Math.floor(n) === n)) return off + buf.write(String(n), off, 'latin1');
  // A timestamp in ms: the digits above the last eight, then those eight (in 32-bit arithmetic).
  const hi = Math.floor(n / 1e8);
  let lo = n - hi * 1e8;
  off = smallIntInto(buf, off, hi);
  for (let o = off + 7; o >= off; o--) {
    const q = (lo / 10) | 0;
    buf[o] = 48 + lo - q * 10;
    lo = q;
  }
  return off + 8;
}

/** `intInto` of an integer from 0 to 2^31 − 1. */
function smallIntInto(buf: Buffer, off: number, n: number): number {
  const len = n < 10 ? 1 : n < 100 ? 2 : n < 1000 ? 3 : n < 10000 ? 4 : n < 100000 ? 5 : n < 1000000 ? 6 : n < 10000000 ? 7 : n < 100000000 ? 8 : n < 1000000000 ? 9 : 10;
  let o = off + len;
  do {
    const q = (n / 10) | 0;
    buf[--o] = 48 + n - q * 10;
    n = q;
  } while (n > 0);
  return off + len;
}

/**
 * `n` bytes at `i` of `s` to `o` of `d` (room made by the caller; the two ranges apart), four
 * at a time through the views: a value segment is some 10 to 40 bytes, and copying them one
 * by one was half of writing a day at R=7; a native copy costs more than the loop at that size.
 */
function wordCopy(d: DataView, o: number, s: DataView, i: number, n: number): void {
  let k = 0;
  for (; k + 8 <= n; k += 8) {
    d.setInt32(o + k, s.getInt32(i + k, true), true);
    d.setInt32(o + k + 4, s.getInt32(i + k + 4, true), true);
  }
  if (k + 4 <= n) {
    d.setInt32(o + k, s.getInt32(i + k, true), true);
    k += 4;
  }
  for (; k < n; k++) d.setUint8(o + k, s.getUint8(i + k));
}

/**
 * Segments `from` to `to` (exclusive) of the bucket before, which start at `prevAt` in `buf`
 * (`dv` its view), copied to `off`; their starts there noted in `curAt`. Returns the offset after them.
 */
function copyRun(buf: Buffer, dv: DataView, off: number, prevAt: Int32Array, curAt: Int32Array, from: number, to: number): number {
  const src = prevAt[from]!;
  const n = prevAt[to]! - src;
  if (n > NATIVE_COPY) buf.copyWithin(off, src, src + n);
  else wordCopy(dv, off, dv, src, n);
  for (let g = from; g < to; g++) curAt[g] = off + (prevAt[g]! - src);
  return off + n;
}

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
  private readonly slotText: (string | null)[] = new Array<string | null>(SEGMENTS).fill(null);
  private readonly slotBytes: Buffer[] = new Array<Buffer>(SEGMENTS).fill(NULL);
  private written = 0;
  /** The segments of the bucket written last (see jsonBucket): their values, and where each starts in `buf` (the last entry: where the last ends). */
  private readonly vals: unknown[] = new Array<unknown>(SEGMENTS).fill(ABSENT);
  private prev = new Array<number>(SEGMENTS + 1).fill(0);
  private cur = new Array<number>(SEGMENTS + 1).fill(0);
  /** The first segment of the run to copy from the bucket before (-1: none). */
  private run = -1;
  /** Whether the bucket before lies whole in `buf`, so that its segments can be copied. */
  private reuse = false;
  /** Writing buckets segment by segment (true) or as text per block; segments copied so far; blocks written as text. */
  private copying = true;
  private trial = true;
  private copied = 0;
  private textBlocks = 0;
  private readonly texts = new BucketTexts();
  /** Counts the Buffers started. */
  private gen = 0;
  private lead: Buffer | null = null;

  /**
   * `firstBytes`: the size of the first Buffer (a small answer's expected size makes it one
   * Buffer of about that size); the next ones are `chunkBytes`.
   */
  constructor(
    private readonly format: SummaryBytesFormat,
    firstBytes = CHUNK_BYTES,
    private readonly chunkBytes = CHUNK_BYTES,
    /** Buckets per block (see `buckets`); other than the default only to test the switch. */
    private readonly block = BLOCK_BUCKETS,
  ) {
    // An answer of a quarter of a Buffer or more starts in a whole one, reused where one was given back.
    this.buf = chunkBytes === CHUNK_BYTES && firstBytes >= CHUNK_BYTES / 4 ? takeChunk() : Buffer.allocUnsafe(Math.max(64, firstBytes));
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
    // The segment copying of `series` knows nothing of what is written here.
    this.seriesPrev = false;
    if (this.format === 'csv') {
      for (let i = from; i < to; i++) this.csvRow(buckets[i]!);
      return this;
    }
    const json = this.format === 'json';
    for (let at = from, end = from; at < to; at = end) {
      // A block tried after text blocks (or the first) is short: a trial that fails costs little.
      end = Math.min(to, at + (this.copying && this.trial ? Math.max(1, this.block >> 3) : this.block));
      if (this.copying) {
        const before = this.copied;
        for (let i = at; i < end; i++) {
          if (json) {
            if (this.written++ > 0) this.put(COMMA);
            this.jsonBucket(buckets[i]!);
          } else {
            this.jsonBucket(buckets[i]!);
            this.put(NEWLINE);
          }
        }
        this.copying = this.copied - before >= COPIED_SHARE * SEGMENTS * (end - at);
        this.trial = !this.copying;
      } else {
        this.textBlock(buckets, at, end, json);
        // Now and then a block is tried the other way again: the series may have become quieter.
        if (++this.textBlocks % RETRY_BLOCKS === 0) this.copying = true;
      }
    }
    return this;
  }

  /**
   * Buckets `from` to `to` of a series kept as columns (bucket-columns.ts), JSON or NDJSON:
   * the bytes `buckets(seriesBuckets(s, from, to))` writes (tested), with no object per
   * bucket. A bucket after its timestamp is the BUCKET_SEGMENTS segments of `jsonBucket`, each named
   * by a number (`curKeys`): a dictionary index, the quote count, whether filled. A
   * segment named as in the bucket written just before is the same bytes, so each run of
   * such segments is copied from there (at R=1 nine in ten of a busy asset's values, and the
   * whole of a forward-filled bucket after another filled from the same row); each of the
   * others is one copy of the segment made for its dictionary entry (DICT_SEGMENTS). Each
   * bucket is written into room made for the largest one the answer can hold, with the
   * offsets kept in locals: no check per piece.
   */
  series(s: ColumnSeries, from = 0, to = s.n): this {
    if (this.format === 'csv') throw new Error('series: CSV is written from bucket objects');
    if (from >= to) return this;
    const json = this.format === 'json';
    const { dict, v, count } = s.columns;
    let segs = DICT_SEGMENTS.get(dict);
    // (A dictionary is not added to once written; one that was is taken as a new one.)
    if (segs === undefined || segs.entries !== dict.length) {
      let longest = 0;
      for (let k = 0; k < dict.length; k++) if (dict[k]!.length > longest) longest = dict[k]!.length;
      DICT_SEGMENTS.set(dict, (segs = new DictSegments(dict.length, longest)));
    }
    const segAt = segs.at;
    const segBytes = segs.bytes;
    // A carried close is named −2 − its place (−1 where it is null).
    const carried: Buffer[] = s.carried.map((t) => (t === null ? NULL : this.text(t)));
    let longest = segs.longest;
    for (const t of s.carried) if (t !== null && t.length > longest) longest = t.length;
    // UTF-8 is at most 3 bytes per UTF-16 unit, a value at least `null`; numbers print in at most 24 characters.
    const room = SERIES_FIXED_BYTES + VALUES_PER_BUCKET * Math.max(NULL.length, 3 * longest) + 2 * 24;
    const r = s.resolutionMs;
    const rows = s.rows;
    const filledAt = s.filled;
    let buf = this.buf;
    let dv = new DataView(buf.buffer, buf.byteOffset, buf.length);
    let off = this.off;
    for (let k = from; k < to; k++) {
      if (buf.length - off < room) {
        this.off = off;
        this.next(room);
        buf = this.buf;
        dv = new DataView(buf.buffer, buf.byteOffset, buf.length);
        off = this.off;
      }
      if (json) {
        if (this.written++ > 0) buf[off++] = 0x2c;
      }
      off = copyInto(buf, off, J_TIMESTAMP);
      off = intInto(buf, off, s.firstStart + k * r);
      // The names of this bucket's segments (see jsonBucket's order).
      const row = rows[k]!;
      const filled = filledAt[k] === 1;
      const o = row * VALUES_PER_BUCKET;
      const cur = this.curKeys;
      cur[0] = filled ? 0 : count[row]!;
      cur[1] = filled ? 1 : 0;
      if (row === -1) {
        for (let i = 0; i < 6; i++) cur[2 + i] = s.carried[i] === null ? -1 : -2 - i;
      } else {
        for (let i = 0; i < 6; i++) cur[2 + i] = v[o + i]!;
      }
      for (let q = 0; q < 4; q++) {
        const at = 8 + 4 * q;
        if (filled) {
          // Flat at the close of the series: best_bid, best_ask, mid_price, spread.
          const x = cur[2 + CLOSE_OF_OHLC[q]!]!;
          cur[at] = cur[at + 1] = cur[at + 2] = cur[at + 3] = x;
        } else if (v[o + 6 + 4 * q] === -1) {
          cur[at] = cur[at + 1] = cur[at + 2] = cur[at + 3] = -1;
        } else {
          cur[at] = v[o + 6 + 4 * q]!;
          cur[at + 1] = v[o + 7 + 4 * q]!;
          cur[at + 2] = v[o + 8 + 4 * q]!;
          cur[at + 3] = v[o + 9 + 4 * q]!;
        }
      }
      const reuse = this.seriesGen === this.gen && this.seriesPrev;
      const prev = this.prevKeys;
      const prevAt = this.prevSeg;
      const curAt = this.curSeg;
      let run = -1;
      for (let g = 0; g < BUCKET_SEGMENTS; g++) {
        const key = cur[g]!;
        if (reuse && key === prev[g]) {
          if (run < 0) run = g;
          continue;
        }
        if (run >= 0) {
          off = copyRun(buf, dv, off, prevAt, curAt, run, g);
          run = -1;
        }
        curAt[g] = off;
        if (g === 0) {
          off = copyInto(buf, off, J_QUOTE_COUNT);
          off = intInto(buf, off, key);
        } else if (g === 1) {
          off = copyInto(buf, off, J_FILLED);
          off = copyInto(buf, off, key === 1 ? TRUE : FALSE);
        } else if (key >= 0) {
          const kind = SEGMENT_KIND[g]!;
          let st = segAt[key * SEGMENT_KINDS + kind]!;
          if (st < 0) st = segs.make(key, kind, this.text(dict[key]!));
          const n = SEGMENT_FIXED[kind]! + segBytes[key]!;
          if (n > NATIVE_COPY) segs.slab.copy(buf, off, st, st + n);
          else wordCopy(dv, off, segs.view, st, n);
          off += n;
        } else if (key === -1) {
          // Null: the key and `null`; inside an OHLC nothing (written whole by its first segment).
          off = copyInto(buf, off, NULL_SEGMENT[g]!);
        } else {
          // A carried close (a filled bucket before the first observation).
          const kind = SEGMENT_KIND[g]!;
          off = copyInto(buf, off, SEGMENT_PREFIX[kind]!);
          off = copyInto(buf, off, carried[-2 - key]!);
          if (kind === SEGMENT_KINDS - 1) buf[off++] = 0x7d;
        }
      }
      if (run >= 0) off = copyRun(buf, dv, off, prevAt, curAt, run, BUCKET_SEGMENTS);
      curAt[BUCKET_SEGMENTS] = off;
      buf[off++] = 0x7d;
      if (!json) buf[off++] = 0x0a;
      this.curKeys = prev;
      this.prevKeys = cur;
      this.curSeg = prevAt;
      this.prevSeg = curAt;
      this.seriesPrev = true;
      this.seriesGen = this.gen;
    }
    this.off = off;
    // The segment copying of `buckets` knows nothing of what was written here.
    this.reuse = false;
    return this;
  }

  /** The segment names of the series bucket written last and of the one being written, and where their segments start in `buf`. */
  private prevKeys = new Float64Array(BUCKET_SEGMENTS);
  private curKeys = new Float64Array(BUCKET_SEGMENTS);
  private prevSeg = new Int32Array(BUCKET_SEGMENTS + 1);
  private curSeg = new Int32Array(BUCKET_SEGMENTS + 1);
  /** Whether a series bucket was written last, and in which Buffer (`gen`). */
  private seriesPrev = false;
  private seriesGen = -1;

  /**
   * Buckets `from` to `to` as one text (a template per bucket, as the earlier writer did),
   * encoded in one native call: where few values repeat from one bucket to the next (R=60:
   * half of them), this costs less than writing them piece by piece.
   */
  private textBlock(buckets: readonly ExactBucket[], from: number, to: number, json: boolean): void {
    let text = '';
    for (let i = from; i < to; i++) {
      if (json) {
        if (this.written++ > 0) text += ',';
        text += this.texts.of(buckets[i]!);
      } else {
        text += `${this.texts.of(buckets[i]!)}\n`;
      }
    }
    const n = Buffer.byteLength(text, 'utf8');
    if (this.off + n > this.buf.length) this.next(n);
    this.off += this.buf.write(text, this.off, n, 'utf8');
    // The segments of the last bucket were not tracked: the next one is written whole.
    this.reuse = false;
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
    this.reuse = false;
    this.seriesPrev = false;
    return this.out;
  }

  /** Everything written as one Buffer (a copy only when it took more than one). */
  whole(): Buffer {
    const parts = this.parts();
    return parts.length === 1 ? parts[0]! : Buffer.concat(parts);
  }

  /**
   * One bucket's JSON object. After its timestamp the text is 26 segments, each the text of
   * one value with the key before it (an absent OHLC object is `,"…_ohlc":null` and three
   * empty segments). A segment whose value is that of the bucket before (`===`: the same
   * decimal text) is the same bytes, so each run of such segments is copied from where the
   * bucket before was written, in one native copy. At R=1 nine values in ten of a busy
   * asset are unchanged from the second before, and a forward-filled run is all copies.
   */
  private jsonBucket(b: ExactBucket): void {
    this.put(J_TIMESTAMP);
    this.int(b.timestamp);
    const gen = this.gen;
    if (this.keep(0, b.quote_count)) {
      this.put(J_QUOTE_COUNT);
      this.int(b.quote_count);
    }
    if (this.keep(1, b.is_forward_filled)) {
      this.put(J_FILLED);
      this.put(b.is_forward_filled ? TRUE : FALSE);
    }
    this.close(2, J_BEST_BID, b.best_bid);
    this.close(3, J_BEST_BID_SIZE, b.best_bid_size);
    this.close(4, J_BEST_ASK, b.best_ask);
    this.close(5, J_BEST_ASK_SIZE, b.best_ask_size);
    this.close(6, J_MID, b.mid_price);
    this.close(7, J_SPREAD, b.spread);
    this.ohlc(8, J_BID_OHLC, b.best_bid_ohlc);
    this.ohlc(12, J_ASK_OHLC, b.best_ask_ohlc);
    this.ohlc(16, J_MID_OHLC, b.mid_price_ohlc);
    this.ohlc(20, J_SPREAD_OHLC, b.spread_ohlc);
    this.flushRun(SEGMENTS);
    this.cur[SEGMENTS] = this.off;
    this.put(J_END);
    // The next bucket copies from this one only if all of it lies in the current Buffer.
    this.reuse = this.gen === gen;
    const t = this.prev;
    this.prev = this.cur;
    this.cur = t;
  }

  private close(k: number, key: Buffer, v: string | null): void {
    if (this.keep(k, v)) {
      this.put(key);
      this.put(v === null ? NULL : this.bytesAt(k, v));
    }
  }

  private ohlc(k: number, key: Buffer, o: Ohlc | null): void {
    if (o === null) {
      if (this.keep(k, ABSENT)) {
        this.put(key);
        this.put(NULL);
      }
      this.keep(k + 1, ABSENT);
      this.keep(k + 2, ABSENT);
      this.keep(k + 3, ABSENT);
      return;
    }
    if (this.keep(k, o.open)) {
      this.put(key);
      this.put(J_OPEN);
      this.value(k, o.open);
    }
    if (this.keep(k + 1, o.high)) {
      this.put(J_HIGH);
      this.value(k + 1, o.high);
    }
    if (this.keep(k + 2, o.low)) {
      this.put(J_LOW);
      this.value(k + 2, o.low);
    }
    if (this.keep(k + 3, o.close)) {
      this.put(J_CLOSE);
      this.value(k + 3, o.close);
      this.put(J_END);
    }
  }

  /**
   * Segment `k` has value `v`: false when it is the previous bucket's (it joins the run to
   * copy), true when the caller is to write it (any run before it is copied first).
   */
  private keep(k: number, v: unknown): boolean {
    if (this.reuse && this.vals[k] === v) {
      this.copied++;
      if (this.run < 0) this.run = k;
      return false;
    }
    this.flushRun(k);
    this.vals[k] = v;
    this.cur[k] = this.off;
    return true;
  }

  /** Copies the pending run of unchanged segments (up to segment `k`, exclusive) from the bucket before. */
  private flushRun(k: number): void {
    const r = this.run;
    if (r < 0) return;
    this.run = -1;
    const prev = this.prev;
    const from = prev[r]!;
    const to = prev[k]!;
    const n = to - from;
    let dest = this.off;
    if (dest + n <= this.buf.length) {
      this.buf.copyWithin(dest, from, to);
      this.off = dest + n;
    } else {
      // Past the end of this Buffer: written into the next one (the source stays in this one).
      const src = this.buf.subarray(from, to);
      this.next(n);
      dest = this.off;
      this.buf.set(src, dest);
      this.off = dest + n;
    }
    const cur = this.cur;
    for (let j = r; j < k; j++) cur[j] = dest + (prev[j]! - from);
  }


  private csvRow(b: ExactBucket): void {
    if (this.lead !== null) this.put(this.lead);
    this.int(b.timestamp);
    this.put(COMMA);
    this.int(b.quote_count);
    this.put(COMMA);
    this.put(b.is_forward_filled ? TRUE : FALSE);
    this.cell(0, b.best_bid);
    this.cell(1, b.best_bid_size);
    this.cell(2, b.best_ask);
    this.cell(3, b.best_ask_size);
    this.cell(4, b.mid_price);
    this.cell(5, b.spread);
    this.csvOhlc(6, b.best_bid_ohlc);
    this.csvOhlc(10, b.best_ask_ohlc);
    this.csvOhlc(14, b.mid_price_ohlc);
    this.csvOhlc(18, b.spread_ohlc);
    this.put(NEWLINE);
  }

  private cell(slot: number, v: string | null): void {
    this.put(COMMA);
    if (v !== null) this.put(this.bytesAt(slot, v));
  }

  private csvOhlc(slot: number, o: Ohlc | null): void {
    if (o === null) {
      this.put(COMMA);
      this.put(COMMA);
      this.put(COMMA);
      this.put(COMMA);
      return;
    }
    this.cell(slot, o.open);
    this.cell(slot + 1, o.high);
    this.cell(slot + 2, o.low);
    this.cell(slot + 3, o.close);
  }

  /** A decimal text as it stands (a JSON number), or null; `slot`: which of the bucket's 22 values it is. */
  private value(slot: number, v: string | null): void {
    this.put(v === null ? NULL : this.bytesAt(slot, v));
  }

  /**
   * The bytes of `v`, the value in `slot` (a segment number, see jsonBucket; CSV: 0–21):
   * most often the same text as that slot's value in the bucket before (9 in 10 at R=1 for a
   * busy asset, half at R=60), which is one comparison instead of a lookup.
   */
  private bytesAt(slot: number, v: string): Buffer {
    if (this.slotText[slot] === v) return this.slotBytes[slot]!;
    const b = this.text(v);
    this.slotText[slot] = v;
    this.slotBytes[slot] = b;
    return b;
  }

  /** The UTF-8 bytes of a text (TEXTS). */
  private text(v: string): Buffer {
    let b = TEXTS.get(v);
    if (b === undefined) {
      if (TEXTS.size >= MAX_TEXTS) TEXTS.clear();
      b = bytes(v);
      TEXTS.set(v, b);
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
    this.buf = this.chunkBytes === CHUNK_BYTES && n <= CHUNK_BYTES ? takeChunk() : Buffer.allocUnsafe(Math.max(this.chunkBytes, n));
    this.off = 0;
    this.gen++;
    // What was written before is in the Buffer before: nothing more is copied from it.
    this.reuse = false;
  }
}

const ohlcJson = (x: Ohlc | null): string => (x === null ? 'null' : `{"open":${x.open},"high":${x.high},"low":${x.low},"close":${x.close}}`);

/**
 * JSON text of buckets, one template per bucket (a canonical decimal, `null`, a boolean and
 * an integer print in a template as in JSON); the text after the timestamp is reused while
 * it cannot have changed (a run of forward-filled buckets shares its closes and OHLC objects).
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
