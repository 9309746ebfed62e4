import fc from 'fast-check';
import { monitorEventLoopDelay, performance } from 'node:perf_hooks';
import { describe, expect, it } from 'vitest';
import { summaryBucketsCsvBytes, summaryBucketsJsonBytes, summaryBucketsNdjsonBytes, type ExactBucket } from '@booktape/book';
import { summaryBodyParts, type SummaryFormat } from './summary-body.ts';

/** The body as one buffer (the route sends the parts as they are). */
const summaryBody = async (buckets: readonly ExactBucket[], format: SummaryFormat, head = '', tail = '', size?: number) => Buffer.concat(await summaryBodyParts(buckets, format, head, tail, size));

const dec = fc.oneof(fc.constant(null), fc.constantFrom('0.5', '0.01', '12.75', '1'));
const ohlc = fc.option(fc.record({ open: fc.constantFrom('0.5', '0.49'), high: fc.constant('0.6'), low: fc.constant('0.4'), close: fc.constant('0.55') }), { nil: null });
const bucket: fc.Arbitrary<ExactBucket> = fc.record({
  timestamp: fc.integer({ min: 1_700_000_000, max: 1_800_000_000 }).map((s) => s * 1000),
  quote_count: fc.nat({ max: 50 }),
  is_forward_filled: fc.boolean(),
  best_bid: dec,
  best_bid_size: dec,
  best_ask: dec,
  best_ask_size: dec,
  mid_price: dec,
  spread: dec,
  best_bid_ohlc: ohlc,
  best_ask_ohlc: ohlc,
  mid_price_ohlc: ohlc,
  spread_ohlc: ohlc,
}) as fc.Arbitrary<ExactBucket>;

describe('summary answers written a slice at a time', () => {
  it('are byte for byte the answers written in one go, in every format and at any slice size', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(bucket, { maxLength: 40 }), fc.integer({ min: 1, max: 9 }), async (buckets, size) => {
        expect((await summaryBody(buckets, 'json', '{"a":1,"data":', '}', size)).toString()).toBe(summaryBucketsJsonBytes(buckets, '{"a":1,"data":', '}').toString());
        expect((await summaryBody(buckets, 'ndjson', '', '', size)).toString()).toBe(summaryBucketsNdjsonBytes(buckets).toString());
        expect((await summaryBody(buckets, 'csv', '', '', size)).toString()).toBe(summaryBucketsCsvBytes(buckets).toString());
      }),
      { numRuns: 300 },
    );
  });

  it('let other work of the process run between slices', async () => {
    const buckets = fc.sample(bucket, { numRuns: 50, seed: 1 });
    let ranBetween = false;
    setImmediate(() => (ranBetween = true));
    const body = summaryBody(buckets, 'json', '', '', 10);
    expect(ranBetween).toBe(false);
    await body;
    expect(ranBetween).toBe(true);
    // One slice: nothing to wait for between slices.
    let ranSingle = false;
    setImmediate(() => (ranSingle = true));
    await summaryBody(buckets.slice(0, 5), 'json', '', '', 10);
    expect(ranSingle).toBe(false);
  });

  it('hold the event loop for a fraction of the time writing a whole day in one go takes', async () => {
    // 86,400 buckets: a whole day at R=1, about 37 MB of JSON.
    const sample = fc.sample(bucket, { numRuns: 1000, seed: 7 });
    const day = Array.from({ length: 86_400 }, (_, i) => ({ ...sample[i % sample.length]!, timestamp: 1_772_323_200_000 + i * 1000 }));
    const t0 = performance.now();
    const whole = summaryBucketsJsonBytes(day, '{"data":', '}');
    const oneGo = performance.now() - t0;
    const loop = monitorEventLoopDelay({ resolution: 1 });
    loop.enable();
    // A timer that must keep firing while the answer is written.
    let ticks = 0;
    const timer = setInterval(() => ticks++, 1);
    const sliced = await summaryBody(day, 'json', '{"data":', '}');
    clearInterval(timer);
    loop.disable();
    expect(sliced.equals(whole)).toBe(true);
    const longest = loop.max / 1e6;
    expect(longest, `longest block ${longest.toFixed(0)} ms, one go ${oneGo.toFixed(0)} ms`).toBeLessThan(oneGo / 2);
    expect(ticks).toBeGreaterThan(5);
  }, 60_000);
});
