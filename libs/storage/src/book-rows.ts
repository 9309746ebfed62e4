import type { BookRecord, ChangeEntries, ClaimHashRef } from '@booktape/book';
import type { ExchangeAEvent, ExchangeBRecord, PriceChange, PriceLevel, Venue } from '@booktape/domain';
import { A_HASH_SQL, formatScaled, SCALE_ABSENT, SCALE_NULL } from './raw-codec.ts';

/**
 * What the book readers (the rollup, the book at any instant, book snapshots) read of a raw
 * row: the typed columns a book and its cross-checks need, in ClickHouse's RowBinary format
 * (BOOK_ROW_FORMAT), decoded here straight into book records: no JSON is made by the engine
 * or parsed here. Not the served `payload`, whose rebuild in the engine costs more than the
 * read itself. A row with a residue carries it, and is read from it (the one JSON parse
 * left, for records the typed columns do not hold).
 *
 * Measured on a 1,000,000-event asset-day (docs/BENCHMARKS.md, "Reads on typed columns"):
 * the engine spends 1.1 s of CPU on these columns as RowBinary against 2.7 s for the same
 * columns as one toJSONString per row, and decoding the bytes here costs a fraction of
 * JSON.parse on that text.
 */
export const BOOK_ROW_FORMAT = 'RowBinary';

const LEVELS = (side: string) => `${side}_price, ${side}_price_scale, ${side}_size, ${side}_size_scale`;

/** The SELECT list of a book row, per venue, in the order the decoders below read it. */
export const BOOK_ROW_COLUMNS: Record<Venue, string> = {
  // Int64 ms, String, String, String, 4 × (Array(Int64), Array(UInt8)) × 2 (bids, asks),
  // then the changes: price, scale, side (Enum8: Int8), size, scale, hash, best bid and ask with scales.
  'exchange-a': `toUnixTimestamp64Milli(event_ts), toString(event_type), ${A_HASH_SQL}, residue, ${LEVELS('bid')}, ${LEVELS('ask')},
    chg_price, chg_price_scale, chg_side, chg_size, chg_size_scale, chg_hash,
    chg_best_bid, chg_best_bid_scale, chg_best_ask, chg_best_ask_scale`,
  // Int64 ms, String, String, Nullable(Int64) × 3, UInt8, levels, UInt8, levels, String, Int64, UInt8, Int64, UInt8.
  'exchange-b': `toUnixTimestamp64Milli(event_ts), toString(record_type), residue, sid, seq, expected_seq,
    yes_null, ${LEVELS('yes')}, no_null, ${LEVELS('no')}, toString(side), price, price_scale, delta, delta_scale`,
};

/**
 * BOOK_ROW_COLUMNS for a reader that wants a book's levels only (the book at an instant, book
 * snapshots): the same layout, read by the same decoders, with exchange A's hashes and
 * best-bid / best-ask claims not read but made empty in the engine (no hash, claims absent,
 * SCALE_ABSENT), one per change entry. The book engine reads them only for the checks
 * (`onChange`), never for its levels, so the books are the same; what the engine does not
 * read is the hash strings, the widest of the columns (a quarter of the read of a
 * checkpoint interval). A row kept in its residue is read from it, whole, as before.
 */
export const BOOK_LEVEL_COLUMNS: Record<Venue, string> = {
  'exchange-a': `toUnixTimestamp64Milli(event_ts), toString(event_type), '', residue, ${LEVELS('bid')}, ${LEVELS('ask')},
    chg_price, chg_price_scale, chg_side, chg_size, chg_size_scale, arrayMap(x -> '', chg_price),
    arrayMap(x -> toInt64(0), chg_price), arrayMap(x -> toUInt8(${SCALE_ABSENT}), chg_price), arrayMap(x -> toInt64(0), chg_price), arrayMap(x -> toUInt8(${SCALE_ABSENT}), chg_price)`,
  'exchange-b': BOOK_ROW_COLUMNS['exchange-b'],
};

/**
 * BOOK_ROW_COLUMNS for the rollup's fold of a closed day (`foldBookRows` with `hashes`
 * false): exchange A's record `hash` as stored ('' where it is the first entry's) and no
 * entry hashes (`chg_hash`), the widest of the columns, which only the detail of a claim
 * that does not hold names. Such a claim's entry is fetched afterwards (`ClaimHashRef`,
 * `claimHashOf`): a few rows, where reading every hash cost the engine about a fifth of the
 * read. Exchange B's rows are as BOOK_ROW_COLUMNS.
 */
export const ROLLUP_ROW_COLUMNS: Record<Venue, string> = {
  'exchange-a': `toUnixTimestamp64Milli(event_ts), toString(event_type), hash, residue, ${LEVELS('bid')}, ${LEVELS('ask')},
    chg_price, chg_price_scale, chg_side, chg_size, chg_size_scale,
    chg_best_bid, chg_best_bid_scale, chg_best_ask, chg_best_ask_scale`,
  'exchange-b': BOOK_ROW_COLUMNS['exchange-b'],
};

/**
 * What a claim-hash fetch reads of each exchange A row (`claimHashOf`): the row as the fold
 * read it, to be checked, and its hashes.
 */
export const CLAIM_HASH_COLUMNS: { readonly [V in Venue]?: string } = {
  'exchange-a': `toUnixTimestamp64Milli(event_ts), toString(event_type), hash, residue,
    chg_price, chg_price_scale, chg_side, chg_size, chg_size_scale, chg_hash,
    chg_best_bid, chg_best_bid_scale, chg_best_ask, chg_best_ask_scale`,
  // Exchange B records carry no best bid / ask claims: their fold reads every column it needs.
};

/** What an empty array column reads as: shared, never written to (most rows have empty level or change arrays). */
const EMPTY: number[] = [];
const EMPTY_STRINGS: string[] = [];

/**
 * The UTF-8 text of buf[start, end) (within the buffer): what `buf.toString('utf8', start,
 * end)` returns, through the buffer's own `utf8Slice`, which `toString` reaches after checking
 * its arguments and looking the encoding up. Every row's hash is one such short string: the
 * direct call took about half the time of `toString` for it (docs/BENCHMARKS.md, "The
 * rollup's row times and hash texts").
 */
const utf8: (buf: Buffer, start: number, end: number) => string =
  typeof (Buffer.prototype as unknown as { utf8Slice?: unknown }).utf8Slice === 'function'
    ? (buf, start, end) => (buf as unknown as { utf8Slice(start: number, end: number): string }).utf8Slice(start, end)
    : (buf, start, end) => buf.toString('utf8', start, end);

