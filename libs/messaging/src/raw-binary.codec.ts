import { isUtf8 } from 'node:buffer';
import { MAX_U64_TEXT, U64_HALVES, u64TextHalves, type RawMessage, type Venue } from '@booktape/domain';

/**
 * The binary Kafka value of a raw topic, version 1 (docs/rules/kafka-records.md): the same
 * records the JSON array carried, in a compact layout that costs a fraction of JSON's CPU to
 * write and to read. A transport, not a model: every record decodes to exactly what
 * `JSON.parse(JSON.stringify(record))` gives, key order included (the stored payload is
 * written from it), so a record the compact layouts cannot hold that way travels as its
 * JSON text inside the binary value.
 *
 *   value  = "\0BT" version:u8 count:u32le block*        (count = records in all blocks)
 *   block  = n:varint record{n}                           (string table starts empty)
 *   record = 0x00 json:str | 0x01 lineage event-a | 0x02 lineage record-b
 *
 * Blocks make merging free: the producer's coalesce concatenates the blocks of several
 * values behind one header (only the count changes), and each block keeps its own table of
 * repeated strings (market, asset, receive time…).
 */

export const BINARY_MAGIC = [0x00, 0x42, 0x54] as const; // "\0BT": no JSON text starts with NUL
export const BINARY_VERSION = 1;
const HEADER = 8;

const REC_JSON = 0;
const REC_A = 1;
const REC_B = 2;

/** Thrown inside the encoder when a record does not fit a compact layout: it goes as JSON. */
const NO_FIT = Symbol('no-fit');
/** Thrown inside the decoder; turned into a refusal with its reason, never escapes. */
class Corrupt extends Error {}

// ---------------------------------------------------------------------------------------
// Writer: values are written one after the other into a slab and handed out as views of it
// (no copy); a value that outgrows the slab moves to a new one.
//
// BUILTINS: no String.prototype.charCodeAt on the hot path. Once any module subclasses
// String (ioredis does: `class VerbatimString extends String`), V8 stops inlining charCodeAt
// in the whole process, and a loop over a 40-character id costs five times as much (53 →
// 290 ns, Node 20); every process that encodes these values loads ioredis. Buffer's
// utf8Write / hexWrite, regular expressions and String.fromCharCode are not affected.

const SLAB = 256 * 1024;
let buf = Buffer.allocUnsafeSlow(SLAB);
/** Where the value being written starts in `buf`, and the next byte to write. */
let base = 0;
let pos = 0;

/** Room for `n` more bytes: else the value so far moves to a new slab (earlier values keep theirs). */
function ensure(n: number): void {
  if (pos + n <= buf.length) return;
  const used = pos - base;
  const next = Buffer.allocUnsafeSlow(Math.max(SLAB, (used + n) * 2));
  buf.copy(next, 0, base, pos);
  buf = next;
  base = 0;
  pos = used;
}

/** String.prototype.isWellFormed (Node 20; the project's TypeScript lib predates it). */
const wellFormed = (s: string): boolean => (s as unknown as { isWellFormed(): boolean }).isWellFormed();

function writeVarint(v: number): void {
  ensure(10);
  while (v >= 0x80) {
    buf[pos++] = (v % 0x80) | 0x80;
    v = Math.floor(v / 0x80);
  }
  buf[pos++] = v;
}

type WriteBuffer = Buffer & { utf8Write(s: string, offset: number): number; hexWrite(s: string, offset: number): number };

const varintBytes = (v: number): number => (v < 0x80 ? 1 : v < 0x4000 ? 2 : v < 0x20_0000 ? 3 : v < 0x1000_0000 ? 4 : 5);

/**
 * `s` as varint (byte length · `mul` + `plus`) and its UTF-8, written by one call into C++
 * (no charCodeAt: see BUILTINS below). The varint is reserved for the all-ASCII case and the
 * text moved up when it was longer in UTF-8.
 */
