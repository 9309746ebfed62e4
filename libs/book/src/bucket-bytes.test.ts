import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { SummaryBytesWriter, releaseSummaryParts } from './bucket-bytes.ts';
import { referenceSummaryBucketsCsvBytes, referenceSummaryBucketsJsonBytes, referenceSummaryBucketsNdjsonBytes } from './bucket-bytes.reference.test-support.ts';
import { summaryBucketsCsvBytes, summaryBucketsJsonBytes, summaryBucketsNdjsonBytes, type ExactBucket, type Ohlc } from './bucketing.ts';
import { seriesBuckets } from './bucket-columns.ts';
import { VALUES_PER_BUCKET, type ColumnSeries } from './column-layout.ts';

// Values as the store gives them, and what a damaged store or a caller could: long decimals
// (past the native-copy length), negative ones, text beyond ASCII.
const text = fc.oneof(
  fc.constantFrom('0.5', '0.01', '12.75', '1', '0', '-0.02', '0.000001'),
  fc.stringMatching(/^-?\d{1,40}(\.\d{1,30})?$/),
  fc.string({ unit: 'grapheme', maxLength: 6 }),
);
const value = fc.option(text, { nil: null, freq: 4 });
const ohlc: fc.Arbitrary<Ohlc | null> = fc.option(fc.record({ open: text, high: text, low: text, close: text }), { nil: null, freq: 4 });
const number = fc.oneof(fc.integer({ min: 0, max: 2_000_000_000_000 }), fc.constantFrom(0, -0, -1000, 1.5, Number.MAX_SAFE_INTEGER, 2 ** 60, NaN), fc.nat({ max: 100 }));
const single: fc.Arbitrary<ExactBucket> = fc.record({
  timestamp: number,
  quote_count: number,
  is_forward_filled: fc.boolean(),
  best_bid: value,
  best_bid_size: value,
  best_ask: value,
  best_ask_size: value,
  mid_price: value,
  spread: value,
  best_bid_ohlc: ohlc,
  best_ask_ohlc: ohlc,
  mid_price_ohlc: ohlc,
  spread_ohlc: ohlc,
});
// Runs of buckets that differ only in their timestamps and share their OHLC objects, as
// fillSeries makes forward-filled runs: the writer copies such a bucket's text.
const buckets: fc.Arbitrary<ExactBucket[]> = fc
  .array(fc.tuple(single, fc.integer({ min: 1, max: 6 })), { maxLength: 25 })
  .map((runs) => runs.flatMap(([b, n]) => Array.from({ length: n }, (_, i) => ({ ...b, timestamp: Number.isFinite(b.timestamp) ? b.timestamp + i * 1000 : b.timestamp }))));
const head = fc.oneof(fc.constant(''), fc.string({ unit: 'grapheme', maxLength: 20 }).map((s) => `{"market":${JSON.stringify(s)},"data":`));
const lead = fc.option(fc.record({ names: fc.array(fc.constantFrom('asset_id', 'market', 'é'), { maxLength: 2 }), values: fc.array(fc.string({ unit: 'grapheme', maxLength: 8 }), { maxLength: 2 }) }), { nil: null });

/** The writer's parts, the buckets given in slices of `size`, its Buffers of `chunk` bytes. */
function written(format: 'json' | 'ndjson' | 'csv', list: ExactBucket[], size: number, first: number, chunk: number, block: number, h = '', tail = '', options = {}): Buffer {
  const w = new SummaryBytesWriter(format, first, chunk, block).begin(h, options);
  for (let at = 0; at < list.length; at += size) w.buckets(list, at, Math.min(list.length, at + size));
  const parts = w.end(tail).parts();
  for (const p of parts.slice(0, -1)) expect(p.length).toBeGreaterThan(0);
  return Buffer.concat(parts);
}

