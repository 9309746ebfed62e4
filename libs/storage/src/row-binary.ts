import { MAX_U64_TEXT, U64_HALVES, u64TextHalves } from '@booktape/domain';

/**
 * A writer of ClickHouse's RowBinary format: rows as the engine's own binary values, no text
 * to parse. Integers little-endian; String as a LEB128 length and UTF-8 bytes; Array as a
 * LEB128 count and its elements; Nullable as one byte (1 = NULL) before the value;
 * DateTime64(3) as Int64 milliseconds; Date as UInt16 days; Enum8 as Int8.
 *
 * The buffer grows by doubling; one writer serves one insert.
 */
const DIGITS = /^\d+$/;

/** Node's UTF-8 writer of a Buffer, without the argument checks of `write` around it. */
type Utf8Buffer = Buffer & { utf8Write(s: string, offset: number, length: number): number };

export class RowBinaryWriter {
  private buf: Buffer;
  private pos = 0;

  constructor(initial = 1 << 16) {
    this.buf = Buffer.allocUnsafe(initial);
  }

  private room(n: number): void {
    if (this.pos + n <= this.buf.length) return;
    let size = this.buf.length * 2;
    while (size < this.pos + n) size *= 2;
    const next = Buffer.allocUnsafe(size);
    this.buf.copy(next, 0, 0, this.pos);
    this.buf = next;
  }

  u8(v: number): void {
    this.room(1);
    this.buf[this.pos++] = v;
  }

  u16(v: number): void {
    this.room(2);
    this.buf.writeUInt16LE(v, this.pos);
    this.pos += 2;
  }

  u32(v: number): void {
    this.room(4);
    this.buf.writeUInt32LE(v >>> 0, this.pos);
    this.pos += 4;
  }

  i32(v: number): void {
    this.room(4);
    this.buf.writeInt32LE(v, this.pos);
    this.pos += 4;
  }

  /** A safe integer as Int64 (two's complement), without going through BigInt. */
  i64(v: number): void {
    this.room(8);
    const lo = v % 0x1_0000_0000;
    const hi = Math.floor(v / 0x1_0000_0000);
    this.buf.writeUInt32LE(lo < 0 ? lo + 0x1_0000_0000 : lo, this.pos);
    this.buf.writeInt32LE(hi, this.pos + 4);
    this.pos += 8;
  }

  /**
   * A UInt64 given as decimal text (ingest_seq exceeds 2^53). Digits that fit go without
   * BigInt (u64TextHalves, which the capture's binary Kafka writer uses too); anything else
   * the BigInt way (a RangeError beyond).
   */
  u64Text(v: string): void {
    this.room(8);
    const n = v.length;
    if (n === 0 || n > 20 || !DIGITS.test(v) || (n === 20 && v > MAX_U64_TEXT)) {
      this.buf.writeBigUInt64LE(BigInt(v), this.pos);
      this.pos += 8;
      return;
    }
    u64TextHalves(v);
    this.buf.writeUInt32LE(U64_HALVES[0]!, this.pos);
    this.buf.writeUInt32LE(U64_HALVES[1]!, this.pos + 4);
    this.pos += 8;
  }

  /** An Int64 given as decimal text (Kafka offsets). */
  i64Text(v: string): void {
    this.room(8);
    this.buf.writeBigInt64LE(BigInt(v), this.pos);
    this.pos += 8;
  }

  private varint(n: number): void {
    this.room(10);
    while (n >= 0x80) {
      this.buf[this.pos++] = (n & 0x7f) | 0x80;
      n = Math.floor(n / 128);
    }
    this.buf[this.pos++] = n;
  }

  string(s: string): void {
    // Ids and decimals are short: write the bytes first, behind one reserved length byte, and
    // measure only a string whose bytes do not fit one LEB128 byte (128 and more).
    if (s.length < 128) {
      this.room(s.length * 3 + 1);
      const n = (this.buf as Utf8Buffer).utf8Write(s, this.pos + 1, this.buf.length - this.pos - 1);
      if (n < 128) {
        this.buf[this.pos] = n;
        this.pos += n + 1;
        return;
      }
    }
    const n = Buffer.byteLength(s, 'utf8');
    this.varint(n);
    this.room(n);
    this.buf.write(s, this.pos, 'utf8');
    this.pos += n;
  }

  arrayLength(n: number): void {
    this.varint(n);
  }

  i64Array(vs: readonly number[]): void {
    this.varint(vs.length);
    for (const v of vs) this.i64(v);
  }

  u8Array(vs: readonly number[]): void {
    this.varint(vs.length);
    this.room(vs.length);
    for (const v of vs) this.buf[this.pos++] = v;
  }

  /** `count` values of `from`, every `stride`-th from `start`, as Array(Int64). */
  i64Strided(from: Float64Array, start: number, count: number, stride: number): void {
    this.varint(count);
    this.room(count * 8);
    const buf = this.buf;
    let pos = this.pos;
    for (let i = 0, j = start; i < count; i++, j += stride) {
      const v = from[j]!;
      if (v >= 0 && v < 0x1_0000_0000) {
        buf.writeUInt32LE(v, pos);
        buf.writeUInt32LE(0, pos + 4);
      } else {
        const lo = v % 0x1_0000_0000;
        buf.writeUInt32LE(lo < 0 ? lo + 0x1_0000_0000 : lo, pos);
        buf.writeInt32LE(Math.floor(v / 0x1_0000_0000), pos + 4);
      }
      pos += 8;
    }
    this.pos = pos;
  }

  /** `count` values of `from`, every `stride`-th from `start`, as Array(UInt8). */
  u8Strided(from: Uint8Array, start: number, count: number, stride: number): void {
    this.varint(count);
    this.room(count);
    const buf = this.buf;
    let pos = this.pos;
    for (let i = 0, j = start; i < count; i++, j += stride) buf[pos++] = from[j]!;
    this.pos = pos;
  }

  stringArray(vs: readonly string[]): void {
    this.varint(vs.length);
    for (const v of vs) this.string(v);
  }

  nullableI64(v: number | null): void {
    if (v === null) this.u8(1);
    else {
      this.u8(0);
      this.i64(v);
    }
  }

  nullableString(v: string | null): void {
    if (v === null) this.u8(1);
    else {
      this.u8(0);
      this.string(v);
    }
  }

  /** The bytes written so far (a view: valid until the next write). */
  bytes(): Buffer {
    return this.buf.subarray(0, this.pos);
  }
}