function writeText(s: string, mul: number, plus: number): void {
  const n = s.length;
  const reserve = varintBytes(n * mul + plus);
  // Also room for a longer varint and writeVarint's own check: nothing may move the text.
  ensure(reserve + n * 3 + 10);
  const start = pos + reserve;
  const bytes = (buf as WriteBuffer).utf8Write(s, start);
  // Fewer bytes than characters cannot be; more means non-ASCII, where a lone surrogate
  // would have become U+FFFD in UTF-8 while JSON keeps it (as an escape).
  if (bytes !== n && !wellFormed(s)) throw NO_FIT;
  const need = varintBytes(bytes * mul + plus);
  if (need !== reserve) buf.copyWithin(pos + need, start, start + bytes);
  writeVarint(bytes * mul + plus);
  pos += bytes;
}

/** A string as varint byte length + UTF-8. */
function writeStr(s: string): void {
  writeText(s, 1, 0);
}

/** varint 0 for null, else byte length + 1 and the bytes. */
function writeNullableStr(s: unknown): void {
  if (s === null) {
    ensure(1);
    buf[pos++] = 0;
    return;
  }
  if (typeof s !== 'string') throw NO_FIT;
  writeText(s, 1, 1);
}

const HEX_DIGITS_0X = /^0x[0-9a-f]+$/;

/**
 * A string that is usually lower-case hex (hashes, ids): varint h, then h >> 2 raw bytes
 * when bit 0 is set (bit 1: a "0x" prefix), else h >> 1 bytes of UTF-8 text.
 *
 * Lower-case hex without a prefix (every hash and dedup id) is found by writing it: hexWrite
 * stops at the first pair that is not hex, and the text is then known to be all hex digits
 * when it wrote them all and the text is ASCII (hexWrite reads only the low byte of a wider
 * character); lower case when lower-casing changes nothing. A third of what testing it with
 * a pattern first cost, on every record.
 */
function writeHexish(s: string): void {
  const n = s.length;
  if (n > 0 && n % 2 === 0) {
    const bytes = n / 2;
    const head = varintBytes(bytes * 4 + 1);
    // Room for the length before the bytes, and writeVarint's own check: nothing moves.
    ensure(head + bytes + 10);
    if ((buf as WriteBuffer).hexWrite(s, pos + head) === bytes && Buffer.byteLength(s, 'utf8') === n && s.toLowerCase() === s) {
      writeVarint(bytes * 4 + 1);
      pos += bytes;
      return;
    }
    if (HEX_DIGITS_0X.test(s)) {
      writeVarint((bytes - 1) * 4 + 3);
      ensure(bytes - 1);
      pos += (buf as WriteBuffer).hexWrite(s.slice(2), pos);
      return;
    }
  }
  writeText(s, 2, 0);
}

/**
 * Fields whose text repeats from record to record of a block (the market, the asset, the
 * receive time of a frame…): varint 0 when the text is the one this field had in the block's
 * previous record that has it, else byte length + 1 and the text. A slot per field.
 */
const SLOT = { received_at: 0, market: 1, asset_id: 2, timestamp_a: 3, event_type: 4, type: 5, ticker: 6, timestamp_b: 7 } as const;
const SLOTS = 8;
const prev: Array<string | undefined> = new Array<string | undefined>(SLOTS).fill(undefined);
const prevSaved: Array<string | undefined> = new Array<string | undefined>(SLOTS).fill(undefined);

function writeRef(slot: number, s: unknown): void {
  if (typeof s !== 'string') throw NO_FIT;
  if (prev[slot] === s) {
    ensure(1);
    buf[pos++] = 0;
    return;
  }
  writeNullableStr(s);
  prev[slot] = s;
}

function writeUint(v: unknown): void {
  if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < 0) throw NO_FIT;
  writeVarint(v);
}

/** A safe integer below 2^52 in size (so that 2|v| + 1 stays exact), zigzag; varint 0 for null when nullable. */
function writeInt(v: unknown, nullable: boolean): void {
  if (v === null && nullable) {
    writeVarint(0);
    return;
  }
  if (typeof v !== 'number' || !Number.isSafeInteger(v) || Math.abs(v) >= 2 ** 52) throw NO_FIT;
  const z = v >= 0 ? v * 2 : -v * 2 - 1;
  writeVarint(nullable ? z + 1 : z);
}

/** JSON fields that carry what the venue sent (`extra`, `data`): their JSON text. */
function writeJson(v: unknown): void {
  const text = JSON.stringify(v);
  const bytes = Buffer.byteLength(text, 'utf8');
  writeVarint(bytes);
  ensure(bytes);
  pos += buf.write(text, pos, bytes, 'utf8');
}

