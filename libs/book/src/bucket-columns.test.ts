import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { decodeBuckets, encodeBuckets } from './bucket-codec.ts';
import { SummaryBytesWriter } from './bucket-bytes.ts';
import { BucketColumnsDecoder, ColumnsFill, ColumnsMerge, bucketsOfColumns, onGrid, columnsIndexAt, decodeBucketColumns, fillColumns, mergeColumns, mergeToColumns, seriesBuckets } from './bucket-columns.ts';
import { fillSeries, mergeBuckets, planBuckets, toSummaryBucket, type ExactBucket, type Ohlc } from './bucketing.ts';
import type { Top } from './observation.ts';

// Decimals as the book engine writes them, and spellings it never does (the double
// shortcut must leave their order to the text comparison, as mergeBuckets does).
const decimal = fc.oneof(
  fc.constantFrom('0.5', '0.51', '0.5100001', '0.01', '12.75', '1', '0', '-0.02', '-0.5', '0.000001', '100'),
  fc.stringMatching(/^-?(0|[1-9]\d{0,3})(\.\d{0,5}[1-9])?$/),
  // Equal as doubles, different as decimals.
  fc.constantFrom('0.30000000000000000001', '0.3', '0.29999999999999999999'),
  fc.constantFrom('00.5', '1.50', '-0', '-00.50'),
);
const value = fc.option(decimal, { nil: null, freq: 5 });
const ohlc: fc.Arbitrary<Ohlc | null> = fc.option(fc.record({ open: decimal, high: decimal, low: decimal, close: decimal }), { nil: null, freq: 5 });

/** Observed buckets in time order on whole seconds; a single observation's OHLCs flat, as the rollup stores them. */
const observed = (fineS: number): fc.Arbitrary<ExactBucket[]> =>
  fc
    .array(fc.tuple(fc.integer({ min: 1, max: 40 }), fc.integer({ min: 1, max: 5 }), value, value, value, value, value, value, ohlc, ohlc, ohlc, ohlc), { maxLength: 80 })
    .map((rows) => {
      let t = 1_772_409_600_000 - fineS * 1000 * 3;
      return rows.map(([gap, q, bb, bbs, ba, bas, m, sp, o1, o2, o3, o4]) => {
        t += gap * fineS * 1000;
        const flat = (x: string | null): Ohlc | null => (x === null ? null : { open: x, high: x, low: x, close: x });
        return {
          timestamp: t,
          quote_count: q,
          is_forward_filled: false,
          best_bid: bb,
          best_bid_size: bbs,
          best_ask: ba,
          best_ask_size: bas,
          mid_price: m,
          spread: sp,
          best_bid_ohlc: q === 1 ? flat(bb) : o1,
          best_ask_ohlc: q === 1 ? flat(ba) : o2,
          mid_price_ohlc: q === 1 ? flat(m) : o3,
          spread_ohlc: q === 1 ? flat(sp) : o4,
        };
      });
    });

/** The buckets cut into chunks (as hours are) at arbitrary points. */
function chunked(list: ExactBucket[], cuts: number[]): string[] {
  const at = [...new Set(cuts.map((c) => c % (list.length + 1)))].sort((a, b) => a - b);
  const out: string[] = [];
  let prev = 0;
  for (const c of [...at, list.length]) {
    if (c > prev) out.push(encodeBuckets(list.slice(prev, c)));
    prev = Math.max(prev, c);
  }
  return out;
}