describe('summary answer bytes (SummaryBytesWriter)', () => {
  it('are the bytes of the earlier writers over arbitrary buckets, in every format, at any slice, Buffer and block size', () => {
    fc.assert(
      fc.property(buckets, head, lead, fc.boolean(), fc.integer({ min: 1, max: 40 }), fc.integer({ min: 1, max: 2000 }), fc.integer({ min: 1, max: 1500 }), fc.integer({ min: 1, max: 6 }), (list, h, l, header, size, first, chunk, block) => {
        expect(written('json', list, size, first, chunk, block, h, '}').equals(referenceSummaryBucketsJsonBytes(list, h, '}'))).toBe(true);
        expect(written('ndjson', list, size, first, chunk, block).equals(referenceSummaryBucketsNdjsonBytes(list))).toBe(true);
        expect(written('csv', list, size, first, chunk, block, '', '', { header, lead: l }).equals(referenceSummaryBucketsCsvBytes(list, header, l))).toBe(true);
        expect(summaryBucketsJsonBytes(list, h, '}').equals(referenceSummaryBucketsJsonBytes(list, h, '}'))).toBe(true);
        expect(summaryBucketsNdjsonBytes(list).equals(referenceSummaryBucketsNdjsonBytes(list))).toBe(true);
        expect(summaryBucketsCsvBytes(list, header, l).equals(referenceSummaryBucketsCsvBytes(list, header, l))).toBe(true);
      }),
      { numRuns: 300 },
    );
  });

  it('of a series kept in columns are the reference bytes of its buckets as objects, at any slice and Buffer size', () => {
    // Columns as any caller could make them: any texts (long, beyond ASCII), counts of any
    // size, rows repeated (forward-filled runs, a row written again), OHLCs whose open is
    // null but whose other places hold indexes, and the carried state.
    const series: fc.Arbitrary<ColumnSeries> = fc
      .record({
        dict: fc.uniqueArray(text, { minLength: 1, maxLength: 12 }),
        carried: fc.array(fc.option(text, { nil: null }), { minLength: 6, maxLength: 6 }),
        rows: fc.array(fc.record({ count: number, values: fc.array(fc.nat(), { minLength: VALUES_PER_BUCKET, maxLength: VALUES_PER_BUCKET }), nulls: fc.array(fc.boolean(), { minLength: VALUES_PER_BUCKET, maxLength: VALUES_PER_BUCKET }) }), { minLength: 1, maxLength: 6 }),
        picks: fc.array(fc.tuple(fc.nat(), fc.boolean(), fc.integer({ min: 1, max: 5 })), { maxLength: 30 }),
        firstStart: fc.oneof(fc.constant(1_772_409_600_000), fc.integer({ min: 0, max: 2_000_000_000 }), fc.constant(99_999_000)),
        resolutionMs: fc.constantFrom(1000, 7000, 3_600_000),
      })
      .map(({ dict, carried, rows, picks, firstStart, resolutionMs }) => {
        const n = rows.length;
        const v = new Int32Array(n * VALUES_PER_BUCKET);
        // (An OHLC is null by its open; one with an open has all four values.)
        const isNull = (nulls: boolean[], k: number) => (k < 6 ? nulls[k]! : nulls[6 + ((k - 6) & ~3)]! && (k - 6) % 4 === 0);
        rows.forEach((r, j) => r.values.forEach((x, k) => (v[j * VALUES_PER_BUCKET + k] = isNull(r.nulls, k) ? -1 : x % dict.length)));
        const count = Float64Array.from(rows.map((r) => r.count));
        const at: number[] = [];
        const filled: number[] = [];
        // Runs of one row: observed once then filled, or filled from the carried state (row −1).
        for (const [pick, carriedRow, len] of picks) {
          const row = carriedRow ? -1 : pick % n;
          for (let i = 0; i < len; i++) {
            at.push(row);
            filled.push(row === -1 || i > 0 || pick % 3 === 0 ? 1 : 0);
          }
        }
        const columns = { n, ts: new Float64Array(n), count, v, dict, num: new Float64Array(dict.length) };
        return { columns, n: at.length, firstStart, resolutionMs, rows: Int32Array.from(at), filled: Uint8Array.from(filled), carried };
      });
    fc.assert(
      fc.property(series, fc.constantFrom<'json' | 'ndjson'>('json', 'ndjson'), fc.integer({ min: 1, max: 12 }), fc.integer({ min: 1, max: 3000 }), fc.constantFrom(64, 700, 4096, 1 << 16), (s, format, size, first, chunk) => {
        const objects = seriesBuckets(s);
        const want = format === 'json' ? referenceSummaryBucketsJsonBytes(objects, '{"data":', '}') : referenceSummaryBucketsNdjsonBytes(objects);
        // Twice, the second time from the segments the first made of the dictionary's entries.
        for (const slice of [size, s.n || 1]) {
          const w = new SummaryBytesWriter(format, first, chunk).begin(format === 'json' ? '{"data":' : '');
          for (let at = 0; at < s.n; at += slice) w.series(s, at, Math.min(s.n, at + slice));
          const got = Buffer.concat(w.end(format === 'json' ? '}' : '').parts());
          expect(got.toString()).toBe(want.toString());
          expect(got.equals(want)).toBe(true);
        }
      }),
      { numRuns: 400 },
    );
  });

  it('of a series kept in columns stay whole where a bucket barely fits its Buffer: one-character values and nulls', () => {
    // A bucket of nulls is longer than one of one-character values, and numbers may print in
    // 24 characters: the room made for a bucket must hold the longest. Every first-Buffer size
    // around one bucket's length is tried.
    const n = 3;
    const v = new Int32Array(n * VALUES_PER_BUCKET).fill(-1);
    for (let k = 0; k < 6; k++) v[VALUES_PER_BUCKET + k] = 0;
    const s: ColumnSeries = {
      // Numbers that print longest (24 characters).
      columns: { n, ts: new Float64Array(n), count: Float64Array.from([-Number.MAX_VALUE, 2, -Number.MAX_VALUE]), v, dict: ['7'], num: new Float64Array(1) },
      n: 6,
      firstStart: -Number.MAX_VALUE,
      resolutionMs: 1000,
      rows: Int32Array.from([0, 1, 2, 0, -1, 2]),
      filled: Uint8Array.from([0, 0, 0, 1, 1, 0]),
      carried: [null, null, null, null, null, null],
    };
    const want = referenceSummaryBucketsJsonBytes(seriesBuckets(s), '{"data":', '}');
    for (let first = 1; first <= 1200; first++) {
      const w = new SummaryBytesWriter('json', first, 1 << 16).begin('{"data":');
      for (let at = 0; at < s.n; at++) w.series(s, at, at + 1);
      expect(Buffer.concat(w.end('}').parts()).toString()).toBe(want.toString());
    }
  });

  it('write an empty answer as the earlier writers did', () => {
    expect(summaryBucketsJsonBytes([], '{"data":', '}').toString()).toBe('{"data":[]}');
    expect(summaryBucketsNdjsonBytes([]).length).toBe(0);
    expect(summaryBucketsCsvBytes([], false).length).toBe(0);
    expect(new SummaryBytesWriter('ndjson').begin().end().parts()).toHaveLength(1);
  });
});