/** Canonical: "0" or no leading zero (other spellings would not come back as sent). */
const U64_TEXT = /^(?:0|[1-9]\d{0,19})$/;

/**
 * ingest_seq: a UInt64 as canonical decimal text ("0" or no leading zero), written as 8
 * bytes little-endian. Exact in doubles by splitting: text = a·10^10 + b, a = ah·2^16 + al.
 */
function writeU64Text(s: unknown): void {
  if (typeof s !== 'string') throw NO_FIT;
  const n = s.length;
  if (!U64_TEXT.test(s) || (n === 20 && s > MAX_U64_TEXT)) throw NO_FIT;
  u64TextHalves(s);
  ensure(8);
  buf.writeUInt32LE(U64_HALVES[0]!, pos);
  buf.writeUInt32LE(U64_HALVES[1]!, pos + 4);
  pos += 8;
}

/**
 * Which of `fields` the object has, as a bit mask, provided its own keys are among them and
 * in their order (JSON then writes them in that order too); undefined values count as
 * absent, as in JSON. Anything else does not fit.
 */
function presence(o: unknown, fields: readonly string[]): number {
  if (typeof o !== 'object' || o === null || Array.isArray(o)) throw NO_FIT;
  let i = 0;
  let mask = 0;
  // for-in without an own-property test (which doubles its cost): records are plain objects
  // from the normalisers or JSON.parse, never objects with enumerable inherited keys.
  for (const k in o) {
    if ((o as Record<string, unknown>)[k] === undefined) continue;
    while (i < fields.length && fields[i] !== k) i++;
    if (i === fields.length) throw NO_FIT;
    mask |= 1 << i;
    i++;
  }
  return mask;
}

const LINEAGE_A = ['venue', 'received_at', 'worker_id', 'ingest_seq', 'dedup_id', 'event'] as const;
const LINEAGE_B = ['venue', 'received_at', 'worker_id', 'ingest_seq', 'dedup_id', 'record'] as const;
const ALL_LINEAGE = 0b111111;

function writeLineage(m: Record<string, unknown>): void {
  writeRef(SLOT.received_at, m.received_at);
  writeUint(m.worker_id);
  writeU64Text(m.ingest_seq);
  if (typeof m.dedup_id !== 'string') throw NO_FIT;
  writeHexish(m.dedup_id);
}

// Exchange A event: the normaliser's key order. Bits 0..4 are required.
const EVENT_A = ['market', 'asset_id', 'timestamp', 'hash', 'event_type', 'bids', 'asks', 'changes', 'extra'] as const;
const A_REQUIRED = 0b11111;
const LEVEL = ['price', 'size'] as const;
const CHANGE = ['price', 'side', 'size', 'hash', 'best_bid', 'best_ask'] as const;

function writeLevels(v: unknown): void {
  if (!Array.isArray(v)) throw NO_FIT;
  writeVarint(v.length);
  for (const l of v) {
    if (presence(l, LEVEL) !== 0b11) throw NO_FIT;
    const { price, size } = l as { price: unknown; size: unknown };
    if (typeof price !== 'string' || typeof size !== 'string') throw NO_FIT;
    writeStr(price);
    writeStr(size);
  }
}

/** A change: flags (bit 0 SELL, bits 1..3 hash, best_bid, best_ask present), then its strings. */
function writeChanges(v: unknown): void {
  if (!Array.isArray(v)) throw NO_FIT;
  writeVarint(v.length);
  for (const c of v) {
    const mask = presence(c, CHANGE);
    if ((mask & 0b111) !== 0b111) throw NO_FIT;
    const ch = c as Record<string, unknown>;
    const side = ch.side === 'BUY' ? 0 : ch.side === 'SELL' ? 1 : -1;
    if (side < 0 || typeof ch.price !== 'string' || typeof ch.size !== 'string') throw NO_FIT;
    ensure(1);
    buf[pos++] = side | ((mask >> 2) & 0b1110);
    writeStr(ch.price);
    writeStr(ch.size);
    if (mask & 0b1000) {
      if (typeof ch.hash !== 'string') throw NO_FIT;
      writeHexish(ch.hash);
    }
    if (mask & 0b10000) {
      if (typeof ch.best_bid !== 'string') throw NO_FIT;
      writeStr(ch.best_bid);
    }
    if (mask & 0b100000) {
      if (typeof ch.best_ask !== 'string') throw NO_FIT;
      writeStr(ch.best_ask);
    }
  }
}

