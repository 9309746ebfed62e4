import type { ExchangeAEvent, ExchangeBRecord } from '@booktape/domain';
import fc from 'fast-check';
import { turnTaking } from '@booktape/testkit/properties';
import { describe, expect, it } from 'vitest';
import { decodeBuckets, encodeBuckets } from './bucket-codec.ts';
import { type ExactBucket, type Ohlc, aggregateObservations, appendBuckets, fillSeries, mergeBuckets, planBuckets, summaryBucketsJsonBytes, summaryBucketsNdjsonBytes, toSummaryBucket } from './bucketing.ts';
import type { Observation } from './observation.ts';
import { LADDER, byHour, ladderBuckets, ladderFor, newBook, type BookVenue } from './rollup.ts';
import { exchangeAStreamArb, exchangeBStreamArb } from './streams.test-support.ts';

/** The properties here are awaited, one turn per run, so their time counts against a timeout. */
const SLOW = 120_000;

const venueArb = fc.constantFrom<BookVenue>('exchange-a', 'exchange-b');

function observations(venue: BookVenue, records: readonly (ExchangeAEvent | ExchangeBRecord)[]): Observation[] {
  const book = newBook(venue);
  const out: Observation[] = [];
  for (const r of records) {
    const o = book.apply(r);
    if (o !== null) out.push(o);
  }
  return out;
}

const observationsArb = venueArb.chain((v) => (v === 'exchange-a' ? exchangeAStreamArb : exchangeBStreamArb).map((rs) => observations(v, rs)));