/** Thrown by RowBinaryReader when a row runs past the bytes it holds (the rest is in the next chunk). */
const UNDERFLOW = Symbol('row-binary underflow');

/**
 * A reader of ClickHouse RowBinary values (the twin of row-binary.ts's writer): integers
 * little-endian, String and Array as a LEB128 length then the bytes or elements, Nullable as
 * one byte (1 = NULL) before the value. Int64 is read as a JS number, exact below 2^53 (every
 * stored mantissa has at most 15 digits, raw-codec.ts). Reading past the end throws
 * UNDERFLOW, so that a row cut by a chunk boundary is read again with the next chunk.
 */
export class RowBinaryReader {
  buf: Buffer = Buffer.alloc(0);
  pos = 0;

  reset(buf: Buffer): void {
    this.buf = buf;
    this.pos = 0;
  }

  /** Throws UNDERFLOW unless `n` more bytes are there. */
  need(n: number): void {
    if (this.pos + n > this.buf.length) throw UNDERFLOW;
  }

  u8(): number {
    this.need(1);
    return this.buf[this.pos++]!;
  }

  i8(): number {
    this.need(1);
    const v = this.buf[this.pos++]!;
    return v > 127 ? v - 256 : v;
  }

  i64(): number {
    this.need(8);
    const b = this.buf;
    const p = this.pos;
    this.pos = p + 8;
    return (b[p + 4]! | (b[p + 5]! << 8) | (b[p + 6]! << 16) | (b[p + 7]! << 24)) * 4294967296 + (b[p]! | (b[p + 1]! << 8) | (b[p + 2]! << 16)) + b[p + 3]! * 16777216;
  }

  u32(): number {
    this.need(4);
    const p = this.pos;
    this.pos = p + 4;
    return this.buf.readUInt32LE(p);
  }

  u64(): number {
    this.need(8);
    const b = this.buf;
    const p = this.pos;
    this.pos = p + 8;
    return b.readUInt32LE(p + 4) * 4294967296 + b.readUInt32LE(p);
  }

  nullableI64(): number | null {
    return this.u8() === 1 ? null : this.i64();
  }

  length(): number {
    // One byte (below 128) holds nearly every length: read without the loop.
    const p = this.pos;
    if (p < this.buf.length) {
      const c = this.buf[p]!;
      if (c < 0x80) {
        this.pos = p + 1;
        return c;
      }
    }
    let n = 0;
    let shift = 1;
    for (;;) {
      const c = this.u8();
      n += (c & 0x7f) * shift;
      if (c < 0x80) return n;
      shift *= 128;
    }
  }

  string(): string {
    const n = this.length();
    if (n === 0) return '';
    this.need(n);
    const p = this.pos;
    this.pos = p + n;
    return utf8(this.buf, p, p + n);
  }

  /** Skips a String (past the chunk's end is caught by the next read, as skipLevels' skips are). */
  skipString(): void {
    const n = this.length();
    this.pos += n;
  }

  i64Array(): number[] {
    const n = this.length();
    if (n === 0) return EMPTY;
    const out: number[] = new Array(n);
    for (let i = 0; i < n; i++) out[i] = this.i64();
    return out;
  }

  u8Array(): number[] {
    const n = this.length();
    if (n === 0) return EMPTY;
    this.need(n);
    const out: number[] = new Array(n);
    const b = this.buf;
    const p = this.pos;
    for (let i = 0; i < n; i++) out[i] = b[p + i]!;
    this.pos = p + n;
    return out;
  }

  i8Array(): number[] {
    const n = this.length();
    if (n === 0) return EMPTY;
    const out: number[] = new Array(n);
    for (let i = 0; i < n; i++) out[i] = this.i8();
    return out;
  }

  stringArray(): string[] {
    const n = this.length();
    if (n === 0) return EMPTY_STRINGS;
    const out: string[] = new Array(n);
    for (let i = 0; i < n; i++) out[i] = this.string();
    return out;
  }
}

/**
 * Rows per array yielded. An embedded chunk holds 8,192 rows; decoded all at once, the whole
 * chunk's records were still alive at each young-generation collection during the decode
 * and were copied and promoted to the old generation (a full rebuild of a 1,000,000-event
 * asset-day promoted about 170 MB per run, about 95 MB in arrays of 512 — measured with
 * --trace-gc-nvp). Short arrays die young; one await per 512 rows costs nothing measurable.
 */
const ROWS_PER_BATCH = 512;

/**
 * An array of decoded rows; with `ms` when the reader was asked for times: `ms[i]` is row i's
 * event time in ms as the book engine reads it from the record (`timestamp` text, `epoch_ms`),
 * or NaN where the caller must read it from the record itself (a row read from its residue).
 */
export type Timed<T> = T[] & { ms?: Float64Array };

/**
 * The rows of a RowBinary byte stream, decoded by `row`, in arrays of at most ROWS_PER_BATCH
 * (one await per array, not per row). A row cut by a chunk boundary (a server's
 * chunks may cut anywhere; the embedded engine's hold whole rows) is joined with the next
 * chunk's bytes first. A stream that ends inside a row is an error. `timeOf`, asked right
 * after each row is decoded, gives that row's time for the array's `ms` (Timed).
 */
export async function* rowBinaryRows<T>(chunks: AsyncIterable<Buffer | Uint8Array>, row: (r: RowBinaryReader) => T, timeOf?: () => number): AsyncGenerator<Timed<T>> {
  const r = new RowBinaryReader();
  let tail: Buffer | null = null;
  const timed = timeOf !== undefined;
  const fresh = (): Timed<T> => {
    const out: Timed<T> = [];
    if (timed) out.ms = new Float64Array(ROWS_PER_BATCH);
    return out;
  };
  for await (const c of chunks) {
    const chunk = Buffer.isBuffer(c) ? c : Buffer.from(c.buffer, c.byteOffset, c.byteLength);
    const b: Buffer = tail === null ? chunk : Buffer.concat([tail, chunk]);
    tail = null;
    r.reset(b);
    let out = fresh();
    while (r.pos < b.length) {
      const start = r.pos;
      try {
        const v = row(r);
        if (timed) out.ms![out.length] = timeOf();
        out.push(v);
      } catch (e) {
        if (e !== UNDERFLOW) throw e;
        tail = b.subarray(start);
        break;
      }
      if (out.length === ROWS_PER_BATCH) {
        yield out;
        out = fresh();
      }
    }
    if (out.length > 0) yield out;
  }
  if (tail !== null) throw new Error(`RowBinary stream ends inside a row (${tail.length} bytes left)`);
}

