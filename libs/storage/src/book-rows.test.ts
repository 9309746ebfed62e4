import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { RowBinaryReader, msText, rowBinaryRows } from './book-rows.ts';
import { RowBinaryWriter } from './row-binary.ts';

/** The bytes, in chunks cut at the given offsets (a server's stream may cut rows anywhere). */
async function* cut(bytes: Buffer, at: number[]): AsyncGenerator<Buffer> {
  let from = 0;
  for (const p of [...new Set(at.map((x) => x % (bytes.length + 1)))].sort((a, b) => a - b)) {
    if (p > from) yield bytes.subarray(from, p);
    from = Math.max(from, p);
  }
  if (from < bytes.length) yield bytes.subarray(from);
}

describe('book rows', () => {
  it('write a millisecond as String() does, for any sequence of times (in order, repeated or not)', () => {
    const time = fc.oneof(
      fc.integer({ min: 1_700_000_000_000, max: 1_900_000_000_000 }),
      fc.maxSafeInteger(),
      fc.integer({ min: -5000, max: 5000 }),
      fc.constantFrom(0, 999, 1000, 1001, 9999, Number.MAX_SAFE_INTEGER, Number.MAX_SAFE_INTEGER + 1, 2 ** 60, -0, 1.5, 1000.25, Number.NaN, Infinity, -Infinity),
    );
    // Runs of nearby times, as a day's records come.
    const run = fc.tuple(fc.integer({ min: 1_700_000_000_000, max: 1_900_000_000_000 }), fc.array(fc.integer({ min: 0, max: 3000 }), { maxLength: 30 })).map(([t0, steps]) => {
      let t = t0;
      return steps.map((d) => (t += d));
    });
    fc.assert(
      fc.property(fc.array(fc.oneof(time.map((t) => [t]), run), { maxLength: 20 }), (groups) => {
        for (const t of groups.flat()) expect(msText(t)).toBe(String(t));
      }),
      { numRuns: 2000 },
    );
  });

  it('read strings of any length and characters as Buffer#toString reads their UTF-8 bytes', () => {
    fc.assert(
      fc.property(fc.array(fc.oneof(fc.string({ unit: 'binary', maxLength: 300 }), fc.string({ unit: 'grapheme', maxLength: 50 }), fc.string({ maxLength: 200 })), { maxLength: 8 }), (ss) => {
        const w = new RowBinaryWriter(4);
        for (const s of ss) w.string(s);
        const r = new RowBinaryReader();
        r.reset(w.bytes());
        for (const s of ss) expect(r.string()).toBe(Buffer.from(s, 'utf8').toString('utf8'));
        expect(r.pos).toBe(r.buf.length);
      }),
      { numRuns: 1000 },
    );
  });

  it('hand each row its time beside it, across arrays and chunk cuts', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(fc.tuple(fc.maxSafeInteger(), fc.string({ maxLength: 20 })), { maxLength: 1500 }), fc.array(fc.nat(), { maxLength: 40 }), async (rows, at) => {
        const w = new RowBinaryWriter();
        for (const [t, s] of rows) {
          w.i64(t);
          w.string(s);
        }
        let last = Number.NaN;
        const got: { t: number; s: string; ms: number }[] = [];
        for await (const batch of rowBinaryRows(cut(w.bytes(), at), (r) => {
          const t = r.i64();
          const s = r.string();
          // A row whose text is empty hands no time, as a row read from its residue.
          last = s === '' ? Number.NaN : t;
          return { t, s };
        }, () => last)) {
          expect(batch.length).toBeLessThanOrEqual(512);
          batch.forEach((x, i) => got.push({ ...x, ms: batch.ms![i]! }));
        }
        expect(got.map((x) => [x.t, x.s])).toEqual(rows);
        for (const x of got) expect(Object.is(x.ms, x.s === '' ? Number.NaN : x.t)).toBe(true);
      }),
      { numRuns: 200 },
    );
  });
});