describe('stored buckets as columns', () => {
  it('decode to the buckets decodeBuckets gives, chunk after chunk', () => {
    fc.assert(
      fc.property(observed(1), fc.array(fc.nat(), { maxLength: 4 }), (list, cuts) => {
        const texts = chunked(list, cuts);
        const c = decodeBucketColumns(texts);
        expect(bucketsOfColumns(c)).toEqual(texts.flatMap((t) => decodeBuckets(t)));
        for (const k of [0, 1, c.n >> 1]) if (k <= c.n) expect(bucketsOfColumns(c, k)).toEqual(texts.flatMap((t) => decodeBuckets(t)).slice(k));
      }),
      { numRuns: 300 },
    );
  });

  it('merge to a coarser resolution exactly as mergeBuckets does, over days decoded apart and any cut of them', () => {
    fc.assert(
      fc.property(
        fc.constantFrom(1, 5, 60),
        fc.integer({ min: 1, max: 12 }),
        fc.constantFrom(1, 2, 3),
        fc.array(fc.nat(), { maxLength: 3 }),
        fc.nat(),
        fc.nat(),
        (fine, mult, parts, cuts, a, b) => {
          const R = fine * mult;
          return fc.assert(
            fc.property(observed(fine), (list) => {
              // Split into `parts` separately decoded column sets (separate dictionaries), as days are.
              const bounds = [0, ...cuts.slice(0, parts - 1).map((c) => c % (list.length + 1)).sort((x, y) => x - y), list.length];
              const ranges = [];
              for (let k = 0; k + 1 < bounds.length; k++) {
                const piece = list.slice(bounds[k], bounds[k + 1]);
                if (piece.length === 0) continue;
                const columns = decodeBucketColumns(chunked(piece, [a, b]));
                ranges.push({ columns, from: 0, to: columns.n });
              }
              expect(mergeColumns(ranges, fine, R)).toEqual(mergeBuckets(list, fine, R));
              // A window of one set: from a time on, to a time.
              if (ranges.length > 0) {
                const c = ranges[0]!.columns;
                const from = columnsIndexAt(c, c.ts[a % (c.n || 1)] ?? 0);
                const to = Math.max(from, columnsIndexAt(c, c.ts[b % (c.n || 1)] ?? 0));
                expect(mergeColumns([{ columns: c, from, to }], fine, R)).toEqual(mergeBuckets(bucketsOfColumns(c, from, to), fine, R));
              }
            }),
            { numRuns: 10 },
          );
        },
      ),
      { numRuns: 40 },
    );
  });

  it('as a filled series written straight from the columns: the bytes of the object path, and JSON.stringify of the answer objects', () => {
    // Plain decimals (printed by JSON.stringify as written) most of the time, any spelling now and then.
    const plain = fc.oneof(
      { weight: 8, arbitrary: fc.stringMatching(/^(0|[1-9]\d{0,3})(\.\d{0,3}[1-9])?$/) },
      { weight: 1, arbitrary: decimal },
    );
    const top: fc.Arbitrary<Top | null> = fc.option(
      fc.record({
        best_bid: fc.option(plain, { nil: null }),
        best_bid_size: fc.option(plain, { nil: null }),
        best_ask: fc.option(plain, { nil: null }),
        best_ask_size: fc.option(plain, { nil: null }),
        mid_price: fc.option(plain, { nil: null }),
        spread: fc.option(plain, { nil: null }),
      }),
      { nil: null },
    );
    fc.assert(
      fc.property(
        fc.constantFrom(1, 5),
        fc.integer({ min: 1, max: 9 }),
        observed(1),
        fc.array(fc.nat(), { maxLength: 3 }),
        top,
        fc.integer({ min: -200, max: 400 }),
        fc.integer({ min: 0, max: 900 }),
        fc.constantFrom<'json' | 'ndjson'>('json', 'ndjson'),
        fc.integer({ min: 1, max: 40 }),
        (fine, mult, list0, cuts, carried, startS, spanS, format, slice) => {
          const R = fine * mult;
          const list = list0.map((b) => ({ ...b, timestamp: Math.ceil(b.timestamp / (fine * 1000)) * fine * 1000 })).filter((b, i, a) => i === 0 || b.timestamp > a[i - 1]!.timestamp);
          const texts = chunked(list, cuts);
          const columns = texts.map((t) => decodeBucketColumns([t]));
          const ranges = columns.map((c) => ({ columns: c, from: 0, to: c.n }));
          const t0 = 1_772_409_600_000;
          const plan = planBuckets({ startMs: t0 + startS * 1000, endMs: t0 + (startS + spanS) * 1000 }, R);
          // The old path: objects merged, filled, written.
          const objects = fillSeries(mergeColumns(ranges, fine, R), plan, carried);
          const series = fillColumns(mergeToColumns(ranges, fine, R), plan, carried);
          expect(series.n).toBe(objects.length);
          expect(seriesBuckets(series)).toEqual(objects);
          // Written in slices, as the API does.
          const w = new SummaryBytesWriter(format, 64, 1024);
          w.begin('{"h":1,"data":');
          for (let at = 0; at < series.n; at += slice) w.series(series, at, Math.min(series.n, at + slice));
          const got = Buffer.concat(w.end('}').parts());
          const want = Buffer.concat(new SummaryBytesWriter(format, 64, 1024).begin('{"h":1,"data":').buckets(objects).end('}').parts());
          expect(got.toString()).toBe(want.toString());
          // The reference: JSON of the answer objects (numbers), wherever the decimals print as JSON prints them.
          const answer = objects.map(toSummaryBucket);
          const printed = format === 'json' ? `{"h":1,"data":${JSON.stringify(answer)}}` : answer.map((b) => `${JSON.stringify(b)}\n`).join('');
          const all = objects.flatMap((b) => [b.best_bid, b.best_bid_size, b.best_ask, b.best_ask_size, b.mid_price, b.spread, ...[b.best_bid_ohlc, b.best_ask_ohlc, b.mid_price_ohlc, b.spread_ohlc].flatMap((o) => (o ? [o.open, o.high, o.low, o.close] : []))]);
          if (all.every((x) => x === null || String(Number(x)) === x)) expect(got.toString()).toBe(printed);
          // (Spellings the engine never writes, such as 00.5, are no JSON numbers: compared as bytes above only.)
          else if (all.every((x) => x === null || (x !== '-0' && /^-?(0|[1-9]\d*)(\.\d*[1-9])?$/.test(x)))) expect(format === 'json' ? JSON.parse(got.toString()) : got.toString().split('\n').filter(Boolean).map((l) => JSON.parse(l))).toEqual(format === 'json' ? JSON.parse(printed) : answer);
        },
      ),
      { numRuns: 400 },
    );
  });

  it('merged and filled a piece at a time, from one set of columns or several: the series fillSeries gives', () => {
    fc.assert(
      fc.property(
        fc.constantFrom(1, 5),
        fc.integer({ min: 1, max: 9 }),
        observed(1),
        fc.array(fc.nat(), { maxLength: 3 }),
        fc.boolean(),
        fc.array(fc.integer({ min: 1, max: 30 }), { minLength: 1, maxLength: 4 }),
        fc.integer({ min: -200, max: 400 }),
        fc.integer({ min: 0, max: 900 }),
        fc.nat(),
        fc.nat(),
        (fine, mult, list0, cuts, oneSet, pieces, startS, spanS, a, b) => {
          const R = fine * mult;
          const list = list0.map((x) => ({ ...x, timestamp: Math.ceil(x.timestamp / (fine * 1000)) * fine * 1000 })).filter((x, i, all) => i === 0 || x.timestamp > all[i - 1]!.timestamp);
          const texts = chunked(list, cuts);
          // One set of columns decoded a chunk at a time (a day), or one set per chunk.
          const decoder = new BucketColumnsDecoder();
          for (const t of texts) decoder.add(t);
          const sets = oneSet ? [decoder.columns()] : texts.map((t) => decodeBucketColumns([t]));
          const all = sets.flatMap((c) => bucketsOfColumns(c));
          expect(all).toEqual(list);
          const t0 = 1_772_409_600_000;
          const plan = planBuckets({ startMs: t0 + startS * 1000, endMs: t0 + (startS + spanS) * 1000 }, R);
          const carried = list[0] ?? null;
          const want = fillSeries(mergeBuckets(list, fine, R), plan, carried);
          // Merged in pieces of the sizes given, in turn.
          const merge = new ColumnsMerge(fine, R);
          let p = 0;
          for (const c of sets) for (let at = 0; at < c.n; ) {
            const to = Math.min(c.n, at + pieces[p++ % pieces.length]!);
            merge.add(c, at, to);
            at = to;
          }
          const merged = merge.finish();
          expect(bucketsOfColumns(merged)).toEqual(mergeBuckets(list, fine, R));
          const fill = new ColumnsFill(merged, plan, carried);
          let steps = 0;
          while (!fill.step(pieces[steps++ % pieces.length]!)) expect(steps).toBeLessThanOrEqual(plan.count + 1);
          expect(seriesBuckets(fill.series())).toEqual(want);
          // At the stored resolution, a stretch of one set filled as it is, unmerged.
          if (mult === 1 && oneSet) {
            const c = sets[0]!;
            const from = Math.min(a % (c.n + 1), b % (c.n + 1));
            const to = Math.max(a % (c.n + 1), b % (c.n + 1));
            const part = new ColumnsFill(c, plan, carried, from, to);
            part.step(Infinity);
            expect(seriesBuckets(part.series())).toEqual(fillSeries(bucketsOfColumns(c, from, to), plan, carried));
          }
        },
      ),
      { numRuns: 300 },
    );
  });

  it('refuse what mergeBuckets and decodeBuckets refuse', () => {
    const c = decodeBucketColumns([encodeBuckets(decodeBuckets('0.5|1000,1,0,0,0,0,0,0'))]);
    expect(() => mergeColumns([{ columns: c, from: 0, to: 1 }], 1, 7.5)).toThrow(RangeError);
    expect(() => mergeColumns([{ columns: c, from: 0, to: 1 }], 2, 3)).toThrow(RangeError);
    // Out of order across ranges.
    expect(() => mergeColumns([{ columns: c, from: 0, to: 1 }, { columns: c, from: 0, to: 1 }], 1, 5)).toThrow(RangeError);
    for (const bad of ['0.5', '0.5|1000,1,0', '0.5|1000,1,3,0,0,0,0,0', '0.5|[', '0.5|1000,0,0,0,0,0,0,0', '0.5|1000,2,0,0,0,0,0,0,0']) {
      expect(() => decodeBuckets(bad)).toThrow(RangeError);
      expect(() => decodeBucketColumns([bad])).toThrow(RangeError);
    }
  });
});

describe('onGrid (the merge and fill alignment check)', () => {
  it('says what t % step === 0 says, for any double and any step of whole ms', () => {
    const step = fc.oneof(fc.constantFrom(1, 1000, 7000, 60_000, 3_600_000), fc.integer({ min: 1, max: 3_600_000 }));
    // Timestamps on and off the grid, around 2^53 where the products start to round, and any double.
    const t = fc.oneof(
      fc.tuple(fc.integer({ min: -2_000_000_000, max: 2_000_000_000 }), fc.constantFrom(1000, 7000, 3_600_000), fc.integer({ min: -2, max: 2 })).map(([k, s, d]) => k * s + d),
      fc.integer({ min: -50, max: 50 }).map((d) => Number.MAX_SAFE_INTEGER + d),
      fc.integer({ min: -50, max: 50 }).map((d) => -Number.MAX_SAFE_INTEGER + d),
      fc.double(),
      fc.constantFrom(0, -0, NaN, Infinity, -Infinity, 2 ** 70, 1000 * 2 ** 55, 0.5, -1e-300),
    );
    fc.assert(
      fc.property(t, step, (x, s) => {
        expect(onGrid(x, s)).toBe(x % s === 0);
      }),
      { numRuns: 20_000 },
    );
  });
});