function writeEventA(e: unknown): void {
  const mask = presence(e, EVENT_A);
  if ((mask & A_REQUIRED) !== A_REQUIRED) throw NO_FIT;
  const ev = e as Record<string, unknown>;
  if (typeof ev.hash !== 'string') throw NO_FIT;
  writeVarint(mask >> 5);
  writeRef(SLOT.market, ev.market);
  writeRef(SLOT.asset_id, ev.asset_id);
  writeRef(SLOT.timestamp_a, ev.timestamp);
  writeHexish(ev.hash);
  writeRef(SLOT.event_type, ev.event_type);
  if (mask & (1 << 5)) writeLevels(ev.bids);
  if (mask & (1 << 6)) writeLevels(ev.asks);
  if (mask & (1 << 7)) writeChanges(ev.changes);
  if (mask & (1 << 8)) writeJson(ev.extra);
}

// Exchange B record: the normaliser's key order over all its record types. Bits 0..5 required.
const RECORD_B = ['type', 'ticker', 'timestamp', 'epoch_ms', 'sid', 'seq', 'yes', 'no', 'side', 'price', 'delta', 'venue_ts', 'market_id', 'expected_seq', 'data'] as const;
const B_REQUIRED = 0b111111;

/** Snapshot side: varint 0 for null, else count + 1, then [price, size] string pairs. */
function writePairs(v: unknown): void {
  if (v === null) {
    writeVarint(0);
    return;
  }
  if (!Array.isArray(v)) throw NO_FIT;
  writeVarint(v.length + 1);
  for (const p of v) {
    if (!Array.isArray(p) || p.length !== 2 || typeof p[0] !== 'string' || typeof p[1] !== 'string') throw NO_FIT;
    writeStr(p[0]);
    writeStr(p[1]);
  }
}

function writeRecordB(r: unknown): void {
  const mask = presence(r, RECORD_B);
  if ((mask & B_REQUIRED) !== B_REQUIRED) throw NO_FIT;
  const rec = r as Record<string, unknown>;
  writeVarint(mask >> 6);
  writeRef(SLOT.type, rec.type);
  writeRef(SLOT.ticker, rec.ticker);
  writeRef(SLOT.timestamp_b, rec.timestamp);
  writeUint(rec.epoch_ms);
  writeInt(rec.sid, true);
  writeInt(rec.seq, true);
  if (mask & (1 << 6)) writePairs(rec.yes);
  if (mask & (1 << 7)) writePairs(rec.no);
  if (mask & (1 << 8)) {
    ensure(1);
    if (rec.side === 'yes') buf[pos++] = 0;
    else if (rec.side === 'no') buf[pos++] = 1;
    else throw NO_FIT;
  }
  if (mask & (1 << 9)) writeNullableStr(rec.price);
  if (mask & (1 << 10)) writeNullableStr(rec.delta);
  if (mask & (1 << 11)) writeNullableStr(rec.venue_ts);
  if (mask & (1 << 12)) writeNullableStr(rec.market_id);
  if (mask & (1 << 13)) writeInt(rec.expected_seq, false);
  if (mask & (1 << 14)) writeJson(rec.data);
}

function writeRecord(m: RawMessage): void {
  const mark = pos - base; // relative: the value may move to another slab meanwhile
  for (let i = 0; i < SLOTS; i++) prevSaved[i] = prev[i];
  try {
    ensure(1);
    const raw = m as unknown as Record<string, unknown>;
    const layout = Object.hasOwn(LAYOUTS, m.venue) ? LAYOUTS[m.venue] : undefined;
    if (layout === undefined || presence(raw, layout.lineage) !== ALL_LINEAGE) throw NO_FIT;
    buf[pos++] = layout.tag;
    writeLineage(raw);
    layout.write(raw[layout.field]);
  } catch (e) {
    if (e !== NO_FIT) throw e;
    // Undo what the record wrote, its repeated-field slots too, and send its JSON text.
    pos = base + mark;
    for (let i = 0; i < SLOTS; i++) prev[i] = prevSaved[i];
    ensure(1);
    buf[pos++] = REC_JSON;
    writeJson(m);
  }
}