/**
 * Decimal texts by (mantissa, scale): a book's prices and sizes repeat all day, and making
 * the text again for every level of every row is most of what reading a row costs. Bounded:
 * cleared when full.
 */
const TEXTS = new Map<number, string>();
const TEXTS_MAX = 1 << 16;
/** Small non-negative mantissas (most prices and sizes) are looked up by index, per scale. */
const SMALL = 1 << 17;
const SMALL_TEXTS: (string | undefined)[][] = [];

function decimalText(m: number, s: number): string {
  if (m >= 0 && m < SMALL && s < 32) {
    const byScale = (SMALL_TEXTS[s] ??= new Array<string | undefined>(SMALL).fill(undefined));
    return (byScale[m] ??= formatScaled(m, s));
  }
  // Exact as a key while |m| < 2^44 (a key is m · 512 + s); larger mantissas are not cached.
  if (m >= 2 ** 44 || m <= -(2 ** 44)) return formatScaled(m, s);
  const key = m * 512 + s;
  let t = TEXTS.get(key);
  if (t === undefined) {
    if (TEXTS.size >= TEXTS_MAX) TEXTS.clear();
    t = formatScaled(m, s);
    TEXTS.set(key, t);
  }
  return t;
}

/** One side's levels (price, scale, size, scale arrays) as the record's level objects. */
function levels(r: RowBinaryReader): PriceLevel[] {
  const p = r.i64Array();
  const ps = r.u8Array();
  const z = r.i64Array();
  const zs = r.u8Array();
  const out: PriceLevel[] = new Array(p.length);
  for (let i = 0; i < p.length; i++) out[i] = { price: decimalText(p[i]!, ps[i]!), size: decimalText(z[i]!, zs[i]!) };
  return out;
}

function pairs(r: RowBinaryReader): [string, string][] {
  const p = r.i64Array();
  const ps = r.u8Array();
  const z = r.i64Array();
  const zs = r.u8Array();
  const out: [string, string][] = new Array(p.length);
  for (let i = 0; i < p.length; i++) out[i] = [decimalText(p[i]!, ps[i]!), decimalText(z[i]!, zs[i]!)];
  return out;
}

/** Skips one side's four level arrays (a skip past the chunk's end is caught by the next read, or need(0)). */
function skipLevels(r: RowBinaryReader): void {
  // The length first: `r.pos += r.length()` would add to the position before the length was read.
  for (let k = 0; k < 4; k++) {
    const n = r.length() * (k % 2 === 0 ? 8 : 1);
    r.pos += n;
  }
}

const SIDES = ['', 'BUY', 'SELL'] as const;

const BOOK = Buffer.from('book');
const PRICE_CHANGE = Buffer.from('price_change');

function bytesAre(b: Buffer, p: number, want: Buffer): boolean {
  for (let i = 0; i < want.length; i++) if (b[p + i] !== want[i]) return false;
  return true;
}

/** An exchange A event type: the two a book reads are not made into a new string on every row. */
function eventType(r: RowBinaryReader): string {
  const n = r.length();
  r.need(n);
  const b = r.buf;
  const p = r.pos;
  r.pos = p + n;
  if (n === 12 && bytesAre(b, p, PRICE_CHANGE)) return 'price_change';
  if (n === 4 && bytesAre(b, p, BOOK)) return 'book';
  return utf8(b, p, p + n);
}

/**
 * One exchange A row (BOOK_ROW_COLUMNS) as the record the book engine and the checks read:
 * the record's own fields, not the venue's extras (no book reads them). `market` and
 * `asset` are the ones the read was for.
 */
export function readExchangeABookRow(r: RowBinaryReader, market: string, asset: string, time?: RowTime): ExchangeAEvent {
  const ms = r.i64();
  const type = eventType(r);
  const hashAt = r.pos;
  const hash = r.string();
  const hashEnd = r.pos;
  const residue = r.string();
  if (residue !== '') {
    skipLevels(r);
    skipLevels(r);
    skipChanges(r);
    // The record's own `timestamp` text decides its time: read it from the record.
    if (time !== undefined) time.ms = Number.NaN;
    return JSON.parse(residue) as ExchangeAEvent;
  }
  // `timestamp` is String(ms) of a safe integer, which msFromText reads back as ms exactly.
  if (time !== undefined) time.ms = ms;
  // Each record is made in one literal of its final shape: a field added afterwards would
  // give a million records a second allocation each (their out-of-object properties).
  const timestamp = msText(ms);
  if (type === 'price_change') {
    skipLevels(r);
    skipLevels(r);
    return { market, asset_id: asset, timestamp, hash, event_type: type, changes: changes(r, hash, hashAt, hashEnd) };
  }
  if (type === 'book') {
    const bids = levels(r);
    const asks = levels(r);
    skipChanges(r);
    return { market, asset_id: asset, timestamp, hash, event_type: type, bids, asks };
  }
  skipLevels(r);
  skipLevels(r);
  skipChanges(r);
  return { market, asset_id: asset, timestamp, hash, event_type: type };
}

/**
 * An exchange A row of ROLLUP_ROW_COLUMNS as a record: in a fold, any row it does not read
 * in place (`readChangeRow`), read as `readExchangeABookRow` reads it from BOOK_ROW_COLUMNS
 * (such a row's record hash is the stored one, which A_HASH_SQL gives back for it: it has no
 * changes or is read from its residue); in a read of records (`RollupRecords`), a
 * price_change stored in its typed columns too, whose entries with a claim carry, instead of
 * their hash, where to fetch it (`changesWithoutHashes`). `ord` is the row's place among the
 * read's rows of its millisecond (RowClaimHash).
 */
function readExchangeARollupRow(r: RowBinaryReader, market: string, asset: string, time?: RowTime, ord = -1): ExchangeAEvent {
  const at = r.pos;
  const ms = r.i64();
  const type = eventType(r);
  const hash = r.string();
  const residue = r.string();
  if (residue !== '') {
    skipLevels(r);
    skipLevels(r);
    skipChanges(r, false);
    if (time !== undefined) time.ms = Number.NaN;
    return JSON.parse(residue) as ExchangeAEvent;
  }
  if (type === 'price_change' && ord < 0) throw new Error('book row: a price_change stored in its typed columns is read in place, not as a record');
  if (time !== undefined) time.ms = ms;
  const timestamp = msText(ms);
  if (type === 'price_change') {
    skipLevels(r);
    skipLevels(r);
    return { market, asset_id: asset, timestamp, hash, event_type: type, changes: changesWithoutHashes(r, at, ord) };
  }
  if (type === 'book') {
    const bids = levels(r);
    const asks = levels(r);
    skipChanges(r, false);
    return { market, asset_id: asset, timestamp, hash, event_type: type, bids, asks };
  }
  skipLevels(r);
  skipLevels(r);
  skipChanges(r, false);
  return { market, asset_id: asset, timestamp, hash, event_type: type };
}