describe('stored summary buckets', () => {
  it('the codec gives back exactly the buckets it was given, at every ladder level', async () => {
    await fc.assert(
      turnTaking(observationsArb, (obs) => {
        for (const [, buckets] of ladderBuckets(obs)) {
          expect(decodeBuckets(encodeBuckets(buckets))).toEqual(buckets);
        }
      }),
      { numRuns: 200 },
    );
  }, SLOW);

  it('the codec writes the documented text, the one stored chunks of earlier releases hold', () => {
    const flat = (v: string) => ({ open: v, high: v, low: v, close: v });
    const t = 1_772_000_000_000;
    const one = { timestamp: t, quote_count: 1, is_forward_filled: false, best_bid: '0.45', best_bid_size: '10', best_ask: '0.55', best_ask_size: '7', mid_price: '0.5', spread: '0.1', best_bid_ohlc: flat('0.45'), best_ask_ohlc: flat('0.55'), mid_price_ohlc: flat('0.5'), spread_ohlc: flat('0.1') };
    const two = { ...one, timestamp: t + 2000, quote_count: 2, best_bid: '0.46', best_ask_size: null, best_bid_ohlc: { open: '0.45', high: '0.46', low: '0.45', close: '0.46' }, best_ask_ohlc: null };
    // Dictionary in order of first use; per bucket: seconds since the last, quote_count, six
    // closes; OHLCs only when quote_count > 1, -1 for null.
    const text = '0.45,10,0.55,7,0.5,0.1,0.46|1772000000,1,0,1,2,3,4,5,2,2,6,1,2,-1,4,5,0,6,0,6,-1,4,4,4,4,5,5,5,5';
    expect(encodeBuckets([one, two] as ExactBucket[])).toBe(text);
    expect(decodeBuckets(text)).toEqual([one, two]);
  });

  it('the codec refuses malformed text instead of inventing buckets', () => {
    for (const bad of ['', 'no bar', '0.5|[', '0.5|1,1,0,0,0,0,0', '0.5|1,1,0,0,0,0,0,7', '|1,0,-1,-1,-1,-1,-1,-1']) {
      expect(() => decodeBuckets(bad)).toThrow(RangeError);
    }
    expect(decodeBuckets('|')).toEqual([]);
  });

  it('each ladder level equals aggregating the observations at that level', async () => {
    await fc.assert(
      turnTaking(observationsArb, (obs) => {
        const ladder = ladderBuckets(obs);
        for (const level of LADDER) expect(ladder.get(level)).toEqual(aggregateObservations(obs, level));
      }),
      { numRuns: 100 },
    );
  }, SLOW);

  it('any resolution merged from its ladder level equals aggregating the observations at it', async () => {
    await fc.assert(
      turnTaking(observationsArb, fc.integer({ min: 1, max: 3600 }), (obs, R) => {
        const level = ladderFor(R);
        expect(R % level).toBe(0);
        expect(mergeBuckets(ladderBuckets(obs).get(level)!, level, R)).toEqual(aggregateObservations(obs, R));
      }),
      { numRuns: 200 },
    );
  }, SLOW);

  it('buckets of a stream cut anywhere and appended equal the buckets of the whole stream', async () => {
    await fc.assert(
      turnTaking(observationsArb, fc.nat(), fc.constantFrom(1, 5, 60, 3600), (obs, k0, R) => {
        const k = k0 % (obs.length + 1);
        const joined = appendBuckets(aggregateObservations(obs.slice(0, k), R), aggregateObservations(obs.slice(k), R));
        expect(joined).toEqual(aggregateObservations(obs, R));
      }),
      { numRuns: 300 },
    );
  }, SLOW);

  it('no stored bucket straddles an hour: chunks by hour hold each bucket once, in order', async () => {
    await fc.assert(
      turnTaking(observationsArb, (obs) => {
        for (const [, buckets] of ladderBuckets(obs)) {
          const chunks = [...byHour(buckets)];
          expect(chunks.flatMap(([, b]) => b)).toEqual(buckets);
          for (const [hour, b] of chunks) for (const x of b) expect(Math.floor(x.timestamp / 3_600_000) * 3_600_000).toBe(hour);
        }
      }),
      { numRuns: 100 },
    );
  }, SLOW);

  it('the answer JSON is byte for byte JSON.stringify of the 2.3 buckets where every decimal prints as its number', async () => {
    // Forward-filled runs included (fillSeries over sparse observations): their text after
    // the timestamp is reused, which must not change a byte.
    const printsAsNumber = (v: string | null) => v === null || String(Number(v)) === v;
    const ohlcPrints = (o: Ohlc | null) => o === null || [o.open, o.high, o.low, o.close].every(printsAsNumber);
    let compared = 0;
    await fc.assert(
      turnTaking(observationsArb, fc.constantFrom(1, 7, 60), (obs, R) => {
        if (obs.length === 0) return;
        const startMs = obs[0]!.ts - 5 * R * 1000;
        const plan = planBuckets({ startMs, endMs: Math.min(obs[obs.length - 1]!.ts + 50 * R * 1000, startMs + 2000 * R * 1000) }, R);
        const series = fillSeries(aggregateObservations(obs, R), plan);
        const prints = series.every(
          (b) =>
            [b.best_bid, b.best_bid_size, b.best_ask, b.best_ask_size, b.mid_price, b.spread].every(printsAsNumber) &&
            [b.best_bid_ohlc, b.best_ask_ohlc, b.mid_price_ohlc, b.spread_ohlc].every(ohlcPrints),
        );
        if (!prints) return;
        compared++;
        expect(summaryBucketsJsonBytes(series).toString('utf8')).toBe(JSON.stringify(series.map(toSummaryBucket)));
        expect(summaryBucketsNdjsonBytes(series).toString('utf8')).toBe(series.map((b) => `${JSON.stringify(toSummaryBucket(b))}\n`).join(''));
      }),
      { numRuns: 200 },
    );
    // Most generated streams print as numbers: the comparison is not vacuous.
    expect(compared).toBeGreaterThan(100);
  }, SLOW);

  it('the answer JSON written from exact decimals parses to exactly the 2.3 buckets', async () => {
    await fc.assert(
      turnTaking(observationsArb, fc.constantFrom(1, 7, 60, 3600), (obs, R) => {
        if (obs.length === 0) return;
        const startMs = obs[0]!.ts - 5 * R * 1000;
        const plan = planBuckets({ startMs, endMs: Math.min(obs[obs.length - 1]!.ts + 5 * R * 1000, startMs + 2000 * R * 1000) }, R);
        const series = fillSeries(aggregateObservations(obs, R), plan);
        expect(JSON.parse(summaryBucketsJsonBytes(series).toString('utf8'))).toEqual(series.map(toSummaryBucket));
      }),
      { numRuns: 200 },
    );
    expect(JSON.parse(summaryBucketsJsonBytes([]).toString('utf8'))).toEqual([]);
    // The head and tail around the buckets may hold any text (a caller's ids): written as UTF-8.
    // (long enough that its UTF-8 outgrows the buffer sized from its length).
    const market = `ç${'市場'.repeat(100)}😀`;
    const head = JSON.stringify({ market, n: 1 }).slice(0, -1) + ',"data":';
    expect(JSON.parse(summaryBucketsJsonBytes([], head, '}').toString('utf8'))).toEqual({ market, n: 1, data: [] });
  }, SLOW);
});