/** The binary value of one frame's records of one market (one block). */
export function encodeRawBinary(messages: readonly RawMessage[]): Buffer {
  if (buf.length - pos < 4096) {
    buf = Buffer.allocUnsafeSlow(SLAB);
    pos = 0;
  }
  base = pos;
  ensure(HEADER);
  buf[pos] = BINARY_MAGIC[0];
  buf[pos + 1] = BINARY_MAGIC[1];
  buf[pos + 2] = BINARY_MAGIC[2];
  buf[pos + 3] = BINARY_VERSION;
  buf.writeUInt32LE(messages.length, pos + 4);
  pos += HEADER;
  if (messages.length > 0) {
    prev.fill(undefined);
    writeVarint(messages.length);
    for (const m of messages) writeRecord(m);
  }
  // The next value starts after this one: the view handed out is never written again.
  return buf.subarray(base, pos);
}

/** True when the value starts as a binary value does (any version). */
export function isBinaryValue(value: Uint8Array): boolean {
  return value.length >= 3 && value[0] === BINARY_MAGIC[0] && value[1] === BINARY_MAGIC[1] && value[2] === BINARY_MAGIC[2];
}

/** Records a binary value says it holds, or null when its header is not a version-1 header. */
export function binaryRecordCount(value: Uint8Array): number | null {
  if (value.length < HEADER || !isBinaryValue(value) || value[3] !== BINARY_VERSION) return null;
  return (value[4]! | (value[5]! << 8) | (value[6]! << 16)) + value[7]! * 2 ** 24;
}

/** Version-1 values merged behind one header: their blocks in order, the counts summed. */
export function concatRawBinary(values: readonly Buffer[]): Buffer {
  let total = 0;
  for (const v of values) {
    const n = binaryRecordCount(v);
    if (n === null) throw new Error('concatRawBinary: not a version-1 binary value');
    total += n;
  }
  const head = Buffer.allocUnsafe(HEADER);
  head.set(BINARY_MAGIC, 0);
  head[3] = BINARY_VERSION;
  head.writeUInt32LE(total, 4);
  return Buffer.concat([head, ...values.map((v) => v.subarray(HEADER))]);
}

// ---------------------------------------------------------------------------------------
// Reader: every length and index is checked against what is there, so a truncated or
// corrupt value is refused (Corrupt) instead of read past its end or half-decoded.

const EMPTY = Buffer.alloc(0);
let rb: Buffer = EMPTY;
let rp = 0;
let rend = 0;
const rprev: Array<string | undefined> = new Array<string | undefined>(SLOTS).fill(undefined);

function need(n: number, what: string): void {
  if (rp + n > rend) throw new Corrupt(`truncated in ${what} at byte ${rp}`);
}

function readVarint(what: string): number {
  let v = 0;
  let mul = 1;
  for (let i = 0; i < 8; i++) {
    if (rp >= rend) throw new Corrupt(`truncated in ${what} at byte ${rp}`);
    const b = rb[rp++]!;
    v += (b & 0x7f) * mul;
    if (b < 0x80) return v;
    mul *= 0x80;
  }
  throw new Corrupt(`${what}: varint longer than 8 bytes at byte ${rp}`);
}

function readByte(what: string): number {
  if (rp >= rend) throw new Corrupt(`truncated in ${what} at byte ${rp}`);
  return rb[rp++]!;
}

type SliceBuffer = Buffer & { utf8Slice(start: number, end: number): string };

/** `len` bytes of text: a few ASCII bytes by hand (no call into C++), else one slice. */
function readText(len: number, what: string): string {
  need(len, what);
  const start = rp;
  const end = (rp += len);
  if (len <= 8) {
    let s = '';
    let i = start;
    for (; i < end; i++) {
      const c = rb[i]!;
      if (c >= 0x80) break;
      s += String.fromCharCode(c);
    }
    if (i === end) return s;
  }
  const s = (rb as SliceBuffer).utf8Slice(start, end);
  // Bytes that are not UTF-8 come back as U+FFFD: another text than was sent. Comparing byte
  // lengths is not enough (a 4-byte sequence cut after 3 bytes is one U+FFFD, 3 bytes too):
  // any U+FFFD sends the bytes through a strict UTF-8 check (a real U+FFFD passes it).
  if (s.includes('\ufffd') && !isUtf8(rb.subarray(start, end))) throw new Corrupt(`${what}: not UTF-8 at byte ${start}`);
  return s;
}