/** "000" to "999": the last three digits of a millisecond's text. */
const LOW3: readonly string[] = Array.from({ length: 1000 }, (_, i) => String(i).padStart(3, '0'));
let textMs = Number.NaN;
let textOfMs = '';
let textSecond = Number.NaN;
let textOfSecond = '';

/**
 * String(ms), made from the text of its second (remembered: a second holds many records)
 * and its last three digits from a table. Number to text is dear for 13-digit numbers
 * (several hundred ns: a fifth of decoding a row), and the records of a day come in time
 * order. Only for integers from 1000 to 2^53 - 1; others take String().
 */
export function msText(ms: number): string {
  if (ms === textMs) return textOfMs;
  if (!(ms >= 1000 && ms <= Number.MAX_SAFE_INTEGER) || !Number.isInteger(ms)) return String(ms);
  const second = Math.floor(ms / 1000);
  if (second !== textSecond) {
    textSecond = second;
    textOfSecond = String(second);
  }
  textMs = ms;
  textOfMs = textOfSecond + LOW3[ms - second * 1000]!;
  return textOfMs;
}

/**
 * A price_change's entries, read straight from the ten change arrays (each holds one value
 * per entry: price, scale, side, size, scale, hash, best bid, scale, best ask, scale) without
 * making an array of each first: where each array starts is found, then every entry is read
 * across them.
 */
function changes(r: RowBinaryReader, hash: string, hashAt: number, hashEnd: number): PriceChange[] {
  const n = r.length();
  const pAt = r.pos;
  r.pos += n * 8;
  const psAt = sameLength(r, n);
  r.pos += n;
  const sdAt = sameLength(r, n);
  r.pos += n;
  const zAt = sameLength(r, n);
  r.pos += n * 8;
  const zsAt = sameLength(r, n);
  r.pos += n;
  const hashCount = r.length();
  if (hashCount !== n) throw new RangeError(`book row: ${hashCount} change hashes for ${n} changes`);
  // The record's hash is its first entry's (A_HASH_SQL) on nearly every row: when the
  // entry's bytes (length and text) are the record's, its string is the record's, not
  // decoded again.
  const hashes: string[] = new Array(n);
  const hashBytes = hashEnd - hashAt;
  for (let i = 0; i < n; i++) {
    if (i === 0 && sameBytes(r.buf, r.pos, hashAt, hashBytes)) {
      r.pos += hashBytes;
      hashes[0] = hash;
    } else hashes[i] = r.string();
  }
  const bbAt = sameLength(r, n);
  r.pos += n * 8;
  const bbsAt = sameLength(r, n);
  r.pos += n;
  const baAt = sameLength(r, n);
  r.pos += n * 8;
  const basAt = sameLength(r, n);
  r.pos += n;
  r.need(0);
  const end = r.pos;
  const b = r.buf;
  const out: PriceChange[] = new Array(n);
  for (let i = 0; i < n; i++) {
    r.pos = pAt + i * 8;
    const price = decimalText(r.i64(), b[psAt + i]!);
    r.pos = zAt + i * 8;
    const sd = b[sdAt + i]!;
    const side = (sd < 3 ? SIDES[sd] : '') as 'BUY' | 'SELL';
    const size = decimalText(r.i64(), b[zsAt + i]!);
    const h = hashes[i]!;
    const bbs = b[bbsAt + i]!;
    const bas = b[basAt + i]!;
    // The two shapes entries come in (before 2025-09-15 none of the three optional
    // fields, since then all three) are made whole; the field order stays the same.
    if (h === '' && bbs === SCALE_ABSENT && bas === SCALE_ABSENT) {
      out[i] = { price, side, size };
      continue;
    }
    r.pos = bbAt + i * 8;
    const bb = bbs === SCALE_ABSENT ? undefined : decimalText(r.i64(), bbs);
    r.pos = baAt + i * 8;
    const ba = bas === SCALE_ABSENT ? undefined : decimalText(r.i64(), bas);
    if (h !== '' && bb !== undefined && ba !== undefined) {
      out[i] = { price, side, size, hash: h, best_bid: bb, best_ask: ba };
      continue;
    }
    const c: PriceChange = { price, side, size };
    if (h !== '') c.hash = h;
    if (bb !== undefined) c.best_bid = bb;
    if (ba !== undefined) c.best_ask = ba;
    out[i] = c;
  }
  r.pos = end;
  return out;
}

/**
 * `changes` of a ROLLUP_ROW_COLUMNS row (no entry hashes): an entry with a claim carries, as
 * its `hash`, where to fetch it (`RecordClaimHash`: the checks keep it as they keep
 * `ChangeEntries.claimHash`'s refs, and only a claim that does not hold is ever fetched);
 * an entry without one carries none (no book or check reads it). `rowAt` is where the row
 * starts in the reader's buffer, `ord` its place among its millisecond's rows.
 */
function changesWithoutHashes(r: RowBinaryReader, rowAt: number, ord: number): PriceChange[] {
  const n = r.length();
  const pAt = r.pos;
  r.pos += n * 8;
  const psAt = sameLength(r, n);
  r.pos += n;
  const sdAt = sameLength(r, n);
  r.pos += n;
  const zAt = sameLength(r, n);
  r.pos += n * 8;
  const zsAt = sameLength(r, n);
  r.pos += n;
  const bbAt = sameLength(r, n);
  r.pos += n * 8;
  const bbsAt = sameLength(r, n);
  r.pos += n;
  const baAt = sameLength(r, n);
  r.pos += n * 8;
  const basAt = sameLength(r, n);
  r.pos += n;
  r.need(0);
  const b = r.buf;
  const out: PriceChange[] = new Array(n);
  for (let i = 0; i < n; i++) {
    const price = decimalText(i64At(b, pAt + i * 8), b[psAt + i]!);
    const sd = b[sdAt + i]!;
    const side = (sd < 3 ? SIDES[sd] : '') as 'BUY' | 'SELL';
    const size = decimalText(i64At(b, zAt + i * 8), b[zsAt + i]!);
    const bbs = b[bbsAt + i]!;
    const bas = b[basAt + i]!;
    if (bbs === SCALE_ABSENT && bas === SCALE_ABSENT) {
      out[i] = { price, side, size };
      continue;
    }
    // Typed as the record's text: only the checks read it, as a hash or a ClaimHashRef.
    const hash = new RecordClaimHash(b, rowAt, ord, i) as unknown as string;
    if (bbs !== SCALE_ABSENT && bas !== SCALE_ABSENT) {
      out[i] = { price, side, size, hash, best_bid: decimalText(i64At(b, bbAt + i * 8), bbs), best_ask: decimalText(i64At(b, baAt + i * 8), bas) };
      continue;
    }
    const c: PriceChange = { price, side, size, hash };
    if (bbs !== SCALE_ABSENT) c.best_bid = decimalText(i64At(b, bbAt + i * 8), bbs);
    if (bas !== SCALE_ABSENT) c.best_ask = decimalText(i64At(b, baAt + i * 8), bas);
    out[i] = c;
  }
  return out;
}

