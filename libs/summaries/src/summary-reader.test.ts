import { describe, expect, it } from 'vitest';
import { BucketColumnsDecoder, encodeBuckets, fillSeries, mergeBuckets, planBuckets, seriesBuckets, type ExactBucket } from '@booktape/book';
import { COLUMN_SLICE, fillSeriesYielding, seriesFromColumns } from './summary-reader.ts';

const DAY = Date.UTC(2026, 2, 1);

/** One observed bucket every 17 minutes of a day at R=1: the rest of the 86,400 are filled. */
function sparseDay(): ExactBucket[] {
  const ohlc = (v: string) => ({ open: v, high: v, low: v, close: v });
  return Array.from({ length: 84 }, (_, i) => {
    const bid = i % 2 ? '0.46' : '0.45';
    return {
      timestamp: DAY + i * 1_020_000,
      quote_count: 1,
      is_forward_filled: false,
      best_bid: bid,
      best_bid_size: String(i + 1),
      best_ask: '0.55',
      best_ask_size: '7',
      mid_price: '0.5',
      spread: '0.1',
      best_bid_ohlc: ohlc(bid),
      best_ask_ohlc: ohlc('0.55'),
      mid_price_ohlc: ohlc('0.5'),
      spread_ohlc: ohlc('0.1'),
    };
  });
}

describe('the whole-day fill of a summary answer', () => {
  it('lets the event loop turn between slices and gives the series fillSeries gives', async () => {
    const plan = planBuckets({ startMs: DAY, endMs: DAY + 86_400_000 - 1 }, 1);
    const observed = sparseDay();
    // Turns of the event loop while the fill runs: a chain of immediates, each one turn.
    let turns = 0;
    let running = true;
    const spin = () => {
      if (!running) return;
      turns++;
      setImmediate(spin);
    };
    setImmediate(spin);
    const got = await fillSeriesYielding(observed, plan, null);
    running = false;
    expect(got).toEqual(fillSeries(observed, plan));
    expect(got).toHaveLength(86_400);
    // 86,400 buckets in slices of 4,096: the loop turned between every two of the 22 slices.
    // Made in one go (as before), it would not have turned at all.
    expect(turns).toBeGreaterThanOrEqual(21);
  });
});

/** A dense day at 1 s: an observed bucket every second but every 13th, values moving now and then. */
function denseDay(): ExactBucket[] {
  const out: ExactBucket[] = [];
  for (let i = 0; i < 86_400; i++) {
    if (i % 13 === 5) continue;
    const bid = `0.${40 + ((i >> 4) % 9)}`;
    const ask = `0.${52 + ((i >> 5) % 7)}`;
    const q = 1 + (i % 3);
    const o = (v: string, w: string) => (q === 1 ? { open: v, high: v, low: v, close: v } : { open: w, high: v > w ? v : w, low: v > w ? w : v, close: v });
    out.push({
      timestamp: DAY + i * 1000,
      quote_count: q,
      is_forward_filled: false,
      best_bid: bid,
      best_bid_size: String(100 + (i % 17)),
      best_ask: ask,
      best_ask_size: String(7 + (i % 5)),
      mid_price: null,
      spread: '0.1',
      best_bid_ohlc: o(bid, '0.45'),
      best_ask_ohlc: o(ask, '0.55'),
      mid_price_ohlc: null,
      spread_ohlc: o('0.1', '0.1'),
    });
  }
  return out;
}

describe('the whole-day answer from stored columns (seriesFromColumns)', () => {
  it('merges and fills in slices with the event loop turning between them, and gives the series of the object path', async () => {
    const day = denseDay();
    // Stored as 24 hourly chunks, read back as one set of columns (as the reader keeps a day).
    const decoder = new BucketColumnsDecoder();
    for (let h = 0; h < 24; h++) decoder.add(encodeBuckets(day.filter((b) => Math.floor((b.timestamp - DAY) / 3_600_000) === h)));
    const columns = decoder.columns();
    const carried = { best_bid: '0.3', best_bid_size: '1', best_ask: '0.7', best_ask_size: '2', mid_price: '0.5', spread: '0.4' };
    for (const R of [1, 7, 60]) {
      const plan = planBuckets({ startMs: DAY, endMs: DAY + 86_400_000 - 1 }, R);
      let turns = 0;
      let running = true;
      const spin = () => {
        if (!running) return;
        turns++;
        setImmediate(spin);
      };
      setImmediate(spin);
      const got = await seriesFromColumns([{ columns, from: 0, to: columns.n }], 1, R, plan, carried);
      running = false;
      expect(seriesBuckets(got)).toEqual(fillSeries(R === 1 ? day : mergeBuckets(day, 1, R), plan, carried));
      // R=1: the day filled as stored, in slices of the plan's buckets; R=7 and 60: merged in
      // slices of the stored buckets (and then filled). Made in one go, the loop would not turn.
      const slices = R === 1 ? Math.ceil(plan.count / COLUMN_SLICE) : Math.ceil(columns.n / COLUMN_SLICE);
      expect(turns).toBeGreaterThanOrEqual(slices - 1);
    }
  });
});
