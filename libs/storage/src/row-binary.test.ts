import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { RowBinaryWriter } from './row-binary.ts';

/** RowBinary's String, written the plain way: LEB128 byte length, then the UTF-8 bytes. */
function referenceString(s: string): Buffer {
  const bytes = Buffer.from(s, 'utf8');
  const len: number[] = [];
  let n = bytes.length;
  do {
    len.push((n & 0x7f) | (n >= 0x80 ? 0x80 : 0));
    n = Math.floor(n / 128);
  } while (n > 0);
  return Buffer.concat([Buffer.from(len), bytes]);
}

function referenceI64(v: number): Buffer {
  const b = Buffer.alloc(8);
  b.writeBigInt64LE(BigInt(v));
  return b;
}

describe('RowBinary writer', () => {
  it('writes strings of any length and any characters as length and UTF-8 bytes', () => {
    fc.assert(
      fc.property(fc.array(fc.oneof(fc.string({ unit: 'binary', maxLength: 300 }), fc.string({ maxLength: 200 })), { maxLength: 8 }), (ss) => {
        const w = new RowBinaryWriter(4);
        for (const s of ss) w.string(s);
        expect(Buffer.compare(w.bytes(), Buffer.concat(ss.map(referenceString)))).toBe(0);
      }),
      { numRuns: 1000 },
    );
  });

  it('writes any safe integer as an Int64, negative ones in two’s complement', () => {
    fc.assert(
      fc.property(fc.array(fc.oneof(fc.maxSafeInteger(), fc.integer()), { maxLength: 20 }), (vs) => {
        const w = new RowBinaryWriter(2);
        w.i64Array(vs);
        const expected = Buffer.concat([referenceString('x'.repeat(vs.length)).subarray(0, vs.length < 128 ? 1 : 2), ...vs.map(referenceI64)]);
        expect(Buffer.compare(w.bytes(), expected)).toBe(0);
      }),
      { numRuns: 1000 },
    );
  });

  it('writes every stride-th value of a scratch column as the array writers do', () => {
    fc.assert(
      fc.property(
        fc.array(fc.oneof(fc.maxSafeInteger(), fc.integer(), fc.constant(-0)), { maxLength: 300 }),
        fc.nat({ max: 3 }),
        fc.integer({ min: 1, max: 4 }),
        (vs, start, stride) => {
          const byte = (v: number) => ((v % 256) + 256) % 256;
          const picked = vs.filter((_, i) => i >= start && (i - start) % stride === 0);
          const bytes = picked.map(byte);
          const strided = new RowBinaryWriter(2);
          strided.i64Strided(Float64Array.from(vs), start, picked.length, stride);
          strided.u8Strided(Uint8Array.from(vs.map(byte)), start, picked.length, stride);
          const plain = new RowBinaryWriter(2);
          plain.i64Array(picked);
          plain.u8Array(bytes);
          expect(Buffer.compare(strided.bytes(), plain.bytes())).toBe(0);
        },
      ),
      { numRuns: 1000 },
    );
  });

  it('writes any UInt64 decimal text as the BigInt way does, and refuses what does not fit alike', () => {
    const viaBigInt = (v: string) => {
      const b = Buffer.alloc(8);
      try {
        b.writeBigUInt64LE(BigInt(v));
        return b.toString('hex');
      } catch (e) {
        return (e as Error).name;
      }
    };
    const mine = (v: string) => {
      const w = new RowBinaryWriter(1);
      try {
        w.u64Text(v);
        return w.bytes().toString('hex');
      } catch (e) {
        return (e as Error).name;
      }
    };
    const texts = fc.oneof(
      fc.bigInt({ min: 0n, max: 2n ** 64n - 1n }).map(String),
      fc.bigInt({ min: 2n ** 52n, max: 2n ** 54n }).map(String),
      fc.tuple(fc.nat({ max: 3 }), fc.bigInt({ min: 0n, max: 2n ** 64n + 5n })).map(([z, v]) => '0'.repeat(z) + String(v)),
      fc.constantFrom('0', '18446744073709551615', '18446744073709551616', '99999999999999999999', '9007199254740993', '10000000000'),
    );
    fc.assert(
      fc.property(texts, (v) => {
        expect(mine(v)).toBe(viaBigInt(v));
      }),
      { numRuns: 5000 },
    );
  });
});