/**
 * The RowClaimHash of entry `entry` of a record read from ROLLUP_ROW_COLUMNS
 * (`changesWithoutHashes`): the row's bytes (`buf` from `at`: a chunk of its own, never
 * written again) are walked again only when the claim is fetched, so that an entry whose
 * claim holds (nearly all) costs one small object.
 */
class RecordClaimHash implements RowClaimHash {
  readonly deferredHash = true as const;
  private e: ColumnEntries | null = null;

  constructor(
    private readonly buf: Buffer,
    private readonly at: number,
    readonly ord: number,
    readonly entry: number,
  ) {}

  private row(): ColumnEntries {
    if (this.e !== null) return this.e;
    const r = new RowBinaryReader();
    r.reset(this.buf);
    r.pos = this.at;
    const e = new ColumnEntries();
    e.hashes = false;
    if (!readChangeRow(r, e, false)) throw new Error('book row: a claim\'s row is no longer a price_change');
    return (this.e = e);
  }

  get ms(): number {
    return this.row().ms;
  }

  get count(): number {
    return this.row().count;
  }

  get recHash(): string {
    const e = this.row();
    return utf8(e.buf, e.recHashAt, e.recHashEnd);
  }

  get entryBytes(): string {
    const e = this.row();
    return entryBytes(e.buf, e, this.entry);
  }
}

/**
 * Book rows of ROLLUP_ROW_COLUMNS read as records (the rollup of an open day, which holds
 * its last millisecond back and so gathers records): each row's place among the read's rows
 * of its millisecond is counted (per item of a read of several books), for the claim hashes
 * fetched afterwards (`claimHashesOf`). Exchange B rows are read as `readBookRow` reads them.
 * One per read; rows in the read's order.
 */
export class RollupRecords {
  private lastItem = -1;
  private lastMs = Number.NaN;
  private lastOrd = 0;

  constructor(private readonly venue: Venue) {}

  read(r: RowBinaryReader, market: string, asset: string, time?: RowTime, item = 0): BookRecord {
    if (CLAIM_HASH_COLUMNS[this.venue] === undefined) return readBookRow(this.venue, r, market, asset, time);
    // Every exchange A row starts with its event time (Int64 ms).
    r.need(8);
    const ms = i64At(r.buf, r.pos);
    const ord = item === this.lastItem && ms === this.lastMs ? this.lastOrd + 1 : 0;
    const rec = readExchangeARollupRow(r, market, asset, time, ord);
    // Counted once the row is whole (a row cut by the chunk's end is read again).
    this.lastItem = item;
    this.lastMs = ms;
    this.lastOrd = ord;
    return rec;
  }
}

/** Whether buf[a, a + n) holds the bytes of buf[b, b + n) (false past the end: the caller reads on and underflows). */
function sameBytes(buf: Buffer, a: number, b: number, n: number): boolean {
  if (a + n > buf.length) return false;
  for (let i = 0; i < n; i++) if (buf[a + i] !== buf[b + i]) return false;
  return true;
}

/** The next array's length, which must be `n` (the change arrays run in step); returns where its elements start. */
function sameLength(r: RowBinaryReader, n: number): number {
  const m = r.length();
  if (m !== n) throw new RangeError(`book row: change arrays of ${n} and ${m} entries`);
  return r.pos;
}

/** Each change array's element width in bytes, in column order; 0 for the hashes' strings. */
const CHANGE_WIDTHS = [8, 1, 1, 8, 1, 0, 8, 1, 8, 1];
/** The same without the hashes (ROLLUP_ROW_COLUMNS). */
const CHANGE_WIDTHS_NO_HASHES = [8, 1, 1, 8, 1, 8, 1, 8, 1];

/** Skips the ten change arrays (`hashes` false: the nine of ROLLUP_ROW_COLUMNS). */
function skipChanges(r: RowBinaryReader, hashes = true): void {
  const widths = hashes ? CHANGE_WIDTHS : CHANGE_WIDTHS_NO_HASHES;
  for (let k = 0; k < widths.length; k++) {
    const n = r.length();
    const w = widths[k]!;
    if (w === 0) {
      for (let i = 0; i < n; i++) {
        const len = r.length();
        r.pos += len;
      }
    } else r.pos += n * w;
  }
  r.need(0);
}

/** One exchange B row (BOOK_ROW_COLUMNS) as the record the book engine and the checks read. */
export function readExchangeBBookRow(r: RowBinaryReader, ticker: string, time?: RowTime): ExchangeBRecord {
  const ms = r.i64();
  const type = r.string() as ExchangeBRecord['type'];
  const residue = r.string();
  const sid = r.nullableI64();
  const seq = r.nullableI64();
  const expected = r.nullableI64();
  const yesNull = r.u8();
  const yes = type === 'snapshot' ? pairs(r) : (skipLevels(r), null);
  const noNull = r.u8();
  const no = type === 'snapshot' ? pairs(r) : (skipLevels(r), null);
  const side = r.string();
  const pm = r.i64();
  const pms = r.u8();
  const dm = r.i64();
  const dms = r.u8();
  r.need(0);
  if (residue !== '') {
    if (time !== undefined) time.ms = Number.NaN;
    return JSON.parse(residue) as ExchangeBRecord;
  }
  if (time !== undefined) time.ms = ms;
  const rec: ExchangeBRecord = { type, ticker, timestamp: new Date(ms).toISOString(), epoch_ms: ms, sid, seq };
  if (type === 'snapshot') {
    rec.yes = yesNull === 1 ? null : yes;
    rec.no = noNull === 1 ? null : no;
  } else if (type === 'delta') {
    rec.side = side as 'yes' | 'no';
    rec.price = pms >= SCALE_NULL ? null : decimalText(pm, pms);
    rec.delta = dms >= SCALE_NULL ? null : decimalText(dm, dms);
  } else if (type === 'gap' && expected !== null) {
    rec.expected_seq = expected;
  }
  return rec;
}

