import { decimalFromParts, decimalToScaled, subtractDecimal } from '@booktape/decimal';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  MAX_BUCKETS,
  TooManyBucketsError,
  aggregateObservations,
  fillSeries,
  mergeBuckets,
  planBuckets,
  summarise,
  toSummaryBucket,
  utcDayWindow,
} from './bucketing.ts';
import type { Observation } from './observation.ts';

const DAY = utcDayWindow('2026-02-10');
const T = DAY.startMs;

function obs(ts: number, bid: string | null, ask: string | null, bidSize = '1', askSize = '2'): Observation {
  const both = bid !== null && ask !== null;
  const mid = both ? decimalFromParts((decimalToScaled(bid, 6) + decimalToScaled(ask, 6)) * 5n, 7) : null;
  const spread = both ? subtractDecimal(ask, bid) : null;
  return {
    ts,
    best_bid: bid,
    best_bid_size: bid === null ? null : bidSize,
    best_ask: ask,
    best_ask_size: ask === null ? null : askSize,
    mid_price: mid,
    spread,
  };
}

describe('planBuckets', () => {
  it('covers the buckets whose start lies in the window, epoch-aligned', () => {
    expect(planBuckets({ startMs: T + 1, endMs: T + 60_000 }, 60)).toMatchObject({
      firstStart: T + 60_000,
      lastStart: T + 60_000,
      count: 1,
      dataEndMs: T + 120_000,
    });
    expect(planBuckets({ startMs: T + 1, endMs: T + 59_999 }, 60).count).toBe(0);
    expect(planBuckets(DAY, 1).count).toBe(86_400);
    expect(planBuckets(DAY, 7)).toMatchObject({ firstStart: Math.ceil(T / 7000) * 7000, count: 12_343 });
  });

  it('refuses more than 100,000 buckets with a typed error the API turns into a 400', () => {
    expect(planBuckets({ startMs: 0, endMs: (MAX_BUCKETS - 1) * 1000 }, 1).count).toBe(MAX_BUCKETS);
    let caught: unknown;
    try {
      planBuckets({ startMs: 0, endMs: MAX_BUCKETS * 1000 }, 1);
    } catch (e) {
      caught = e;
    }
    expect(caught).toBeInstanceOf(TooManyBucketsError);
    expect(caught).toMatchObject({ requested: MAX_BUCKETS + 1, limit: 100_000, name: 'TooManyBucketsError' });
    expect((caught as Error).message).toMatch(/100000/);
  });

  it('throws the cap error exactly when the window holds more than the cap', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 3600 }),
        fc.integer({ min: 1_600_000_000_000, max: 1_900_000_000_000 }),
        fc.integer({ min: 0, max: 3600 * 1000 * 150_000 }),
        (R, startMs, len) => {
          const r = R * 1000;
          let count = 0;
          const first = Math.ceil(startMs / r) * r;
          if (first <= startMs + len) count = Math.floor((startMs + len - first) / r) + 1;
          if (count > MAX_BUCKETS) expect(() => planBuckets({ startMs, endMs: startMs + len }, R)).toThrow(TooManyBucketsError);
          else expect(planBuckets({ startMs, endMs: startMs + len }, R).count).toBe(count);
        },
      ),
    );
  });

  it('answers every resolution from 1 to 3600 s and no other', () => {
    expect(() => planBuckets(DAY, 0)).toThrow(RangeError);
    expect(() => planBuckets(DAY, 3601)).toThrow(RangeError);
    expect(() => planBuckets(DAY, 1.5)).toThrow(RangeError);
    expect(planBuckets(DAY, 3600).count).toBe(24);
  });

  it('reads UTC dates strictly', () => {
    expect(utcDayWindow('2026-02-10')).toEqual({ startMs: Date.UTC(2026, 1, 10), endMs: Date.UTC(2026, 1, 11) - 1 });
    for (const bad of ['2026-02-30', '2026-2-10', '20260210', '']) expect(() => utcDayWindow(bad)).toThrow(RangeError);
  });
});

