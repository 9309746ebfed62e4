import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { RawRowsToJson } from './raw-rows.ts';

const arbRecord = fc.dictionary(fc.string({ minLength: 1, maxLength: 8 }), fc.oneof(fc.string(), fc.integer(), fc.constant(null)), { maxKeys: 4 });
const arbRows = fc.array(fc.tuple(fc.array(fc.string({ maxLength: 10 }), { minLength: 1, maxLength: 5 }), arbRecord), { maxLength: 40 });

function linesOf(rows: Array<[string[], Record<string, unknown>]>): Buffer {
  return Buffer.from(rows.map(([k, r]) => `${JSON.stringify(k)}\t${JSON.stringify(r)}\n`).join(''), 'utf8');
}

/** Splits a buffer at arbitrary byte positions (server chunks may split rows, even characters). */
function split(buf: Buffer, cuts: number[]): Buffer[] {
  const points = [...new Set(cuts.map((c) => c % (buf.length + 1)))].sort((a, b) => a - b);
  const out: Buffer[] = [];
  let prev = 0;
  for (const p of points) {
    out.push(buf.subarray(prev, p));
    prev = p;
  }
  out.push(buf.subarray(prev));
  return out;
}

describe('raw rows to a JSON array', () => {
  it('yields exactly the first `max` records, however the input is chunked', () => {
    fc.assert(
      fc.property(arbRows, fc.array(fc.nat(), { maxLength: 10 }), fc.integer({ min: 1, max: 50 }), (rows, cuts, max) => {
        const conv = new RawRowsToJson(max);
        const parts: Buffer[] = [];
        for (const chunk of split(linesOf(rows), cuts)) parts.push(conv.push(chunk));
        if (!conv.more) conv.end();
        const json = JSON.parse(`[${Buffer.concat(parts).toString('utf8')}]`);
        const kept = rows.slice(0, max);
        expect(json).toEqual(kept.map(([, r]) => r));
        expect(conv.count).toBe(kept.length);
        expect(conv.more).toBe(rows.length > max);
        expect(conv.lastPosition()).toEqual(kept.length ? kept[kept.length - 1]![0] : null);
      }),
    );
  });

  it('notices a stream that broke off inside a row', () => {
    const conv = new RawRowsToJson(10);
    conv.push(Buffer.from('["1"]\t{"a":1}\n["2"]\t{"a"'));
    expect(() => conv.end()).toThrow(/inside a row/);
  });
});