/** The Int64 at buf[p, p + 8) (RowBinaryReader.i64 without a reader). */
function i64At(b: Buffer, p: number): number {
  return (b[p + 4]! | (b[p + 5]! << 8) | (b[p + 6]! << 16) | (b[p + 7]! << 24)) * 4294967296 + (b[p]! | (b[p + 1]! << 8) | (b[p + 2]! << 16)) + b[p + 3]! * 16777216;
}

/**
 * The entries of one exchange A price_change row, read in place from its change arrays
 * (`ChangeEntries`): where each array starts, and each entry's hash bytes. Every text is the
 * one `changes` would put in the record's entry, made only when asked (most are never: a
 * hash only for a claim that does not hold). One object, reused row after row.
 */
class ColumnEntries implements ChangeEntries {
  count = 0;
  /** The row's event time, ms. */
  ms = 0;
  /** Read without hashes (ROLLUP_ROW_COLUMNS): a claim's hash is a `RowClaimHash` to fetch. */
  hashes = true;
  /** The row's place among the read's rows of its millisecond (0 for the first): where a fetch finds it again. */
  ord = 0;
  buf: Buffer = Buffer.alloc(0);
  pAt = 0;
  psAt = 0;
  sdAt = 0;
  zAt = 0;
  zsAt = 0;
  bbAt = 0;
  bbsAt = 0;
  baAt = 0;
  basAt = 0;
  recHashAt = 0;
  recHashEnd = 0;
  /** Entry i's hash bytes: [hashAt[i], hashEnd[i]). */
  hashAt = new Int32Array(16);
  hashEnd = new Int32Array(16);

  price(i: number): string {
    return decimalText(i64At(this.buf, this.pAt + i * 8), this.buf[this.psAt + i]!);
  }

  size(i: number): string {
    return decimalText(i64At(this.buf, this.zAt + i * 8), this.buf[this.zsAt + i]!);
  }

  /**
   * The size's text (decimalText: formatScaled) is canonical, as canonicalSize would return
   * it, when its mantissa is not negative and it has no fraction or one that does not end in
   * 0: "20", "0.5", not "20.00", "0.0" or "-5" (the book reads those). Its integer part is
   * `floor(m / 10^s)` as digits, never with a leading zero.
   */
  sizeIsCanonical(i: number): boolean {
    const s = this.buf[this.zsAt + i]!;
    if (s > 18) return false;
    const m = i64At(this.buf, this.zAt + i * 8);
    return m >= 0 && m <= Number.MAX_SAFE_INTEGER && (s === 0 || m % 10 !== 0);
  }

  side(i: number): string {
    const sd = this.buf[this.sdAt + i]!;
    return sd < 3 ? SIDES[sd]! : '';
  }

  claims(i: number): boolean {
    return this.buf[this.bbsAt + i] !== SCALE_ABSENT || this.buf[this.basAt + i] !== SCALE_ABSENT;
  }

  bestBid(i: number): string | undefined {
    const s = this.buf[this.bbsAt + i]!;
    return s === SCALE_ABSENT ? undefined : decimalText(i64At(this.buf, this.bbAt + i * 8), s);
  }

  bestAsk(i: number): string | undefined {
    const s = this.buf[this.basAt + i]!;
    return s === SCALE_ABSENT ? undefined : decimalText(i64At(this.buf, this.baAt + i * 8), s);
  }

  claimHash(i: number): string | ClaimHashRef {
    if (!this.hashes) return this.hashRef(i);
    const a = this.hashAt[i]!;
    const e = this.hashEnd[i]!;
    // An entry without a hash ('') names the record's.
    return e > a ? utf8(this.buf, a, e) : utf8(this.buf, this.recHashAt, this.recHashEnd);
  }

  /** Entry i's claim hash to fetch: where its row is and what the row held, to know it again. */
  private hashRef(i: number): RowClaimHash {
    const b = this.buf;
    return {
      deferredHash: true,
      ms: this.ms,
      ord: this.ord,
      entry: i,
      count: this.count,
      recHash: utf8(b, this.recHashAt, this.recHashEnd),
      entryBytes: entryBytes(b, this, i),
    };
  }
}

/**
 * A claim hash not read with its row (ROLLUP_ROW_COLUMNS): the row is the `ord`-th (from 0)
 * of the read's rows at event time `ms`, in serving order; `entry` its entry. `count`,
 * `recHash` (the stored record hash) and `entryBytes` (the entry's price, side, size and
 * claims as stored) are what the row held, checked when it is fetched (`claimHashOf`).
 */
export interface RowClaimHash extends ClaimHashRef {
  ms: number;
  ord: number;
  entry: number;
  count: number;
  recHash: string;
  entryBytes: string;
}

/** Entry i's stored price, scale, side, size, scale and claims with scales, as one text to compare. */
function entryBytes(b: Buffer, e: { pAt: number; psAt: number; sdAt: number; zAt: number; zsAt: number; bbAt: number; bbsAt: number; baAt: number; basAt: number }, i: number): string {
  return [i64At(b, e.pAt + i * 8), b[e.psAt + i], b[e.sdAt + i], i64At(b, e.zAt + i * 8), b[e.zsAt + i], i64At(b, e.bbAt + i * 8), b[e.bbsAt + i], i64At(b, e.baAt + i * 8), b[e.basAt + i]].join(',');
}

/**
 * The claim hashes of `refs` (RowClaimHash) from a RowBinary stream of CLAIM_HASH_COLUMNS
 * rows: the rows of the refs' milliseconds, read as the fold read them (same filter, same
 * order). Each hash is what `claimHash` gives with the hashes read: the entry's, or the
 * record's (A_HASH_SQL) where the entry has none. Null when a row is not there or not what
 * the fold read (the store changed since): the caller then reads the day with its hashes.
 */