function readStr(what: string): string {
  return readText(readVarint(what), what);
}

function readNullableStr(what: string): string | null {
  const n = readVarint(what);
  return n === 0 ? null : readText(n - 1, what);
}

function readHexish(what: string): string {
  const h = readVarint(what);
  if (h & 1) {
    const bytes = Math.floor(h / 4);
    need(bytes, what);
    const s = rb.toString('hex', rp, rp + bytes);
    rp += bytes;
    return h & 2 ? `0x${s}` : s;
  }
  return readText(h / 2, what);
}

function readRef(slot: number, what: string): string {
  const n = readVarint(what);
  if (n === 0) {
    const s = rprev[slot];
    if (s === undefined) throw new Corrupt(`${what}: repeats a text its block has not had`);
    return s;
  }
  const s = readText(n - 1, what);
  rprev[slot] = s;
  return s;
}

function readInt(nullable: boolean, what: string): number | null {
  let z = readVarint(what);
  if (nullable) {
    if (z === 0) return null;
    z -= 1;
  }
  if (z > 2 ** 53) throw new Corrupt(`${what}: integer out of range`);
  return z % 2 === 0 ? z / 2 : -(z + 1) / 2;
}

function readJson(what: string): unknown {
  const text = readStr(what);
  try {
    return JSON.parse(text);
  } catch (e) {
    throw new Corrupt(`${what}: bad JSON (${(e as Error).message})`);
  }
}

/** Inverse of writeU64Text: long division of the four 16-bit limbs by 10^10. */
function readU64Text(): string {
  need(8, 'ingest_seq');
  const lo = rb.readUInt32LE(rp);
  const hi = rb.readUInt32LE(rp + 4);
  rp += 8;
  if (hi < 2 ** 21) return String(hi * 2 ** 32 + lo);
  // Limb by limb, high first: each step's dividend stays below 10^10 · 2^16 < 2^50.
  const D = 1e10;
  let cur = hi >>> 16;
  let q = Math.floor(cur / D);
  let rem = cur - q * D;
  cur = rem * 65536 + (hi & 0xffff);
  let d = Math.floor(cur / D);
  rem = cur - d * D;
  q = q * 65536 + d;
  cur = rem * 65536 + (lo >>> 16);
  d = Math.floor(cur / D);
  rem = cur - d * D;
  q = q * 65536 + d;
  cur = rem * 65536 + (lo & 0xffff);
  d = Math.floor(cur / D);
  rem = cur - d * D;
  q = q * 65536 + d;
  const low = String(rem);
  if (q === 0) return low;
  // Consecutive numbers share their digits above the last ten (10^10 is about 1.2 s of
  // receive time): the text of those is kept from the previous record.
  if (q !== lastHighQ) {
    lastHighQ = q;
    lastHighText = String(q);
  }
  return lastHighText + ZEROS[10 - low.length] + low;
}

let lastHighQ = -1;
let lastHighText = '';

const ZEROS = Array.from({ length: 11 }, (_, i) => '0'.repeat(i));

function readLevels(what: string): Array<{ price: string; size: string }> {
  const n = readVarint(what);
  if (n * 2 > rend - rp) throw new Corrupt(`truncated in ${what}: ${n} levels announced`);
  const out = new Array<{ price: string; size: string }>(n);
  for (let i = 0; i < n; i++) out[i] = { price: readStr(what), size: readStr(what) };
  return out;
}

function readChanges(): unknown[] {
  const n = readVarint('changes');
  if (n * 3 > rend - rp) throw new Corrupt(`truncated in changes: ${n} announced`);
  const out = new Array<unknown>(n);
  for (let i = 0; i < n; i++) {
    const f = readByte('changes');
    if (f > 0b1111) throw new Corrupt(`changes: bad flags ${f}`);
    const c: Record<string, string> = { price: readStr('change price'), side: f & 1 ? 'SELL' : 'BUY', size: readStr('change size') };
    if (f & 0b10) c.hash = readHexish('change hash');
    if (f & 0b100) c.best_bid = readStr('change best_bid');
    if (f & 0b1000) c.best_ask = readStr('change best_ask');
    out[i] = c;
  }
  return out;
}