describe('Buffers given back (releaseSummaryParts)', () => {
  // A day at R=1 is about 37 Buffers: answers of a few Buffers each, some held, some given back.
  const big = (n: number, seed: number): ExactBucket[] =>
    Array.from({ length: n }, (_, i) => ({
      timestamp: 1_772_409_600_000 + i * 1000,
      quote_count: 1 + ((i * seed) % 7),
      is_forward_filled: false,
      best_bid: `0.${(i * seed) % 997}1`,
      best_bid_size: String((i * 31 + seed) % 5000),
      best_ask: `0.${(i + seed) % 991}3`,
      best_ask_size: String(i % 13),
      mid_price: null,
      spread: `-0.0${seed}`,
      best_bid_ohlc: { open: '0.1', high: `0.${seed}9`, low: '0.05', close: `0.${i % 10}1` },
      best_ask_ohlc: null,
      mid_price_ohlc: null,
      spread_ohlc: { open: '1', high: '2', low: '0', close: String(seed) },
    }));

  it('are written again by later answers, and never while an answer still holds them', () => {
    fc.assert(
      fc.property(fc.array(fc.tuple(fc.integer({ min: 1, max: 6000 }), fc.nat({ max: 50 }), fc.boolean()), { minLength: 1, maxLength: 8 }), (steps) => {
        const held: { parts: Buffer[]; expected: Buffer }[] = [];
        for (const [n, seed, release] of steps) {
          const list = big(n, seed);
          const parts = new SummaryBytesWriter('json', 1 << 20).begin('{"data":').buckets(list).end('}').parts();
          const expected = referenceSummaryBucketsJsonBytes(list, '{"data":', '}');
          expect(Buffer.concat(parts).equals(expected)).toBe(true);
          if (release) releaseSummaryParts(parts);
          else held.push({ parts, expected });
        }
        // Every answer not given back is still whole after the others were written.
        for (const h of held) expect(Buffer.concat(h.parts).equals(h.expected)).toBe(true);
      }),
      { numRuns: 25 },
    );
    const a = new SummaryBytesWriter('json', 1 << 20).begin().buckets(big(3000, 1)).end().parts();
    releaseSummaryParts(a);
    releaseSummaryParts(a);
    const b = new SummaryBytesWriter('json', 1 << 20).begin().buckets(big(3000, 2)).end().parts();
    const c = new SummaryBytesWriter('json', 1 << 20).begin().buckets(big(3000, 3)).end().parts();
    // Given back twice, still handed out once: b and c share no memory.
    const mem = (ps: Buffer[]) => new Set(ps.map((p) => p.buffer));
    for (const m of mem(b)) expect(mem(c).has(m)).toBe(false);
    expect([...mem(a)].some((m) => mem(b).has(m) || mem(c).has(m))).toBe(true);
  });
});