describe('summarise', () => {
  it('closes each bucket after its last observation and takes OHLC over non-null values only', () => {
    const o = [obs(T + 1_000, '0.48', '0.52'), obs(T + 20_000, '0.5', null), obs(T + 30_000, '0.45', '0.55'), obs(T + 59_999, null, null)];
    const [b] = summarise(o, planBuckets({ startMs: T, endMs: T }, 60));
    expect(b).toEqual({
      timestamp: T,
      quote_count: 4,
      is_forward_filled: false,
      best_bid: null,
      best_bid_size: null,
      best_ask: null,
      best_ask_size: null,
      mid_price: null,
      spread: null,
      best_bid_ohlc: { open: '0.48', high: '0.5', low: '0.45', close: '0.45' },
      best_ask_ohlc: { open: '0.52', high: '0.55', low: '0.52', close: '0.55' },
      mid_price_ohlc: { open: '0.5', high: '0.5', low: '0.5', close: '0.5' },
      spread_ohlc: { open: '0.04', high: '0.1', low: '0.04', close: '0.1' },
    });
  });

  it('starts at the first bucket that holds an observation and forward-fills after it', () => {
    const o = [obs(T + 125_000, '0.48', '0.52')];
    const got = summarise(o, planBuckets({ startMs: T, endMs: T + 240_000 }, 60));
    expect(got.map((b) => [b.timestamp - T, b.quote_count, b.is_forward_filled])).toEqual([
      [120_000, 1, false],
      [180_000, 0, true],
      [240_000, 0, true],
    ]);
    expect(got[2]).toMatchObject({
      best_bid: '0.48',
      best_bid_size: '1',
      best_ask_size: '2',
      best_bid_ohlc: { open: '0.48', high: '0.48', low: '0.48', close: '0.48' },
      spread_ohlc: { open: '0.04', high: '0.04', low: '0.04', close: '0.04' },
    });
  });

  it('starts the range filled from an earlier observation, from the loaded data or carried from an earlier day', () => {
    const plan = planBuckets({ startMs: T + 60_000, endMs: T + 120_000 }, 60);
    const earlier = obs(T + 5_000, '0.4', '0.6');
    const fromData = summarise([earlier], plan);
    const fromCarry = summarise([], plan, earlier);
    expect(fromData).toEqual(fromCarry);
    expect(fromData.map((b) => [b.timestamp - T, b.is_forward_filled, b.best_bid])).toEqual([
      [60_000, true, '0.4'],
      [120_000, true, '0.4'],
    ]);
  });

  it('forward-fills an unknown book with nulls (the series has started)', () => {
    const got = summarise([obs(T, null, null)], planBuckets({ startMs: T, endMs: T + 1_000 }, 1));
    expect(got[1]).toMatchObject({ quote_count: 0, is_forward_filled: true, best_bid: null, best_bid_ohlc: null, mid_price_ohlc: null });
  });

  it('counts an observation in the bucket its time falls in, even past the window end', () => {
    const got = summarise([obs(T + 59_999, '0.48', '0.52'), obs(T + 60_000, '0.3', '0.52')], planBuckets({ startMs: T, endMs: T + 1 }, 60));
    expect(got).toHaveLength(1);
    expect(got[0]).toMatchObject({ quote_count: 1, best_bid: '0.48' });
  });

  it('is empty when nothing was ever observed up to the range', () => {
    expect(summarise([obs(T + 90_000, '0.4', null)], planBuckets({ startMs: T, endMs: T + 60_000 - 1 }, 60))).toEqual([]);
  });

  it('refuses observations that go back in time', () => {
    expect(() => aggregateObservations([obs(T + 5, '0.1', null), obs(T + 4, '0.1', null)], 1)).toThrow(/out of order/);
  });
});

describe('mergeBuckets', () => {
  it('merges 1 s buckets into 60 s ones exactly', () => {
    const o = [obs(T + 100, '0.48', '0.52'), obs(T + 1_100, '0.5', '0.6', '7'), obs(T + 61_000, '0.3', null)];
    const fine = aggregateObservations(o, 1);
    expect(fine).toHaveLength(3);
    expect(mergeBuckets(fine, 1, 60)).toEqual(aggregateObservations(o, 60));
    expect(mergeBuckets(fine, 1, 60)[0]).toMatchObject({ quote_count: 2, best_bid_size: '7', best_bid_ohlc: { open: '0.48', high: '0.5', low: '0.48', close: '0.5' } });
  });

  it('refuses a resolution that is not a multiple of the fine one, or buckets off the fine grid', () => {
    expect(() => mergeBuckets([], 60, 90)).toThrow(RangeError);
    const fine = aggregateObservations([obs(T + 100, '0.48', '0.52')], 1);
    expect(() => mergeBuckets(fine, 2, 60)).not.toThrow(); // T is even
    expect(() => mergeBuckets(aggregateObservations([obs(T + 1_000, '0.48', null)], 1), 2, 60)).toThrow(RangeError);
  });

  it('serves a range from merged stored buckets like from raw observations', () => {
    const o = [obs(T + 100, '0.48', '0.52'), obs(T + 200_000, '0.5', '0.6')];
    const plan = planBuckets({ startMs: T + 60_000, endMs: T + 300_000 }, 120);
    expect(fillSeries(mergeBuckets(aggregateObservations(o, 1), 1, 120), plan)).toEqual(summarise(o, plan));
  });
});

describe('toSummaryBucket', () => {
  it('converts exact text to numbers only at the end, without binary noise', () => {
    const [b] = summarise([obs(T, '0.1', '0.3')], planBuckets({ startMs: T, endMs: T }, 1));
    const n = toSummaryBucket(b!);
    expect(n).toMatchObject({ best_bid: 0.1, best_ask: 0.3, mid_price: 0.2, spread: 0.2, best_bid_size: 1 });
    expect(JSON.stringify(n)).toContain('"spread":0.2,');
    expect(JSON.stringify(0.3 - 0.1)).toBe('0.19999999999999998');
  });
});