export async function claimHashesOf(chunks: AsyncIterable<Buffer | Uint8Array>, refs: readonly RowClaimHash[]): Promise<string[] | null> {
  const want = new Map<string, number[]>();
  refs.forEach((ref, k) => {
    const key = `${ref.ms}:${ref.ord}`;
    const at = want.get(key);
    if (at === undefined) want.set(key, [k]);
    else at.push(k);
  });
  const out: Array<string | undefined> = new Array(refs.length).fill(undefined);
  let lastMs = Number.NaN;
  let ord = 0;
  for await (const batch of rowBinaryRows(chunks, (r) => {
    const ms = r.i64();
    const type = r.string();
    const hash = r.string();
    const residue = r.string();
    const p = r.i64Array();
    const ps = r.u8Array();
    const sd = r.u8Array();
    const z = r.i64Array();
    const zs = r.u8Array();
    const h = r.stringArray();
    const bb = r.i64Array();
    const bbs = r.u8Array();
    const ba = r.i64Array();
    const bas = r.u8Array();
    return { ms, type, hash, residue, p, ps, sd, z, zs, h, bb, bbs, ba, bas };
  })) {
    for (const row of batch) {
      ord = row.ms === lastMs ? ord + 1 : 0;
      lastMs = row.ms;
      const ks = want.get(`${row.ms}:${ord}`);
      if (ks === undefined) continue;
      for (const k of ks) {
        const ref = refs[k]!;
        const i = ref.entry;
        const n = row.p.length;
        if (row.type !== 'price_change' || row.residue !== '' || row.hash !== ref.recHash || n !== ref.count || row.h.length !== n || i >= n) return null;
        if (row.bb.length !== n || row.bbs.length !== n || row.ba.length !== n || row.bas.length !== n) return null;
        const bytes = [row.p[i], row.ps[i], row.sd[i], row.z[i], row.zs[i], row.bb[i], row.bbs[i], row.ba[i], row.bas[i]].join(',');
        if (bytes !== ref.entryBytes) return null;
        // A_HASH_SQL: the record's hash is its first entry's where the stored one is ''.
        const recHash = row.hash === '' && n > 0 ? row.h[0]! : row.hash;
        out[k] = row.h[i] !== '' ? row.h[i]! : recHash;
      }
    }
  }
  if (out.some((h) => h === undefined)) return null;
  return out as string[];
}

/**
 * Reads an exchange A row (BOOK_ROW_COLUMNS) into `e` when it is a price_change stored whole
 * in its typed columns (no residue), with its time in `e.ms`; false (the reader's
 * position then means nothing) for any other row, which is read as a record instead.
 * Throws as `readExchangeABookRow` does on a malformed row, and UNDERFLOW past the bytes.
 *
 * Most of a dense day's rows go through here, so the row is walked on local variables: a
 * length below 128 (nearly all) is its one byte, anything else goes through the reader
 * (`lengthAt`). A position past the bytes reads `undefined`, which takes that slow path and
 * underflows there, or is caught by the one check at the end: no byte past the row's end is
 * ever taken for a value that decides anything.
 */
function readChangeRow(r: RowBinaryReader, e: ColumnEntries, hashes = true): boolean {
  const b = r.buf;
  let p = r.pos;
  // The time, the type's length byte and its 12 bytes.
  if (p + 21 > b.length) throw UNDERFLOW;
  const ms = i64At(b, p);
  p += 8;
  if (b[p] !== 12 || !bytesAre(b, p + 1, PRICE_CHANGE)) return false;
  p += 13;
  let c = b[p]!;
  let n: number;
  if (c < 0x80) {
    n = c;
    p++;
  } else {
    n = lengthAt(r, p);
    p = r.pos;
  }
  const hashAt = p;
  p += n;
  // The residue: a row with one is read from it.
  c = b[p]!;
  if (c !== 0) {
    if (c === undefined) throw UNDERFLOW;
    return false;
  }
  e.recHashAt = hashAt;
  e.recHashEnd = hashAt + n;
  p++;
  // The eight level arrays (empty on a price_change, skipped whatever they hold).
  for (let k = 0; k < 8; k++) {
    c = b[p]!;
    if (c < 0x80) {
      n = c;
      p++;
    } else {
      n = lengthAt(r, p);
      p = r.pos;
    }
    p += (k & 1) === 0 ? n * 8 : n;
  }
  c = b[p]!;
  if (c < 0x80) {
    n = c;
    p++;
  } else {
    n = lengthAt(r, p);
    p = r.pos;
  }
  e.pAt = p;
  p += n * 8;
  p = stepLength(r, b, p, n);
  e.psAt = p;
  p = stepLength(r, b, p + n, n);
  e.sdAt = p;
  p = stepLength(r, b, p + n, n);
  e.zAt = p;
  p = stepLength(r, b, p + n * 8, n);
  e.zsAt = p;
  p += n;
  if (hashes) p = hashPlaces(r, b, p, n, e);
  p = stepLength(r, b, p, n);
  e.bbAt = p;
  p = stepLength(r, b, p + n * 8, n);
  e.bbsAt = p;
  p = stepLength(r, b, p + n, n);
  e.baAt = p;
  p = stepLength(r, b, p + n * 8, n);
  e.basAt = p;
  p += n;
  if (p > b.length) throw UNDERFLOW;
  r.pos = p;
  e.buf = b;
  e.count = n;
  e.ms = ms;
  return true;
}

/** Where each of a row's `n` entry hashes lies (`e.hashAt`, `e.hashEnd`), from `p`; returns the position after them. */
function hashPlaces(r: RowBinaryReader, b: Buffer, p: number, n: number, e: ColumnEntries): number {
  let c = b[p]!;
  let hashCount: number;
  if (c < 0x80) {
    hashCount = c;
    p++;
  } else {
    hashCount = lengthAt(r, p);
    p = r.pos;
  }
  if (hashCount !== n) throw new RangeError(`book row: ${hashCount} change hashes for ${n} changes`);
  if (e.hashAt.length < n) {
    e.hashAt = new Int32Array(n * 2);
    e.hashEnd = new Int32Array(n * 2);
  }
  const hashStarts = e.hashAt;
  const hashEnds = e.hashEnd;
  for (let i = 0; i < n; i++) {
    c = b[p]!;
    let len: number;
    if (c < 0x80) {
      len = c;
      p++;
    } else {
      len = lengthAt(r, p);
      p = r.pos;
    }
    hashStarts[i] = p;
    p += len;
    hashEnds[i] = p;
  }
  return p;
}

/** The length at `p` through the reader (any LEB128, UNDERFLOW past the bytes); the reader is left after it. */
function lengthAt(r: RowBinaryReader, p: number): number {
  r.pos = p;
  return r.length();
}

/** Past the length at `p`, which must be `n` (the change arrays run in step): where the array's elements start. */
function stepLength(r: RowBinaryReader, b: Buffer, p: number, n: number): number {
  const c = b[p]!;
  if (c === n && c < 0x80) return p + 1;
  const m = lengthAt(r, p);
  if (m !== n) throw new RangeError(`book row: change arrays of ${n} and ${m} entries`);
  return r.pos;
}

