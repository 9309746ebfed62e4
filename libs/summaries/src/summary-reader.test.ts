import { describe, expect, it } from 'vitest';
import { fillSeries, planBuckets, type ExactBucket } from '@booktape/book';
import { fillSeriesYielding } from './summary-reader.ts';

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