function readEventA(): Record<string, unknown> {
  const mask = readVarint('event');
  if (mask > 0b1111) throw new Corrupt(`event: bad field mask ${mask}`);
  const e: Record<string, unknown> = {
    market: readRef(SLOT.market, 'market'),
    asset_id: readRef(SLOT.asset_id, 'asset_id'),
    timestamp: readRef(SLOT.timestamp_a, 'timestamp'),
    hash: readHexish('hash'),
    event_type: readRef(SLOT.event_type, 'event_type'),
  };
  if (mask & 1) e.bids = readLevels('bids');
  if (mask & 2) e.asks = readLevels('asks');
  if (mask & 4) e.changes = readChanges();
  if (mask & 8) e.extra = readJson('extra');
  return e;
}

function readPairs(what: string): Array<[string, string]> | null {
  const n = readVarint(what);
  if (n === 0) return null;
  if ((n - 1) * 2 > rend - rp) throw new Corrupt(`truncated in ${what}: ${n - 1} levels announced`);
  const out = new Array<[string, string]>(n - 1);
  for (let i = 0; i < n - 1; i++) out[i] = [readStr(what), readStr(what)];
  return out;
}

function readRecordB(): Record<string, unknown> {
  const mask = readVarint('record');
  if (mask > 0b111111111) throw new Corrupt(`record: bad field mask ${mask}`);
  const r: Record<string, unknown> = {
    type: readRef(SLOT.type, 'type'),
    ticker: readRef(SLOT.ticker, 'ticker'),
    timestamp: readRef(SLOT.timestamp_b, 'timestamp'),
    epoch_ms: readVarint('epoch_ms'),
    sid: readInt(true, 'sid'),
    seq: readInt(true, 'seq'),
  };
  if (mask & 1) r.yes = readPairs('yes');
  if (mask & 2) r.no = readPairs('no');
  if (mask & 4) {
    const s = readByte('side');
    if (s > 1) throw new Corrupt(`side: bad value ${s}`);
    r.side = s === 0 ? 'yes' : 'no';
  }
  if (mask & 8) r.price = readNullableStr('price');
  if (mask & 16) r.delta = readNullableStr('delta');
  if (mask & 32) r.venue_ts = readNullableStr('venue_ts');
  if (mask & 64) r.market_id = readNullableStr('market_id');
  if (mask & 128) r.expected_seq = readInt(false, 'expected_seq');
  if (mask & 256) r.data = readJson('data');
  return r;
}

/**
 * Each venue's record layout, keyed by venue: its tag, the field that carries its record and
 * that field's writer and reader, the lineage it must have, and its name in
 * binaryRecordLayouts. A third venue is one more entry (and one more tag).
 */
interface Layout {
  venue: Venue;
  tag: number;
  name: 'a' | 'b';
  field: 'event' | 'record';
  lineage: readonly string[];
  write(v: unknown): void;
  read(): Record<string, unknown>;
  /** The message of a record: a literal of one fixed shape per venue (a computed key per record would not be). */
  make(received_at: string, worker_id: number, ingest_seq: string, dedup_id: string, body: Record<string, unknown>): RawMessage;
}
const LAYOUTS: { readonly [V in Venue]: Layout & { venue: V } } = {
  'exchange-a': {
    venue: 'exchange-a', tag: REC_A, name: 'a', field: 'event', lineage: LINEAGE_A, write: writeEventA, read: readEventA,
    make: (received_at, worker_id, ingest_seq, dedup_id, event) => ({ venue: 'exchange-a', received_at, worker_id, ingest_seq, dedup_id, event }) as unknown as RawMessage,
  },
  'exchange-b': {
    venue: 'exchange-b', tag: REC_B, name: 'b', field: 'record', lineage: LINEAGE_B, write: writeRecordB, read: readRecordB,
    make: (received_at, worker_id, ingest_seq, dedup_id, record) => ({ venue: 'exchange-b', received_at, worker_id, ingest_seq, dedup_id, record }) as unknown as RawMessage,
  },
};
const LAYOUT_OF_TAG = new Map<number, Layout>(Object.values(LAYOUTS).map((l: Layout) => [l.tag, l]));

