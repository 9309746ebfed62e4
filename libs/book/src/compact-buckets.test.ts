import type { ExchangeAEvent, ExchangeBRecord } from '@booktape/domain';
import fc from 'fast-check';
import { turnTaking } from '@booktape/testkit/properties';
import { describe, expect, it } from 'vitest';
import { encodeBuckets } from './bucket-codec.ts';
import { bucketsOfColumns, decodeBucketColumns } from './bucket-columns.ts';
import { aggregateObservations } from './bucketing.ts';
import { ColumnsAggregator, encodeColumns, type ObservationSink } from './compact-buckets.ts';
import type { Observation } from './observation.ts';
import { LADDER, byHour, columnsByHour, ladderColumns, newBook, type BookVenue } from './rollup.ts';
import { T0, exchangeAStreamArb, exchangeBStreamArb } from './streams.test-support.ts';

/**
 * The rollup's compact path (ColumnsAggregator → ladderColumns → columnsByHour →
 * encodeColumns) against the object path it replaced, taken as the reference: each ladder
 * level aggregated straight from the observations at that level (aggregateObservations, not
 * merged from finer levels), grouped by hour (byHour) and encoded (encodeBuckets). Every
 * chunk's text must be the same, byte for byte.
 */

const SLOW = 120_000;

/** Observations of an engine stream, as `apply` returns them and as `applyTo` hands them to a sink. */
function bothWays(venue: BookVenue, records: readonly (ExchangeAEvent | ExchangeBRecord)[]): { objects: Observation[]; fields: Observation[] } {
  const a = newBook(venue);
  const b = newBook(venue);
  const objects: Observation[] = [];
  const fields: Observation[] = [];
  const sink: ObservationSink = {
    observe: (ts, best_bid, best_bid_size, best_ask, best_ask_size, mid_price, spread) => fields.push({ ts, best_bid, best_bid_size, best_ask, best_ask_size, mid_price, spread }),
  };
  for (const r of records) {
    const o = a.apply(r);
    if (o !== null) objects.push(o);
    expect(b.applyTo(r, sink)).toBe(o !== null);
  }
  return { objects, fields };
}

const engineArb = fc.constantFrom<BookVenue>('exchange-a', 'exchange-b').chain((v) => (v === 'exchange-a' ? exchangeAStreamArb : exchangeBStreamArb).map((rs) => ({ v, rs })));

/**
 * Observations with texts the engine rarely gives: negative spreads, long sizes, decimals
 * whose doubles are equal (or differ in the last place) where only the texts order them.
 */
const text = fc.constantFrom('0', '1', '0.5', '0.45', '0.455', '0.1', '-0.01', '-0.1', '10', '2.5', '1000000.000001', '0.10000000000000000001', '0.09999999999999999999', '0.1000000000000000001', '123456789012345');
const value = fc.option(text, { freq: 4, nil: null });
const dt = fc.oneof(
  { weight: 4, arbitrary: fc.constant(0) },
  { weight: 6, arbitrary: fc.integer({ min: 1, max: 1_500 }) },
  { weight: 2, arbitrary: fc.integer({ min: 1_500, max: 400_000 }) },
  { weight: 1, arbitrary: fc.integer({ min: 400_000, max: 3 * 3_600_000 }) },
);
const syntheticArb = fc
  .array(fc.tuple(dt, value, value, value, value, value, value), { maxLength: 400 })
  .map((rows) => {
    let ts = T0 - 1_234;
    return rows.map(([d, best_bid, best_bid_size, best_ask, best_ask_size, mid_price, spread]): Observation => {
      ts += d;
      return { ts, best_bid, best_bid_size, best_ask, best_ask_size, mid_price, spread };
    });
  });

/** The compact path's chunks (level, hour, count, text) of observations handed over one way or the other. */
function compactChunks(obs: readonly Observation[], asFields: boolean): Array<[number, number, number, string]> {
  const agg = new ColumnsAggregator(1);
  for (const o of obs) {
    if (asFields) agg.observe(o.ts, o.best_bid, o.best_bid_size, o.best_ask, o.best_ask_size, o.mid_price, o.spread);
    else agg.push(o);
  }
  const ladder = ladderColumns(agg.finish());
  const out: Array<[number, number, number, string]> = [];
  for (const level of LADDER) {
    const c = ladder.get(level)!;
    for (const { hour, from, to } of columnsByHour(c)) out.push([level, hour, to - from, encodeColumns(c, from, to)]);
  }
  return out;
}

function referenceChunks(obs: readonly Observation[]): Array<[number, number, number, string]> {
  const out: Array<[number, number, number, string]> = [];
  for (const level of LADDER) for (const [hour, b] of byHour(aggregateObservations(obs, level))) out.push([level, hour, b.length, encodeBuckets(b)]);
  return out;
}

describe('the rollup buckets as columns', () => {
  it('give the reference chunks, byte for byte, for any engine stream (observations handed over as fields)', async () => {
    await fc.assert(
      turnTaking(engineArb, ({ v, rs }) => {
        const { objects, fields } = bothWays(v, rs);
        expect(fields).toEqual(objects);
        expect(compactChunks(fields, true)).toEqual(referenceChunks(objects));
      }),
      { numRuns: 150 },
    );
  }, SLOW);

  it('give the reference chunks for any observations, the decimals ordered by their texts where doubles cannot', async () => {
    await fc.assert(
      turnTaking(syntheticArb, fc.boolean(), (obs, asFields) => {
        expect(compactChunks(obs, asFields)).toEqual(referenceChunks(obs));
      }),
      { numRuns: 300 },
    );
  }, SLOW);

  it('give the reference buckets at every level, and decode back to them', async () => {
    await fc.assert(
      turnTaking(syntheticArb, (obs) => {
        const agg = new ColumnsAggregator(1);
        for (const o of obs) agg.push(o);
        const ladder = ladderColumns(agg.finish());
        for (const level of LADDER) {
          const c = ladder.get(level)!;
          const want = aggregateObservations(obs, level);
          expect(bucketsOfColumns(c)).toEqual(want);
          expect(bucketsOfColumns(decodeBucketColumns([encodeColumns(c)]))).toEqual(want);
        }
      }),
      { numRuns: 150 },
    );
  }, SLOW);

  it('refuse what the object path refuses, with the same errors', () => {
    const o = (ts: number, bid: string | null): Observation => ({ ts, best_bid: bid, best_bid_size: null, best_ask: null, best_ask_size: null, mid_price: null, spread: null });
    const agg = new ColumnsAggregator(1);
    agg.push(o(T0 + 5, '0.5'));
    expect(() => agg.push(o(T0 + 4, '0.5'))).toThrow('observations out of order');
    expect(() => agg.push(o(Number.NaN, '0.5'))).toThrow('observations out of order');
    expect(() => new ColumnsAggregator(0)).toThrow(RangeError);
    // A text that is not a decimal cannot be stored: the same error as encodeBuckets, first such text first.
    const bad = [o(T0, '0.5'), o(T0 + 1, 'x1'), o(T0 + 2000, 'y2')];
    const agg2 = new ColumnsAggregator(1);
    for (const b of bad) agg2.push(b);
    const c = agg2.finish();
    const want = (() => {
      try {
        encodeBuckets(aggregateObservations(bad, 1));
      } catch (e) {
        return (e as Error).message;
      }
      return 'no error';
    })();
    expect(want).toMatch(/not a decimal/);
    expect(() => encodeColumns(c)).toThrow(want);
    // The empty chunk, as encodeBuckets writes it.
    expect(encodeColumns(c, 1, 1)).toBe(encodeBuckets([]));
  });
});