/** Where a fold of book rows puts them (`foldBookRows`). */
export interface BookRowSink {
  /** A row as its record; `ms` its time as the engine reads it from the record, or NaN: ask the record (Timed). */
  record(rec: BookRecord, ms: number): void;
  /** An exchange A price_change at `ms` read in place: `entries` is valid during the call only. */
  changes(ms: number, entries: ChangeEntries): void;
}

/**
 * The rows of a RowBinary stream of book rows of `venue`, handed to `sink` one by one as
 * they are decoded, with no array of records in between: exchange A price_change rows stored
 * whole in their typed columns as their entries in place (no record, change or hash
 * objects: most of a busy day), every other row as its record (`readBookRow`). `lead` reads
 * the columns a query puts before each row's book columns. A row cut by a chunk boundary is
 * joined with the next chunk first (as `rowBinaryRows` does); a stream that ends inside a row
 * is an error.
 */
export async function foldBookRows(
  chunks: AsyncIterable<Buffer | Uint8Array>,
  venue: Venue,
  market: string,
  asset: string,
  lead: (r: RowBinaryReader) => void,
  sink: BookRowSink,
  hashes = true,
): Promise<void> {
  const r = new RowBinaryReader();
  const e = new ColumnEntries();
  const time: RowTime = { ms: Number.NaN };
  // Without hashes (ROLLUP_ROW_COLUMNS, exchange A): the rows' places in their millisecond
  // are counted, every row's, for the claim hashes to fetch (RowClaimHash).
  const noHashes = !hashes && CLAIM_HASH_COLUMNS[venue] !== undefined;
  e.hashes = !noHashes;
  const inPlace = noHashes ? readChangeRowNoHashes : READ_IN_PLACE[venue];
  const readRow = noHashes ? (r: RowBinaryReader) => readExchangeARollupRow(r, market, asset, time) : (r: RowBinaryReader) => readBookRow(venue, r, market, asset, time);
  let lastMs = Number.NaN;
  let lastOrd = 0;
  let tail: Buffer | null = null;
  for await (const c of chunks) {
    const chunk = Buffer.isBuffer(c) ? c : Buffer.from(c.buffer, c.byteOffset, c.byteLength);
    const b: Buffer = tail === null ? chunk : Buffer.concat([tail, chunk]);
    tail = null;
    r.reset(b);
    while (r.pos < b.length) {
      const start = r.pos;
      let rec: BookRecord | null = null;
      try {
        lead(r);
        const at = r.pos;
        if (noHashes) {
          // Every exchange A row starts with its event time (Int64 ms).
          r.need(8);
          const ms = i64At(b, at);
          e.ord = ms === lastMs ? lastOrd + 1 : 0;
          e.ms = ms;
        }
        if (inPlace === null || !inPlace(r, e)) {
          r.pos = at;
          rec = readRow(r);
        }
        // Counted once the row is whole (a row cut by the chunk's end is read again).
        if (noHashes) {
          lastMs = e.ms;
          lastOrd = e.ord;
        }
      } catch (err) {
        if (err !== UNDERFLOW) throw err;
        tail = b.subarray(start);
        break;
      }
      // Outside the try: what the sink throws is its own.
      if (rec === null) sink.changes(e.ms, e);
      else sink.record(rec, time.ms);
    }
  }
  if (tail !== null) throw new Error(`RowBinary stream ends inside a row (${tail.length} bytes left)`);
}

/** `read(r)` of the bytes' start, or undefined when they end first (a row the next chunk completes). */
export function readWhole<T>(bytes: Buffer, read: (r: RowBinaryReader) => T): T | undefined {
  const r = new RowBinaryReader();
  r.reset(bytes);
  try {
    return read(r);
  } catch (e) {
    if (e === UNDERFLOW) return undefined;
    throw e;
  }
}

/**
 * Where a book row reader (`readBookRow`) leaves the row's event time (ms), as the book
 * engine would read it from its record, or NaN when the record must be asked (read from its
 * residue). A caller keeps one and reads it after each row, e.g. as `rowBinaryRows`'
 * `timeOf`: the rollup groups and applies records by this number instead of making it again
 * from each record's `timestamp` text.
 */
export interface RowTime {
  ms: number;
}

/**
 * Each venue's reader of a row into its entries in place (`foldBookRows`), false when the row
 * is not one it reads that way; null for a venue whose rows are all read as records.
 */
const readChangeRowNoHashes = (r: RowBinaryReader, e: ColumnEntries): boolean => readChangeRow(r, e, false);

const READ_IN_PLACE: { readonly [V in Venue]: ((r: RowBinaryReader, e: ColumnEntries) => boolean) | null } = {
  'exchange-a': readChangeRow,
  'exchange-b': null,
};

/** A book row of `venue` (BOOK_ROW_COLUMNS) as its book record. */
export function readBookRow(venue: Venue, r: RowBinaryReader, market: string, asset: string, time?: RowTime): BookRecord {
  return READ_BOOK_ROW[venue](r, market, asset, time);
}

/** Each venue's book-row decoder (the twin of BOOK_ROW_COLUMNS), keyed by venue. */
const READ_BOOK_ROW: { readonly [V in Venue]: (r: RowBinaryReader, market: string, asset: string, time?: RowTime) => BookRecord } = {
  'exchange-a': readExchangeABookRow,
  'exchange-b': (r, ticker, _asset, time) => readExchangeBBookRow(r, ticker, time),
};

/** The book records of a RowBinary stream of book rows, a few hundred per array (rowBinaryRows). */
export function bookRowBatches(venue: Venue, chunks: AsyncIterable<Buffer | Uint8Array>, market: string, asset: string): AsyncGenerator<BookRecord[]> {
  return rowBinaryRows(chunks, (r) => readBookRow(venue, r, market, asset));
}

/**
 * Reads the first batch of a stream of batches before the caller answers (so that a failed
 * query fails the call, not the first read of its events), and gives back that batch, the
 * stream to go on with, and a `close` that ends the engine read. The stream is closed when
 * the first read fails.
 */
export async function firstBatch<T>(batches: AsyncGenerator<T[]>): Promise<{ first: IteratorResult<T[], void>; batches: AsyncGenerator<T[]>; close: () => Promise<void> }> {
  const close = async () => void (await batches.return(undefined));
  try {
    return { first: await batches.next(), batches, close };
  } catch (e) {
    await close();
    throw e;
  }
}