/** Index of the record being read, and those of the value that travelled as JSON text (usually none). */
let recordIndex = 0;
let jsonAt: number[] = [];

function readRecord(): RawMessage {
  const tag = readByte('record tag');
  if (tag === REC_JSON) {
    jsonAt.push(recordIndex);
    const v = readJson('JSON record');
    if (typeof v !== 'object' || v === null || Array.isArray(v)) throw new Corrupt('JSON record is not an object');
    return v as RawMessage;
  }
  const layout = LAYOUT_OF_TAG.get(tag);
  if (layout === undefined) throw new Corrupt(`unknown record tag ${tag} at byte ${rp - 1}`);
  const received_at = readRef(SLOT.received_at, 'received_at');
  const worker_id = readVarint('worker_id');
  const ingest_seq = readU64Text();
  const dedup_id = readHexish('dedup_id');
  return layout.make(received_at, worker_id, ingest_seq, dedup_id, layout.read());
}

export type BinaryDecoded = { ok: true; messages: RawMessage[] } | { ok: false; reason: string };

/**
 * The records of a binary value, or why it is refused: a version this reader does not know,
 * a header that does not match, or a value cut short or corrupt anywhere. All or nothing.
 */
export function decodeRawBinary(value: Buffer): BinaryDecoded {
  jsonAt = [];
  if (!isBinaryValue(value)) return { ok: false, reason: 'not a binary raw value' };
  if (value.length < 4) return { ok: false, reason: 'binary value truncated in its header' };
  if (value[3] !== BINARY_VERSION) return { ok: false, reason: `binary value of version ${value[3]}, this reader knows version ${BINARY_VERSION}` };
  const count = binaryRecordCount(value);
  if (count === null) return { ok: false, reason: 'binary value truncated in its header' };
  rb = value;
  rp = HEADER;
  rend = value.length;
  // Every record takes at least 2 bytes: a count beyond that is a corrupt header, not an allocation.
  if (count * 2 > rend - rp) return { ok: false, reason: `binary value announces ${count} records in ${rend - rp} bytes` };
  const messages = new Array<RawMessage>(count);
  let got = 0;
  try {
    while (rp < rend) {
      const n = readVarint('block count');
      if (n === 0 || got + n > count) throw new Corrupt(`block of ${n} records at byte ${rp} exceeds the ${count} announced`);
      rprev.fill(undefined);
      for (let i = 0; i < n; i++) {
        recordIndex = got;
        messages[got++] = readRecord();
      }
    }
    if (got !== count) throw new Corrupt(`truncated: ${got} of ${count} records`);
    return { ok: true, messages };
  } catch (e) {
    if (e instanceof Corrupt) return { ok: false, reason: `binary value refused: ${e.message}` };
    // Nothing above should throw otherwise; still, a bad value must never crash the sink.
    return { ok: false, reason: `binary value refused: ${(e as Error).message}` };
  } finally {
    rb = EMPTY;
    rprev.fill(undefined);
  }
}

/**
 * The records of a binary value, and the indices of those that travelled as their JSON text
 * (ascending; usually none): the sink checks a compact record's ingest_seq no further (it was
 * a UInt64 on the wire), a JSON record's fully. Noted per value, not per record.
 */
export function decodeRawBinaryNotingJson(value: Buffer): { decoded: BinaryDecoded; jsonRecords: readonly number[] } {
  const decoded = decodeRawBinary(value);
  const jsonRecords = jsonAt;
  jsonAt = [];
  return { decoded, jsonRecords };
}

/**
 * The layout each record of a value travels in (the compact one of its venue, or its JSON
 * text): for the tests and the benchmark, which check that capture's shapes stay compact.
 */
export function binaryRecordLayouts(value: Buffer): Array<'json' | 'a' | 'b'> {
  const { decoded, jsonRecords } = decodeRawBinaryNotingJson(value);
  if (!decoded.ok) throw new Error(decoded.reason);
  const json = new Set(jsonRecords);
  return decoded.messages.map((m, i) => (json.has(i) ? 'json' : LAYOUTS[m.venue].name));
}
